package score_test

import (
	"fmt"
	"time"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/gen"
	"github.com/wirepath/wirepath/causal/score"
)

// Example scores an "engine" that reports every true instance except the
// first: one false-negative instance, no pattern missing.
func Example() {
	cfg, _ := gen.LoadConfig("children-d-cc")
	cfg.Duration = gen.Duration(10 * time.Second)
	out, _ := gen.Generate(cfg, gen.Options{})

	agg := causal.NewAggregator(out.Trace, causal.AggregateOptions{Naming: causal.DefaultNaming(), KeepInstances: true})
	for _, in := range out.Truth.Instances()[1:] {
		for k := range in.Nodes {
			in.Nodes[k].Msg = out.Truth.Observed[in.Nodes[k].Msg]
		}
		agg.Add(in)
	}
	res := &causal.Result{Engine: "example", Trace: causal.Summarize(out.Trace), Patterns: agg.Patterns(causal.RankExpected)}

	r, _ := score.Score(res, out.Truth, score.DefaultOptions())
	fmt.Println("pattern false negatives:", r.Patterns.FalseNegatives)
	fmt.Println("instance false negatives:", r.Instances.FalseNegatives)
	fmt.Println("instance false positives:", r.Instances.FalsePositives)
	// Output:
	// pattern false negatives: 0
	// instance false negatives: 1
	// instance false positives: 0
}
