package assembly

import "math"

// Settled calls in the local search. Every sweep tries every doubtful
// call's moves again, but after the first sweep most of a node's calls
// are where they were, among requests that have not changed since their
// moves were last tried and all refused: at 64 requests in flight on the
// testbed the last sweeps move a call or two of thousands and cost as
// much as the first. A move's replay scores depend only on the calls of
// the requests it changes, so a call whose request and target requests
// (targets) have not changed since its moves of one kind (a sweep) were
// last tried and refused, and whose FIFO evidence has not changed either,
// would be refused again, and is not tried: the sweep skips it. A move's
// FIFO evidence (local.fifo) is that of calls its requests could hold
// (local.affected), and each of those reads the calls of its own
// candidate requests: so a move of call c reads the requests that can
// hold a call at the positions (in the order of sends) that c's request
// and targets can hold, and a change of request p is one for c where the
// positions p can hold meet those. The skip changes no decision.

// The sweeps whose calls are marked settled.
const (
	sweepMove = iota
	sweepSwap
	sweepTail
	nSweeps
)

// settledState is the local search's record of changes: by request (its
// position at the node), the count of moves when its calls last
// changed; by sweep and call (its position), the count of moves when the
// call's moves in that sweep were last tried and all refused (-1: not
// since the search began).
type settledState struct {
	changed []int64
	tried   [nSweeps][]int64
	// log holds every move: its count and the positions (in local.order)
	// of the calls its requests can hold
	log []settledChange
	// skipped counts the calls' sweeps skipped; off tries every call in
	// every sweep (the tests' reference)
	skipped int64
	off     bool
}

// settledChange is one move in settledState's log.
type settledChange struct {
	at     int64
	lo, hi int32
}

// initSettled sizes the record for np requests and nc calls.
func (ls *local) initSettled(np, nc int) {
	ls.settled.changed = make([]int64, np)
	ls.settled.log = ls.settled.log[:0]
	for k := range ls.settled.tried {
		t := make([]int64, nc)
		for i := range t {
			t[i] = -1
		}
		ls.settled.tried[k] = t
	}
}

// noteChanged records that requests ps changed at the current move.
func (ls *local) noteChanged(ps []int32) {
	if ls.settled.changed == nil {
		return
	}
	lo, hi := int32(math.MaxInt32), int32(-1)
	for _, p := range ps {
		if p >= 0 {
			i := ls.r.parentPos[p]
			ls.settled.changed[i] = ls.moves
			if inv := ls.inv[i]; len(inv) > 0 {
				lo, hi = min(lo, int32(inv[0])), max(hi, int32(inv[len(inv)-1]))
			}
		}
	}
	ls.settled.log = append(ls.settled.log, settledChange{ls.moves, lo, hi})
}

// reads widens [lo, hi] by the positions request p can hold.
func (ls *local) reads(p int32, lo, hi int32) (int32, int32) {
	if inv := ls.inv[ls.r.parentPos[p]]; len(inv) > 0 {
		lo, hi = min(lo, int32(inv[0])), max(hi, int32(inv[len(inv)-1]))
	}
	return lo, hi
}

// isSettled reports whether call c's moves in sweep k were tried and
// refused since its request and its targets last changed.
func (ls *local) isSettled(k int, c int32) bool {
	if ls.settled.changed == nil || ls.settled.off {
		return false
	}
	t := ls.settled.tried[k][ls.r.childPos[c]]
	if t < 0 {
		return false
	}
	ch := ls.settled.changed
	at := ls.orderAt[ls.r.childPos[c]]
	lo, hi := at, at
	if a := ls.r.parent[c]; a >= 0 {
		if ch[ls.r.parentPos[a]] > t {
			return false
		}
		lo, hi = ls.reads(a, lo, hi)
	}
	for _, q := range ls.targets(c) {
		if ch[ls.r.parentPos[q]] > t {
			return false
		}
		lo, hi = ls.reads(q, lo, hi)
	}
	log := ls.settled.log
	for i := len(log) - 1; i >= 0 && log[i].at > t; i-- {
		if log[i].lo <= hi && lo <= log[i].hi {
			return false
		}
	}
	ls.settled.skipped++
	return true
}

// markTried records that call c's moves in sweep k were tried from
// before (the count of moves then): refused if no move was made since.
func (ls *local) markTried(k int, c int32, before int64) {
	if ls.settled.changed == nil {
		return
	}
	t := int64(-1)
	if ls.moves == before {
		t = before
	}
	ls.settled.tried[k][ls.r.childPos[c]] = t
}
