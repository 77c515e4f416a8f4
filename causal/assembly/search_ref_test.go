package assembly

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/wirepath/wirepath/causal"
)

// randomWindow builds a node N with a few requests from clients and a few
// calls to two servers, at random times and sizes.
func randomWindow(rng *rand.Rand) *tb {
	b := newTB()
	np := 1 + rng.IntN(4)
	for i := range np {
		at := rng.Float64() * 20
		b.rpc(at, at+2+rng.Float64()*18, "C", fmt.Sprintf("c:%d", 1000+i), "N", "n:80", fmt.Sprintf("p%d", i), int64(100+10*rng.IntN(2)))
	}
	nc := 1 + rng.IntN(6)
	for i := range nc {
		at := rng.Float64() * 30
		srv := []string{"s:6379", "t:11211"}[rng.IntN(2)]
		b.rpc(at, at+0.2+rng.Float64()*5, "N", fmt.Sprintf("n:%d", 5000+i), srv[:1], srv, fmt.Sprintf("c%d", i), int64(20+10*rng.IntN(3)))
	}
	return b
}

// bruteForce returns the best objective over every assignment of node n's
// calls to their candidate requests or none.
func (r *run) bruteForce(n int32, m *nodeModel) float64 {
	kids := r.childrenOf[n]
	cands := map[int32][]int32{}
	r.sweep(n, func(c int32, cs []int32) { cands[c] = append([]int32{-1}, cs...) })
	asg := map[int32]int32{}
	best := math.Inf(-1)
	var rec func(i int)
	rec = func(i int) {
		if i == len(kids) {
			best = max(best, r.objective(n, m, func(c int32) int32 { return asg[c] }))
			return
		}
		for _, p := range cands[kids[i]] {
			asg[kids[i]] = p
			rec(i + 1)
		}
	}
	rec(0)
	return best
}

// TestSearchMatchesBruteForce: where the search keeps every hypothesis it
// finds the assignment of greatest likelihood, as enumerating them all
// does; the local search never makes an assignment worse.
func TestSearchMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	exact := 0
	for it := range 300 {
		b := randomWindow(rng)
		o := DefaultOptions()
		o.Beam = 1 << 14
		e, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		r := newRun(o, b.t, causal.NewAggregator(b.t, o.Aggregate).Namer())
		var n int32 = -1
		for i, s := range r.l.nodeSym {
			if b.t.Str(s) == "N" {
				n = int32(i)
			}
		}
		r.exactLinks(n)
		// a model with some shape: fitted on a random assignment
		m := r.fitWith(n, func(c int32) int32 {
			var cs []int32
			r.sweep(n, func(k int32, ks []int32) {
				if k == c {
					cs = append(cs, ks...)
				}
			})
			if len(cs) == 0 || rng.IntN(4) == 0 {
				return -1
			}
			return cs[rng.IntN(len(cs))]
		}, func(int32) float64 { return 1 }, one, func(int32) bool { return true }, true, false)
		s := newSearch(r, n, m)
		s.run(r.timeline(n))
		got := r.objective(n, m, func(c int32) int32 { return r.parent[c] })
		if s.cnt.pruned == 0 {
			exact++
			if s.cnt.decisionsExact != s.cnt.decisions {
				t.Errorf("case %d: nothing pruned but %d of %d decisions inexact", it, s.cnt.decisions-s.cnt.decisionsExact, s.cnt.decisions)
			}
			if want := r.bruteForce(n, m); math.Abs(got-want) > 1e-6*math.Max(1, math.Abs(want)) {
				t.Errorf("case %d (%d requests, %d calls): search %.6f, brute force %.6f", it, len(r.parentsOf[n]), len(r.childrenOf[n]), got, want)
			}
		}
		r.improve(n, m, nil, 20)
		if after := r.objective(n, m, func(c int32) int32 { return r.parent[c] }); after < got-1e-9 {
			t.Errorf("case %d: local search made it worse: %.6f -> %.6f", it, got, after)
		}
		_ = e
	}
	if exact < 250 {
		t.Errorf("only %d of 300 windows were searched without pruning", exact)
	}
}
