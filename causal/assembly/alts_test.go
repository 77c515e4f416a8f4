package assembly

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTopAlts: topAlts gives what sorting every alternative and keeping
// the first k gives, ties of score broken by request.
func TestTopAlts(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var buf []altScore
	for _, n := range []int{0, 1, 2, 3, 5, 8, 40, 300} {
		for _, k := range []int{1, 2, 4, 9} {
			alts := make([]altScore, n)
			for i := range alts {
				// few distinct scores, so that ties are common
				alts[i] = altScore{int32(i) - 1, float64(rng.IntN(6))}
				if rng.IntN(10) == 0 {
					alts[i].score = math.Inf(-1)
				}
			}
			rng.Shuffle(n, func(i, j int) { alts[i], alts[j] = alts[j], alts[i] })
			want := slices.Clone(alts)
			slices.SortFunc(want, cmpAlt)
			want = want[:min(k, n)]
			if got := topAlts(&buf, alts, k); !slices.Equal(got, want) {
				t.Errorf("n %d k %d: %v, want %v", n, k, got, want)
			}
		}
	}
}
