package assembly

// A queue that collapses the assignment (issue 11). A node whose first
// pass hints at a queue (queue.go) is solved again from a first model
// whose deconvolution reads its requests' arrivals at the starts of their
// service. Where the node's requests wait for a pooled connection to the
// node they call rather than for a thread of their own (a gateway of 64
// requests in flight over 16 connections), the k-server starts come
// after the calls that were handed the freed connections, the first
// model reads those calls as no request's first, and the passes then
// left 875 of the gateway's 1,000 requests with no call (the first pass
// without the queue: 269) and a few with up to 32. The queue's own test,
// whether it gains a nat for every request it says waited, is made under
// models fitted on that assignment, which it explains well. So a queue
// whose passes leave more than degenerateShare more of the node's
// requests with no call than the pass that hinted at it is the collapse
// the pass plan guards against (passes.go) and is rejected: the node is
// solved again without it.

// noCallCount returns how many of node n's requests made no call in its
// current assignment.
func (r *run) noCallCount(n int32) int {
	has := make(map[int32]bool, len(r.parentsOf[n]))
	for _, c := range r.childrenOf[n] {
		if p := r.parent[c]; p >= 0 {
			has[p] = true
		}
	}
	return len(r.parentsOf[n]) - len(has)
}

// queueCollapsed reports whether node n's assignment under its queue
// leaves more than degenerateShare more of its requests with no call
// than the pass that hinted at the queue.
func (r *run) queueCollapsed(n int32) bool {
	return float64(r.noCallCount(n)-r.queue[n].hintNoCall) > degenerateShare*float64(len(r.parentsOf[n]))
}

// dropQueue forgets node n's queue: its requests' delays are read from
// their arrivals again.
func (r *run) dropQueue(n int32) {
	for _, p := range r.parentsOf[n] {
		r.qbegin[p] = noTime
	}
	r.queue[n] = queueState{tried: r.queue[n].tried, hintNoCall: r.queue[n].hintNoCall}
}
