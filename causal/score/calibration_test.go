package score

import (
	"math"
	"testing"
)

func TestReliability(t *testing.T) {
	type c struct {
		p     float64
		right bool
	}
	cases := []struct {
		name                string
		in                  []c
		n, right, bins      int
		brier, ece, over, m float64
	}{
		{name: "none"},
		{name: "exact and right", in: []c{{1, true}, {1, true}}, n: 2, right: 2, bins: 1, m: 1},
		{name: "certain and wrong", in: []c{{1, false}}, n: 1, bins: 1, brier: 1, ece: 1, over: 1, m: 1},
		{name: "calibrated halves", in: []c{{0.5, true}, {0.5, false}}, n: 2, right: 1, bins: 1, brier: 0.25, m: 0.5},
		{name: "over-confident bin and under-confident bin",
			in: []c{{0.95, true}, {0.95, false}, {0.15, true}, {0.15, true}}, n: 4, right: 3, bins: 2,
			brier: (0.05*0.05 + 0.95*0.95 + 2*0.85*0.85) / 4, ece: 0.5*0.45 + 0.5*0.85, over: 0.5 * 0.45, m: 0.55},
		{name: "out of range clamped", in: []c{{1.5, true}, {-1, false}, {math.NaN(), false}}, n: 3, right: 1, bins: 2, m: 1.0 / 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var rc ReliabilityCounter
			for _, x := range tc.in {
				rc.Add(x.p, x.right)
			}
			r := rc.Reliability()
			near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
			if r.N != tc.n || r.Right != tc.right || len(r.Bins) != tc.bins || !near(r.Brier, tc.brier) ||
				!near(r.ECE, tc.ece) || !near(r.Overconfidence, tc.over) || !near(r.MeanConfidence, tc.m) {
				t.Errorf("got %+v", r)
			}
			sum := 0
			for _, b := range r.Bins {
				sum += b.N
				if b.MeanConfidence < b.Lo || b.MeanConfidence > b.Hi {
					t.Errorf("bin %+v: mean outside it", b)
				}
			}
			if sum != r.N {
				t.Errorf("bins hold %d of %d", sum, r.N)
			}
		})
	}
}
