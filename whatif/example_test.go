package whatif_test

import (
	"fmt"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
	"github.com/wirepath/wirepath/whatif"
)

func mean(us float64) *causal.Dist {
	return &causal.Dist{N: 10, Weight: 10, Mean: us, Min: us, P50: us, P90: us, P99: us, Max: us}
}

// cacheHit is a one-call pattern: the client's request reaches web after
// 200 µs, web answers 500 µs later, the answer takes 200 µs back. The
// captures measured the link's round trip: 400 µs.
func cacheHit() *causal.Result {
	root := 0
	return &causal.Result{Version: causal.ResultVersion, Engine: "linking",
		Trace: causal.TraceSummary{Links: []trace.Link{{A: "10.0.0.7", B: "web", Proto: "tcp", Conns: 10, Calls: 10,
			RTT: trace.LinkRTT{Known: true, MinNS: 400e3, Samples: 40, Point: "s0", Method: "link"}, WindowA: -1, WindowB: -1}}},
		Patterns: []causal.Pattern{{
			Rank: 1, Signature: "CLIENT->web(web->CLIENT)", Count: 10, Expected: 9.5, MaxProbability: 1,
			Latency: mean(900),
			Hops: []causal.Hop{
				{ID: 0, From: "CLIENT", To: "web", ToEndpoint: "web:80", Kind: "CALL", Start: mean(0), NetDelay: mean(200), Bytes: mean(300)},
				{ID: 1, Parent: &root, From: "web", To: "CLIENT", Kind: "RETURN", Start: mean(700), NodeDelay: mean(500), NetDelay: mean(200), Bytes: mean(9000)},
			},
		}}}
}

func ExampleModel_Predict() {
	m, err := whatif.Build(cacheHit(), whatif.BuildOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	c, _ := whatif.ParseChange("link CLIENT->web rtt=10ms") // a 10 ms WAN instead of the measured 400 µs
	rep, err := m.Predict(whatif.Scenario{Changes: []whatif.Change{c}})
	if err != nil {
		fmt.Println(err)
		return
	}
	p := rep.Patterns[0]
	l := p.Links[0]
	fmt.Printf("κ=%.0f γ=%.0f µs (%s) ν=%.0f bytes: %.0f µs -> %.0f µs\n", l.Kappa, l.RTTUS, l.RTTSource, l.Bytes, p.LatencyUS, p.PredictedUS)
	// Output:
	// κ=1 γ=400 µs (measured) ν=9300 bytes: 900 µs -> 10500 µs
}
