package nat

import (
	"math/rand/v2"
	"testing"
)

// TestKeyTable checks keyTable against a Go map over random insertions,
// lookups and deletions: keys from small universes (the table stays
// dense, runs of slots wrap around its end, deletions shift keys back)
// and from the whole range.
func TestKeyTable(t *testing.T) {
	for _, universe := range []uint64{50, 1000, 1 << 63} {
		r := rand.New(rand.NewPCG(1, universe))
		var kt keyTable
		ref := map[uint64]uint32{}
		for i := range 200000 {
			k := r.Uint64N(universe)
			switch r.IntN(3) {
			case 0:
				if _, ok := ref[k]; !ok {
					ref[k] = uint32(i)
					kt.put(k, uint32(i))
				}
			case 1:
				delete(ref, k)
				kt.del(k)
			}
			want, wok := ref[k]
			if got, ok := kt.get(k); ok != wok || got != want {
				t.Fatalf("universe %d, op %d: key %d gives %d %v, want %d %v", universe, i, k, got, ok, want, wok)
			}
			if kt.n != len(ref) {
				t.Fatalf("universe %d, op %d: %d keys, want %d", universe, i, kt.n, len(ref))
			}
		}
		for k, want := range ref {
			if got, ok := kt.get(k); !ok || got != want {
				t.Fatalf("universe %d: key %d gives %d %v at the end, want %d", universe, k, got, ok, want)
			}
		}
	}
}
