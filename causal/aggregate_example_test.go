package causal_test

import (
	"fmt"

	"github.com/wirepath/wirepath/causal"
)

// Canonical tells whether two signatures name the same pattern, whatever
// the order of siblings.
func ExampleCanonical() {
	a, _ := causal.Canonical("CLIENT->web(web->db,web->cache)")
	b, _ := causal.Canonical("CLIENT->web(web->cache,web->db)")
	fmt.Println(a == b, a)
	// Output:
	// true CLIENT->web(web->cache,web->db)
}

// An Aggregator groups instances of the same shape into patterns; engines
// hand it trees of message indices with probabilities.
func ExampleAggregator() {
	t := rpcTrace()
	agg := causal.NewAggregator(t, causal.DefaultOptions().Aggregate)
	for r := 0; r < len(t.Messages); r += 4 {
		m := int32(r)
		_ = agg.Add(causal.Instance{Prob: 0.5, Nodes: []causal.InstanceNode{
			{Msg: m, Parent: -1}, {Msg: m + 1, Parent: 0}, {Msg: m + 2, Parent: 1}, {Msg: m + 3, Parent: 2},
		}})
	}
	for _, p := range agg.Patterns(causal.RankExpected) {
		fmt.Printf("%d× expected %.1f, db answers after %.0f µs: %s\n", p.Count, p.Expected, p.Hops[2].NodeDelay.Mean, p.Signature)
	}
	// Output:
	// 3× expected 1.5, db answers after 2000 µs: CLIENT->10.0.0.1(10.0.0.1->10.0.0.2(10.0.0.2->10.0.0.1(10.0.0.1->CLIENT)))
}
