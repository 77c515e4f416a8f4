package assembly

import (
	"cmp"
	"math"
	"slices"
)

// The waiters of a pool (issue 11, docs/causal-assembly.md "Waiters of
// a pool"). A call handed a serial connection just freed (run.freed) was
// most often waiting for one: a pool all of whose connections were busy
// queues the requests that ask for one and hands each connection freed
// to the request that has waited longest. Which request waited longest
// is not its arrival (the FIFO evidence) but how long it has been idle:
// a request's wait starts at its latest trigger (its arrival or the
// latest reply to come back to it, slot.last), and it sends nothing
// meanwhile. So for a handed call, every candidate request with no call
// of its own out is ranked by its latest trigger, and the rank is
// evidence, learnt as the FIFO evidence is (the ratio of the bin for the
// request the call was assigned to against the bins of its other
// candidates). The freeing request itself ranks after every request that
// waited before the freeing (its latest trigger is the freeing reply),
// which is the order a pool with waiters serves. The ratio is learnt
// falling with the rank (newFallingLR): a pool that hands its connections
// at random learns a flat one, and the term is then zero. It is scored
// only at a node most of whose calls are handed a connection
// (nodeModel.handApart), the node whose handoffs are learnt apart too.

// waitBins is the number of bins of the waiters' evidence: the rank of
// an idle request among the idle candidates of a handed call, 0 for the
// one idle longest, capped at waitBins-1.
const waitBins = 4

// waitInformative reports whether the waiters' evidence can change a
// score.
func (m *nodeModel) waitInformative() bool { return m.wait.nl >= 1 && m.wait.no >= 1 }

// logWait is the log likelihood ratio of waiters' bin b (-1: none).
func (m *nodeModel) logWait(b int8) float64 {
	if b < 0 {
		return 0
	}
	return m.wait.logLR(int(b))
}

// waiter is one idle candidate of a handed call: its index (a slot, or a
// candidate request) and when its wait started.
type waiter struct {
	i    int32
	p    int32
	last int64
}

// rankWaiters sets bin[w.i] to the rank of every waiter of ws by the
// start of its wait (ties by request, the order of the trace), capped at
// waitBins-1. ws is sorted in place.
func rankWaiters(ws []waiter, bin []int8) {
	slices.SortFunc(ws, func(a, b waiter) int {
		if a.last != b.last {
			if a.last < b.last {
				return -1
			}
			return 1
		}
		return int(a.p) - int(b.p)
	})
	for rank, w := range ws {
		bin[w.i] = int8(min(rank, waitBins-1))
	}
}

// waitRanks sets s.wait[i], for each slot i of h, to the waiters' bin of
// call c going to it; -1 when c was not handed a connection, when the
// slot has a call out or cannot hold c, and for every slot at a node
// whose handoffs are not apart (nodeModel.handApart: there the FIFO
// evidence, which ranks by arrival, is the order, and at a node whose
// requests wait for a connection as soon as they arrive the two ranks
// are one, which would be counted twice).
func (s *search) waitRanks(h *hyp, c int32) {
	s.wait = s.wait[:0]
	for range h.slots {
		s.wait = append(s.wait, -1)
	}
	if s.r.freed[c] == noTime || !s.m.handApart || !s.m.waitInformative() {
		return
	}
	s.waiters = s.waiters[:0]
	for i := range h.slots {
		sl := &h.slots[i]
		if sl.out == 0 && s.feasible(c, sl.p) {
			s.waiters = append(s.waiters, waiter{i: int32(i), p: sl.p, last: sl.last})
		}
	}
	rankWaiters(s.waiters, s.wait)
}

// observeWaiters records the waiters' bins of every handed call of node
// n for the request it was assigned to and for its other candidates,
// each in its state when the call left (observeFIFO's counterpart).
func (r *run) observeWaiters(n int32, m *nodeModel, asg func(int32) int32, byParent map[int32][]int32, w func(int32) float64) {
	var ws []waiter
	var bin []int8
	r.sweep(n, func(c int32, cands []int32) {
		a := asg(c)
		if a == undecided || r.freed[c] == noTime {
			return
		}
		t := r.sendOf(c)
		ws = ws[:0]
		bin = bin[:0]
		for qi, q := range cands {
			bin = append(bin, -1)
			last, idle := r.idleAt(q, byParent[q], c, t)
			if idle {
				ws = append(ws, waiter{i: int32(qi), p: q, last: last})
			}
		}
		rankWaiters(ws, bin)
		for qi, q := range cands {
			switch {
			case bin[qi] < 0:
			case q == a:
				m.wait.addLink(int(bin[qi]), w(c))
			default:
				m.wait.addOther(int(bin[qi]), w(c))
			}
		}
	})
}

// idleAt returns request p's latest trigger before call c left at t (its
// arrival or the latest reply to one of its calls ks, in order of send),
// and whether it then had no call of its own out, as a search's slot of
// p would hold them.
func (r *run) idleAt(p int32, ks []int32, c int32, t int64) (last int64, idle bool) {
	last = r.arrOf(p)
	if pc := &r.calls[p]; pc.arr != noTime {
		last = pc.arr
	}
	idle = true
	for _, d := range ks {
		if d == c {
			continue
		}
		if r.sendOf(d) > t {
			break
		}
		dc := &r.calls[d]
		if dc.retMsg < 0 || dc.flags&flagOneWay != 0 {
			continue
		}
		if dc.back != noTime && dc.back <= t {
			last = max(last, dc.back)
		} else {
			idle = false
		}
	}
	return last, idle
}

