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

// dcEvent is one event of a node's timeline for deconvolve: a trigger
// (tk) or a message sent (next, a call kind or endKind).
type dcEvent struct {
	t    int64
	trig bool
	tk   trigKind
	next int32
}

// dcKey is a pair of a trigger kind and a kind of message sent.
type dcKey struct {
	tk   trigKind
	next int32
}

// deconvolve estimates node n's call graph and delays from its timeline.
func (r *run) deconvolve(n int32, m *nodeModel) {
	evs := r.dcTimeline(n)
	sig, floor, ntrig := r.dcHistograms(evs)
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

// dcTimeline returns node n's triggers and sends in time order.
func (r *run) dcTimeline(n int32) []dcEvent {
	var evs []dcEvent
	for _, p := range r.parentsOf[n] {
		c := &r.calls[p]
		if c.callMsg >= 0 {
			evs = append(evs, dcEvent{t: c.arr, trig: true, tk: trigKind{arrival: true, pk: c.kind}})
		}
		if c.retMsg >= 0 && c.flags&flagOneWay == 0 {
			evs = append(evs, dcEvent{t: c.rep, next: endKind})
		}
	}
	for _, k := range r.childrenOf[n] {
		c := &r.calls[k]
		if c.callMsg >= 0 {
			evs = append(evs, dcEvent{t: c.send, next: c.kind})
		}
		if c.callMsg >= 0 && c.retMsg >= 0 && c.flags&flagOneWay == 0 {
			evs = append(evs, dcEvent{t: c.back, trig: true, tk: trigKind{ck: c.kind, ret: c.retClass}})
		}
	}
	slices.SortStableFunc(evs, func(a, b dcEvent) int { return cmpTime(a.t, b.t) })
	return evs
}

// dcHistograms returns, for every pair of a trigger kind and a kind of
// message sent, the histogram of the delays from each trigger to the
// messages sent within deconvLag after it, and the floor expected of
// unrelated pairs (the rate of such messages between deconvLag and
// 2·deconvLag after the trigger); and how many triggers of each kind
// there were. Each trigger kind's histograms are also held in a row
// indexed by the kind of message (dcRow), so that the pairs, hundreds per
// trigger on a busy node, are counted without a map lookup each.
func (r *run) dcHistograms(evs []dcEvent) (map[dcKey]*hist, map[dcKey]*[nGapBins]float64, map[trigKind]float64) {
	sig := map[dcKey]*hist{}
	floor := map[dcKey]*[nGapBins]float64{}
	ntrig := map[trigKind]float64{}
	var starts []int
	nk := int32(0) // kinds of message sent, indexed from endKind (next - endKind)
	for i := range evs {
		if !evs[i].trig {
			starts = append(starts, i)
			nk = max(nk, evs[i].next-endKind+1)
		}
	}
	rows := map[trigKind]*dcRow{}
	far := make([]float64, nk)
	var farKinds []int32
	si := 0
	for i := range evs {
		e := &evs[i]
		if !e.trig {
			continue
		}
		ntrig[e.tk]++
		row := rows[e.tk]
		if row == nil {
			row = &dcRow{sig: make([]*hist, nk), floor: make([]*[nGapBins]float64, nk)}
			rows[e.tk] = row
		}
		for si < len(starts) && evs[starts[si]].t < e.t-r.tol {
			si++
		}
		for j := si; j < len(starts); j++ {
			s := &evs[starts[j]]
			d := s.t - e.t
			if d > 2*deconvLag {
				break
			}
			x := s.next - endKind
			if d > deconvLag {
				if far[x] == 0 {
					farKinds = append(farKinds, s.next)
				}
				far[x]++
				continue
			}
			h := row.sig[x]
			if h == nil {
				h = &hist{}
				row.sig[x] = h
				sig[dcKey{e.tk, s.next}] = h
			}
			h.add(gapBin(d), 1)
		}
		for _, next := range farKinds {
			x := next - endKind
			f := row.floor[x]
			if f == nil {
				f = new([nGapBins]float64)
				row.floor[x] = f
				floor[dcKey{e.tk, next}] = f
			}
			r.addFloor(f, far[x]/deconvLag)
			far[x] = 0
		}
		farKinds = farKinds[:0]
	}
	return sig, floor, ntrig
}

// dcRow is one trigger kind's histograms (dcHistograms), by the kind of
// message sent (indexed from endKind).
type dcRow struct {
	sig   []*hist
	floor []*[nGapBins]float64
}

// addFloor adds to floor f what unrelated messages arriving at rate (per
// ns) put in each bin.
func (r *run) addFloor(f *[nGapBins]float64, rate float64) {
	for b := 1; b < nGapBins && gapLow[b] <= deconvLag; b++ {
		f[b] += rate * gapWidth[b]
	}
	f[0] += rate * float64(r.tol)
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
