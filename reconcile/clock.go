package reconcile

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/wirepath/wirepath/clock"
	"github.com/wirepath/wirepath/preload"
	"github.com/wirepath/wirepath/trace"
)

// Clock offsets between clock domains (WAP5 section 5.2, after Paxson; and
// MSHN's rule of keeping the shortest round trip).
//
// A domain is one clock timestamps were taken on: a sniffer's (after
// pcapio's correction onto the reference sniffer's clock, where it could
// estimate one) or a syscall-traced host's. Each offset is the domain's
// clock minus the reference domain's.
//
// Every event pair "x happened on X's clock at tx, then y on Y's clock at
// ty" (the send and the receive of one message; a traced write and the
// sniffer seeing its first byte; the sniffer seeing the last byte and the
// traced read that returned it) is a sample of the delay from X to Y.
// Package clock fits each pair's offset over time to the envelopes of
// the delays each way (a drift, steps; events paired wrongly left out as
// outliers), with an uncertainty that bounds its error whatever the
// asymmetry, and chains the pairs to the reference along the least summed
// uncertainty, composing their models. A pair whose samples leave its
// offset uncertain by more than maxTrustedNS (or contradict each other by
// as much) is not applied blindly: if no offset at all contradicts fewer
// of its samples, the pair is taken to have none, and either way a
// warning says so (pairModel).

// maxTrustedNS is the largest uncertainty of a pair's offset that is
// applied without a comparison with the no-offset hypothesis (10 ms).
const maxTrustedNS = 10e6

// estimateClocks names the clock domains (the sniffers, then the traced
// hosts), collects the events seen on two of them, and estimates every
// domain's offset against the reference domain (st.est, st.ref). Pairs
// of domains whose samples contradict each other are warned about.
func (r *Reconciler) estimateClocks(st *state) {
	r.clockDomains(st)
	cs, stamped := r.clockSamples(st)
	refSniffer := r.referenceSniffer()
	st.ref = refSniffer
	if st.ref < 0 && st.nSniffers > 0 {
		st.ref = 0
	}
	if st.ref < 0 {
		st.ref = busiestDomain(stamped)
	}
	est, models, notes := solveClocks(len(st.domNames), st.ref, cs, r.snifferEdges(refSniffer), r.opts.ClockFit, r.opts.TrustClockFits)
	for _, n := range notes {
		st.warn("%s", n.text(st.domNames))
	}
	st.est, st.models = est, models
}

// clockDomains names the domains: every sniffer (those the options
// describe and those sightings name), then every traced host.
func (r *Reconciler) clockDomains(st *state) {
	nSn := len(r.opts.Sniffers)
	for _, p := range r.points {
		nSn = max(nSn, int(p.Sniffer)+1)
	}
	st.nSniffers = int32(nSn)
	for i := range nSn {
		st.domNames = append(st.domNames, r.snifferName(i))
	}
	if tab := r.opts.Preload; tab != nil {
		for _, p := range tab.Processes() {
			st.hostDomain(p.Host)
		}
	}
}

// clockSamples collects the events seen on two clocks: every message's
// send and receive at their best times, and every traced call with the
// sniffer sighting of its bytes. It also counts the times each domain
// gave.
func (r *Reconciler) clockSamples(st *state) (*clockSamples, map[int32]int64) {
	cs := newClockSamples()
	var counts []int64 // by domain
	for i := range st.out {
		lm := &st.out[i]
		send, recv := r.stamps(st, lm, false)
		bs, br := best(&send), best(&recv)
		if bs.dom >= 0 {
			counts = countDomain(counts, bs.dom)
		}
		if br.dom >= 0 {
			counts = countDomain(counts, br.dom)
		}
		if bs.dom >= 0 && br.dom >= 0 {
			cs.add(bs.dom, bs.ts, br.dom, br.ts)
		}
		if !lm.sa.ok() && !lm.rb.ok() {
			continue // no traced call: no trace slot to sample against
		}
		send, recv = r.stamps(st, lm, true)
		if t, s := send[slotTrace], sniffedWhole(&send); t.dom >= 0 && s.dom >= 0 {
			cs.add(t.dom, t.ts, s.dom, s.ts)
		}
		if t, s := recv[slotTrace], sniffedWhole(&recv); t.dom >= 0 && s.dom >= 0 {
			cs.add(s.dom, s.ts, t.dom, t.ts)
		}
	}
	stamped := map[int32]int64{}
	for d, k := range counts {
		if k > 0 {
			stamped[int32(d)] = k
		}
	}
	return cs, stamped
}

