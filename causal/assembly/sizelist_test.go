package assembly

import (
	"math"
	"math/rand/v2"
	"testing"
)

// randDelta is the probability of a difference delta between a reply of
// kind prev and a message of the sizes next, for unrelated messages:
// randDeltaOf as it was computed before, walking the maps.
func randDelta(prev, next map[int64]float64, delta int64) float64 {
	var np, nn float64
	for _, v := range prev {
		np += v
	}
	for _, v := range next {
		nn += v
	}
	if np == 0 || nn == 0 {
		return 0
	}
	p := 0.0
	for x, v := range prev {
		p += v * next[x+delta]
	}
	return p / (np * nn)
}

// TestRandDeltaOf checks randDeltaOf against randDelta bit for bit, for
// every pair of tables, kinds with many sizes, few, and none, and
// differences that match some sizes and none.
func TestRandDeltaOf(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	m := newNodeModel(4, 1e9)
	for _, tab := range []map[int32]map[int64]float64{m.retSizes, m.reqSizes, m.repSizes, m.arrSizes} {
		for k := range int32(3) { // kind 3: no sizes
			n := []int{1, 40, 3000}[k]
			for range n {
				addSize(tab, k, int64(100+rng.IntN(50*n/10+5)))
			}
		}
	}
	checked := 0
	for pt := range sizeTab(4) {
		for nt := range sizeTab(4) {
			for pk := range int32(4) {
				for nk := range int32(4) {
					for _, delta := range []int64{0, 1, -3, 17, -250, 1 << 40} {
						got := m.randDeltaOf(pt, pk, nt, nk, delta)
						want := randDelta(m.sizeTable(pt)[pk], m.sizeTable(nt)[nk], delta)
						if math.Float64bits(got) != math.Float64bits(want) {
							t.Fatalf("tables %d/%d, kinds %d/%d, delta %d: %v, want %v", pt, nt, pk, nk, delta, got, want)
						}
						if got > 0 {
							checked++
						}
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no difference had a probability: nothing compared")
	}
}
