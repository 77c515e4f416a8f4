package report

import (
	"slices"
	"testing"

	"github.com/wirepath/wirepath/causal"
)

func TestComputeAgreement(t *testing.T) {
	res := func(engine string, trees ...[]int) *causal.Result {
		p := causal.Pattern{Rank: 1}
		for _, ms := range trees {
			p.Instances = append(p.Instances, causal.InstanceRecord{Messages: ms, Probability: 1})
		}
		return &causal.Result{Engine: engine, Patterns: []causal.Pattern{p}}
	}
	// Three requests (roots 0, 10, 20). nesting and linking agree on 0
	// and 20 (20's messages listed in another order); on 10 linking took
	// a neighbour's call; assembly agrees with nesting on all it has.
	rs := []*causal.Result{
		res("nesting", []int{0, 1, 2, 3}, []int{10, 11, 12, 13}, []int{20, 21}),
		res("linking", []int{0, 1, 2, 3}, []int{10, 11, 2, 13}, []int{20, 21}),
		{Engine: "convolution", Patterns: []causal.Pattern{{Rank: 1}}},
		res("assembly", []int{0, 3, 2, 1}, []int{10, 11, 12, 13}),
	}
	a := ComputeAgreement(rs)
	if a == nil {
		t.Fatal("no agreement")
	}
	if !slices.Equal(a.Engines, []string{"nesting", "linking", "assembly"}) || !slices.Equal(a.Missing, []string{"convolution"}) {
		t.Errorf("engines %v, missing %v", a.Engines, a.Missing)
	}
	if !slices.Equal(a.Requests, []int{3, 3, 2}) {
		t.Errorf("requests %v, want [3 3 2]", a.Requests)
	}
	want := []struct{ i, j, both, same int }{
		{0, 1, 3, 2}, {1, 0, 3, 2}, {0, 2, 2, 2}, {1, 2, 2, 1}, {0, 0, 3, 3},
	}
	for _, w := range want {
		if a.Both[w.i][w.j] != w.both || a.Same[w.i][w.j] != w.same {
			t.Errorf("%s vs %s: %d of %d the same, want %d of %d", a.Engines[w.i], a.Engines[w.j], a.Same[w.i][w.j], a.Both[w.i][w.j], w.same, w.both)
		}
	}
	if a.All != 2 || a.AllSame != 1 {
		t.Errorf("all engines: %d the same of %d, want 1 of 2", a.AllSame, a.All)
	}
	if ComputeAgreement(rs[2:3]) != nil || ComputeAgreement(rs[:1]) != nil {
		t.Error("an agreement of fewer than two engines with instances")
	}
}
