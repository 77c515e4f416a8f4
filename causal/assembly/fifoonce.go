package assembly

// The FIFO evidence learnt once (issue 11). The FIFO ratio (section 3 of
// docs/causal-assembly.md) is learnt from the engine's own assignment,
// and hard EM makes it confirm itself: a pass searched with a ratio that
// favours the oldest waiting request gives it more of the calls, and the
// ratio fitted on that assignment is sharper still. On the generated
// fan-out at 16 requests in flight the ratio for the oldest request at a
// shard went 0.0, 0.9, 2.6, 4.3 (log) over the passes, against 1.1 on
// the true assignment, and the shards' cache reads, which leave a
// regular delay after their request's arrival whatever the others do,
// were given to the oldest request that had not made one: the truth
// scored 1,650 nats below the engine's answer, by the FIFO term alone.
// There the rank says what the delay from the arrival already says, and
// counting it again, at a ratio the search taught itself, decides the
// call.
//
// So at a node whose calls leave on their requests' own timing the
// ratio is learnt once, from an assignment the FIFO evidence did not
// make: the first fifoBlindPasses passes search without it (the first
// model has none), and the ratio fitted on the last of them is kept for
// every later pass. At the shard above the blind assignment gives the
// oldest request no more of the reads than the others (a ratio of
// e^0.03), and the delays decide them: the shards' wrong calls fell from
// 815 to 623 of 4,193, the truth scored 85–136 nats below the engine's
// answer at each shard instead of 520–1,650.
//
// Where the order of service is the evidence itself, the ratio is
// learnt every pass as before, and it is read from the trace alone
// which nodes those are: a node at least half of whose calls were
// handed a pooled connection (handedMin: the pool's waiters are served
// in an order the delays cannot show), a node with a thread queue
// (queue.go: requests start in order of arrival), a node whose
// requests make one call or none (no more calls than requests): there
// the call is the request's whole work, and where requests wait for it
// (the testbed's Go backends, waiting on their database pool) the
// order of the calls is the order of the waiting requests; and a
// parallel node (overOpenMax), whose requests send calls of several
// kinds in one burst after their arrival, which the ranks of the kinds
// tie together where each call's own delay tells little. Learnt once
// at the first two, the worker pool lost 2 points of requests at 16 in
// flight and the event loop and the fan-out 2–5 at 64; at the third,
// the testbed's backends kept a ratio of e^1.2 where the truth's is
// e^4.5–5.0, and backend→postgres fell from 96 to 80 % of calls right
// on gRPC, opaque, sniffed, 16 in flight (the 32 testbed runs: sum of
// cells 2,732.6 → 2,703.6); at the fourth, TestKindSetsFanOut's
// aggregator fell from 110 to 98 of 150 requests right.

// fifoBlindPasses is the number of a node's first passes searched
// without the FIFO evidence where it is learnt once.
const fifoBlindPasses = 2

// fifoOnce keeps the FIFO ratio of a node that learns it once.
type fifoOnce struct {
	on   bool     // the node learns its ratio once
	kept *lrTable // the ratio learnt, once it is
}

// newFIFOOnce decides whether node n, solved with its queue in mode qm,
// learns its FIFO ratio once (on the trace alone: the share of its calls
// handed a connection, its queue, and its calls a request).
func (r *run) newFIFOOnce(n int32, qm queueMode) *fifoOnce {
	return &fifoOnce{on: r.handedShare(n) < handedMin && qm != queueOn &&
		len(r.childrenOf[n]) > len(r.parentsOf[n]) && r.overOpenShare(n) < overOpenMax}
}

// step sets the FIFO ratio of m, the model fitted on the assignment of
// pass for the next pass (the last when nextLast): none while the next
// pass is one of the blind ones, else the ratio learnt after the last
// blind pass.
func (f *fifoOnce) step(m *nodeModel, pass int, nextLast bool) {
	switch {
	case !f.on:
	case f.kept != nil:
		m.fifo = *f.kept
	case pass+1 < fifoBlindPasses && !nextLast:
		m.fifo = newFallingLR(fifoBins)
	default:
		t := m.fifo
		f.kept = &t
	}
}
