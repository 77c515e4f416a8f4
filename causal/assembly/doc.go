// Package assembly is the per-request assembly engine: it builds every
// request's causal tree, call by call, from a message trace.
//
// It pairs CALL and RETURN messages into calls exactly (by call id, stream
// id or connection order, whatever the timestamps say), takes every exact
// link the trace carries (a propagated request id shared with exactly one
// candidate parent, or the thread that received a request and served no
// other while it sent the call), and assigns the remaining calls of each
// node jointly: every outgoing call of a node gets exactly one enclosing
// incoming request at that node, or none (background), under hard
// constraints (a child is sent after its parent arrived and, for
// synchronous calls, answered before the parent's reply leaves, within a
// tolerance for clock error), maximising the joint likelihood of models
// learned from the capture itself (the call graph: which children each
// kind of request makes, in which order, how many, how long after which
// event, serial or parallel; shared content tokens; size relations) and
// re-fitted by expectation maximisation over a few passes. Each node's
// calls are solved in time order by a Viterbi search whose hypotheses are
// the states of the node's open requests: exact where no hypothesis had to
// be pruned, a beam search otherwise, and the accounting says how many
// windows and decisions were exact.
//
// Requests are the trees of calls grown from the calls into the system
// (made by nodes that serve no request); each link has a confidence and the
// best alternatives, each request a confidence, and the path patterns are
// aggregated from the requests (causal.Aggregator), so expected counts and
// maximum probabilities are the requests'. The result lists the requests
// (causal.Result.Requests).
//
// docs/causal-assembly.md describes the model, the search and their
// limits; search_ref_test.go holds a brute-force reference the search is
// checked against.
//
// This package must not know about file formats or rendering.
package assembly