// countDomain adds one to counts[d], growing counts as needed.
func countDomain(counts []int64, d int32) []int64 {
	if int(d) >= len(counts) {
		counts = append(counts, make([]int64, int(d)+1-len(counts))...)
	}
	counts[d]++
	return counts
}

// sniffedWhole returns the home point's candidate of cs, else the side
// point's (dom -1 if neither saw the whole message).
func sniffedWhole(cs *[numSlots]cand) cand {
	if cs[slotHome].dom >= 0 {
		return cs[slotHome]
	}
	return cs[slotSide]
}

// referenceSniffer is the sniffer the options mark as the reference
// (the last so marked), -1 if none.
func (r *Reconciler) referenceSniffer() int32 {
	ref := int32(-1)
	for i, sn := range r.opts.Sniffers {
		if sn.Reference {
			ref = int32(i)
		}
	}
	return ref
}

// snifferEdges are pcapio's estimates: a sniffer it corrected onto the
// reference sniffer's clock is at offset 0 from it, within the
// uncertainty pcapio gives.
func (r *Reconciler) snifferEdges(ref int32) []clock.Edge {
	if ref < 0 {
		return nil
	}
	var fixed []clock.Edge
	for i, sn := range r.opts.Sniffers {
		if sn.Known && !sn.Reference {
			fixed = append(fixed, clock.Edge{A: int(ref), B: i, Estimate: clock.Estimate{Known: true, Uncertainty: sn.UncertaintyNS, Samples: sn.Samples}})
		}
	}
	return fixed
}

// busiestDomain returns the domain with the highest count, the lowest on
// ties, -1 if none.
func busiestDomain(counts map[int32]int64) int32 {
	d, c := int32(-1), int64(-1)
	for x, k := range counts {
		if x >= 0 && (k > c || (k == c && x < d)) {
			d, c = x, k
		}
	}
	return d
}

// nodeClocks names both ends of every message and gives each node one
// clock: the domain most of its ends' times come from (endDomain), the
// lowest on ties. A node keeps one clock, so node delays need no offset.
func (r *Reconciler) nodeClocks(st *state) {
	st.ends = make([]msgEnds, len(st.out))
	st.nodeUse = map[trace.Sym]map[int32]int64{}
	st.server = map[trace.Sym]bool{}
	var sends, recvs endRun
	for i := range st.out {
		lm := &st.out[i]
		rc := st.conns[lm.rc]
		st.ends[i] = msgEnds{
			send: sends.name(r, st, lm.hs, lm.spc, rc.epi[lm.dir]),
			recv: recvs.name(r, st, lm.hr, lm.rpc, rc.epi[1-lm.dir]),
		}
	}
	sends.flush(st)
	recvs.flush(st)
	st.nodeDom = make(map[trace.Sym]int32, len(st.nodeUse))
	var top trace.Sym
	for n, m := range st.nodeUse {
		st.nodeDom[n] = busiestDomain(m)
		top = max(top, n)
	}
	st.domOf = make([]int32, int(top)+1)
	for n, d := range st.nodeDom {
		st.domOf[n] = d
	}
}

// endRun is the end (host, traced process, endpoint) that the last
// messages had on one side, its node, its clock, and how many of them
// have not been counted in st.nodeUse yet: consecutive messages (a
// connection direction's) mostly have the same ends, which are named and
// counted once per run instead of once per message.
type endRun struct {
	ok   bool
	h    int32
	pc   *preload.Conn
	ep   int32
	node trace.Sym
	dom  int32
	n    int64
}

// name returns the node of the end (h, pc, ep), counts its use of its
// clock, and notes whether it is a server.
func (e *endRun) name(r *Reconciler, st *state, h int32, pc *preload.Conn, ep int32) trace.Sym {
	if e.ok && e.h == h && e.pc == pc && e.ep == ep {
		e.n++
		return e.node
	}
	e.flush(st)
	node := st.nodeName(r, h, pc, ep)
	st.server[node] = st.server[node] || st.fixed[ep]
	*e = endRun{ok: true, h: h, pc: pc, ep: ep, node: node, dom: r.endDomain(st, h), n: 1}
	return node
}

