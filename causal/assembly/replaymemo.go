package assembly

// A pass's local searches share their replay scores. Within a pass of a
// node, the local search (improve), the chain matching's rounds and the
// single-call matching each make a local search of their own (newLocal),
// under the same models, and each replayed every request of the node
// to score it, where a request's score depends only on the request, its
// calls and the models (replayMemo): the first local search had scored
// most of them already. So the memo is kept per node while the node is
// solved, for the models it was made under, and a local search under the
// same models takes it over; a new model (each fit makes one) starts a
// new memo. The memo holds the models it was made for, so they cannot be
// collected and their addresses reused by the next pass's while it is
// kept: equal pointers are the same models.

// nodeReplays is a node's shared replay memo and the models it was made
// under (newLocal's m and x).
type nodeReplays struct {
	m    *nodeModel
	x    *crossFit
	memo *replayMemo
}

// replayMemoFor returns the replay memo of node n's local searches under
// the models m and x, with room for np requests: the one held, when it
// was made under the same models, else a new one, then held.
func (r *run) replayMemoFor(n int32, m *nodeModel, x *crossFit, np int) *replayMemo {
	if r.replays == nil {
		// a run not made by newRun (tests): nothing shared
		return &replayMemo{byReq: make([][]memoEntry, np)}
	}
	e := &r.replays[n]
	if e.memo == nil || e.m != m || e.x != x {
		*e = nodeReplays{m: m, x: x, memo: &replayMemo{byReq: make([][]memoEntry, np)}}
	}
	return e.memo
}
