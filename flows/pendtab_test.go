package flows

import (
	"math/rand/v2"
	"testing"
)

// TestPendTableMatchesMap holds pendTable to a Go map under random puts,
// gets, deletions and clears, with keys that collide (small ranges) and
// keys that do not, and checks the walk of each against the map's values.
func TestPendTableMatchesMap(t *testing.T) {
	for _, tc := range []struct {
		name  string
		keys  uint64 // keys drawn from 1..keys
		ops   int
		clear int // one clear in so many operations (0: never)
	}{
		{"few keys", 8, 20000, 0},
		{"stream ids", 4096, 200000, 0},
		{"wide keys", 1 << 62, 50000, 0},
		{"with clears", 512, 100000, 5000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(tc.ops)))
			var tab pendTable
			ref := map[uint64]uint64{}
			for i := range tc.ops {
				k := 1 + r.Uint64N(tc.keys)
				switch op := r.IntN(3); {
				case tc.clear > 0 && i%tc.clear == tc.clear-1:
					tab.clear()
					clear(ref)
				case op == 0:
					v := r.Uint64()
					tab.put(k, v)
					ref[k] = v
				case op == 1:
					tab.del(k)
					delete(ref, k)
				default:
					v, ok := tab.get(k)
					w, wok := ref[k]
					if ok != wok || v != w {
						t.Fatalf("op %d: get(%d) = %d, %v; want %d, %v", i, k, v, ok, w, wok)
					}
				}
				if tab.len() != len(ref) {
					t.Fatalf("op %d: len %d, want %d", i, tab.len(), len(ref))
				}
			}
			for k, w := range ref {
				if v, ok := tab.get(k); !ok || v != w {
					t.Fatalf("get(%d) = %d, %v at the end; want %d", k, v, ok, w)
				}
			}
			sum, n := uint64(0), 0
			tab.each(func(v uint64) { sum += v; n++ })
			var want uint64
			for _, v := range ref {
				want += v
			}
			if n != len(ref) || sum != want {
				t.Fatalf("each: %d values summing to %d; want %d summing to %d", n, sum, len(ref), want)
			}
		})
	}
}

// TestPendTableNoAllocs checks that a warmed table's put, get and del
// allocate nothing.
func TestPendTableNoAllocs(t *testing.T) {
	var tab pendTable
	for k := uint64(1); k <= 64; k += 2 {
		tab.put(k, k)
	}
	for k := uint64(1); k <= 64; k += 2 {
		tab.del(k)
	}
	k := uint64(1)
	if n := testing.AllocsPerRun(1000, func() {
		tab.put(k, 7)
		if _, ok := tab.get(k); !ok {
			t.Fatal("lost a key")
		}
		tab.del(k)
		k += 2
		if k > 64 {
			k = 1
		}
	}); n != 0 {
		t.Errorf("%v allocations per put, get and del", n)
	}
}
