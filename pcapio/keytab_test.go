package pcapio

import (
	"math/rand/v2"
	"testing"
)

// TestPacketTableAsMap holds packetTable to a Go map over random sets,
// replacements and conditional deletions, with keys drawn from a small
// range (collisions, long runs) and a large one.
func TestPacketTableAsMap(t *testing.T) {
	for _, keys := range []uint64{8, 300, 1 << 62} {
		rng := rand.New(rand.NewPCG(7, keys))
		var tab packetTable
		ref := map[uint64]*Packet{}
		pkts := make([]*Packet, 16)
		for i := range pkts {
			pkts[i] = &Packet{}
		}
		for range 50000 {
			k := rng.Uint64N(keys)
			p := pkts[rng.IntN(len(pkts))]
			switch rng.IntN(3) {
			case 0:
				tab.set(k, p)
				ref[k] = p
			case 1:
				tab.delIf(k, p)
				if ref[k] == p {
					delete(ref, k)
				}
			}
			if got := tab.get(k); got != ref[k] {
				t.Fatalf("keys < %d: get(%d) = %p, want %p", keys, k, got, ref[k])
			}
			if tab.n != len(ref) {
				t.Fatalf("keys < %d: %d keys, want %d", keys, tab.n, len(ref))
			}
		}
		for k, p := range ref {
			if got := tab.get(k); got != p {
				t.Fatalf("keys < %d: at the end get(%d) = %p, want %p", keys, k, got, p)
			}
		}
	}
}

// TestPacketTableNoAllocs: once grown, setting, finding and deleting
// keys allocates nothing.
func TestPacketTableNoAllocs(t *testing.T) {
	var tab packetTable
	p := &Packet{}
	for k := range uint64(100) {
		tab.set(k, p)
	}
	for k := range uint64(100) {
		tab.delIf(k, p)
	}
	k := uint64(0)
	if n := testing.AllocsPerRun(100, func() {
		for range 50 {
			k++
			tab.set(k, p)
			if tab.get(k) != p {
				t.Fatal("key lost")
			}
			tab.delIf(k, p)
		}
	}); n != 0 {
		t.Errorf("%v allocations a run", n)
	}
}
