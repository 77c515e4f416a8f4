package whatif_test

import (
	"fmt"
	"math"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/whatif"
)

func mean(us float64) *causal.Dist {
	return &causal.Dist{N: 10, Weight: 10, Mean: us, Min: us, P50: us, P90: us, P99: us, Max: us}
}

// cacheHit is a one-call pattern: the client's request reaches web after
// 200 µs, web answers 500 µs later, the answer takes 200 µs back.
func cacheHit() *causal.Pattern {
	root := 0
	return &causal.Pattern{
		Rank: 1, Signature: "CLIENT->web(web->CLIENT)", Count: 10, Expected: 9.5, MaxProbability: 1,
		Latency: mean(900),
		Hops: []causal.Hop{
			{ID: 0, From: "CLIENT", To: "web", ToEndpoint: "web:80", Kind: "CALL", Start: mean(0), NetDelay: mean(200), Bytes: mean(300)},
			{ID: 1, Parent: &root, From: "web", To: "CLIENT", Kind: "RETURN", Start: mean(700), NodeDelay: mean(500), NetDelay: mean(200), Bytes: mean(9000)},
		},
	}
}

func ExamplePredict() {
	w := whatif.NoChange("CLIENT->web")
	w.RTTUS = 10000 // a 10 ms WAN instead of the measured 400 µs
	pr, err := whatif.Predict(cacheHit(), w)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("κ=%d γ=%.0f µs ν=%.0f bytes: %.0f µs -> %.0f µs\n",
		pr.Profile.RoundTrips, pr.RTTUS, pr.Profile.Bytes, pr.LatencyUS, math.Round(pr.ModelUS))
	// Output:
	// κ=1 γ=400 µs ν=9300 bytes: 900 µs -> 10500 µs
}
