package assembly

import (
	"math"
	"math/rand/v2"
	"testing"
)

// smoothedRef is hist.smoothed as it was written first: every bin's
// kernel clamped to the bins, bin by bin.
func smoothedRef(h *hist) [nGapBins]float64 {
	var out [nGapBins]float64
	out[0] = h.w[0]
	r := len(kernel) / 2
	for b := 1; b < nGapBins; b++ {
		if h.w[b] == 0 {
			continue
		}
		for i, k := range kernel {
			j := min(max(b+i-r, 1), nGapBins-1)
			out[j] += h.w[b] * k
		}
	}
	return out
}

// TestSmoothed checks hist.smoothed bit for bit against smoothedRef, on
// histograms with mass at the edges (where the kernel is clamped), in the
// middle, everywhere and nowhere.
func TestSmoothed(t *testing.T) {
	if want := int(math.Ceil(3 * gapSigma)); kernelR != want || len(kernel) != 2*want+1 {
		t.Fatalf("kernelR %d, kernel of %d: want %d and %d", kernelR, len(kernel), want, 2*want+1)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	fill := map[string]func(b int) bool{
		"empty":  func(int) bool { return false },
		"edges":  func(b int) bool { return b <= 2*kernelR || b >= nGapBins-2*kernelR },
		"middle": func(b int) bool { return b > nGapBins/3 && b < nGapBins/2 },
		"all":    func(int) bool { return true },
		"sparse": func(int) bool { return rng.IntN(9) == 0 },
	}
	for name, on := range fill {
		for trial := range 10 {
			var h hist
			for b := range h.w {
				if on(b) {
					h.add(b, rng.ExpFloat64()*math.Pow(10, float64(rng.IntN(7)-3)))
				}
			}
			got, want := h.smoothed(), smoothedRef(&h)
			for b := range got {
				if math.Float64bits(got[b]) != math.Float64bits(want[b]) {
					t.Fatalf("%s trial %d: bin %d is %v, want %v", name, trial, b, got[b], want[b])
				}
			}
		}
	}
}

// TestMaxIsMathMax checks that the builtin max, which logDensity uses,
// is math.Max bit for bit when one argument is finite, as logDensity's
// (1e-300, a bin's width) are: on NaN, signed zeros and infinities in
// the other. (They differ only on +Inf against NaN: math.Max gives +Inf.)
func TestMaxIsMathMax(t *testing.T) {
	vals := []float64{math.NaN(), math.Copysign(0, -1), 0, math.Inf(1), math.Inf(-1), 1e-300, -3.5, 2, math.SmallestNonzeroFloat64}
	for _, a := range vals {
		for _, b := range vals {
			if math.IsInf(b, 0) || math.IsNaN(b) {
				continue
			}
			for _, p := range [][2]float64{{a, b}, {b, a}} {
				got, want := max(p[0], p[1]), math.Max(p[0], p[1])
				if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
					t.Errorf("max(%v, %v) = %v, math.Max %v", p[0], p[1], got, want)
				}
			}
		}
	}
}
