package accuracy

import (
	"context"
	"math"
	"testing"
	"time"
)

// The experiments run minutes of generated traffic through an engine; the
// race detector makes that ten times slower without testing anything these
// tests are about (the engines' own tests run under it).
func skipUnderRace(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("accuracy experiments do not run under the race detector")
	}
	if testing.Short() {
		t.Skip("accuracy experiments do not run with -short")
	}
}

var ctx = context.Background()

// TestNestingTopN is Project 5 Figure 17: on the multi-tier trace, the
// fraction of the N most frequent true patterns missing from the N
// top-ranked inferred ones is bounded by about 1/N (near-ties aside).
func TestNestingTopN(t *testing.T) {
	skipUnderRace(t)
	r, err := Do(ctx, Case{Config: "multitier", Duration: 300 * time.Second}, Nesting(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	s := r.Score
	if s.Patterns.FalseNegatives != 0 {
		t.Errorf("%d true patterns not found at all", s.Patterns.FalseNegatives)
	}
	over := 0
	for _, p := range s.TopN {
		if p.RateTolerant > 1/float64(p.N)+1e-9 {
			over++
		}
		if p.Omitted-p.Excused > 2 {
			t.Errorf("top %d: %d true patterns omitted", p.N, p.Omitted-p.Excused)
		}
	}
	if over > 1 {
		t.Errorf("the false-negative rate exceeds 1/N for %d of %d values of N", over, len(s.TopN))
	}
	t.Logf("multitier, %d messages, call parallelism %.2f: %d patterns inferred, instances FN %.1f%% FP %.1f%%, node delay error %.1f%%",
		s.Truth.Messages, r.Out.Stats.CallParallelism, s.Patterns.Inferred, 100*s.Instances.FalseNegativeRate, 100*s.Instances.FalsePositiveRate, 100*s.Delays.NodeRelError)
	// Project 5 7.5.1: latencies of correctly inferred paths are within a
	// few percent.
	if s.Delays.NodeRelError > 0.05 {
		t.Errorf("node delay error %.1f%% of the patterns found", 100*s.Delays.NodeRelError)
	}
}

// TestNestingAddedDelay is section 7.2: the 200 ms added at WS2 between its
// calls to AUTH and to AP1|AP2 is recovered within 10%.
func TestNestingAddedDelay(t *testing.T) {
	skipUnderRace(t)
	a, err := RunAddedDelay(ctx, Nesting(0, 0), 300*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(a.Truth()-200e3) > 2e3 {
		t.Fatalf("the generated traces add %.1f ms, not 200", a.Truth()/1e3)
	}
	if got := a.Measured(); math.Abs(got-200e3) > 20e3 {
		t.Errorf("nesting measures %.1f ms added at WS2, want 200 ms ± 10%%", got/1e3)
	}
	if got := a.MeasuredFound(); math.Abs(got-200e3) > 20e3 {
		t.Errorf("nesting measures %.1f ms added at WS2 on the true patterns it found, want 200 ms ± 10%%", got/1e3)
	}
	t.Logf("WS2 before AP: %.1f ms -> %.1f ms, added %.1f ms; on the true patterns found %.1f ms (truth %.1f -> %.1f)",
		a.Normal/1e3, a.Added/1e3, a.Measured()/1e3, a.MeasuredFound()/1e3, a.TrueNormal/1e3, a.TrueAdded/1e3)
}

// TestConvolutionAddedDelay is section 7.2 and Figure 13 for convolution:
// the added 200 ms shows on the WS2->AP edge.
func TestConvolutionAddedDelay(t *testing.T) {
	skipUnderRace(t)
	a, err := RunAddedDelay(ctx, Convolution(), 120*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Measured(); math.Abs(got-200e3) > 20e3 {
		t.Errorf("convolution measures %.1f ms added at WS2, want 200 ms ± 10%%", got/1e3)
	}
	t.Logf("convolution, WS2 before AP: %.1f ms -> %.1f ms, added %.1f ms (truth %.1f -> %.1f)", a.Normal/1e3, a.Added/1e3, a.Measured()/1e3, a.TrueNormal/1e3, a.TrueAdded/1e3)
}

// TestNestingPathological runs the four cases of Figure 18 and reports
// their rates. Every true pattern must be found, and the true call trees
// must be the top-ranked ones.
func TestNestingPathological(t *testing.T) {
	skipUnderRace(t)
	for _, name := range Pathological {
		r, err := Do(ctx, Case{Config: name, Duration: 120 * time.Second}, Nesting(0, 0))
		if err != nil {
			t.Fatal(err)
		}
		s := r.Score
		t.Logf("%-17s parallelism %.2f: patterns %d true, %d inferred, %d missed; instances FN %.1f%% FP %.1f%%; messages FN %.1f%%; as call trees: %d inferred, %d missed, instances FN %.1f%%",
			name, r.Out.Stats.CallParallelism, s.Patterns.Truth, s.Patterns.Inferred, s.Patterns.FalseNegatives,
			100*s.Instances.FalseNegativeRate, 100*s.Instances.FalsePositiveRate, 100*s.Messages.FalseNegativeRate,
			r.Calls.Patterns.Inferred, r.Calls.Patterns.FalseNegatives, 100*r.Calls.Instances.FalseNegativeRate)
		if s.Patterns.FalseNegatives != 0 {
			t.Errorf("%s: %d true patterns missed", name, s.Patterns.FalseNegatives)
		}
		// As call trees (how Project 5 scored nesting) the true patterns
		// are the top-ranked ones. As trees of messages, parallel calls
		// whose second CALL leaves after the first RETURN arrived look
		// serial to the engine's conversion, which costs children-parallel
		// one rank.
		if last := r.Calls.TopN[len(r.Calls.TopN)-1]; last.Omitted-last.Excused > 0 {
			t.Errorf("%s: the %d true call trees are not the top-ranked ones", name, last.N)
		}
		if s.Instances.FalseNegativeRate > 0.8 {
			t.Errorf("%s: %.1f%% of instances wrong", name, 100*s.Instances.FalseNegativeRate)
		}
	}
}

// TestNestingSkew is Figure 22: WS2's clock runs fast (or slow). The shape:
// skews below the message delays cost nothing; a skew beyond the return
// delays costs little, since a RETURN stamped before its CALL still pairs
// with it by its call id (the paper's engine, and ours until issue 11,
// lost such pairs); a skew beyond the call delays costs much without
// compensation; a skew window alone makes things worse at no skew, and
// smoothing recovers most of that; beyond the call delays the window
// helps; a slow clock hurts more than a fast one.
func TestNestingSkew(t *testing.T) {
	skipUnderRace(t)
	ms := time.Millisecond
	// 2 ms is below every delay of the trace (the shortest, a static
	// page's reply, is 5 ms), 20 ms beyond the 10 ms return delays, 60 ms
	// beyond the 50 ms call delays.
	skews := []time.Duration{0, 2 * ms, 20 * ms, 60 * ms}
	cs, err := SkewSweep(ctx, 120*time.Second, skews, SkewVariants)
	if err != nil {
		t.Fatal(err)
	}
	fn := make(map[string][]float64)
	for _, c := range cs {
		for _, p := range c.Points {
			fn[c.Label] = append(fn[c.Label], p.FN)
		}
		t.Logf("%-17s FN at 0/2/20/60 ms: %.1f%% %.1f%% %.1f%% %.1f%%", c.Label, 100*fn[c.Label][0], 100*fn[c.Label][1], 100*fn[c.Label][2], 100*fn[c.Label][3])
	}
	none, comp, smooth, rev := fn["no comp"], fn["comp"], fn["comp+smooth"], fn["rev, comp+smooth"]
	for label, f := range fn {
		if math.Abs(f[1]-f[0]) > 0.02 {
			t.Errorf("%s: a 2 ms skew changes the false negatives from %.3f to %.3f", label, f[0], f[1])
		}
		if f[2] > f[0]+0.05 {
			t.Errorf("%s: a 20 ms skew (beyond the 10 ms return delays) costs %.3f -> %.3f: are pairs whose RETURN is stamped first lost?", label, f[0], f[2])
		}
	}
	if none[3] < none[0]+0.1 {
		t.Errorf("a 60 ms skew (beyond the 50 ms call delays) should cost accuracy without compensation: %.3f -> %.3f", none[0], none[3])
	}
	if comp[0] < none[0]+0.1 {
		t.Errorf("a skew window alone should cost accuracy without skew: %.3f vs %.3f", comp[0], none[0])
	}
	for i := range skews {
		if smooth[i] >= comp[i] {
			t.Errorf("skew %v: smoothing does not help the window: %.3f vs %.3f", skews[i], smooth[i], comp[i])
		}
	}
	if smooth[3] >= none[3] {
		t.Errorf("at 60 ms, beyond the 50 ms call delays, window and smoothing should beat no compensation: %.3f vs %.3f", smooth[3], none[3])
	}
	if rev[3] <= smooth[3] {
		t.Errorf("a slow clock should hurt more than a fast one at 60 ms: %.3f vs %.3f", rev[3], smooth[3])
	}
}

// TestNestingLoss is Figure 21: with a sniffer queue of 64 messages, losses
// below about 1% leave the nesting algorithm unaffected, losses near 10%
// hurt, and the false negatives grow with the loss.
func TestNestingLoss(t *testing.T) {
	skipUnderRace(t)
	c, err := DropSweep(ctx, "multitier", 120*time.Second, []float64{0.9, 1, 1.05, 1.5}, Nesting(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	base := c.Points[len(c.Points)-1]
	if base.Loss != 0 {
		t.Fatalf("loss %.4f at 1.5 times the mean rate", base.Loss)
	}
	prev := math.Inf(1)
	for _, p := range c.Points {
		t.Logf("capture %.0f msg/s: loss %.2f%%, instances FN %.1f%%", p.Rate, 100*p.Loss, 100*p.FN)
		if p.FN > prev+0.01 {
			t.Errorf("false negatives grow as the loss falls: %.3f after %.3f", p.FN, prev)
		}
		prev = p.FN
		switch {
		case p.Loss < 0.01 && p.FN > base.FN+0.02:
			t.Errorf("loss %.2f%% raises the false negatives from %.3f to %.3f", 100*p.Loss, base.FN, p.FN)
		case p.Loss > 0.05 && p.FN < base.FN+0.1:
			t.Errorf("loss %.2f%% raises the false negatives only from %.3f to %.3f", 100*p.Loss, base.FN, p.FN)
		}
	}
	if c.Points[0].Loss < 0.05 {
		t.Errorf("the heaviest setting loses only %.2f%%", 100*c.Points[0].Loss)
	}
}

// TestNestingParallelismAndVariation are Figures 19 and 20: false-positive
// instances grow with parallelism and with delay variation.
func TestNestingParallelismAndVariation(t *testing.T) {
	skipUnderRace(t)
	par, err := ParallelismSweep(ctx, "multitier", 60*time.Second, []int{4, 16, 48}, Nesting(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	vr, err := VariationSweep(ctx, "multitier", 60*time.Second, []float64{0.5, 1, 3}, Nesting(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []Curve{par, vr} {
		for i, p := range c.Points {
			t.Logf("x %.2f: parallelism %.2f, instances FP %.1f%%", p.X, p.Parallelism, 100*p.FP)
			if i > 0 && p.FP <= c.Points[i-1].FP {
				t.Errorf("false positives %.3f at x=%.2f, not above %.3f at x=%.2f", p.FP, p.X, c.Points[i-1].FP, c.Points[i-1].X)
			}
		}
	}
	if par.Points[0].Parallelism >= par.Points[2].Parallelism {
		t.Error("more clients did not raise the parallelism")
	}
}

// TestLossStaysLocal is issue 10's target for the papers' engines on
// generated traces: with the sniffer losing 0.5 % and 1 % of the messages,
// the share of wrong requests rises by at most the share of requests that
// lost a message. Before the engines kept a lost message's damage to its
// own request, nesting's rise passed that bound at 1 %.
func TestLossStaysLocal(t *testing.T) {
	skipUnderRace(t)
	for _, e := range []struct {
		name string
		eng  Engine
	}{{"nesting", Nesting(0, 0)}, {"linking", Linking()}} {
		pts, err := LossSweep(ctx, "multitier", 200*time.Second, []float64{0.005, 0.01}, e.eng)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pts {
			t.Logf("%s, loss %.1f%%: %d requests, %d lost a message (%.2f%%), wrong rose %.2f points; spoiled %d, healed %d",
				e.name, 100*p.Rate, p.Requests, p.Lost, 100*p.LostShare(), 100*p.WrongRise(), p.Spoiled, p.Healed)
			if p.WrongRise() > p.LostShare() {
				t.Errorf("%s, loss %.1f%%: wrong requests rose %.2f points, more than the %.2f%% that lost a message",
					e.name, 100*p.Rate, 100*p.WrongRise(), 100*p.LostShare())
			}
		}
	}
}
