package assembly

// The search after the usual call's fill.
//
// The usual-call fill (usualcall.go) is a move of the calls and the
// models together: kept, it leaves node n with an assignment refined by
// the local search under models fitted on it, which no search has used.
// The fill was the last move of the last pass, so EM stopped there, one
// step after leaving the fixed point the fill was made to leave. A kept
// fill now gives the node one more last pass: the beam search from the
// start, the local search, the second start and the kind matchings, all
// under the fill's models, as any pass searches with the models fitted
// on the pass before it. Its answer is then compared with the fill's
// under those models (the fill's refined by the local search, the
// pass's by the local search and the matchings), and the higher kept
// (keepFill). That pass's fill is tried again but gives no further
// pass.
//
// On http/ids/sniffed/64 the fill is kept at the app (98 calls moved).
// Searched again with its models, the app's wrong calls go from 185 to
// 145 (its DNS lookups from 136 to 123, memcached and Redis calls from
// 49 to 22), where the same search under models fitted on the truth the
// same way (cross-fitted) leaves 176 (TestDiagnoseFairOracle with
// WIREPATH_DIAG_FO_MATCH); requests right 77.7 % → 79.5 %. On
// http/opaque/preload/64 a fill kept at tier2 scores higher than the
// pass after it, whose answer is not kept (it would have given 64.7 %
// of requests right instead of 65.1 %).

// refill is what the pass after a kept fill needs of it: whether it was
// given (done), and the fill's assignment with its objective under the
// fill's models, until that pass has compared them with its search's.
type refill struct {
	done bool
	asg  []int32
	obj  float64
}

// searchAfterFill reports whether node n's last pass is to be followed
// by one more (see above): the fill kept in it, kept before it was
// tried being the node's count of kept fills then, and no pass given
// for a fill yet. It keeps in rf the fill's assignment and its
// objective under the fill's models m and x.
func (r *run) searchAfterFill(n int32, kept int64, m *nodeModel, x *crossFit, rf *refill) bool {
	if rf.done || r.usualFills[n].kept == kept {
		return false
	}
	rf.done = true
	rf.asg = r.parentsOfCalls(r.childrenOf[n])
	rf.obj = newLocal(r, n, m, x).objective()
	return true
}

// keepFill puts the kept fill's assignment (rf) back in place of the
// search's where it scores higher under the models m and x, both
// assignments refined by the local search, as the second start is
// compared (keepBetterStart); it does nothing but in the pass after
// a kept fill.
func (r *run) keepFill(n int32, m *nodeModel, x *crossFit, rf *refill) {
	if rf.asg == nil {
		return
	}
	var cnt restartCounts
	r.keepBetterStart(n, m, x, rf.asg, rf.obj, &cnt)
	rf.asg = nil
}