// The handoff's delay. A request handed a connection it waited for sends
// its call when the connection is freed, whatever its own delays: its own
// processing ended before (it was then ready, and waited) and the pool's
// handoff took the rest. So the handed call's timing, read as a waiter's,
// is the probability that the request's own delay since its latest
// trigger had ended by the freeing (readyBy) times the density of the
// handoff's delay after it, learnt per node apart from the requests' own
// delays (nodeModel.hand): learnt into them, the waiters' delays of zero
// would make a peak at zero there, at which the freeing request reads its
// own next call on the connection it just freed, and takes the call from
// the waiter it was handed to.

// noGap is observedGaps' waited for a call whose delays are not learnt.
const noGap = -2

// addHand records a handoff's delay d (a handed call's send after the
// freeing of its connection) with weight w.
func (m *nodeModel) addHand(d int64, w float64) {
	if m.hand == nil {
		m.hand = &handModel{}
	}
	m.hand.h.add(gapBin(d), w)
	m.hand.d = nil
}

// handModel is a node's handoff delays and, once computed, their log
// densities.
type handModel struct {
	h hist
	d *[nGapBins]float64
}

// logHand returns the log density of a handoff's delay d.
func (m *nodeModel) logHand(d int64) float64 {
	if m.hand == nil {
		m.hand = &handModel{}
	}
	if m.hand.d == nil {
		mass := mixMass(&m.hand.h, &priorMass)
		m.hand.d = logDensity(&mass, m.res)
	}
	return m.hand.d[gapBin(d)]
}

// readyBy returns the log probability that a request whose latest trigger
// was gl ago and which arrived ga ago (at the freeing) had ended its own
// delay before its next call by then: the scorer's delay distribution,
// both anchors, summed up to those delays.
func (sc *scorer) readyBy(gl, ga int64) float64 {
	if sc.cum == nil {
		sc.cum = new([2][nGapBins]float64)
		var sl, sa float64
		for b := range nGapBins {
			w := gapWidth[b]
			if b == 0 {
				w = 1
			}
			sl += math.Exp(sc.dl[b]+sc.lw) * w
			sa += math.Exp(sc.da[b]+sc.la) * w
			sc.cum[0][b], sc.cum[1][b] = sl, sa
		}
	}
	p := sc.cum[0][gapBin(gl)] + sc.cum[1][gapBin(ga)]
	return math.Log(min(max(p, 1e-12), 1))
}

// handedMin is the share of a node's calls handed a connection just
// freed (run.freed) from which its handoffs are learnt apart and its
// waiters ranked (nodeModel.handApart): a majority of its calls waited
// for a pool.
const handedMin = 0.5

// handCallsMin is the calls a node makes per request it serves, on the
// trace, from which its handoffs may be apart: a request that makes one
// call has no next call for the connection its reply freed, and at a
// saturated pool of one-call requests (TestNoCollapse's gateway at 64 in
// flight) the waiters' reading gave the requests done with their call
// the handed calls of those still waiting (586 of 1,000 with none).
const handCallsMin = 1.5

// handApart reports whether node n's handoffs are learnt and read apart
// and its waiters ranked (nodeModel.handApart): at least handedMin of its
// calls handed a connection, and at least handCallsMin calls a request.
func (r *run) handApart(n int32) bool {
	return r.handedShare(n) >= handedMin && float64(len(r.childrenOf[n])) >= handCallsMin*float64(len(r.parentsOf[n])) &&
		r.overOpenShare(n) < overOpenMax
}

// overOpenMax is the share of a node's calls sent while it has more calls
// out than requests open from which its requests are taken to call in
// parallel, and its waiters are not ranked: a request of a serial node has
// at most one call out, so its calls out never outnumber its open requests
// (but for background calls), where a fan-out request has several.
const overOpenMax = 0.2

// overOpenShare returns the share of node n's calls sent while the node
// had more calls out (this one included) than requests open, on the
// trace alone: no assignment is needed.
func (r *run) overOpenShare(n int32) float64 {
	type ev struct {
		t     int64
		dReq  int
		dOut  int
		isOut bool
	}
	var evs []ev
	for _, p := range r.parentsOf[n] {
		pc := &r.calls[p]
		if pc.arr == noTime || pc.rep == noTime {
			continue
		}
		evs = append(evs, ev{t: pc.arr, dReq: 1}, ev{t: pc.rep, dReq: -1})
	}
	for _, c := range r.childrenOf[n] {
		cc := &r.calls[c]
		if cc.send == noTime || cc.back == noTime {
			continue
		}
		evs = append(evs, ev{t: cc.send, dOut: 1, isOut: true}, ev{t: cc.back, dOut: -1})
	}
	// at one instant: requests open and replies back first, then sends,
	// then requests closed
	rank := func(e ev) int {
		switch {
		case e.dReq > 0 || e.dOut < 0:
			return 0
		case e.isOut:
			return 1
		}
		return 2
	}
	slices.SortFunc(evs, func(a, b ev) int {
		if a.t != b.t {
			return cmp.Compare(a.t, b.t)
		}
		return cmp.Compare(rank(a), rank(b))
	})
	open, out, over, sends := 0, 0, 0, 0
	for _, e := range evs {
		open += e.dReq
		out += e.dOut
		if e.isOut {
			sends++
			if out > open {
				over++
			}
		}
	}
	if sends == 0 {
		return 0
	}
	return float64(over) / float64(sends)
}
