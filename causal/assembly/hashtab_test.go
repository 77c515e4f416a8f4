package assembly

import (
	"math/rand/v2"
	"testing"
)

// TestU64Table: the table holds what a map holds, through growth and
// resets, including keys that collide in the table's index.
func TestU64Table(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var tab u64Table
	for round := range 50 {
		tab.reset()
		want := map[uint64]uint64{}
		n := rng.IntN(500)
		for range n {
			k := rng.Uint64() % 300 // repeats
			if round%2 == 0 {
				k <<= 40 // keys that differ only in high bits
			}
			if v, ok := tab.get(k); ok != (want[k] != 0) || ok && v != want[k] {
				t.Fatalf("round %d: get(%d) = %d, %v; want %d", round, k, v, ok, want[k])
			}
			v := rng.Uint64() | 1
			tab.put(k, v)
			want[k] = v
		}
		for k, v := range want {
			if got, ok := tab.get(k); !ok || got != v {
				t.Fatalf("round %d: get(%d) = %d, %v; want %d", round, k, got, ok, v)
			}
		}
		if tab.n != len(want) {
			t.Fatalf("round %d: %d entries, want %d", round, tab.n, len(want))
		}
	}
}
