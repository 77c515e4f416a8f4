package reconcile

import (
	"cmp"
	"container/heap"
	"math"
	"slices"
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
