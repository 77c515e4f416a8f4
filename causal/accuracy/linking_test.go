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
// nodes, falls apart on the same traces. Both WAP5's linking and the
// default, call-aware one with learnt delays are checked.
func TestLinkingNeedsNoClockSync(t *testing.T) {
	skipUnderRace(t)
	c := Case{Config: "multitier", Duration: 120 * time.Second, Edit: func(c *gen.Config) { c.Clients = 4 }}
	np, ns, err := ClockSync(ctx, c, BigSkew, Nesting(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []struct {
		name  string
		eng   Engine
		maxFN float64 // the instances linking may miss on this lightly loaded system
	}{{"WAP5", LinkingWAP5(), 0.4}, {"default", Linking(), 0.1}} {
		lp, ls, err := ClockSync(ctx, c, BigSkew, e.eng)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range []*Run{lp, ls} {
			i := r.Score.Instances
			t.Logf("linking %-7s skewed %-5v: instances FN %.1f%% (weighted %.1f%%), FP %.1f%%; node delay error %.1f%%",
				e.name, len(r.Out.Truth.Meta.SkewNS) > 0, 100*i.FalseNegativeRate, 100*i.WeightedFalseNegativeRate, 100*i.FalsePositiveRate, 100*r.Score.Delays.NodeRelError)
		}
		a, b := lp.Score, ls.Score
		same := func(x, y float64) bool { return math.Abs(x-y) < 1e-9 }
		if !same(a.Instances.WeightedFalseNegativeRate, b.Instances.WeightedFalseNegativeRate) || a.Instances.Correct != b.Instances.Correct ||
			a.Instances.Inferred != b.Instances.Inferred || a.Patterns.Inferred != b.Patterns.Inferred || a.Patterns.FalseNegatives != b.Patterns.FalseNegatives {
			t.Errorf("%s: linking changes with clock skew: %+v vs %+v", e.name, a.Instances, b.Instances)
		}
		if !same(a.Delays.NodeRelError, b.Delays.NodeRelError) {
			t.Errorf("%s: linking's node delays change with clock skew: %.4f vs %.4f", e.name, a.Delays.NodeRelError, b.Delays.NodeRelError)
		}
		for i := range a.TopN {
			if a.TopN[i] != b.TopN[i] {
				t.Errorf("%s: top %d changes with skew: %+v vs %+v", e.name, i+1, a.TopN[i], b.TopN[i])
			}
		}
		if a.Instances.FalseNegativeRate > e.maxFN {
			t.Errorf("%s: linking misses %.1f%% of instances", e.name, 100*a.Instances.FalseNegativeRate)
		}
		if ls.Score.Instances.FalseNegativeRate >= ns.Score.Instances.FalseNegativeRate {
			t.Errorf("%s: with skewed clocks linking (FN %.3f) should beat nesting (FN %.3f)", e.name, ls.Score.Instances.FalseNegativeRate, ns.Score.Instances.FalseNegativeRate)
		}
	}
	// Nesting, on the same traces, needs synchronised clocks.
	if ns.Score.Instances.FalseNegativeRate < np.Score.Instances.FalseNegativeRate+0.3 {
		t.Errorf("nesting should fall apart with skews of seconds: FN %.3f -> %.3f", np.Score.Instances.FalseNegativeRate, ns.Score.Instances.FalseNegativeRate)
	}
}

// bothLinkings runs linking with WAP5's options and with the defaults on
// the generated trace.
func bothLinkings(t *testing.T, out *gen.Output) (wap5, def *Run) {
	t.Helper()
	wap5, err := On(ctx, out, LinkingWAP5())
	if err != nil {
		t.Fatal(err)
	}
	def, err = On(ctx, out, Linking())
	if err != nil {
		t.Fatal(err)
	}
	return wap5, def
}

// TestLinkingMultitier is the multi-tier RPC system of Project 5 at call
// parallelism 2.3, where WAP5's linking gets almost every instance wrong
// (its top patterns are partial trees): the default linking finds every
// true pattern, ranks them as Figure 17 asks (about 1/N of the N most
// frequent missing from the top N), gets most instances exactly right and
// their node delays within a few percent.
func TestLinkingMultitier(t *testing.T) {
	skipUnderRace(t)
	out, err := Case{Config: "multitier", Duration: 120 * time.Second}.Generate()
	if err != nil {
		t.Fatal(err)
	}
	wap5, def := bothLinkings(t, out)
	for _, r := range []*Run{wap5, def} {
		s := r.Score
		worst, over := WorstTopN(s)
		t.Logf("%v: %d patterns (%d true missed); instances FN %.1f%% FP %.1f%% (weighted %.1f%%); top N: at most %d missing, over 1/N for %d N; node delay error %.1f%%",
			r.Result.Params["calls"], s.Patterns.Inferred, s.Patterns.FalseNegatives, 100*s.Instances.FalseNegativeRate, 100*s.Instances.FalsePositiveRate,
			100*s.Instances.WeightedFalseNegativeRate, worst, over, 100*s.Delays.NodeRelError)
	}
	s := def.Score
	if s.Patterns.FalseNegatives != 0 {
		t.Errorf("%d true patterns not found", s.Patterns.FalseNegatives)
	}
	if worst, over := WorstTopN(s); worst > 2 || over > 2 {
		t.Errorf("top N: up to %d true patterns missing, more than 1/N for %d N", worst, over)
	}
	if s.Instances.FalseNegativeRate > 0.15 || s.Instances.WeightedFalseNegativeRate > 0.3 {
		t.Errorf("instances: %.1f%% false negatives (weighted %.1f%%)", 100*s.Instances.FalseNegativeRate, 100*s.Instances.WeightedFalseNegativeRate)
	}
	if s.Delays.NodeRelError > 0.05 {
		t.Errorf("node delay error %.1f%%", 100*s.Delays.NodeRelError)
	}
	if w := wap5.Score.Instances.FalseNegativeRate; w < s.Instances.FalseNegativeRate+0.3 {
		t.Errorf("WAP5's linking misses %.1f%% of instances: not the case the defaults are for", 100*w)
	}
}

// TestLinkingAddedDelay is Project 5 section 7.2 for linking: the 200 ms
// added at WS2 between its call to AUTH and its call to AP1|AP2 is
// recovered within 10%, over all patterns and over the true patterns
// found. WAP5's exponential weights with one mean delay per node pair
// measured about 14 ms.
func TestLinkingAddedDelay(t *testing.T) {
	skipUnderRace(t)
	a, err := RunAddedDelay(ctx, Linking(), 120*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("WS2 before AP: %.1f ms -> %.1f ms, added %.1f ms; on the true patterns found %.1f ms (truth %.1f -> %.1f)",
		a.Normal/1e3, a.Added/1e3, a.Measured()/1e3, a.MeasuredFound()/1e3, a.TrueNormal/1e3, a.TrueAdded/1e3)
	if got := a.Measured(); math.Abs(got-a.Truth()) > 0.1*a.Truth() {
		t.Errorf("linking measures %.1f ms added at WS2, truth %.1f ms", got/1e3, a.Truth()/1e3)
	}
	if got := a.MeasuredFound(); math.Abs(got-a.Truth()) > 0.1*a.Truth() {
		t.Errorf("linking measures %.1f ms added at WS2 on the true patterns, truth %.1f ms", got/1e3, a.Truth()/1e3)
	}
}

// TestLinkingPathological runs the four cases of Project 5 Figure 18: the
// default linking finds every true pattern and ranks them as Figure 17
// asks (at most 1/N of the N most frequent missing from the top N; in
// children-d-cc and penalty-breaker a pattern that misses one of B's
// serial calls ranks among the true ones: the call that follows an answer
// 50 ms later looks as much like the first call of another request that
// arrived 50 ms before it). The bounds on wrong instances are the measured
// rates (120 s traces, call parallelism 2.4-3.1) with a margin;
// children-parallel is the case where calls made in parallel look serial
// once the first answer came back before the second call left.
func TestLinkingPathological(t *testing.T) {
	skipUnderRace(t)
	maxFN := map[string]float64{"children-parallel": 0.4, "children-0-2": 0.2, "children-d-cc": 0.3, "penalty-breaker": 0.45}
	for _, name := range Pathological {
		r, err := Do(ctx, Case{Config: name, Duration: 120 * time.Second}, Linking())
		if err != nil {
			t.Fatal(err)
		}
		s := r.Score
		t.Logf("%s: call parallelism %.2f, %d patterns, instances FN %.1f%% (weighted %.1f%%)", name, r.Out.Stats.CallParallelism,
			s.Patterns.Inferred, 100*s.Instances.FalseNegativeRate, 100*s.Instances.WeightedFalseNegativeRate)
		if s.Patterns.FalseNegatives != 0 {
			t.Errorf("%s: %d true patterns not found", name, s.Patterns.FalseNegatives)
		}
		if worst, over := WorstTopN(s); over > 0 {
			t.Errorf("%s: up to %d true patterns missing from the top N, more than 1/N for %d N", name, worst, over)
		}
		if s.Instances.FalseNegativeRate > maxFN[name] {
			t.Errorf("%s: %.1f%% of instances missed, want ≤ %.0f%%", name, 100*s.Instances.FalseNegativeRate, 100*maxFN[name])
		}
	}
}

// TestLinkingRelay checks the free-form relay, whose messages have no
// CALL/RETURN kinds: the learnt delays must not make linking worse than
// WAP5's there.
func TestLinkingRelay(t *testing.T) {
	skipUnderRace(t)
	out, err := Case{Config: "relay", Duration: 120 * time.Second}.Generate()
	if err != nil {
		t.Fatal(err)
	}
	wap5, def := bothLinkings(t, out)
	w, d := wap5.Score.Instances, def.Score.Instances
	t.Logf("relay: instances FN %.1f%% -> %.1f%%, weighted %.1f%% -> %.1f%%; node delay error %.1f%% -> %.1f%%",
		100*w.FalseNegativeRate, 100*d.FalseNegativeRate, 100*w.WeightedFalseNegativeRate, 100*d.WeightedFalseNegativeRate,
		100*wap5.Score.Delays.NodeRelError, 100*def.Score.Delays.NodeRelError)
	if d.FalseNegativeRate > w.FalseNegativeRate || d.WeightedFalseNegativeRate > w.WeightedFalseNegativeRate {
		t.Errorf("the defaults find fewer relay instances than WAP5's options")
	}
	if def.Score.Patterns.FalseNegatives != 0 {
		t.Errorf("%d true patterns not found", def.Score.Patterns.FalseNegatives)
	}
}