// flush counts the run's uses of its clock in st.nodeUse.
func (e *endRun) flush(st *state) {
	if !e.ok || e.n == 0 {
		return
	}
	m := st.nodeUse[e.node]
	if m == nil {
		m = map[int32]int64{}
		st.nodeUse[e.node] = m
	}
	m[e.dom] += e.n
	e.n = 0
}

// endDomain is the clock of an end on host h: its home sniffer's, or its
// traced host's where no sniffer saw it (or only the traced clock is tied
// to the reference); -1 if none.
func (r *Reconciler) endDomain(st *state, h int32) int32 {
	if h < 0 {
		return -1
	}
	hs := st.ht.hosts[h]
	sn, hd := int32(-1), int32(-1)
	if hs.home >= 0 {
		sn = int32(r.points[hs.home].Sniffer)
	}
	if d, ok := st.hostDom[hs.pname]; ok && hs.pname != "" && int(d) < len(st.est) {
		hd = d
	}
	switch {
	case sn >= 0 && hd >= 0 && !st.est[sn].Known && st.est[hd].Known:
		return hd
	case sn >= 0:
		return sn
	}
	return hd
}

// clockReport fills the clocks (sniffers and traced hosts against the
// reference clock) and the node offsets (against the reference node).
func (r *Reconciler) clockReport(st *state, rep *Report) {
	refName := ""
	if st.ref >= 0 {
		refName = st.domNames[st.ref]
	}
	for d := range int32(len(st.domNames)) {
		rep.Clocks = append(rep.Clocks, r.clockOf(st, d, refName))
	}
	refNode, ok := st.referenceNode()
	if !ok {
		return
	}
	rep.Reference = st.tr.Str(refNode)
	rd := st.nodeDom[refNode]
	names := make([]trace.Sym, 0, len(st.nodeDom))
	for n := range st.nodeDom {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b trace.Sym) int { return cmp.Compare(st.tr.Str(a), st.tr.Str(b)) })
	for _, n := range names {
		rep.Offsets = append(rep.Offsets, st.nodeOffset(n, rd, rep.Reference))
	}
}

// clockOf reports domain d: a sniffer with pcapio's estimate, or with
// the one made here from the messages; a traced host with the one made
// here.
func (r *Reconciler) clockOf(st *state, d int32, refName string) trace.Clock {
	c := trace.Clock{Name: st.domNames[d], Kind: "sniffer", Reference: refName, Method: "unknown"}
	if d >= st.nSniffers {
		c.Kind = "host"
	}
	e := st.est[d]
	switch {
	case d < st.nSniffers && int(d) < len(r.opts.Sniffers) && r.opts.Sniffers[d].Known:
		sn := r.opts.Sniffers[d]
		c.Known, c.OffsetNS, c.UncertaintyNS, c.Samples, c.Method = true, sn.OffsetNS, sn.UncertaintyNS, sn.Samples, sn.Method
		c.EpochNS, c.DriftKnown, c.DriftPPM, c.DriftUncertaintyPPM, c.Steps = sn.EpochNS, sn.DriftKnown, sn.DriftPPM, sn.DriftUncertaintyPPM, sn.Steps
	case e.Known:
		c.Known, c.OffsetNS, c.UncertaintyNS, c.Samples, c.Method = true, e.Offset, e.Uncertainty, e.Samples, "messages"
		if d >= st.nSniffers && d == st.ref {
			c.Method = "reference"
		}
		setDrift(&c, &st.models[d])
	}
	return c
}

// setDrift fills c's drift and steps from model m (its first segment's
// rate, when known).
func setDrift(c *trace.Clock, m *clock.Model) {
	if !m.Known || len(m.Segments) == 0 {
		return
	}
	if s := m.Segments[0]; s.RateKnown {
		c.EpochNS, c.DriftKnown, c.DriftPPM, c.DriftUncertaintyPPM = s.Epoch, true, s.Rate*1e6, s.RateUncertainty*1e6
	}
	for _, s := range m.StepList() {
		c.Steps = append(c.Steps, trace.ClockStep{AtNS: s.At, ByNS: s.By})
	}
}

