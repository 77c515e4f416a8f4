package assembly

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// sharedIDFOf is the summed IDF of the tokens of a that appear in any of
// pool, each counted once: tokFeature's two sums as they were computed
// before sharedIDFs, one walk each.
func sharedIDFOf(idf map[uint64]float64, a []uint64, pool ...[]uint64) float64 {
	sum := 0.0
	for _, t := range a {
		for _, p := range pool {
			if _, ok := slices.BinarySearch(p, t); ok {
				sum += idf[t]
				break
			}
		}
	}
	return sum
}

// TestSharedIDF2 checks sharedIDFs's two sums against two walks of
// sharedIDFOf bit for bit, on random sorted token sets with IDFs whose
// sums round (and tokens without an IDF), and on the unsorted sets of
// TestTokFeature.
func TestSharedIDF2(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	idf := map[uint64]float64{}
	for tok := range uint64(60) {
		if tok%7 != 0 {
			idf[tok] = rng.Float64() * 12
		}
	}
	set := func() []uint64 {
		var s []uint64
		for tok := range uint64(60) {
			if rng.IntN(4) == 0 {
				s = append(s, tok)
			}
		}
		return s
	}
	cases := [][4][]uint64{
		{{2, 3, 1}, {1, 4}, {2, 3, 1}, nil},
		{{5}, {1, 4}, nil, {5}},
		{nil, {1}, {1}, {1}},
		{{1, 1, 2}, {1}, {2}, nil},
	}
	for range 2000 {
		cases = append(cases, [4][]uint64{set(), set(), set(), set()})
	}
	for i, c := range cases {
		pool := [3][]uint64{c[1], c[2], c[3]}
		own, all := sharedIDFs(idf, c[0], &pool)
		wOwn, wAll := sharedIDFOf(idf, c[0], c[1]), sharedIDFOf(idf, c[0], pool[:]...)
		if math.Float64bits(own) != math.Float64bits(wOwn) || math.Float64bits(all) != math.Float64bits(wAll) {
			t.Fatalf("case %d: sums %v, %v, want %v, %v", i, own, all, wOwn, wAll)
		}
	}
}
