// Package report renders causal results for people and for other tools:
// text, JSON (the versioned result contract), DOT, a self-contained HTML
// report, and exports that tracing UIs read.
//
// This package must not do inference: it only reads a *causal.Result.
package report
