package pcapio

import (
	"math/rand/v2"
	"testing"
)

// TestReorderBuf feeds a reorderBuf nearly ordered packets, popping all
// but hold of them after each insert, and checks that they leave as from
// a plain sorted list and that the buffer stays within a few times the
// packets it holds at once.
func TestReorderBuf(t *testing.T) {
	for _, hold := range []int{0, 1, 3, 64, 1000} {
		rng := rand.New(rand.NewPCG(1, uint64(hold)))
		var r reorderBuf
		var ref []*Packet
		maxCap := 0
		for i := range 20000 {
			p := &Packet{Obs: []Observation{{Corrected: int64(i*10 + rng.IntN(25))}}, num: int64(i)}
			r.insert(p)
			j := len(ref)
			for j > 0 && earlier(p, ref[j-1]) {
				j--
			}
			ref = append(ref[:j], append([]*Packet{p}, ref[j:]...)...)
			maxCap = max(maxCap, cap(r.buf))
			for r.len() > hold {
				if q := r.pop(); q != ref[0] {
					t.Fatalf("hold %d: packet %d left where %d should", hold, q.num, ref[0].num)
				}
				ref = ref[1:]
			}
		}
		if maxCap > 4*(hold+1)+8 {
			t.Errorf("hold %d: the buffer grew to %d", hold, maxCap)
		}
	}
}
