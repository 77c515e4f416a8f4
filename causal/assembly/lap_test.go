package assembly

import (
	"math"
	"math/rand/v2"
	"testing"
)

// bruteLAP returns the least cost of a perfect matching of p by trying
// every permutation, +Inf when there is none.
func bruteLAP(p *lapProblem) float64 {
	cost := make([][]float64, p.n)
	for i := range p.n {
		cost[i] = make([]float64, p.n)
		for j := range cost[i] {
			cost[i][j] = math.Inf(1)
		}
		for e := p.start[i]; e < p.start[i+1]; e++ {
			cost[i][p.col[e]] = p.cost[e]
		}
	}
	best := math.Inf(1)
	perm := make([]int, p.n)
	used := make([]bool, p.n)
	var rec func(i int, acc float64)
	rec = func(i int, acc float64) {
		if i == p.n {
			best = min(best, acc)
			return
		}
		for j := range p.n {
			if !used[j] && !math.IsInf(cost[i][j], 1) {
				used[j], perm[i] = true, j
				rec(i+1, acc+cost[i][j])
				used[j] = false
			}
		}
	}
	rec(0, 0)
	return best
}

// randomLAP returns a random sparse problem of n rows where each edge is
// present with probability density, plus the diagonal when diag.
func randomLAP(rng *rand.Rand, n int, density float64, diag, negative bool) *lapProblem {
	p := &lapProblem{n: n, start: []int32{0}}
	for i := range n {
		for j := range n {
			if diag && i == j || rng.Float64() < density {
				c := float64(rng.IntN(20))
				if negative {
					c -= 10
				}
				if rng.IntN(3) == 0 {
					c += rng.Float64()
				}
				p.col = append(p.col, int32(j))
				p.cost = append(p.cost, c)
			}
		}
		p.start = append(p.start, int32(len(p.col)))
	}
	return p
}

func TestSolveLAPMatchesBruteForce(t *testing.T) {
	cases := []struct {
		name     string
		n        int
		density  float64
		diag     bool
		negative bool
	}{
		{"dense", 6, 1, false, false},
		{"sparse with diagonal", 7, 0.3, true, false},
		{"negative costs", 6, 0.5, true, true},
		{"sparse, maybe infeasible", 6, 0.25, false, false},
		{"one row", 1, 1, false, true},
	}
	rng := rand.New(rand.NewPCG(11, 7))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for it := range 300 {
				p := randomLAP(rng, tc.n, tc.density, tc.diag, tc.negative)
				want := bruteLAP(p)
				got, total, ok := solveLAP(p, 0)
				if math.IsInf(want, 1) {
					if ok {
						t.Fatalf("instance %d: no perfect matching exists, solver found one costing %g", it, total)
					}
					continue
				}
				if !ok {
					t.Fatalf("instance %d: solver found no matching, brute force %g", it, want)
				}
				if math.Abs(total-want) > 1e-9 {
					t.Fatalf("instance %d: cost %g, brute force %g", it, total, want)
				}
				seen := make([]bool, tc.n)
				for i, j := range got {
					if j < 0 || seen[j] {
						t.Fatalf("instance %d: row %d takes column %d twice or none", it, i, j)
					}
					seen[j] = true
				}
			}
		})
	}
}

// TestSolveLAPBudget: a search that needs more heap pops than its budget
// gives up instead of running on.
func TestSolveLAPBudget(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	p := randomLAP(rng, 40, 1, false, false)
	if _, _, ok := solveLAP(p, 10); ok {
		t.Fatal("a 40-row dense problem solved within 10 heap pops")
	}
	if _, _, ok := solveLAP(p, 0); !ok {
		t.Fatal("a dense problem has a perfect matching")
	}
}
