package assembly

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestReadyRankCounts checks readyRanks against the pair-by-pair count
// observeFIFO made, with ready times and arrivals drawn from a few values
// (ties on both), requests listed twice, and every size from 0 to 80.
func TestReadyRankCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	r := &run{arrAt: make([]int64, 200)}
	for p := range r.arrAt {
		r.arrAt[p] = int64(rng.IntN(5))
	}
	var rk readyRanks
	for n := range 81 {
		for range 20 {
			es := make([]int32, n)
			rs := make([]readyEv, n)
			for i := range es {
				es[i] = int32(rng.IntN(200))
				if i > 0 && rng.IntN(10) == 0 {
					es[i] = es[rng.IntN(i)]
				}
			}
			ready := map[int32]int64{} // a request's ready time is one
			for i, e := range es {
				if _, ok := ready[e]; !ok {
					ready[e] = int64(rng.IntN(6))
				}
				rs[i] = readyEv{t: ready[e], msg: -1}
			}
			want := make([]int, n)
			for i, e := range es {
				for j, o := range es {
					if o != e && r.readyBefore(o, e, rs[j], rs[i]) {
						want[i]++
					}
				}
			}
			if got := rk.of(r, es, rs); !slices.Equal(got, want) {
				t.Fatalf("%d candidates: counts %v, want %v", n, got, want)
			}
		}
	}
}
