package assembly

import (
	"maps"
	"math"
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
// kind of message (the call graph) and after which delays (InitFloor).
//
// On a busy node the floor is hundreds of unrelated pairs per bin, and
// its noise, clipped at zero, piles up in the long delays' wide bins: at
// 64 requests in flight on the testbed's application tier the first
// call's delay came out with a median of 7–14 ms where the truth's is
// 0.2–0.8 ms. InitCluster instead explains every message sent as caused
// by one trigger before it or by none (dcCluster), which recovers the
// delays of a generated stream at any load (TestInitialModelDelays).

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
	// freed, for a call sent, is when its connection was freed just
	// before it (handoffs), else noTime
	freed int64
}

// dcKey is a pair of a trigger kind and a kind of message sent.
type dcKey struct {
	tk   trigKind
	next int32
}

// deconvolve estimates node n's call graph and delays from its timeline.
func (r *run) deconvolve(n int32, m *nodeModel) {
	evs := r.dcTimeline(n)
	var sig map[dcKey]*hist
	var ntrig map[trigKind]float64
	if r.opt.Init == InitCluster {
		sig, ntrig = r.dcCluster(evs)
	} else {
		sig, ntrig = r.dcFloor(evs)
	}
	keys := make([]dcKey, 0, len(sig))
	for k := range sig {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, cmpDCKey)
	for _, k := range keys {
		clean := sig[k]
		// a kind of message that follows this event no more often than
		// chance says nothing
		if clean.n < 0.05*ntrig[k.tk] || clean.n < 3 {
			continue
		}
		cx := ctxKey{prev: k.tk.ck, ret: k.tk.ret}
		if k.tk.arrival {
			cx = ctxKey{pk: k.tk.pk, prev: noKind}
		}
		r.seedModel(m, cx, k.tk.arrival, k.next, clean)
	}
}

// dcFloor is the convolution's estimate: each pair's histogram of delays
// within deconvLag with the floor of unrelated pairs subtracted bin by
// bin (dcHistograms), what is left above it kept.
func (r *run) dcFloor(evs []dcEvent) (map[dcKey]*hist, map[trigKind]float64) {
	sig, floor, ntrig, hand := r.dcHistograms(evs)
	net := make(map[trigKind]float64, len(ntrig))
	for _, k := range slices.SortedFunc(maps.Keys(sig), cmpDCKey) {
		h := sig[k]
		f := floor[k]
		var clean hist
		for b := range h.w {
			v := h.w[b]
			if f != nil {
				v -= f[b]
			}
			net[k.tk] += v
			if v > 0 {
				clean.add(b, v)
			}
		}
		sig[k] = &clean
	}
	hand.addBack(sig, net, ntrig)
	return sig, ntrig
}

// cmpDCKey orders pairs of kinds, so that models are built in one order.
func cmpDCKey(a, b dcKey) int {
	switch {
	case a.tk.arrival != b.tk.arrival:
		return cmpBool(a.tk.arrival, b.tk.arrival)
	case a.tk.pk != b.tk.pk:
		return int(a.tk.pk) - int(b.tk.pk)
	case a.tk.ck != b.tk.ck:
		return int(a.tk.ck) - int(b.tk.ck)
	case a.tk.ret != b.tk.ret:
		return int(a.tk.ret) - int(b.tk.ret)
	}
	return int(a.next) - int(b.next)
}

