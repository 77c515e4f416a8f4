package keytab

import (
	"math/rand/v2"
	"testing"
)

// TestTableAsMap holds Table to a Go map over random sets, look-ups that set
// what is missing (GetOrSet), replacements, deletions and conditional deletions, with keys from small universes
// (the table stays dense, runs of slots wrap around its end, deletions
// shift keys back) and from the whole range, for a value type of numbers
// (nat's entry ids) and of pointers (pcapio's packets).
func TestTableAsMap(t *testing.T) {
	for _, universe := range []uint64{8, 50, 1000, 1 << 63} {
		r := rand.New(rand.NewPCG(1, universe))
		var ids Table[uint32]
		refIDs := map[uint64]uint32{}
		var ptrs Table[*int]
		refPtrs := map[uint64]*int{}
		vals := make([]*int, 16)
		for i := range vals {
			vals[i] = new(int)
		}
		for i := range 200000 {
			k := r.Uint64N(universe)
			v := vals[r.IntN(len(vals))]
			switch r.IntN(5) {
			case 3:
				w, wok := refIDs[k]
				if !wok {
					w = uint32(i + 1)
					refIDs[k] = w
				}
				if got, ok := ids.GetOrSet(k, uint32(i+1)); ok != wok || got != w {
					t.Fatalf("universe %d, op %d: GetOrSet(%d) gives %d %v, want %d %v", universe, i, k, got, ok, w, wok)
				}
			case 0:
				refIDs[k] = uint32(i + 1)
				ids.Set(k, uint32(i+1))
				refPtrs[k] = v
				ptrs.Set(k, v)
			case 1:
				delete(refIDs, k)
				ids.Delete(k)
			case 2:
				ptrs.DeleteIf(k, v)
				if refPtrs[k] == v {
					delete(refPtrs, k)
				}
			}
			want, wok := refIDs[k]
			if got, ok := ids.Get(k); ok != wok || got != want {
				t.Fatalf("universe %d, op %d: key %d gives %d %v, want %d %v", universe, i, k, got, ok, want, wok)
			}
			if got, _ := ptrs.Get(k); got != refPtrs[k] {
				t.Fatalf("universe %d, op %d: key %d gives %p, want %p", universe, i, k, got, refPtrs[k])
			}
			if ids.Len() != len(refIDs) || ptrs.Len() != len(refPtrs) {
				t.Fatalf("universe %d, op %d: %d and %d keys, want %d and %d", universe, i, ids.Len(), ptrs.Len(), len(refIDs), len(refPtrs))
			}
		}
		for k, want := range refIDs {
			if got, ok := ids.Get(k); !ok || got != want {
				t.Fatalf("universe %d: key %d gives %d %v at the end, want %d", universe, k, got, ok, want)
			}
		}
		for k, want := range refPtrs {
			if got, _ := ptrs.Get(k); got != want {
				t.Fatalf("universe %d: key %d gives %p at the end, want %p", universe, k, got, want)
			}
		}
	}
}

// TestTableNoAllocs: once grown, setting, finding (GetOrSet too) and deleting keys
// allocates nothing.
func TestTableNoAllocs(t *testing.T) {
	var tab Table[*int]
	p := new(int)
	for k := range uint64(100) {
		tab.Set(k, p)
	}
	for k := range uint64(100) {
		tab.DeleteIf(k, p)
	}
	k := uint64(0)
	if n := testing.AllocsPerRun(100, func() {
		for range 50 {
			k++
			tab.Set(k, p)
			if got, _ := tab.Get(k); got != p {
				t.Fatal("key lost")
			}
			tab.DeleteIf(k, p)
			if _, found := tab.GetOrSet(k, p); found {
				t.Fatal("deleted key found")
			}
			tab.Delete(k)
		}
	}); n != 0 {
		t.Errorf("%v allocations a run", n)
	}
}
