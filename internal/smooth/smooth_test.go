package smooth

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGaussian: the kernel is symmetric, peaks at its centre, sums to 1
// and has the width its cut gives.
func TestGaussian(t *testing.T) {
	for _, tc := range []struct {
		sigma, cut float64
		n          int
	}{
		{1, 3, 7}, {1, 4, 9}, {0.5, 3, 5}, {2.2, 4, 19}, {0.01, 3, 3},
	} {
		k := Gaussian(tc.sigma, tc.cut)
		if len(k) != tc.n {
			t.Errorf("sigma %v cut %v: %d weights, want %d", tc.sigma, tc.cut, len(k), tc.n)
		}
		sum := 0.0
		for i, v := range k {
			sum += v
			if v != k[len(k)-1-i] || v > k[len(k)/2] {
				t.Errorf("sigma %v: kernel %v is not symmetric with its peak at the centre", tc.sigma, k)
				break
			}
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Errorf("sigma %v: weights sum to %v", tc.sigma, sum)
		}
	}
}

// TestConvolveMatchesScatter: gathering each output bin gives, to the
// bit, what scattering each input bin over its neighbours gives (the way
// the nesting engine first smoothed its scoreboard), and a kernel of one
// bin leaves the histogram as it is.
func TestConvolveMatchesScatter(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 50; trial++ {
		n := 1 + rng.IntN(60)
		src := make([]float64, n)
		for i := range src {
			if rng.IntN(3) == 0 {
				src[i] = rng.Float64() * 10
			}
		}
		kern := Gaussian(0.2+rng.Float64()*3, float64(3+rng.IntN(2)))
		half := len(kern) / 2
		want := make([]float64, n)
		for i, v := range src {
			if v == 0 {
				continue
			}
			for k, kv := range kern {
				if j := i + k - half; j >= 0 && j < n {
					want[j] += v * kv
				}
			}
		}
		got := make([]float64, n)
		Convolve(got, src, kern)
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("trial %d bin %d: %v, scattering gives %v", trial, i, got[i], want[i])
			}
		}
	}
	src := []float64{0, 3, 1, 0, 7}
	got := make([]float64, len(src))
	Convolve(got, src, []float64{1})
	for i := range src {
		if got[i] != src[i] {
			t.Fatalf("identity kernel: %v, want %v", got, src)
		}
	}
}
