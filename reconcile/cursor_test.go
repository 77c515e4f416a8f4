package reconcile

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/wirepath/wirepath/internal/runsort"
)

// TestCursorMatchesBinarySearch holds the cursor's hinted searches to
// slices.BinarySearchFunc's answers, for sorted span lists and for lists
// whose starts or ends decrease (where the hints must not be used), with
// queries moving forward, backward and jumping.
func TestCursorMatchesBinarySearch(t *testing.T) {
	tests := []struct {
		name string
		mono bool
	}{
		{"sorted", true},
		{"unsorted", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			for round := range 200 {
				ss := randomSpans(rng, rng.IntN(40), tc.mono)
				c := newCursor(ss)
				if tc.mono && !c.mono {
					t.Fatalf("round %d: sorted spans not taken as sorted: %v", round, ss)
				}
				for q := range 300 {
					x := int64(rng.IntN(400)) - 10
					if q%3 != 0 && len(ss) > 0 {
						s := ss[rng.IntN(len(ss))]
						x = s.a + int64(rng.IntN(3)) - 1
					}
					wantB, _ := slices.BinarySearchFunc(ss, x+1, func(s span, x int64) int { return cmp.Compare(s.b, x) })
					wantA, _ := slices.BinarySearchFunc(ss, x, func(s span, x int64) int { return cmp.Compare(s.a, x) })
					if got := c.afterB(x); got != wantB {
						t.Fatalf("round %d: afterB(%d) = %d, want %d (spans %v)", round, x, got, wantB, ss)
					}
					if got := c.atA(x); got != wantA {
						t.Fatalf("round %d: atA(%d) = %d, want %d (spans %v)", round, x, got, wantA, ss)
					}
				}
			}
		})
	}
}

// randomSpans returns n spans; sorted ones are back to back with random
// gaps and empty spans, the others at random places.
func randomSpans(rng *rand.Rand, n int, sorted bool) spans {
	ss := make(spans, n)
	var off int64
	for i := range ss {
		if !sorted {
			off = int64(rng.IntN(300))
		}
		off += int64(rng.IntN(3))
		ss[i] = span{off, off + int64(rng.IntN(10)), int32(i)}
		off = ss[i].b
	}
	return ss
}

// TestMergeRuns holds the trace's sort (runs merged) to slices.SortFunc
// with the same order, on keys in runs, reversed, random and tied.
func TestMergeRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	shapes := []struct {
		name string
		key  func(i int) traceKey
	}{
		{"sorted", func(i int) traceKey { return traceKey{t: int64(i)} }},
		{"reversed", func(i int) traceKey { return traceKey{t: int64(-i)} }},
		{"runs", func(i int) traceKey { return traceKey{t: int64(i%97) * 10, rc: int32(i / 97)} }},
		{"random", func(int) traceKey {
			return traceKey{t: rng.Int64N(50), rc: rng.Int32N(3), dir: int8(rng.IntN(2)), off: rng.Int64N(4)}
		}},
	}
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			for _, n := range []int{0, 1, 2, 3, 10, 1000} {
				keys := make([]traceKey, n)
				for i := range keys {
					keys[i] = sh.key(i)
					keys[i].i = int32(i)
				}
				want := slices.Clone(keys)
				slices.SortFunc(want, func(a, b traceKey) int {
					return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.rc, b.rc), cmp.Compare(a.dir, b.dir), cmp.Compare(a.off, b.off), cmp.Compare(a.i, b.i))
				})
				if got, _ := runsort.Sort[traceKey](keys, nil); !slices.Equal(got, want) {
					t.Fatalf("n=%d: the sort gives %v, want %v", n, got, want)
				}
			}
		})
	}
}

// TestSniffedOnlyCutsEverywhere holds the shortcut of dirSpans.messages:
// with only sniffed spans, sorted and disjoint (empty ones and gaps
// included), both boundary rules cut at every span boundary.
func TestSniffedOnlyCutsEverywhere(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, writes := range []bool{false, true} {
		for round := range 300 {
			fs := randomSpans(rng, 1+rng.IntN(30), true)
			ds := dirSpans{fs: fs, writes: writes}
			ds.index()
			if !ds.fc.disjoint {
				t.Fatalf("round %d: back-to-back spans not taken as disjoint: %v", round, fs)
			}
			for _, s := range fs {
				for _, p := range []int64{s.a, s.b} {
					if !ds.cut(p) {
						t.Fatalf("writes=%v round %d: no cut at boundary %d of %v", writes, round, p, fs)
					}
				}
			}
		}
	}
}
