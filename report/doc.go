// Package report renders causal results for people and for other tools:
// text, JSON (the versioned result contract), DOT, a self-contained HTML
// report, and exports that tracing UIs read.
//
// This package must not do inference: it only reads a *causal.Result (and
// a trace for real times), and the link profiles its HTML report shows are
// package whatif's. It imports no engine, stage or command, and writes the
// JSON contract through causal/resultjson.
package report
