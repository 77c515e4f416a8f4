package assembly

// The last pass's second start. The last pass searches with the
// cross-fitted models (crossfit.go): each link scored by a model that
// was not fitted on it, which keeps hard EM from learning its own links
// by heart, but each half-model has seen half the node's requests, and
// on the testbed's sniffed application tier at 16 requests in flight the
// search then stops far from the best assignment of its own objective:
// the true assignment scores 411 (HTTP) and 467 (gRPC) nats higher under
// the cross-fitted models than the engine's answer (TestDiagnose), and a
// search of the same node with the model fitted on everything, from the
// same assignment, finds one with 321 and 218 calls wrong against the
// engine's 375 and 298. So the last pass also searches from a second
// start: the beam and the local search with the model fitted on
// everything, then the local search with the cross-fitted models, and
// that assignment replaces the cross-fitted search's where the node's
// whole cross-fitted objective (local.objective) is higher. The
// objective decides, as for the chain matching (chains.go): a start that
// memorised the previous pass's links is kept only where the models not
// fitted on them agree that it is better.

// trialCounts count a last-pass trial at a node (a second start, a kind
// matching): tries, tries whose answer was kept, and the calls the kept
// ones gave another request.
type trialCounts struct {
	tried, kept, changed int64
}

// restartCounts are the second starts' counts at a node.
type restartCounts = trialCounts

// countTrials sums cs over the nodes and counts the sums under the
// names tried, kept and moved.
func countTrials(count countFunc, cs []trialCounts, tried, kept, moved string) {
	var s trialCounts
	for _, c := range cs {
		s.tried += c.tried
		s.kept += c.kept
		s.changed += c.changed
	}
	count(tried, s.tried)
	count(kept, s.kept)
	count(moved, s.changed)
}

// fullStart searches node n's timeline evs with the model m fitted on
// everything (scoring each call by its marginal over the beam, as the
// last pass's own search does), refines the assignment with the cross-fitted models x and
// returns it (the parents of node n's calls, in childrenOf's order) with
// its objective under x; the run's assignment is left as the search and
// local search made it.
func (r *run) fullStart(n int32, evs []event, m *nodeModel, x *crossFit) ([]int32, float64) {
	s := newSearch(r, n, m)
	s.sum = true // as the last pass's own search (on the 32 testbed runs: sum of the cells 2,740.0, 2,739.1 with the best hypothesis's scores)
	s.run(evs)
	r.improve(n, m, x, 20)
	return r.parentsOfCalls(r.childrenOf[n]), newLocal(r, n, m, x).objective()
}

// keepBetterStart puts the second start's assignment asg (objective obj,
// from fullStart) in place of node n's current one where obj is higher
// under the cross-fitted models x, and counts it in cnt.
func (r *run) keepBetterStart(n int32, m *nodeModel, x *crossFit, asg []int32, obj float64, cnt *restartCounts) {
	cnt.tried++
	if obj <= newLocal(r, n, m, x).objective()+improveEps {
		return
	}
	cnt.kept++
	for i, c := range r.childrenOf[n] {
		if r.parent[c] != asg[i] {
			cnt.changed++
		}
	}
	r.setParentsOfCalls(r.childrenOf[n], asg)
}

// countRestarts counts the last pass's second starts: the nodes where
// one was tried, those where its assignment was kept, and the calls the
// kept ones gave another request than the cross-fitted search and local
// search had.
func (r *run) countRestarts(count countFunc) {
	countTrials(count, r.restarts, "second_starts", "second_starts_kept", "second_start_calls_moved")
}
