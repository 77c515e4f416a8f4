// Package trace holds the abstract message trace: the contract between the
// stages that gather messages (flows, reconcile, the generator) and the
// inference engines in causal.
//
// A Trace is a list of Messages, each one application write from a sender to
// a receiver, with the time it left the sender and the time it reached the
// receiver (either may be unknown), the endpoints and node names of both
// ends, its size, whether it is a CALL, a RETURN or unknown, and a call id;
// and, where the gathering stages knew it, its Evidence: the connection and
// its place on it, the threads that wrote and read it, the request id it
// carried, a label and a set of content-token hashes. Strings are interned in the trace's Symbols table so that a message is a
// small comparable value and engines can index nodes by integer.
//
// Meta carries what the gathering stages learned about the trace as a whole:
// clock offsets between nodes, NAT aliases and their accounting, so that the
// engines can correct network delays and reports can show where the data
// came from.
//
// A Table holds the same messages compactly (20 bytes a message instead
// of 96, plus the evidence it has: what messages share is stored once as
// a Flow), for engines that read millions of them; ReadTable and ReadFileTable read a trace straight
// into one, and NewTable and Table.Trace convert both ways. Both implement
// Messages, the read-only view the causal engines take.
//
// Traces are read and written in three formats, documented in
// docs/formats.md: wirepath TSV and JSON Lines (read and written, both
// versioned: version 2 adds the evidence, version 1 is still read and
// still written for traces without evidence) and Project 5's "timestamp operation sender receiver id" layout
// (read). Reader streams any of them, detecting the format and gzip or zstd
// compression from the content; ReadFile and Read load a whole trace;
// WriteTSV, WriteJSONL and WriteFile write one.
//
// This package must not know about packets, flows or inference. It is the
// ground floor every stage and engine stands on: it imports nothing of
// wirepath but internal/ (internal/layers tests it).
package trace
