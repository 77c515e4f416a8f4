package assembly

import (
	"maps"
	"math"
	"slices"
)

// A node's FIFO evidence (search.fifoBins) is learnt alone, P(rank |
// link) / P(rank | other), and added to the delays' log densities. Where
// the node serves its requests in order (a queue, an event loop, a pool
// of workers) the rank tells what the delays cannot: a request ready
// earlier goes first more often than its delays alone would make it. Where
// each request's delays are drawn on their own, the rank is read from the
// same times the delays are, and the ratio counts them again.
//
// fifoOrder tells the two apart on the assignment, at fine timestamps
// (spread ticks keep coarseFIFOWeight: there the rank stands for the
// order inside a tick the delays cannot read), and at nodes whose
// requests fan out in parallel (nodeModel.parallel) keeps the full
// weight: there a request's calls are all ready at its arrival, and
// where their delays are flat the rank is what breaks the ties
// (TestKindSetsFanOut: 111 of 150 requests right with the full weight,
// 104 with the learnt one). For every call and every
// other request that became ready for a call of its kind before the
// call's request did, and makes one, it compares whether that request was
// still waiting (had not yet made it) when the call left with the chance
// it would be, were the delays drawn independently: the survival of the
// links' delays since ready, of that kind, learnt from the same
// assignment, at the time the other request had waited. A node that
// serves in order leaves fewer waiting than independence predicts (none,
// strictly FIFO); one whose delays are independent as many. The FIFO
// evidence is weighed by the share the order removed (fifoOrder.weight).

// fifoDelayBins is the number of bins of a delay since ready.
const fifoDelayBins = 64

// fifoDelayBin bins a delay since ready: zero or less, then half octaves
// of microseconds.
func fifoDelayBin(d int64) int {
	if d <= 0 {
		return 0
	}
	b := 1 + int(2*math.Log2(float64(d)/1e3+1))
	return min(b, fifoDelayBins-1)
}

// fifoOrder collects a node's links' delays since ready and its pairs of
// requests ready one before the other (observeFIFO), by the kind of the
// call, and gives the weight of the FIFO evidence (fifoOrder.weight).
type fifoOrder struct {
	calls, rivals float64 // calls seen, and their other candidates without a call of the kind yet
	kinds         map[int32]*fifoKind
}

// fifoKind is fifoOrder's record of the calls of one kind.
type fifoKind struct {
	links [fifoDelayBins]float64 // the links' delays since ready
	// waits[b] and waited[b]: the other requests ready before a call's own,
	// by the bin of the time they had been ready when it left, and those
	// of them still waiting
	waits, waited [fifoDelayBins]float64
}

func (f *fifoOrder) kind(k int32) *fifoKind {
	if f.kinds == nil {
		f.kinds = make(map[int32]*fifoKind)
	}
	fk := f.kinds[k]
	if fk == nil {
		fk = new(fifoKind)
		f.kinds[k] = fk
	}
	return fk
}

// link records a link whose request had been ready for d when it left.
func (f *fifoKind) link(d int64, w float64) { f.links[fifoDelayBin(d)] += w }

// earlier records another request, ready for d when a call whose own
// request was ready later left, and whether it was still waiting.
func (f *fifoKind) earlier(d int64, waiting bool, w float64) {
	b := fifoDelayBin(d)
	f.waits[b] += w
	if waiting {
		f.waited[b] += w
	}
}

// waiting returns the other requests still waiting and those that would
// have been, were the delays independent (each still waiting with the
// chance a link's delay is longer than it had been ready, half of its
// own bin's).
func (f *fifoKind) waiting() (obs, pred float64) {
	var n float64
	for _, v := range f.links {
		n += v
	}
	if n == 0 {
		return 0, 0
	}
	surv := n // links with a delay in bin b or later
	for b := range fifoDelayBins {
		pred += f.waits[b] * (surv - f.links[b]/2) / n
		obs += f.waited[b]
		surv -= f.links[b]
	}
	return obs, pred
}

// weight returns the FIFO evidence's weight: 1 − (observed + 1) /
// (predicted + 1) waiting requests (fifoOrder's comment; one of each
// added so that a node with few pairs is not read as strictly FIFO),
// clamped to [0, 1], and brought back towards 1 by the mean number of
// rivals a call had (candidates without a call of its kind yet): with one
// or more the weight stays 1. Where requests overlap that much the
// delays decide less and the order is what is left (the unseen systems
// at 16 and 64 requests in flight lost up to two thirds of their requests
// exactly right when the weight was learnt there too: docs/accuracy.md,
// "The FIFO evidence weighed by the order a node serves in").
func (f *fifoOrder) weight() float64 {
	if f.calls == 0 {
		return 1
	}
	var pred, obs float64
	for _, k := range slices.Sorted(maps.Keys(f.kinds)) {
		o, p := f.kinds[k].waiting()
		obs, pred = obs+o, pred+p
	}
	w := min(max(1-(obs+1)/(pred+1), 0), 1)
	few := max(0, 1-f.rivals/f.calls)
	return 1 - (1-w)*few
}

// observeOrder records, for call c (of kind k, sent at t) assigned to a,
// a's delay since ready and every other candidate request that became
// ready for a call of kind k before a did and makes one in the
// assignment, with whether it was still waiting at t (fifoOrder). es and
// rs are the candidates without a call of kind k before t and when each
// became ready (observeFIFO).
func (r *run) observeOrder(f *fifoOrder, a, c int32, t int64, k int32, cands, es []int32, rs []readyEv, byParent map[int32][]int32, w float64) {
	ia := -1
	for i, e := range es {
		if e == a {
			ia = i
		}
	}
	if ia < 0 {
		return
	}
	ra := rs[ia].t
	f.calls++
	f.rivals += float64(len(es) - 1)
	fk := f.kind(k)
	fk.link(t-ra, w)
	for i, e := range es {
		if e == a || rs[i].t >= ra || !r.makesKind(byParent[e], k) {
			continue
		}
		fk.earlier(t-rs[i].t, true, w)
	}
	for _, q := range cands {
		if q == a || slices.Contains(es, q) {
			continue
		}
		// q made its call of kind k before t: when it became ready for it
		// (its arrival, or its last reply before it where observeFIFO reads
		// readiness so)
		rd := r.arrOf(q)
		for _, d := range byParent[q] {
			if r.calls[d].kind == k || r.l.arrLo == nil {
				break
			}
			if b := r.calls[d].back; b != noTime && b < r.sendOf(d) && b > rd {
				rd = b
			}
		}
		if rd < ra {
			fk.earlier(t-rd, false, w)
		}
	}
}

// makesKind reports whether one of ks is of kind k.
func (r *run) makesKind(ks []int32, k int32) bool {
	for _, d := range ks {
		if r.calls[d].kind == k {
			return true
		}
	}
	return false
}
