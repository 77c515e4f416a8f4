// Package causal is the contract of the causal path inference engines:
// the Engine interface, the Result every engine returns, the Aggregator
// that turns path instances into ranked patterns, the distributions of
// their delays, node naming and the pattern signature.
//
// The engines live in packages of their own beside it, each with the same
// shape (Name, Options embedding this package's Options, DefaultOptions,
// New(Options) (*Engine, error) returning a *OptionError for an option out
// of range, and an Engine that implements Engine): causal/linking (message
// linking, WAP5 section 5), causal/nesting and causal/convolution
// (Project 5 sections 5.1 and 5.2). causal/engines names them all and
// builds them by name. Every engine reads a trace.Messages (a *trace.Trace
// or a *trace.Table) and returns the same *Result, so results can be
// compared with each other and with the ground truth of generated traces,
// and rendered by the same code.
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
// exactly when their canonical forms are equal. docs/causal.md specifies
// the model and the signature.
//
// This package must not know about file formats, rendering or any one
// engine: the result JSON is read and written by causal/resultjson, results
// are rendered by report, and it imports only trace and internal/.
package causal
