package assembly

import (
	"slices"
)

// The first model of a node comes from its timeline alone, before any
// assignment, as Project 5's convolution does: for every kind of event
// that can trigger a request's next message (a request's arrival, the
// reply to one of its calls) and every kind of message a node sends (a
// call, a reply), the histogram of the delays from each event of the one
// to every later message of the other holds the true delays as a bump over
// a floor of unrelated pairs. The floor is measured where no true pair
// lies (between deconvLag and 2·deconvLag after the event) and subtracted;
// what is left estimates how often each kind of event is followed by each
// kind of message (the call graph) and after which delays.

const deconvLag = 50e6 // ns

// trigger kinds: an arrival of a request of kind pk, or a reply to a call
// of kind ck with reply class ret.
type trigKind struct {
	arrival bool
	pk, ck  int32
	ret     uint8
}

// deconvolve estimates node n's call graph and delays from its timeline.
func (r *run) deconvolve(n int32, m *nodeModel) {
	type ev struct {
		t    int64
		trig bool
		tk   trigKind
		next int32 // the kind of message sent: a call kind or endKind
		pk   int32 // for a reply: the request's kind
	}
	var evs []ev
	for _, p := range r.parentsOf[n] {
		c := &r.calls[p]
		if c.callMsg >= 0 {
			evs = append(evs, ev{t: c.arr, trig: true, tk: trigKind{arrival: true, pk: c.kind}})
		}
		if c.retMsg >= 0 && c.flags&flagOneWay == 0 {
			evs = append(evs, ev{t: c.rep, next: endKind, pk: c.kind})
		}
	}
	for _, k := range r.childrenOf[n] {
		c := &r.calls[k]
		if c.callMsg >= 0 {
			evs = append(evs, ev{t: c.send, next: c.kind})
		}
		if c.callMsg >= 0 && c.retMsg >= 0 && c.flags&flagOneWay == 0 {
			evs = append(evs, ev{t: c.back, trig: true, tk: trigKind{ck: c.kind, ret: c.retClass}})
		}
	}
	slices.SortFunc(evs, func(a, b ev) int {
		if a.t != b.t {
			if a.t < b.t {
				return -1
			}
			return 1
		}
		return 0
	})
	type pairKey struct {
		tk   trigKind
		next int32
	}
	sig := map[pairKey]*hist{}
	floor := map[pairKey]*[nGapBins]float64{}
	ntrig := map[trigKind]float64{}
	// starts of each kind, for the floor's rate
	var starts []int
	for i := range evs {
		if !evs[i].trig {
			starts = append(starts, i)
		}
	}
	si := 0
	for i := range evs {
		e := &evs[i]
		if !e.trig {
			continue
		}
		ntrig[e.tk]++
		for si < len(starts) && evs[starts[si]].t < e.t-r.tol {
			si++
		}
		far := map[int32]float64{}
		for j := si; j < len(starts); j++ {
			s := &evs[starts[j]]
			d := s.t - e.t
			if d > 2*deconvLag {
				break
			}
			if d > deconvLag {
				far[s.next]++
				continue
			}
			k := pairKey{e.tk, s.next}
			h := sig[k]
			if h == nil {
				h = &hist{}
				sig[k] = h
			}
			h.add(gapBin(d), 1)
		}
		// the floor: the rate of each kind of message far from the event
		for next, cnt := range far {
			k := pairKey{e.tk, next}
			f := floor[k]
			if f == nil {
				f = new([nGapBins]float64)
				floor[k] = f
			}
			rate := cnt / deconvLag
			for b := 1; b < nGapBins && gapLow[b] <= deconvLag; b++ {
				f[b] += rate * gapWidth[b]
			}
			f[0] += rate * float64(r.tol)
		}
	}
	for k, h := range sig {
		f := floor[k]
		var clean hist
		for b := range h.w {
			v := h.w[b]
			if f != nil {
				v -= f[b]
			}
			if v > 0 {
				clean.add(b, v)
			}
		}
		// a kind of message that follows this event no more often than
		// chance says nothing
		if clean.n < 0.05*ntrig[k.tk] || clean.n < 3 {
			continue
		}
		cx := ctxKey{prev: k.tk.ck, ret: k.tk.ret}
		if k.tk.arrival {
			cx = ctxKey{pk: k.tk.pk, prev: noKind}
		}
		r.seedModel(m, cx, k.tk.arrival, k.next, &clean)
	}
}

// seedModel records a deconvolved histogram of delays before next in
// context cx: at the levels that do not need what deconvolution cannot
// tell (the request's kind, for a reply to a call).
func (r *run) seedModel(m *nodeModel, cx ctxKey, arrival bool, next int32, h *hist) {
	keys := cx.transKeys()
	gk := cx.gapKeys(next)
	tks := keys[2:]
	gks := gk[1:]
	if arrival {
		// a request's first message, timed from its arrival both ways;
		// and every later call of a parallel fan-out
		tks = keys[1:]
		gks = gk[:]
		for _, k := range gk[2:] {
			m.addHist(anchorArrival, k, h)
		}
	}
	for _, k := range tks {
		d := m.trans[k]
		if d == nil {
			d = &dist{}
			m.trans[k] = d
		}
		d.add(next, h.n)
	}
	for _, k := range gks {
		m.addHist(anchorLast, k, h)
		if arrival && k.lvl < 2 {
			m.addHist(anchorArrival, k, h)
		}
	}
}

// addHist adds histogram h to the delays of key from anchor.
func (m *nodeModel) addHist(anchor int, k gKey, h *hist) {
	g := m.gaps[anchor][k]
	if g == nil {
		g = &hist{}
		m.gaps[anchor][k] = g
	}
	for b, v := range h.w {
		g.add(b, v)
	}
}