// referenceNode is the busiest node on the reference clock, else the
// busiest on a clock tied to it; ties go to the first name.
func (st *state) referenceNode() (trace.Sym, bool) {
	for _, onRef := range [...]bool{true, false} {
		var node trace.Sym
		n := int64(-1)
		for x, d := range st.nodeDom {
			if d < 0 || !st.est[d].Known || (onRef && d != st.ref) {
				continue
			}
			var c int64
			for _, k := range st.nodeUse[x] {
				c += k
			}
			if c > n || (c == n && st.tr.Str(x) < st.tr.Str(node)) {
				node, n = x, c
			}
		}
		if n >= 0 {
			return node, true
		}
	}
	return 0, false
}

// nodeOffset is node n's clock offset against the reference node's clock
// rd, with the uncertainties of both added.
func (st *state) nodeOffset(n trace.Sym, rd int32, refName string) trace.Offset {
	d := st.nodeDom[n]
	o := trace.Offset{Node: st.tr.Str(n), Reference: refName}
	if d < 0 || !st.est[d].Known {
		return o
	}
	o.Known = true
	o.OffsetNS = st.est[d].Offset - st.est[rd].Offset
	if d != rd {
		o.UncertaintyNS = st.est[d].Uncertainty + st.est[rd].Uncertainty
		o.Samples = st.est[d].Samples
		if st.est[rd].Samples > 0 {
			o.Samples = min(o.Samples, st.est[rd].Samples)
		}
	}
	return o
}

// clockSamples collects event pairs between domains, per pair of
// domains (lower first).
type clockSamples struct {
	pairs map[[2]int32]*clock.Pair
	// last and lastP are the last pair added to (consecutive messages
	// mostly add to the same).
	last  [2]int32
	lastP *clock.Pair
}

func newClockSamples() *clockSamples {
	return &clockSamples{pairs: map[[2]int32]*clock.Pair{}}
}

// add records that an event at tx on domain x preceded one at ty on
// domain y.
func (cs *clockSamples) add(x int32, tx int64, y int32, ty int64) {
	if x == y || x < 0 || y < 0 {
		return
	}
	k := [2]int32{min(x, y), max(x, y)}
	p := cs.lastP
	if p == nil || k != cs.last {
		if p = cs.pairs[k]; p == nil {
			p = &clock.Pair{}
			cs.pairs[k] = p
		}
		cs.last, cs.lastP = k, p
	}
	if x == k[0] {
		p.AB.Add(clock.Sample{Send: tx, Recv: ty})
	} else {
		p.BA.Add(clock.Sample{Send: tx, Recv: ty})
	}
}

// solveClocks estimates every domain's offset against ref: from each
// sampled pair seen both ways (pairModel) and from the fixed edges
// (pcapio's estimates), chained along the least summed uncertainty and
// composed (package clock). It returns the chained offsets, each Offset
// the domain's model's (domainModels), the models, and notes on the pairs
// for warnings. Inconsistent pairs are still used, with the magnitude of
// the inversion as the uncertainty.
func solveClocks(n int, ref int32, cs *clockSamples, fixed []clock.Edge, fit clock.FitOptions, trust bool) ([]clock.Offset, []clock.Model, []clockNote) {
	keys := make([][2]int32, 0, len(cs.pairs))
	for k := range cs.pairs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]int32) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	var edges []clock.Edge
	var models []clock.Model
	var notes []clockNote
	for _, k := range keys {
		m, note := pairModel(cs.pairs[k], fit, trust)
		if !m.Known {
			continue
		}
		if note.kind != noteNone {
			note.pair = k
			notes = append(notes, note)
		}
		edges = append(edges, clock.Edge{A: int(k[0]), B: int(k[1]), Estimate: m.Estimate()})
		models = append(models, m)
	}
	edges = append(edges, fixed...)
	var roots []clock.Root
	if ref >= 0 {
		roots = []clock.Root{{Clock: int(ref)}}
	}
	est := clock.Chain(n, roots, edges, clock.Options{})
	ms := clock.Compose(est, roots, edges, models)
	for d := range est {
		if est[d].Known {
			e := ms[d].Estimate()
			est[d].Offset, est[d].Uncertainty = e.Offset, e.Uncertainty
		}
	}
	return est, ms, notes
}

