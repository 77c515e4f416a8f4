package assembly

import (
	"cmp"
	"slices"
)

// The FIFO evidence at a node whose requests fan out in parallel
// (nodeModel.parallel) ranks the open requests lacking a call's kind that
// have started their fan-out (sent a call) by when each started it (its
// first call sent) rather than by their arrival, ahead of those that have
// sent no call yet, which keep their arrival order; one learnt ratio as
// elsewhere. A parallel request sends its calls from goroutines or
// threads started together, so the order in which two open requests send
// their calls of one kind follows the order in which they sent their
// first calls, while the delay from the arrival to the first call varies
// with the load and need not keep their arrival order. On the testbed's
// tier2 (opaque payloads, 16 in flight), of the pairs of calls of one
// kind whose true requests were both open, the earlier call belongs to
// the request that sent its other calls first in 72-77 % and to the one
// that arrived first in 53-56 % (docs/accuracy.md, "A fan-out's calls
// follow its first call"). Where the ticks were spread (readyOrder) the
// readiness order of fifotie.go is kept, and so is the arrival order
// where most calls are handed a pooled connection (handedShare, as for
// the kind sets): there a call leaves when a connection frees. On the
// generated fan-out of causal/accuracy/testdata/unseen at 64 in flight,
// whose shards' pools are saturated, the fan-out order took its requests
// right from 7.9 to 1.3 %.

// fanOrder reports whether node model m ranks its FIFO evidence by the
// requests' fan-out starts: its requests fan out, most of its calls are
// not handed a pooled connection (fitWith sets m.fanStart) and the
// timestamps are not spread.
func (r *run) fanOrder(m *nodeModel) bool { return m.fanStart && r.l.arrLo == nil }

// fanStartEv is the event that ranks request q, whose calls are ks in
// order of send, for a call sent at t under the fan-out order: its first
// call if sent before t, else t itself (not started; ranked by arrival).
func (r *run) fanStartEv(q int32, ks []int32, t int64) readyEv {
	if len(ks) > 0 && r.sendOf(ks[0]) < t {
		return readyEv{r.sendOf(ks[0]), r.calls[ks[0]].callMsg}
	}
	return readyEv{t, r.calls[q].callMsg}
}

// fanRanks sets s.fifo for the eligible slots s.elig of a call sent at t
// under the fan-out order: those that started, ranked by their starts,
// then the others by arrival.
func (s *search) fanRanks(slots []slot, t int64) {
	started := func(sl *slot) bool { return sl.pos > 0 && sl.start < t }
	key := func(sl *slot) int64 {
		if started(sl) {
			return sl.start
		}
		return t
	}
	slices.SortFunc(s.elig, func(a, b int32) int {
		sa, sb := &slots[a], &slots[b]
		ka, kb := key(sa), key(sb)
		switch {
		case ka != kb:
			return cmp.Compare(ka, kb)
		case sa.p == sb.p:
			return 0
		case s.r.arrivedBefore(sa.p, sb.p):
			return -1
		}
		return 1
	})
	for k, i := range s.elig {
		s.fifo[i] = s.m.logFIFO(int8(min(k, fifoBins-1)))
	}
}

// fanFIFO is fifoOne under the fan-out order: the FIFO evidence of call
// d (kind bit k) in request p, under the local search's assignment.
func (ls *local) fanFIFO(p, d int32, k uint64) float64 {
	r := ls.r
	ep := ls.fanStartFor(p, d)
	rank := 0
	for _, q := range ls.candsOf(d) {
		if q == p || ls.made(q, d, k) {
			continue
		}
		if r.readyBefore(q, p, ls.fanStartFor(q, d), ep) {
			rank++
		}
	}
	return ls.m.logFIFO(int8(min(rank, fifoBins-1)))
}

// fanStartFor is fanStartEv for request q and call d under the local
// search's current assignment.
func (ls *local) fanStartFor(q, d int32) readyEv {
	ks := ls.kidsOf(q)
	if len(ks) > 0 && ls.cmpSend(ks[0], d) < 0 {
		return readyEv{ls.r.sendOf(ks[0]), ls.r.calls[ks[0]].callMsg}
	}
	return readyEv{ls.r.sendOf(d), ls.r.calls[q].callMsg}
}
