package nat

import (
	"math/rand/v2"
	"testing"
)

// TestViewIndexAsMap holds viewIndex to a Go map over random sets and
// deletions of views, with the real hash and with hashes folded into a
// few values (so that keys share hash slots and go to the overflow map,
// and a deletion from the table leaves colliding keys in it).
func TestViewIndexAsMap(t *testing.T) {
	for _, tc := range []struct {
		name string
		fold uint64 // hashes modulo fold; 0: the real hash
	}{
		{"real hash", 0},
		{"4 hashes", 4},
		{"one hash", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, tc.fold))
			var x viewIndex
			hash := func(k connKey) uint64 {
				if tc.fold == 0 {
					return x.hash(k)
				}
				return x.hash(k)%tc.fold + 1
			}
			keys := make([]connKey, 40)
			for i := range keys {
				keys[i] = connKey{ep: [2]endpoint{{port: uint16(i)}, {port: 80}}, proto: 6}
				keys[i].ep[0].ip[15] = byte(r.IntN(3))
				keys[i].v6 = i%2 == 0
			}
			var views []view
			ref := map[connKey]uint32{}
			for op := range 5000 {
				k := keys[r.IntN(len(keys))]
				id, ok := ref[k]
				switch {
				case ok && r.IntN(2) == 0:
					x.del(k, id, hash(k))
					views[id] = view{}
					delete(ref, k)
				case !ok:
					id = uint32(len(views))
					views = append(views, view{key: k, live: true})
					x.set(k, id, hash(k))
					ref[k] = id
				}
				for _, q := range keys {
					want, wok := ref[q]
					if got, gok := x.get(views, q, hash(q)); gok != wok || got != want {
						t.Fatalf("op %d: key %v gives %d %v, want %d %v", op, q.ep, got, gok, want, wok)
					}
				}
				if x.len() != len(ref) {
					t.Fatalf("op %d: %d keys, want %d", op, x.len(), len(ref))
				}
			}
			if tc.fold == 1 && len(x.over) == 0 {
				t.Error("one hash for every key, yet nothing in the overflow map")
			}
		})
	}
}

// TestViewIndexNoAllocs: once grown, finding, setting and deleting views
// of keys whose hashes differ allocates nothing.
func TestViewIndexNoAllocs(t *testing.T) {
	var x viewIndex
	views := make([]view, 64)
	for i := range views {
		views[i].key = connKey{ep: [2]endpoint{{port: uint16(i)}, {port: 443}}, proto: 6}
	}
	for i := range views {
		x.set(views[i].key, uint32(i), x.hash(views[i].key))
	}
	for i := range views {
		x.del(views[i].key, uint32(i), x.hash(views[i].key))
	}
	if n := testing.AllocsPerRun(100, func() {
		for i := range views {
			k := views[i].key
			h := x.hash(k)
			if _, ok := x.get(views, k, h); ok {
				t.Fatal("deleted key found")
			}
			x.set(k, uint32(i), h)
			if id, ok := x.get(views, k, h); !ok || id != uint32(i) {
				t.Fatal("key lost")
			}
			x.del(k, uint32(i), h)
		}
	}); n != 0 {
		t.Errorf("%v allocations a run", n)
	}
}
