package assembly

import (
	"math"
	"testing"
)

// TestScorerSums checks that a scorer, which holds the model's delay
// densities and adds the anchors' log weights where a bin is read, gives
// bit for bit what a copy of the densities with the weights added gave
// (the scorer before it shared them): the delay score of gap and the
// cumulative sums of readyBy, over contexts, kinds and delays; and that
// scorers of one level-0 context (positions apart) share the densities.
func TestScorerSums(t *testing.T) {
	m := scorerModel()
	delays := []int64{-5, 0, 1, 999, 1e3, 1500, 4e4, 1e6, 3e7, 2e9, 1e12, math.MaxInt64}
	for _, tc := range []struct {
		name string
		cx   ctxKey
		next int32
	}{
		{"first call", ctxKey{pk: 0, prev: -1}, 1},
		{"second call", ctxKey{pk: 1, prev: 2, pos: 1, ret: 2}, 3},
		{"beyond the positions", ctxKey{pk: 3, prev: 0, pos: maxPos}, 4},
		{"the reply", ctxKey{pk: 2, prev: 1, pos: 3, ret: 1}, endKind},
		{"a context never seen", ctxKey{pk: 9, prev: 7, pos: 2}, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys := tc.cx.gapKeys(tc.next)
			wl := m.anchorWeight(m.anchorW, keys[0])
			lw, la := math.Log(wl), math.Log(1-wl)
			var dl, da [nGapBins]float64 // the copy the scorer held
			for b := range dl {
				dl[b] = m.gapDensity(anchorLast, &keys)[b] + lw
				da[b] = m.gapDensity(anchorArrival, &keys)[b] + la
			}
			var cl, ca [nGapBins]float64 // readyBy's sums of the copy
			var sl, sa float64
			for b := range dl {
				w := gapWidth[b]
				if b == 0 {
					w = 1
				}
				sl += math.Exp(dl[b]) * w
				sa += math.Exp(da[b]) * w
				cl[b], ca[b] = sl, sa
			}
			sc := m.scorer(tc.cx, tc.next)
			for _, gl := range delays {
				for _, ga := range delays {
					want := logAdd(dl[gapBin(gl)], da[gapBin(ga)])
					if got := sc.gap(gl, ga); math.Float64bits(got) != math.Float64bits(want) {
						t.Fatalf("gap(%d, %d) = %v, want %v", gl, ga, got, want)
					}
					want = math.Log(min(max(cl[gapBin(gl)]+ca[gapBin(ga)], 1e-12), 1))
					if got := sc.readyBy(gl, ga); math.Float64bits(got) != math.Float64bits(want) {
						t.Fatalf("readyBy(%d, %d) = %v, want %v", gl, ga, got, want)
					}
				}
			}
			other := tc.cx
			other.pos = (tc.cx.pos + 1) % (maxPos + 1)
			if o := m.scorer(other, tc.next); o.dl != sc.dl || o.da != sc.da {
				t.Errorf("scorers at positions %d and %d hold their own densities", tc.cx.pos, other.pos)
			}
		})
	}
}
