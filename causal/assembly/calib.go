package assembly

// Doubt from the requests left with no call (issue 11).
//
// The members of the ensemble (members.go) share what the node's model
// learnt from the engine's own assignment. Where timing cannot tell the
// candidates apart, at a busy node whose delays are long and variable,
// that assignment gives a call to the open request nearest in time; the
// model learns short delays and many requests with no call from it, and
// every member is then sure of the same wrong answer (the testbed's app
// tier at 64 in flight, opaque and sniffed: 485 of its 860 requests given
// no call where 90 made none, learnt delays a median 2.2 ms where the
// truth's is 8.1 ms; links stated 0.6–0.9 right 24–32 % of the time).
// The halves cannot see it, and neither can the beam's pruned mass.
//
// The node's first model can. It comes from the timeline alone, before
// any assignment (the deconvolution, fit.go), and says how many of the
// node's requests make no call. A request the assignment leaves with no
// call beyond that number is wrong (its calls went to others, which are
// wrong too), whatever the model says of it; so the share of the node's
// requests left empty beyond the first model's expectation is a share of
// the assignment the evidence does not back. That share of every call's
// posterior, in each member, is spread evenly over its candidates and
// none (unback): the posterior the timing gives where it tells nothing.
// A node whose assignment leaves no more requests empty than its first
// model expects keeps its posterior as it was. Nothing is fitted to a
// run, and no assignment changes: posterior sets the confidences after
// the local search.

import "math"

// noCallExcess returns, for node n, the requests its assignment left
// with no call, and how many its first model (the deconvolution's, from
// the timeline alone, before any assignment) expects to make none.
func (r *run) noCallExcess(n int32) (left, expect float64) {
	m0 := r.firstModels[n]
	if m0 == nil {
		return 0, 0
	}
	made := make(map[int32]bool)
	for _, c := range r.childrenOf[n] {
		if p := r.parent[c]; p >= 0 {
			made[p] = true
		}
	}
	for _, p := range r.parentsOf[n] {
		if !made[p] {
			left++
		}
		expect += math.Exp(m0.logTrans(ctxKey{pk: r.calls[p].kind, prev: noKind}, endKind))
	}
	return left, expect
}

// backing returns the share of node n's posterior its evidence backs: 1
// less the share of its requests left with no call beyond what its first
// model expects and one standard deviation of that count (1 where it
// left no more than that).
func (r *run) backing(n int32) float64 {
	left, expect := r.noCallExcess(n)
	req := float64(len(r.parentsOf[n]))
	if req == 0 {
		return 1
	}
	// beyond chance: the count's binomial standard deviation
	p := min(1, expect/req)
	excess := left - expect - math.Sqrt(req*p*(1-p))
	if excess <= 0 {
		return 1
	}
	return max(0, 1-excess/req)
}

// unback spreads the share 1 − backed of the distribution ps evenly over
// its entries.
func unback(ps []float64, backed float64) {
	if backed >= 1 || len(ps) == 0 {
		return
	}
	u := (1 - backed) / float64(len(ps))
	for i := range ps {
		ps[i] = backed*ps[i] + u
	}
}
