package assembly

// The local search's FIFO evidence where candidates are ranked by
// readiness (fifotie.go: the ticks were spread). A call's rank there
// counts the requests that became ready for it before its own: each one's
// arrival, or the return of its last answered call before the call left,
// whatever that call's kind; and the chance that two requests of one tick
// came in either order moves with the kinds of the calls each already
// made (readyProb). So a move of a call of one kind changes the evidence
// of the later calls of every kind its requests could hold, not only of
// its own kind: moved to the other request, its return makes that one
// ready at another instant. The local search weighed the calls of the
// moved kinds only (local.affected, as at fine timestamps, where the rank
// is the arrival's and the calls made are of the call's kind alone), and
// kept moves that, weighed over every call, lowered the objective (a
// swap of two calls of one kind raised their own evidence while a later
// call of another kind fell in rank, unweighed). Weighed over every kind,
// or with the swap sweep left out, the requests exactly right on the
// generated node trace (1 ms timestamps) rose from 91.8 to 93.1 %, and on
// media from 82.0 to 82.6 % (docs/accuracy.md, "Moves weighed by every
// call they change").

// movedKinds returns the kind bits whose calls' FIFO evidence a move of
// calls of kinds kb can change (local.affected): every kind where a
// request's first call moved moves its fan-out start (fanOrder) or where
// candidates are ranked by readiness (the ticks were spread), kb
// elsewhere.
func (ls *local) movedKinds(kb uint64) uint64 {
	if ls.r.fanOrder(ls.m) || ls.r.l.arrLo != nil {
		return ^uint64(0)
	}
	return kb
}
