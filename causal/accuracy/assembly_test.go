package accuracy

import (
	"testing"
	"time"

	"github.com/wirepath/wirepath/causal/gen"
)

// TestAssemblyPathological: on the multi-tier system and the four
// pathological cases of Project 5 the assembly engine gets far more call
// trees right than nesting (the bounds are the measured rates of the
// 120 s traces with a margin; docs/accuracy.md has the 300 s figures and
// why children-parallel and penalty-breaker stay near 20 %).
func TestAssemblyPathological(t *testing.T) {
	skipUnderRace(t)
	maxFN := map[string]float64{"multitier": 0.08, "children-parallel": 0.28, "children-0-2": 0.1, "children-d-cc": 0.12, "penalty-breaker": 0.24}
	for _, name := range append([]string{"multitier"}, Pathological...) {
		c := Case{Config: name, Duration: 120 * time.Second}
		out, err := c.Generate()
		if err != nil {
			t.Fatal(err)
		}
		a, err := On(ctx, out, Assembly())
		if err != nil {
			t.Fatal(err)
		}
		n, err := On(ctx, out, Nesting(0, 0))
		if err != nil {
			t.Fatal(err)
		}
		afn, nfn := a.Calls.Instances.FalseNegativeRate, n.Calls.Instances.FalseNegativeRate
		t.Logf("%s: call parallelism %.2f, call trees wrong: assembly %.1f%%, nesting %.1f%%", name, out.Stats.CallParallelism, 100*afn, 100*nfn)
		if afn > maxFN[name] {
			t.Errorf("%s: %.1f%% of call trees wrong, want ≤ %.0f%%", name, 100*afn, 100*maxFN[name])
		}
		if afn > nfn-0.1 {
			t.Errorf("%s: assembly %.1f%% wrong, nesting %.1f%%: want ten points better", name, 100*afn, 100*nfn)
		}
		if a.Calls.Patterns.FalseNegatives != 0 {
			t.Errorf("%s: %d true call trees not found", name, a.Calls.Patterns.FalseNegatives)
		}
	}
}

// TestAssemblyHighParallelism: the multi-tier system with 64 clients
// (per-node call parallelism 6.3, where nesting gets 63 % of the
// instances wrong) keeps the assembly engine's wrong call trees under the
// issue's 20 % (18.8 % on this 120 s trace, 18.2 % on a 300 s one).
func TestAssemblyHighParallelism(t *testing.T) {
	skipUnderRace(t)
	r, err := Do(ctx, Case{Config: "multitier", Duration: 120 * time.Second, Edit: func(c *gen.Config) { c.Clients = 64 }}, Assembly())
	if err != nil {
		t.Fatal(err)
	}
	fn := r.Calls.Instances.FalseNegativeRate
	t.Logf("call parallelism %.2f: %.1f%% of call trees wrong", r.Out.Stats.CallParallelism, 100*fn)
	if r.Out.Stats.CallParallelism < 5.5 {
		t.Errorf("call parallelism %.2f, want about 6", r.Out.Stats.CallParallelism)
	}
	if fn > 0.2 {
		t.Errorf("%.1f%% of call trees wrong, want ≤ 20%%", 100*fn)
	}
}

// TestAssemblyNeedsNoClockSync: the engine compares timestamps of one node
// only (a request's arrival with the calls it makes and their replies), so
// clock offsets of seconds change nothing.
func TestAssemblyNeedsNoClockSync(t *testing.T) {
	skipUnderRace(t)
	run := func(skew map[string]gen.Duration) *Run {
		r, err := Do(ctx, Case{Config: "multitier", Duration: 60 * time.Second, Edit: func(c *gen.Config) { c.Skew = skew }}, Assembly())
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	sync := run(nil)
	skewed := run(map[string]gen.Duration{"WS2": gen.Duration(2 * time.Second), "AP1": gen.Duration(-1500 * time.Millisecond),
		"DB": gen.Duration(700 * time.Millisecond), "CLIENT": gen.Duration(30 * time.Second)})
	a, b := sync.Calls.Instances, skewed.Calls.Instances
	t.Logf("call trees wrong: synchronised %.2f%%, skewed %.2f%%", 100*a.FalseNegativeRate, 100*b.FalseNegativeRate)
	if a.FalseNegatives != b.FalseNegatives || a.Inferred != b.Inferred {
		t.Errorf("skewed clocks changed the result: %+v vs %+v", a, b)
	}
}

// TestAssemblyLoss: a message the sniffer lost costs its own request, not
// its neighbours': with 1 % of the messages lost at random, the share of
// wrong call trees rises by at most the share of requests that lost one
// (and a little).
func TestAssemblyLoss(t *testing.T) {
	skipUnderRace(t)
	c := Case{Config: "children-d-cc", Duration: 120 * time.Second}
	clean, err := Do(ctx, c, Assembly())
	if err != nil {
		t.Fatal(err)
	}
	c.Edit = func(g *gen.Config) { g.Drop.Random = 0.01 }
	lossy, err := Do(ctx, c, Assembly())
	if err != nil {
		t.Fatal(err)
	}
	hit := map[int32]bool{}
	tr := lossy.Out.Truth
	for i, o := range tr.Observed {
		if o < 0 {
			hit[tr.Instance[i]] = true
		}
	}
	share := float64(len(hit)) / float64(tr.NumInstances())
	a, b := clean.Calls.Instances.FalseNegativeRate, lossy.Calls.Instances.FalseNegativeRate
	t.Logf("call trees wrong: %.1f%% without loss, %.1f%% with 1%% of the messages lost (%.1f%% of the requests lost one)", 100*a, 100*b, 100*share)
	if b > a+share+0.02 {
		t.Errorf("loss spread: %.1f%% wrong with loss, %.1f%% without, %.1f%% of the requests lost a message", 100*b, 100*a, 100*share)
	}
}