// dcTimeline returns node n's triggers and sends in time order.
func (r *run) dcTimeline(n int32) []dcEvent {
	var evs []dcEvent
	for _, p := range r.parentsOf[n] {
		c := &r.calls[p]
		if c.callMsg >= 0 {
			// a request that queued (queue.go) triggers its calls when
			// its service starts
			t := c.arr
			if b := r.qbegin[p]; b != noTime {
				t = max(t, b)
			}
			evs = append(evs, dcEvent{t: t, trig: true, tk: trigKind{arrival: true, pk: c.kind}})
		}
		if c.retMsg >= 0 && c.flags&flagOneWay == 0 {
			evs = append(evs, dcEvent{t: c.rep, next: endKind, freed: noTime})
		}
	}
	waits := r.poolWaits(n)
	for _, k := range r.childrenOf[n] {
		c := &r.calls[k]
		if c.callMsg >= 0 {
			evs = append(evs, dcEvent{t: c.send, next: c.kind, freed: r.freedIf(k, waits)})
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
func (r *run) dcHistograms(evs []dcEvent) (map[dcKey]*hist, map[dcKey]*[nGapBins]float64, map[trigKind]float64, handed) {
	sig := map[dcKey]*hist{}
	hand := handed{}
	floor := map[dcKey]*[nGapBins]float64{}
	ntrig := map[trigKind]float64{}
	// the messages sent, in time order: their times and kinds (indexed
	// from endKind: next - endKind), and each kind's times apart
	var startT, startF []int64 // startF: when the connection was freed (dcEvent.freed)
	var startX []int32
	for i := range evs {
		if !evs[i].trig {
			startT = append(startT, evs[i].t)
			startF = append(startF, evs[i].freed)
			startX = append(startX, evs[i].next-endKind)
		}
	}
	nk := int32(0)
	for _, x := range startX {
		nk = max(nk, x+1)
	}
	kindT := make([][]int64, nk)
	for j, x := range startX {
		kindT[x] = append(kindT[x], startT[j])
	}
	// by kind, the first message sent more than deconvLag and more than
	// 2·deconvLag after the current trigger: the floor's counts between
	farLo, farHi := make([]int, nk), make([]int, nk)
	rows := map[trigKind]*dcRow{}
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
		for si < len(startT) && startT[si] < e.t-r.tols.model {
			si++
		}
		bin := 0
		for j := si; j < len(startT); j++ {
			d := startT[j] - e.t
			if d > deconvLag {
				break
			}
			x := startX[j]
			h := row.sig[x]
			if h == nil {
				h = &hist{}
				row.sig[x] = h
				sig[dcKey{e.tk, x + endKind}] = h
			}
			bin = gapBinUp(bin, d) // the starts are in time order
			if handedBy(e, startF[j]) {
				hand.add(dcKey{e.tk, x + endKind}, bin)
				continue
			}
			h.add(bin, 1)
		}
		for x, ts := range kindT {
			lo, hi := farLo[x], farHi[x]
			for lo < len(ts) && ts[lo]-e.t <= deconvLag {
				lo++
			}
			for hi < len(ts) && ts[hi]-e.t <= 2*deconvLag {
				hi++
			}
			farLo[x], farHi[x] = lo, hi
			if hi == lo {
				continue
			}
			f := row.floor[x]
			if f == nil {
				f = new([nGapBins]float64)
				row.floor[x] = f
				floor[dcKey{e.tk, int32(x) + endKind}] = f
			}
			r.addFloor(f, float64(hi-lo)/deconvLag)
		}
	}
	return sig, floor, ntrig, hand
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
	// the bins' end is found once (floorEnd), not tested at each bin:
	// the test cost more than the addition
	ws := gapWidth[1:floorEnd]
	fb := f[1:floorEnd]
	fb = fb[:len(ws)]
	b := 0
	for ; b+4 <= len(ws); b += 4 { // four bins a step: the loop's own cost was the addition's
		w4, f4 := (*[4]float64)(ws[b:b+4]), (*[4]float64)(fb[b:b+4])
		f4[0] += rate * w4[0]
		f4[1] += rate * w4[1]
		f4[2] += rate * w4[2]
		f4[3] += rate * w4[3]
	}
	for ; b < len(ws); b++ {
		fb[b] += rate * ws[b]
	}
	f[0] += rate * float64(r.tol)
}

// floorEnd is the first bin starting beyond deconvLag: addFloor fills
// bins 1 to floorEnd-1.
var floorEnd = func() int {
	b := 1
	for b < nGapBins && gapLow[b] <= deconvLag {
		b++
	}
	return b
}()

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
	m.gapsChanged(anchor)
	g := m.gaps[anchor][k]
	if g == nil {
		g = &hist{}
		m.gaps[anchor][k] = g
	}
	for b, v := range h.w {
		g.add(b, v)
	}
}

// The cluster EM's bounds: a message's candidate causes are the triggers
// within dcWindow before it, at most dcMaxCands of the latest; dcIters
// rounds of EM.
const (
	dcWindow   = deconvLag
	dcMaxCands = 256
	dcIters    = 50
)

// dcCluster estimates, for every pair of a trigger kind and a kind of
// message sent, the delays after which a trigger of the one causes a
// message of the other, as a Poisson cluster process: every message sent
// was caused by one trigger before it (at a rate per trigger that depends
// on the pair of kinds and the delay) or by none (background, at a
// constant rate per kind of message). Its maximum likelihood is found by
// EM (stochastic declustering): each round shares every message among
// its candidate causes in proportion to their rates, and the rates are
// the shares summed by delay bin over the triggers of each kind, smoothed
// by the delay models' kernel between rounds (EMS). The unrelated
// triggers before a message (hundreds on a busy node) are not a floor
// subtracted bin by bin: they compete for the message with its cause and
// with the background. The model assumes triggers cause messages
// independently; a node whose threads wait for one lock (the testbed's
// Python application: the GIL) sends a message when the lock is freed,
// often just after some other request's trigger, which then takes it:
// there the estimate is shorter than the truth (accuracy.md). It returns the histogram of each pair's expected caused messages by
// delay, and how many triggers of each kind there were.
func (r *run) dcCluster(evs []dcEvent) (map[dcKey]*hist, map[trigKind]float64) {
	p := r.dcPairs(evs)
	nb := p.nBins
	nc := len(p.combos)
	eff := r.dcWidths()
	// g[c*nb+b]: messages of combo c's kind caused per trigger of its
	// trigger kind with a delay in bin b; mu[x]: background rate per ns
	g := make([]float64, nc*nb)
	acc := make([]float64, nc*nb)
	mu := make([]float64, len(p.nmsg))
	for x := range mu {
		mu[x] = 0.5 * p.nmsg[x] / p.span
	}
	for c, cb := range p.combos {
		per := 0.5 * p.nmsg[cb.x] / p.ntrig[cb.k] / float64(p.nx[cb.x]) / float64(nb)
		for b := range nb {
			g[c*nb+b] = per
		}
	}
	bgAcc := make([]float64, len(mu))
	sm := make([]float64, nb)
	for it := range dcIters {
		clear(acc)
		clear(bgAcc)
		for j, x := range p.msgX {
			lo, hi := p.off[j], p.off[j+1]
			den := mu[x]
			for i := lo; i < hi; i++ {
				b := int(p.bin[i])
				den += g[int(p.combo[i])*nb+b] / eff[b]
			}
			for i := lo; i < hi; i++ {
				b := int(p.bin[i])
				k := int(p.combo[i])*nb + b
				acc[k] += g[k] / eff[b] / den
			}
			bgAcc[x] += mu[x] / den
		}
		for x := range mu {
			mu[x] = bgAcc[x] / p.span
		}
		for c, cb := range p.combos {
			a := acc[c*nb : (c+1)*nb]
			if it < dcIters-1 {
				smoothInto(sm, a)
				a = sm
			}
			for b := range nb {
				g[c*nb+b] = a[b] / p.ntrig[cb.k]
			}
		}
	}
	sig := map[dcKey]*hist{}
	for c, cb := range p.combos {
		var h hist
		for b, v := range acc[c*nb : (c+1)*nb] {
			if v > 0 {
				h.add(b, v)
			}
		}
		if h.n > 0 {
			sig[dcKey{p.tks[cb.k], int32(cb.x) + endKind}] = &h
		}
	}
	ntrig := make(map[trigKind]float64, len(p.tks))
	for k, tk := range p.tks {
		ntrig[tk] = p.ntrig[k]
	}
	return sig, ntrig
}

// smoothInto writes a, convolved with the delay models' kernel, to out
// (bin 0, the delays of zero or less, kept apart).
func smoothInto(out, a []float64) {
	clear(out)
	out[0] = a[0]
	r := len(kernel) / 2
	for b := 1; b < len(a); b++ {
		if a[b] == 0 {
			continue
		}
		for i, k := range kernel {
			j := min(max(b+i-r, 1), len(a)-1)
			out[j] += a[b] * k
		}
	}
}

// dcCombo is a pair of a trigger kind and a kind of message sent (indexed
// from endKind) that occur within the window of each other.
type dcCombo struct{ k, x int }

// dcPairData is a node's timeline as dcCluster reads it: per message its
// kind and its candidate causes (the triggers before it within dcWindow,
// at most dcMaxCands of the latest), each as the pair of kinds and the
// delay's bin.
type dcPairData struct {
	tks    []trigKind
	ntrig  []float64 // triggers by kind
	nmsg   []float64 // messages by kind
	nx     []int     // pairs of kinds by kind of message
	combos []dcCombo
	combo  []int32 // per candidate
	bin    []uint16
	off    []int32 // message j's candidates are off[j]:off[j+1]
	msgX   []int32
	span   float64
	nBins  int // bins within dcWindow
}

// dcPairs collects the candidate causes of node n's messages.
func (r *run) dcPairs(evs []dcEvent) *dcPairData {
	p := &dcPairData{off: []int32{0}, span: 1e6}
	tkIdx := map[trigKind]int{}
	var trigT []int64
	var trigK []int
	nx := 0
	for i := range evs {
		e := &evs[i]
		if !e.trig {
			nx = max(nx, int(e.next-endKind)+1)
			continue
		}
		k, ok := tkIdx[e.tk]
		if !ok {
			k = len(p.tks)
			tkIdx[e.tk] = k
			p.tks = append(p.tks, e.tk)
			p.ntrig = append(p.ntrig, 0)
		}
		p.ntrig[k]++
		trigT = append(trigT, e.t)
		trigK = append(trigK, k)
	}
	if len(evs) > 0 {
		p.span = max(float64(evs[len(evs)-1].t-evs[0].t), 1e6)
	}
	p.nmsg = make([]float64, nx)
	p.nx = make([]int, nx)
	comboIdx := map[dcCombo]int32{}
	ti := 0
	for i := range evs {
		e := &evs[i]
		if e.trig {
			continue
		}
		for ti < len(trigT) && trigT[ti] <= e.t+r.tols.model {
			ti++
		}
		x := int(e.next - endKind)
		bin := 0 // the triggers are in time order: the delays grow
		for j, c := ti-1, 0; j >= 0 && c < dcMaxCands && e.t-trigT[j] <= dcWindow; j, c = j-1, c+1 {
			cb := dcCombo{trigK[j], x}
			ci, ok := comboIdx[cb]
			if !ok {
				ci = int32(len(p.combos))
				comboIdx[cb] = ci
				p.combos = append(p.combos, cb)
				p.nx[x]++
			}
			p.combo = append(p.combo, ci)
			bin = gapBinUp(bin, e.t-trigT[j])
			p.bin = append(p.bin, uint16(bin))
		}
		p.msgX = append(p.msgX, int32(x))
		p.nmsg[x]++
		p.off = append(p.off, int32(len(p.combo)))
	}
	p.nBins = 1
	for p.nBins < nGapBins && gapLow[p.nBins] <= float64(dcWindow) {
		p.nBins++
	}
	return p
}

// dcWidths returns the width each delay bin is read over: its own, or
// the timestamps' resolution where that is wider (bin 0, the delays of
// zero or less, the tolerance).
func (r *run) dcWidths() [nGapBins]float64 {
	res := float64(r.l.res)
	if r.l.sendSp != nil {
		res = float64(r.l.spacing)
	}
	var eff [nGapBins]float64
	for b := range eff {
		eff[b] = math.Max(gapWidth[b], res)
	}
	eff[0] = math.Max(math.Max(float64(r.tol), res), gapMinNS)
	return eff
}
