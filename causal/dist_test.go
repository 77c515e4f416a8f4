package causal

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// TestSummarizeUnitMatchesSort: the selection-based summary of samples of
// weight 1 is the sorting one, bit for bit, on sizes around the
// percentiles' rank boundaries, with duplicates, negatives and the values
// summarize skips.
func TestSummarizeUnitMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 5))
	for _, n := range []int{0, 1, 2, 3, 9, 10, 11, 15, 16, 17, 99, 100, 101, 199, 200, 1000, 4097, 30000} {
		for _, kind := range []string{"spread", "dups", "const", "sorted", "reversed", "odd"} {
			vals := make([]float64, n)
			for i := range vals {
				switch kind {
				case "spread":
					vals[i] = rng.NormFloat64() * 1e4
				case "dups":
					vals[i] = float64(rng.IntN(5)) - 2
				case "const":
					vals[i] = 200
				case "sorted", "reversed":
					vals[i] = float64(i / 3)
				case "odd":
					vals[i] = []float64{math.NaN(), math.Inf(1), math.Inf(-1), 1e-9, -1e9, 3}[rng.IntN(6)]
				}
			}
			if kind == "reversed" {
				slices.Reverse(vals)
			}
			for _, hist := range []bool{false, true} {
				pts := make([]sample, n)
				for i, v := range vals {
					pts[i] = sample{v, 1}
				}
				want := summarize(pts, hist)
				got := summarizeUnit(slices.Clone(vals), hist)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("n=%d %s hist=%v:\n got %+v\nwant %+v", n, kind, hist, got, want)
				}
			}
		}
	}
}

// TestSelectKth checks the partition property against a sort.
func TestSelectKth(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 7))
	for trial := 0; trial < 300; trial++ {
		n := 1 + rng.IntN(3000)
		v := make([]float64, n)
		span := 1 + rng.IntN(n)
		for i := range v {
			v[i] = float64(rng.IntN(span))
		}
		sorted := slices.Sorted(slices.Values(v))
		k := rng.IntN(n)
		selectKth(v, k)
		if v[k] != sorted[k] {
			t.Fatalf("n=%d k=%d: %v, want %v", n, k, v[k], sorted[k])
		}
		for i := range v {
			if i < k && v[i] > v[k] || i > k && v[i] < v[k] {
				t.Fatalf("n=%d k=%d: v[%d]=%v on the wrong side of %v", n, k, i, v[i], v[k])
			}
		}
	}
}

func BenchmarkSummarizeUnit(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	vals := make([]float64, 30000)
	for i := range vals {
		vals[i] = math.Round(rng.ExpFloat64() * 5e4)
	}
	work := make([]float64, len(vals))
	b.SetBytes(int64(8 * len(vals)))
	b.ReportAllocs()
	for b.Loop() {
		copy(work, vals)
		if d := summarizeUnit(work, false); d.N != len(vals) {
			b.Fatal(d.N)
		}
	}
}

func BenchmarkSummarizeSort(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	pts := make([]sample, 30000)
	for i := range pts {
		pts[i] = sample{math.Round(rng.ExpFloat64() * 5e4), 1}
	}
	work := make([]sample, len(pts))
	b.SetBytes(int64(16 * len(pts)))
	b.ReportAllocs()
	for b.Loop() {
		copy(work, pts)
		if d := summarize(work, false); d.N != len(pts) {
			b.Fatal(d.N)
		}
	}
}
