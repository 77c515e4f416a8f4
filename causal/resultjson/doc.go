// Package resultjson reads and writes the result JSON of docs/formats.md
// ("Result", "Several engines"): one *causal.Result, or the Analysis
// envelope that holds the results of several engines run on one trace.
// It is the one reader of that file: every command that takes a saved
// result (report, whatif, score) and every library user reads it here, so
// they accept and refuse the same files with the same errors.
//
// The reader checks what every consumer relies on (a version this build
// reads, each pattern a tree of hops numbered in parent-first order) and
// names the file and, when the JSON decoder knows it, the byte offset of
// an error. It knows the contract and nothing else: no engine, no
// rendering (package report renders results; its JSON format writes
// through Write and WriteAnalysis).
package resultjson
