// Package causal infers causal path patterns from a message trace.
//
// It holds three engines behind one interface, Engine: message linking
// (WAP5 section 5), nesting and convolution (Project 5 sections 5.1 and 5.2).
// Every engine reads a trace.Messages (a *trace.Trace or a *trace.Table)
// and returns the same *Result, so results can be compared with each other
// and with the ground truth of generated traces, and rendered by the same
// code.
//
// A path pattern is a tree of messages (hops): a hop's parent is the message
// whose arrival at the hop's sender caused the hop to be sent. Engines that
// infer individual path instances (linking, nesting) hand them to an
// Aggregator, which names nodes (clients aggregated into CLIENT, ephemeral
// ports into "*"), groups instances of the same structure into patterns keyed
// by a canonical signature, and computes per-hop start times, node delays
// (one clock) and network delays (corrected by the trace's clock offsets)
// with means, percentiles and histograms, weighted by instance probability.
//
// The signature grammar (see ParseSignature):
//
//	tree     = hop [ "(" tree { "," tree } ")" ]
//	hop      = name "->" name
//	name     = bare | quoted
//	bare     = one or more characters other than ( ) , " and whitespace, not containing "->"
//	quoted   = a Go double-quoted string
//
// A child hop's sender is always its parent's receiver. In a pattern's
// signature the children of a hop are listed in order of mean start time,
// measured as the delay after the parent's arrival on the sender's clock (so
// the order does not depend on clock offsets); Canonical sorts them by their
// own canonical text instead, so two signatures name the same pattern
// exactly when their canonical forms are equal.
//
// The message-linking engine (Linking, WAP5 section 5.1) exposes its steps:
// Link estimates the delays and link probabilities (a LinkGraph) and Paths
// builds the instances from them. DefaultLinkingOptions also use CALL/RETURN
// pairs, delay distributions learnt from the trace, per-root probabilities
// and in-instance parents; PureWAP5LinkingOptions is the paper's algorithm.
// docs/causal.md specifies the model, the signature and the linking
// algorithm, and measures what each option adds.
//
// This package must not know about file formats or rendering.
package causal
