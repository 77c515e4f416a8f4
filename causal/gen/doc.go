// Package gen is the tracelet-based trace generator of Project 5 section
// 7.1.1 ("maketrace"), extended with the skewer, a bursty sniffer-queue loss
// model and ground truth.
//
// Stage and contract: gen sits beside the gathering stages. It reads a
// Config (YAML or JSON) of tracelets — message templates with Gaussian
// delays, each delay relative to the arrival of the message that causes the
// message — and instantiates them from parallel clients with uniformly random
// think times. It returns a *trace.Trace (what sniffers would have seen:
// per-node clock skew applied, messages lost in the sniffer's queue removed,
// one or two timestamps per message) and a *Truth: every generated message
// with its true timestamps, its path instance, its causal parent (the message
// whose arrival at the sender caused it, the same relation causal.Pattern
// hops use) and its index in the trace (or -1 when it was lost). Feeding the
// truth's instances to a causal.Aggregator gives the true path patterns in
// the same signature grammar the engines produce, which is what the scorer
// (package causal/score) compares with.
//
// Two template forms exist. An rpc tracelet is a call tree: each call is a
// CALL message from the caller to the callee and a RETURN back; the callee
// makes its own calls in series (each caused by the previous call's RETURN)
// or in parallel (each caused by the CALL, the RETURN then caused by the last
// child RETURN to arrive). A messages tracelet is a free-form list of
// messages, each caused by an earlier one. Node names may list alternatives
// ("AP1|AP2", "AP1:3|AP2:1") chosen per instance, which is how load balancing
// multiplies path patterns.
//
// Beyond maketrace it models what real multi-tier systems do and what a
// capture or a syscall trace would show of it (docs/gen.md): open-loop
// Poisson arrivals that can be compressed, replica groups, nodes with
// bounded thread pools, persistent connection pools shared by requests,
// optional calls, early failures, background work no request caused,
// untraced nodes, per-host clock offsets, coarse timestamps, and the
// evidence beyond timing (trace.Evidence: connections, threads of traced
// nodes, propagated request ids, labels, content tokens), which WritePcaps
// also carries in real HTTP, Redis and memcached payloads, seen by sniffers
// with offsets, drift and loss. Each of these draws from a random stream of
// its own, so that a configuration that uses none of them generates
// exactly what it did before they existed (TestGoldenDigests).
//
// Generation is deterministic for a given Config (including its seed). The
// truth file format (WriteTruth / ReadTruth) is documented in
// docs/formats.md.
package gen
