package accuracy

import (
	"math"
	"testing"
	"time"

	"github.com/wirepath/wirepath/causal/gen"
)

// TestLinkingNeedsNoClockSync is WAP5 section 5.2-5.3: linking compares a
// message's send only with arrivals at the same node, on the same clock,
// so clock offsets of seconds between nodes change nothing it infers,
// while the nesting engine, which compares timestamps taken at different
// nodes, falls apart on the same traces.
func TestLinkingNeedsNoClockSync(t *testing.T) {
	skipUnderRace(t)
	c := Case{Config: "multitier", Duration: 120 * time.Second, Edit: func(c *gen.Config) { c.Clients = 4 }}
	lp, ls, err := ClockSync(ctx, c, BigSkew, Linking())
	if err != nil {
		t.Fatal(err)
	}
	np, ns, err := ClockSync(ctx, c, BigSkew, Nesting(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*Run{lp, ls, np, ns} {
		i := r.Score.Instances
		t.Logf("%-8s skewed %-5v: instances FN %.1f%% (weighted %.1f%%), FP %.1f%%; node delay error %.1f%%",
			r.Result.Engine, len(r.Out.Truth.Meta.SkewNS) > 0, 100*i.FalseNegativeRate, 100*i.WeightedFalseNegativeRate, 100*i.FalsePositiveRate, 100*r.Score.Delays.NodeRelError)
	}
	a, b := lp.Score, ls.Score
	same := func(x, y float64) bool { return math.Abs(x-y) < 1e-9 }
	if !same(a.Instances.WeightedFalseNegativeRate, b.Instances.WeightedFalseNegativeRate) || a.Instances.Correct != b.Instances.Correct ||
		a.Instances.Inferred != b.Instances.Inferred || a.Patterns.Inferred != b.Patterns.Inferred || a.Patterns.FalseNegatives != b.Patterns.FalseNegatives {
		t.Errorf("linking changes with clock skew: %+v vs %+v", a.Instances, b.Instances)
	}
	if !same(a.Delays.NodeRelError, b.Delays.NodeRelError) {
		t.Errorf("linking's node delays change with clock skew: %.4f vs %.4f", a.Delays.NodeRelError, b.Delays.NodeRelError)
	}
	for i := range a.TopN {
		if a.TopN[i] != b.TopN[i] {
			t.Errorf("top %d changes with skew: %+v vs %+v", i+1, a.TopN[i], b.TopN[i])
		}
	}
	// Linking finds most instances of this lightly loaded system.
	if a.Instances.FalseNegativeRate > 0.4 {
		t.Errorf("linking misses %.1f%% of instances", 100*a.Instances.FalseNegativeRate)
	}
	// Nesting, on the same traces, needs synchronised clocks.
	if ns.Score.Instances.FalseNegativeRate < np.Score.Instances.FalseNegativeRate+0.3 {
		t.Errorf("nesting should fall apart with skews of seconds: FN %.3f -> %.3f", np.Score.Instances.FalseNegativeRate, ns.Score.Instances.FalseNegativeRate)
	}
	if ls.Score.Instances.FalseNegativeRate >= ns.Score.Instances.FalseNegativeRate {
		t.Errorf("with skewed clocks linking (FN %.3f) should beat nesting (FN %.3f)", ls.Score.Instances.FalseNegativeRate, ns.Score.Instances.FalseNegativeRate)
	}
}
