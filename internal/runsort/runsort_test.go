package runsort

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// key is a sort key with ties: k is compared, i tells equal keys apart
// in the test's checks only.
type key struct{ k, i int }

func (a *key) Less(b *key) bool { return a.k < b.k }

func TestSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	shapes := []struct {
		name string
		gen  func(n int) int
	}{
		{"sorted", func(i int) int { return i }},
		{"reversed", func(i int) int { return -i }},
		{"random", func(int) int { return rng.IntN(1000) }},
		{"ties", func(int) int { return rng.IntN(3) }},
		{"nearly sorted", func(i int) int { return i + rng.IntN(5) }},
		{"sawtooth", func(i int) int { return i % 17 }},
	}
	for _, sh := range shapes {
		for _, n := range []int{0, 1, 2, 3, 10, 100, 1000} {
			s := make([]key, n)
			for i := range s {
				s[i] = key{sh.gen(i), i}
			}
			want := slices.Clone(s)
			slices.SortStableFunc(want, func(a, b key) int { return a.k - b.k })
			for _, buf := range [][]key{nil, make([]key, 2*n)} {
				got, other := Sort[key](slices.Clone(s), buf)
				if !slices.Equal(got, want) {
					t.Fatalf("%s, %d: Sort gives %v, want %v (stable)", sh.name, n, got, want)
				}
				if len(got) > 0 && len(other) > 0 && &got[0] == &other[0] {
					t.Fatalf("%s, %d: the sorted slice and the other one are the same", sh.name, n)
				}
			}
		}
	}
}

func BenchmarkSortNearlySorted(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	s := make([]key, 100000)
	for i := range s {
		s[i] = key{i + rng.IntN(8), i}
	}
	work, buf := make([]key, len(s)), make([]key, len(s))
	b.ReportAllocs()
	for b.Loop() {
		copy(work, s)
		Sort[key](work, buf)
	}
}