// Kinds of clockNote.
const (
	noteNone         = iota
	noteOutliers     // events paired wrongly were left out
	noteContradict   // the delays contradict each other by less than maxTrustedNS; the fit is used
	noteInconsistent // the fit is unreliable; it is used (TrustClockFits)
	noteNoOffset     // the fit was unreliable; no offset contradicts fewer samples
	noteConsensus    // the fit was unreliable; the consensus contradicts fewer samples
	noteRefit        // ... and the samples it contradicts were left out of a new fit
)

// clockNote is what a warning says about one pair of clock domains.
type clockNote struct {
	pair     [2]int32
	kind     int
	outliers int
	fit      clock.Estimate
	vFit, v0 int // envelope points the consensus and no offset contradict
}

func (n clockNote) text(names []string) string {
	a, b := names[n.pair[0]], names[n.pair[1]]
	fit := fmt.Sprintf("%v ± %v", time.Duration(n.fit.Offset), time.Duration(n.fit.Uncertainty))
	switch n.kind {
	case noteOutliers:
		return fmt.Sprintf("clocks %q and %q: %d stretches of time held a delay far beyond their neighbours' (events paired wrongly) and were left out of the offset", a, b, n.outliers)
	case noteContradict:
		return fmt.Sprintf("clocks %q and %q: the delays each way contradict each other by up to %v (timestamps taken at different points of the network stacks, or a clock that stepped); their offset %s is used, with that as its uncertainty", a, b, time.Duration(2*n.fit.Uncertainty), fit)
	case noteInconsistent:
		return fmt.Sprintf("clocks %q and %q: the delays each way contradict each other (a clock that stepped, or events paired wrongly), or leave the offset very uncertain: their offset %s is unreliable", a, b, fit)
	case noteNoOffset:
		return fmt.Sprintf("clocks %q and %q: the estimated offset %s is unreliable, and no offset contradicts no more stretches of the samples (%d) than any other: no offset is assumed", a, b, fit, n.v0)
	case noteRefit:
		return fmt.Sprintf("clocks %q and %q: the estimated offset %s was unreliable; %d stretches of the samples contradicting the rest (events paired wrongly) were left out of it (no offset would contradict %d)", a, b, fit, n.vFit, n.v0)
	default:
		return fmt.Sprintf("clocks %q and %q: the estimated offset %s is unreliable; the constant offset that contradicts fewest stretches of the samples (%d; no offset %d) is used", a, b, fit, n.vFit, n.v0)
	}
}

// pairModel fits the offset of one pair of domains (package clock) and
// says what a warning must tell about it. A fit that is inconsistent by
// less than maxTrustedNS (capture points whose timestamps jitter) is used
// with a warning; one more uncertain, or more inconsistent, is not used as
// it is: of no offset and
// the constant offset that contradicts fewest samples (the consensus), the
// one that contradicts fewer wins, no offset on ties (what clocks of one
// network most often have). When the consensus wins, the samples it
// contradicts are left out and the rest fitted again; if that fit is
// still unreliable, the consensus itself is used.
func pairModel(p *clock.Pair, fit clock.FitOptions, trust bool) (clock.Model, clockNote) {
	m := p.Fit(fit)
	if !m.Known {
		return m, clockNote{}
	}
	e := m.Estimate()
	note := clockNote{fit: e, outliers: m.Outliers}
	if m.Outliers > 0 {
		note.kind = noteOutliers
	}
	if reliable(e) {
		if e.Inconsistent {
			note.kind = noteContradict
		}
		return m, note
	}
	if trust {
		note.kind = noteInconsistent
		return m, note
	}
	cons, vc := p.Consensus()
	zero := clock.Constant(clock.Estimate{Known: true, Uncertainty: e.Uncertainty, Samples: e.Samples, Inconsistent: e.Inconsistent})
	note.vFit, note.v0 = vc, p.Violations(&zero, 0)
	if note.v0 <= vc {
		note.kind = noteNoOffset
		return zero, note
	}
	note.kind = noteConsensus
	cons.Uncertainty = max(cons.Uncertainty, e.Uncertainty)
	cm := clock.Constant(cons)
	q := p.Consistent(&cm, 0)
	if m2 := q.Fit(fit); m2.Known && reliable(m2.Estimate()) {
		note.kind = noteRefit
		return m2, note
	}
	return cm, note
}

// reliable says an estimate may be applied as it is (warning about it
// when it is inconsistent).
func reliable(e clock.Estimate) bool { return e.Uncertainty <= maxTrustedNS }
