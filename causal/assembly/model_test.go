package assembly

import (
	"math"
	"testing"
)

// TestGapBin: the binary search gives the bin the logarithm does, and the
// bins' edges and widths tile the time line.
func TestGapBin(t *testing.T) {
	slow := func(g int64) int {
		if g <= 0 {
			return 0
		}
		if g < gapMinNS {
			return 1
		}
		return min(1+int(math.Log10(float64(g)/gapMinNS)*gapPerDecade), nGapBins-1)
	}
	for _, g := range []int64{-5, 0, 1, 999, 1000, 1001, 1059, 1060, 5e4, 1e6, 5e7, 123456789, 1e11, 1e12, math.MaxInt64} {
		if got, want := gapBin(g), slow(g); got != want {
			// an edge computed two ways may round differently: allow one
			// bin at an exact power
			if d := got - want; d < -1 || d > 1 {
				t.Errorf("gapBin(%d) = %d, want %d", g, got, want)
			}
		}
	}
	for g := int64(1); g < 1e10; g = g*11/10 + 1 {
		b := gapBin(g)
		if b > 1 && float64(g) < gapLow[b] || b+1 < nGapBins && float64(g) >= gapLow[b+1] {
			t.Fatalf("gapBin(%d) = %d outside [%v, %v)", g, b, gapLow[b], gapLow[b+1])
		}
	}
	for b := 2; b+1 < nGapBins; b++ {
		if w := gapLow[b+1] - gapLow[b]; math.Abs(w-gapWidth[b])/w > 1e-9 {
			t.Fatalf("bin %d: width %v, edges %v apart", b, gapWidth[b], w)
		}
	}
}

// TestLogAdd: the table gives log(e^a + e^b) within 0.005.
func TestLogAdd(t *testing.T) {
	for _, c := range [][2]float64{{0, 0}, {-3, -3.5}, {-100, -1}, {5, -40}, {-7.25, -7.2501}, {math.Inf(-1), -2}, {-2, math.Inf(-1)}} {
		want := math.Log(math.Exp(c[0]) + math.Exp(c[1]))
		if got := logAdd(c[0], c[1]); math.Abs(got-want) > 0.005 {
			t.Errorf("logAdd(%v, %v) = %v, want %v", c[0], c[1], got, want)
		}
	}
}
