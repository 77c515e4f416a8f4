// Package whatif is the what-if performance model of Stewart and Shen,
// "Performance Modeling and System Management for Multi-component Online
// Services" (NSDI 2005, sections 2.3 and 3.2), applied to the path
// patterns the engines inferred: the profile of every inter-node link a
// pattern uses (bytes ν and blocking round trips κ per request, the
// measured round-trip time γ) and the predicted latency of a pattern if a
// link's round-trip time or bandwidth changed, by the paper's model
// (Γ = Σ κ·γ + ν/ω) and by replaying the pattern's mean timeline along its
// critical path. docs/whatif.md describes the model and its limits.
//
// It reads a *causal.Pattern and nothing else: it knows no engine, no
// file format and no rendering (report shows its link profiles, the
// whatif command prints its predictions).
package whatif
