package report_test

import (
	"os"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/report"
	"github.com/wirepath/wirepath/trace"
)

func mean(us float64) *causal.Dist {
	return &causal.Dist{N: 10, Weight: 10, Mean: us, Min: us, P50: us, P90: us, P99: us, Max: us}
}

// cacheHit is a one-call pattern: the client's request reaches web after
// 200 µs, web answers 500 µs later, the answer takes 200 µs back.
func cacheHit() *causal.Result {
	root := 0
	return &causal.Result{
		Version: causal.ResultVersion, Engine: "linking",
		Trace: causal.TraceSummary{Messages: 20, Nodes: 2},
		Patterns: []causal.Pattern{{
			Rank: 1, Signature: "CLIENT->web(web->CLIENT)", Count: 10, Expected: 9.5, MaxProbability: 1,
			Latency: mean(900),
			Hops: []causal.Hop{
				{ID: 0, From: "CLIENT", To: "web", ToEndpoint: "web:80", Kind: "CALL", Start: mean(0), NetDelay: mean(200), Bytes: mean(300)},
				{ID: 1, Parent: &root, From: "web", To: "CLIENT", Kind: "RETURN", Start: mean(700), NodeDelay: mean(500), NetDelay: mean(200), Bytes: mean(9000)},
			},
		}},
	}
}

func ExampleWriteText() {
	report.WriteText(os.Stdout, cacheHit(), report.TextOptions{})
	// Output:
	// engine linking: 20 messages, 2 nodes, 1 patterns
	//
	// mean p: the mean probability linking gives the pattern's instances (WAP5 §5; the engine's own score, not a calibrated confidence).
	//
	// #1  count 10  expected 9.5  mean p 0.95 (max 1.00)  latency 900 µs (p50 900 µs, p90 900 µs)
	//     CLIENT->web(web->CLIENT)
	//     hop                       at sender     network       start
	//     CLIENT → web:80 CALL              -      200 µs       +0 µs
	//     └─ web → CLIENT RETURN       500 µs      200 µs     +700 µs
}

func ExampleWriteAll() {
	a := cacheHit()
	b := cacheHit()
	b.Engine = "nesting"
	b.Trace.Accounting = nil
	a.Trace.Accounting = []trace.Count{{Stage: "flows", Name: "conns", Value: 10}, {Stage: "flows", Name: "messages", Value: 20},
		{Stage: "flows", Name: "calls", Value: 10}, {Stage: "flows", Name: "returns", Value: 10}}
	b.Trace = a.Trace
	report.WriteAll(os.Stdout, report.FormatText, []*causal.Result{a, b}, report.Options{Summary: true})
	// Output:
	// engine linking: 20 messages, 2 nodes, 1 patterns
	//
	// mean p: the mean probability linking gives the pattern's instances (WAP5 §5; the engine's own score, not a calibrated confidence).
	//
	// #1  count 10  expected 9.5  mean p 0.95 (max 1.00)  latency 900 µs (p50 900 µs, p90 900 µs)
	//     CLIENT->web(web->CLIENT)
	//     hop                       at sender     network       start
	//     CLIENT → web:80 CALL              -      200 µs       +0 µs
	//     └─ web → CLIENT RETURN       500 µs      200 µs     +700 µs
	//
	// engine nesting: 20 messages, 2 nodes, 1 patterns
	//
	// confidence: nesting does not estimate one (every path counts with probability 1); compare engines with --engine all.
	//
	// #1  count 10  expected 9.5  mean p 0.95 (max 1.00)  latency 900 µs (p50 900 µs, p90 900 µs)
	//     CLIENT->web(web->CLIENT)
	//     hop                       at sender     network       start
	//     CLIENT → web:80 CALL              -      200 µs       +0 µs
	//     └─ web → CLIENT RETURN       500 µs      200 µs     +700 µs
	//
	// accounting:
	//   flows  10 connections, 20 messages (10 calls, 10 returns); no gaps
}
