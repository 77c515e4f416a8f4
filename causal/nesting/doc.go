// Package nesting is the nesting engine of Project 5 (Aguilera et al.,
// SOSP 2003, section 5.1): it pairs CALL and RETURN messages into calls,
// finds the calls each call is nested in, scores the candidates with a
// scoreboard of delay histograms and the child penalties, picks one
// parent per call, and aggregates the call trees into the call-path table
// (Result.CallPaths) and, as trees of messages, into causal patterns.
//
// It reads its trace as a trace.Table (20 bytes a message) and runs in
// phases, each keeping only what the next needs.
// docs/causal-nesting.md describes the algorithm, its deviations from the
// paper and its speed; nesting_ref_test.go holds a slow reference it is
// checked against.
//
// This package must not know about file formats or rendering.
package nesting
