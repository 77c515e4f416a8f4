package assembly

import (
	"math"
	"testing"
)

// TestTokAssocKappa checks the smoothing fitted per context: a map the
// links show to be a function (every value with its one key) is trusted
// as one, so that a call carrying another value's key scores well below
// the fixed smoothing's −2.7 (a value of 27 links); stray links (keys of
// other values on one link in ten) keep the smoothing near the fixed
// one; and the lift of the value's own key stays what it was.
func TestTokAssocKappa(t *testing.T) {
	build := func(stray int) *tokAssoc {
		a := newTokAssoc()
		for i := range 15 * 27 {
			v := uint64(i % 15)
			k := 100 + v
			if stray > 0 && i%stray == 0 {
				k = 100 + (v+1+uint64(i/15)%13)%15 // another value's key
			}
			a.addLink(0, 1, []uint64{v}, []uint64{k}, 1)
		}
		a.finish()
		return a
	}
	x := assocCtx{0, 1}
	fixed := math.Log(assocKappa / (27 + assocKappa))
	for _, tc := range []struct {
		name         string
		stray        int
		kappaLo, kHi float64
		otherLo, oHi float64 // the score of another value's key
	}{
		{"a function", 0, 0, 0.07, -assocCap, fixed - 1},
		{"one link in ten stray", 10, 0.9, assocKappa, fixed - 0.8, fixed + 0.8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := build(tc.stray)
			k := a.kappaOf(x)
			other := a.score(0, 1, []uint64{3}, []uint64{100 + 4})
			own := a.score(0, 1, []uint64{3}, []uint64{100 + 3})
			t.Logf("κ %g, another value's key %.2f (fixed smoothing %.2f), its own %.2f", k, other, fixed, own)
			if k < tc.kappaLo || k > tc.kHi {
				t.Errorf("κ %g, want %g to %g", k, tc.kappaLo, tc.kHi)
			}
			if other < tc.otherLo || other > tc.oHi {
				t.Errorf("another value's key scores %.2f, want %.2f to %.2f", other, tc.otherLo, tc.oHi)
			}
			if own < 2 {
				t.Errorf("the value's own key scores %.2f, want a lift", own)
			}
		})
	}
}
