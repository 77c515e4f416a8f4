// Package linking is the message-linking engine of WAP5 (Reynolds et al.,
// WWW 2006, section 5.1): it infers causal paths from message timing
// alone, on one clock at a time, so it needs no clock synchronisation.
//
// The engine exposes its steps: Engine.Link estimates the mean causal
// delay of every sender pair and the link probabilities (steps 1 and 2, a
// Graph), and Engine.Paths builds the path instances from them (step 3);
// Engine.Infer runs both and aggregates the instances with a
// causal.Aggregator. DefaultOptions also use CALL/RETURN pairs, delay
// distributions learnt from the trace, per-root probabilities and
// in-instance parents; PureWAP5Options is the paper's algorithm.
// docs/causal.md specifies the algorithm and measures what each option
// adds; linking_ref_test.go holds a slow reference it is checked against.
//
// This package must not know about file formats or rendering.
package linking
