package reconcile

import (
	"cmp"
	"container/heap"
	"math"
	"slices"

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
// traced read that returned it) bounds off(Y) - off(X) <= ty - tx, whatever
// the delay, because delays are not negative. The smallest such difference
// each way between X and Y, dXY and dYX, give
//
//	-dYX <= off(Y) - off(X) <= dXY
//
// an interval whose width is the shortest round trip the two directions
// allow (MSHN keeps the shortest round trip; taking the smallest one-way
// difference each way is that, or better when the two smallest come from
// different round trips). Its midpoint, (dXY - dYX)/2, is exact when the
// smallest delays are symmetric (Paxson, WAP5 section 5.2); its half-width,
// (dXY + dYX)/2, bounds the error whatever the asymmetry.

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
	est, bad := solveClocks(len(st.domNames), st.ref, cs, r.snifferEdges(refSniffer))
	for _, k := range bad {
		st.warn("clocks %q and %q: the two directions' smallest delays have a negative sum (drifting clocks, or events paired wrongly); their offset is unreliable", st.domNames[k[0]], st.domNames[k[1]])
	}
	st.est = est
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
	stamped := map[int32]int64{}
	for i := range st.out {
		lm := &st.out[i]
		send, recv := r.stamps(st, lm, false)
		bs, br := best(&send), best(&recv)
		if bs.dom >= 0 {
			stamped[bs.dom]++
		}
		if br.dom >= 0 {
			stamped[br.dom]++
		}
		if bs.dom >= 0 && br.dom >= 0 {
			cs.add(bs.dom, bs.ts, br.dom, br.ts)
		}
		send, recv = r.stamps(st, lm, true)
		if t, s := send[slotTrace], sniffedWhole(&send); t.dom >= 0 && s.dom >= 0 {
			cs.add(t.dom, t.ts, s.dom, s.ts)
		}
		if t, s := recv[slotTrace], sniffedWhole(&recv); t.dom >= 0 && s.dom >= 0 {
			cs.add(s.dom, s.ts, t.dom, t.ts)
		}
	}
	return cs, stamped
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
func (r *Reconciler) snifferEdges(ref int32) []fixedEdge {
	if ref < 0 {
		return nil
	}
	var fixed []fixedEdge
	for i, sn := range r.opts.Sniffers {
		if sn.Known && !sn.Reference {
			fixed = append(fixed, edge{a: ref, b: int32(i), unc: sn.UncertaintyNS, samples: sn.Samples})
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
	for i := range st.out {
		lm := &st.out[i]
		rc := st.conns[lm.rc]
		en := msgEnds{send: st.nodeName(r, lm.hs, lm.spc, rc.epi[lm.dir]), recv: st.nodeName(r, lm.hr, lm.rpc, rc.epi[1-lm.dir])}
		st.ends[i] = en
		st.server[en.send] = st.server[en.send] || st.fixed[rc.epi[lm.dir]]
		st.server[en.recv] = st.server[en.recv] || st.fixed[rc.epi[1-lm.dir]]
		st.useDomain(en.send, r.endDomain(st, lm.hs))
		st.useDomain(en.recv, r.endDomain(st, lm.hr))
	}
	st.nodeDom = make(map[trace.Sym]int32, len(st.nodeUse))
	for n, m := range st.nodeUse {
		st.nodeDom[n] = busiestDomain(m)
	}
}

func (st *state) useDomain(n trace.Sym, d int32) {
	m := st.nodeUse[n]
	if m == nil {
		m = map[int32]int64{}
		st.nodeUse[n] = m
	}
	m[d]++
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
	case e.Known:
		c.Known, c.OffsetNS, c.UncertaintyNS, c.Samples, c.Method = true, e.Offset, e.Uncertainty, e.Samples, "messages"
		if d >= st.nSniffers && d == st.ref {
			c.Method = "reference"
		}
	}
	return c
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

// clockEdge is what the samples say about off(b) - off(a), a < b.
type clockEdge struct {
	minAB, minBA int64 // smallest tb - ta and ta - tb
	nAB, nBA     int
}

// clockSamples collects event pairs between domains.
type clockSamples struct {
	edges map[[2]int32]*clockEdge
}

func newClockSamples() *clockSamples {
	return &clockSamples{edges: map[[2]int32]*clockEdge{}}
}

// add records that an event at tx on domain x preceded one at ty on
// domain y.
func (cs *clockSamples) add(x int32, tx int64, y int32, ty int64) {
	if x == y || x < 0 || y < 0 {
		return
	}
	d := ty - tx
	k := [2]int32{x, y}
	if x > y {
		k = [2]int32{y, x}
	}
	e := cs.edges[k]
	if e == nil {
		e = &clockEdge{minAB: math.MaxInt64, minBA: math.MaxInt64}
		cs.edges[k] = e
	}
	if x == k[0] {
		e.nAB++
		e.minAB = min(e.minAB, d)
	} else {
		e.nBA++
		e.minBA = min(e.minBA, d)
	}
}

// Estimate is one domain's offset against the reference domain.
type Estimate struct {
	Known       bool
	Offset      int64 // domain clock minus reference clock, ns
	Uncertainty int64 // ns, summed along the path
	Samples     int   // smallest sample count along the path
	Hops        int   // edges along the path (0 for the reference)
}

// edge is one usable estimate of off(b) - off(a).
type edge struct {
	a, b        int32
	offset, unc int64
	samples     int
}

// fixedEdge is an estimate made elsewhere (pcapio's sniffer offsets).
type fixedEdge = edge

// solveClocks estimates every domain's offset against ref: from each
// sampled pair seen both ways and from the fixed edges, along the path of
// least summed uncertainty (as pcapio chains sniffers). Inconsistent pairs
// (a negative round trip: clocks that drift, or events paired wrongly) are
// returned by index for warnings and still used, with the absolute width.
func solveClocks(n int, ref int32, cs *clockSamples, fixed []fixedEdge) ([]Estimate, [][2]int32) {
	var edges []edge
	var bad [][2]int32
	keys := make([][2]int32, 0, len(cs.edges))
	for k := range cs.edges {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]int32) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	for _, k := range keys {
		e := cs.edges[k]
		if e.nAB == 0 || e.nBA == 0 {
			continue
		}
		off := floorHalf(e.minAB - e.minBA)
		unc := ceilHalf(e.minAB + e.minBA)
		if unc < 0 {
			bad = append(bad, k)
			unc = -unc
		}
		edges = append(edges, edge{a: k[0], b: k[1], offset: off, unc: unc, samples: e.nAB + e.nBA})
	}
	edges = append(edges, fixed...)
	adj := make([][]int, n)
	for i, e := range edges {
		if e.a < 0 || e.b < 0 || int(e.a) >= n || int(e.b) >= n {
			continue
		}
		adj[e.a] = append(adj[e.a], i)
		adj[e.b] = append(adj[e.b], i)
	}
	est := make([]Estimate, n)
	if ref < 0 || int(ref) >= n {
		return est, bad
	}
	est[ref] = Estimate{Known: true, Samples: math.MaxInt}
	done := make([]bool, n)
	pq := &estHeap{{dom: ref}}
	for pq.Len() > 0 {
		it := heap.Pop(pq).(estItem)
		if done[it.dom] {
			continue
		}
		done[it.dom] = true
		cur := est[it.dom]
		for _, ei := range adj[it.dom] {
			e := edges[ei]
			next, off := e.b, e.offset
			if e.b == it.dom {
				next, off = e.a, -e.offset
			}
			if done[next] {
				continue
			}
			u := cur.Uncertainty + e.unc
			if !est[next].Known || u < est[next].Uncertainty || (u == est[next].Uncertainty && cur.Hops+1 < est[next].Hops) {
				est[next] = Estimate{Known: true, Offset: cur.Offset + off, Uncertainty: u, Samples: min(cur.Samples, e.samples), Hops: cur.Hops + 1}
				heap.Push(pq, estItem{dom: next, unc: u, hops: cur.Hops + 1})
			}
		}
	}
	est[ref].Samples = 0
	for i := range est {
		if est[i].Samples == math.MaxInt {
			est[i].Samples = 0
		}
	}
	return est, bad
}

func floorHalf(x int64) int64 {
	if x < 0 {
		return -((-x + 1) / 2)
	}
	return x / 2
}

func ceilHalf(x int64) int64 {
	if x < 0 {
		return -(-x / 2)
	}
	return (x + 1) / 2
}

type estItem struct {
	dom  int32
	unc  int64
	hops int
}

type estHeap []estItem

func (h estHeap) Len() int { return len(h) }
func (h estHeap) Less(i, j int) bool {
	return h[i].unc < h[j].unc || (h[i].unc == h[j].unc && (h[i].hops < h[j].hops || (h[i].hops == h[j].hops && h[i].dom < h[j].dom)))
}
func (h estHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *estHeap) Push(x any)   { *h = append(*h, x.(estItem)) }
func (h *estHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
