package assembly

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortCands checks sortCands against slices.SortFunc with cmpCand on
// candidates with tied scores, NaNs and infinities, at lengths on both
// sides of its insertion sort's limit.
func TestSortCands(t *testing.T) {
	scores := []float64{-3, -1.5, 0, 2, math.Inf(-1), math.Inf(1), math.NaN()}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 5, 17, 31, 32, 33, 64, 200} {
		for trial := range 20 {
			cands := make([]cand, n)
			for i := range cands {
				// distinct (h, slot): cmpCand is a total order on them
				cands[i] = cand{h: int32(i / 3), slot: int32(i%3) - 1, score: scores[rng.IntN(len(scores))]}
				if trial%2 == 1 {
					cands[i].score = rng.NormFloat64()
				}
			}
			rng.Shuffle(n, func(i, j int) { cands[i], cands[j] = cands[j], cands[i] })
			want := slices.Clone(cands)
			slices.SortFunc(want, cmpCand)
			sortCands(cands)
			for i := range cands {
				if cands[i].h != want[i].h || cands[i].slot != want[i].slot {
					t.Fatalf("n=%d trial %d: at %d got (%d,%d) want (%d,%d)", n, trial, i,
						cands[i].h, cands[i].slot, want[i].h, want[i].slot)
				}
			}
		}
	}
}

// TestRetClass checks retClass against counting the bits one at a time.
func TestRetClass(t *testing.T) {
	ref := func(b int64) uint8 {
		if b < 0 {
			return 0
		}
		c := uint8(1)
		for b > 0 && c < 31 {
			b >>= 1
			c++
		}
		return c
	}
	for _, b := range []int64{-5, -1, 0, 1, 2, 3, 4, 7, 8, 1023, 1024, 1<<29 - 1, 1 << 29, 1<<30 - 1, 1 << 30, 1 << 31, 1 << 40, math.MaxInt64} {
		if got, want := retClass(b), ref(b); got != want {
			t.Errorf("retClass(%d) = %d, want %d", b, got, want)
		}
	}
}

// TestFrexpNormal checks frexpNormal against math.Frexp on the values
// gapBin gives it (delays of 1 µs to the largest int64, over 1e3).
func TestFrexpNormal(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	vals := []float64{1, 1.5, 2, 1e3, 1e6, 123456.789, float64(math.MaxInt64) / 1e3}
	for range 10000 {
		vals = append(vals, float64(rng.Int64N(math.MaxInt64-1000)+1000)/1e3)
	}
	for _, y := range vals {
		f, e := frexpNormal(y)
		wf, we := math.Frexp(y)
		if f != wf || e != we {
			t.Fatalf("frexpNormal(%g) = %g, %d; want %g, %d", y, f, e, wf, we)
		}
	}
}

// TestScorerCacheModels checks the search's scorer cache against the
// models' own look-ups when the model changes from look-up to look-up
// (cross-fitted models, the local search's model per request): each
// answer is the current model's scorer.
func TestScorerCacheModels(t *testing.T) {
	ms := []*nodeModel{newNodeModel(3, 1e9), newNodeModel(3, 1e9), newNodeModel(3, 1e9)}
	s := &search{m: ms[0]}
	for i := range 5000 {
		m := ms[i%len(ms)]
		if i%7 == 0 {
			m = ms[(i/7)%len(ms)]
		}
		s.m = m
		cx := ctxKey{pk: int32(i % 5), prev: int32(i%3) - 1, pos: uint8(i % 4), ret: uint8(i % 2)}
		next := int32(i%6) - 1
		if got, want := s.scorer(cx, next), m.scorer(cx, next); got != want {
			t.Fatalf("look-up %d: the cache gave another scorer than model %d's", i, i%len(ms))
		}
	}
}
