package assembly

// More passes where EM has not settled. Every node runs Options.Passes
// passes; where the last of them still moved many of the node's calls
// to other requests, hard EM was still going somewhere, and stopping
// there left, on the testbed's gRPC backends at 64 requests in flight,
// half of the queries with the wrong part request (and 16 % of requests
// right, where six passes make 66 %). Such a node runs more passes, up to
// Options.MaxPasses, until a pass moves at most settledShare of its
// calls. Hard EM can also go wrong for good: the model fitted on an
// assignment in which some requests lost their calls to others makes more
// of them lose theirs, pass after pass (a fan-out node without an
// isolated request to learn its call graph from ended with 301 of its
// 412 requests making no call). So an extra pass that leaves more than
// degenerateShare more of the node's requests without any call, or
// more than that share more of its calls with no request, is the last
// that moves: the final pass searches with the model it used, not one
// fitted on its assignment.

const (
	// settledShare is the share of a node's calls moved by a pass below
	// which the node's assignment has settled.
	settledShare = 0.15
	// degenerateShare is the rise, in an extra pass, of the share of the
	// node's requests with no call or of its calls with no request from
	// which EM is taken to be collapsing.
	degenerateShare = 0.02
)

// passPlan decides when a node's passes stop.
type passPlan struct {
	min, max int
	prev     []int32 // the request of each of the node's calls after the last pass
	noCall   int     // requests with no call after the last pass
	noReq    int     // calls with no request after the last pass
	stop     bool    // the next pass is the last
}

func (r *run) newPassPlan(n int32) *passPlan {
	return &passPlan{min: r.opt.Passes, max: max(r.opt.Passes, r.opt.MaxPasses), prev: make([]int32, len(r.childrenOf[n]))}
}

// last reports whether pass (from 0) is the node's last: after its first
// pass a node has no assignment to measure the next one's moves against,
// so with Passes 1 or 2 it runs no more.
func (pl *passPlan) last(pass int) bool {
	return pl.stop || pass >= pl.max-1 || pass == 0 && pl.min == 1
}

// after records the assignment of node n after pass, which was not its
// last, and decides whether the next is; it reports whether the next
// pass must keep the model that pass used (EM collapsing).
func (pl *passPlan) after(r *run, n int32, pass int) (keep bool) {
	kids := r.childrenOf[n]
	moved := 0
	has := make(map[int32]bool, len(r.parentsOf[n]))
	noReq := 0
	for i, c := range kids {
		p := r.parent[c]
		if p != pl.prev[i] {
			moved++
		}
		pl.prev[i] = p
		if p >= 0 {
			has[p] = true
		} else {
			noReq++
		}
	}
	return pl.decide(pass, passStats{moved, len(kids), len(r.parentsOf[n]) - len(has), len(r.parentsOf[n]), noReq})
}

// passStats describe a node's assignment after a pass: how many of its
// calls the pass moved, of how many; how many of its requests made no
// call, of how many; how many calls went to no request.
type passStats struct {
	moved, calls int
	noCall, reqs int
	noReq        int
}

// decide is after on the pass's statistics.
func (pl *passPlan) decide(pass int, st passStats) (keep bool) {
	extra := pass >= pl.min-1
	collapsing := extra && (float64(st.noCall-pl.noCall) > degenerateShare*float64(st.reqs) ||
		float64(st.noReq-pl.noReq) > degenerateShare*float64(st.calls))
	pl.noCall, pl.noReq = st.noCall, st.noReq
	switch {
	case pass+1 < pl.min-1:
		// the next pass is not the last in any case
	case collapsing:
		pl.stop = true
		return true
	case pass == 0 || float64(st.moved) <= settledShare*float64(st.calls):
		pl.stop = true
	}
	return false
}
