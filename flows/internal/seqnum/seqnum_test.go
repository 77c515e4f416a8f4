package seqnum

import (
	"math"
	"math/rand/v2"
	"testing"
)

// bases are sequence numbers around every place where uint32 arithmetic
// wraps or where int32 changes sign.
var bases = []uint32{0, 1, 2, 1000, math.MaxInt32 - 2, math.MaxInt32 - 1, math.MaxInt32,
	math.MaxInt32 + 1, math.MaxInt32 + 2, math.MaxUint32 - 2, math.MaxUint32 - 1, math.MaxUint32}

// deltas are signed distances from a base, up to the largest distance at
// which comparison is defined (2^31 - 1 either way).
func deltas() []int64 {
	var d []int64
	for i := int64(-300); i <= 300; i++ {
		d = append(d, i)
	}
	for _, e := range []int64{1 << 16, 1 << 24, 1 << 30, math.MaxInt32 - 1, math.MaxInt32} {
		for k := int64(-2); k <= 0; k++ {
			d = append(d, e+k, -(e + k))
		}
	}
	return d
}

// TestCompareMatchesIntegers checks LessThan, LessThanEq, Diff, Size, Add,
// Max and Min against plain 64-bit integer arithmetic on unwrapped values,
// for every base and every delta.
func TestCompareMatchesIntegers(t *testing.T) {
	ds := deltas()
	for _, b := range bases {
		v := Value(b)
		for _, d := range ds {
			w := Value(uint32(int64(b) + d)) // w is d after v, wrapped
			if got, want := v.LessThan(w), d > 0; got != want {
				t.Fatalf("%d.LessThan(%d) (delta %d) = %v, want %v", v, w, d, got, want)
			}
			if got, want := w.LessThan(v), d < 0; got != want {
				t.Fatalf("%d.LessThan(%d) (delta %d) = %v, want %v", w, v, -d, got, want)
			}
			if got, want := v.LessThanEq(w), d >= 0; got != want {
				t.Fatalf("%d.LessThanEq(%d) (delta %d) = %v, want %v", v, w, d, got, want)
			}
			if got := v.Diff(w); int64(got) != d {
				t.Fatalf("%d.Diff(%d) = %d, want %d", v, w, got, d)
			}
			if d >= 0 {
				if got := v.Size(w); int64(got) != d {
					t.Fatalf("%d.Size(%d) = %d, want %d", v, w, got, d)
				}
				if got := v.Add(Size(d)); got != w {
					t.Fatalf("%d.Add(%d) = %d, want %d", v, d, got, w)
				}
				u := v
				u.UpdateForward(Size(d))
				if u != w {
					t.Fatalf("UpdateForward(%d) from %d = %d, want %d", d, v, u, w)
				}
			}
			later, earlier := w, v
			if d < 0 {
				later, earlier = v, w
			}
			if got := Max(v, w); got != later {
				t.Fatalf("Max(%d, %d) = %d, want %d", v, w, got, later)
			}
			if got := Min(v, w); got != earlier {
				t.Fatalf("Min(%d, %d) = %d, want %d", v, w, got, earlier)
			}
		}
	}
}

// TestInRange checks InRange and InWindow for windows of several sizes
// placed across the wrap point, against unwrapped integers.
func TestInRange(t *testing.T) {
	sizes := []int64{0, 1, 2, 100, 1 << 20, math.MaxInt32}
	for _, b := range bases {
		for _, s := range sizes {
			first := Value(b)
			last := first.Add(Size(s))
			for _, d := range []int64{-2, -1, 0, 1, s - 1, s, s + 1, s / 2} {
				v := Value(uint32(int64(b) + d))
				want := d >= 0 && d < s
				if got := v.InRange(first, last); got != want {
					t.Fatalf("%d.InRange(%d, %d) (offset %d) = %v, want %v", v, first, last, d, got, want)
				}
				if got := v.InWindow(first, Size(s)); got != want {
					t.Fatalf("%d.InWindow(%d, %d) = %v, want %v", v, first, s, got, want)
				}
			}
		}
	}
}

// TestOverlap compares Overlap with a byte-by-byte count on short ranges
// around the wrap point.
func TestOverlap(t *testing.T) {
	for _, b := range []uint32{0, 5, math.MaxUint32 - 3, math.MaxInt32 - 3} {
		for ao := int64(0); ao < 12; ao++ {
			for as := int64(0); as < 8; as++ {
				for bo := int64(0); bo < 12; bo++ {
					for bs := int64(0); bs < 8; bs++ {
						// Slow oracle: the set of unwrapped offsets in both.
						lo, n := int64(-1), int64(0)
						for x := ao; x < ao+as; x++ {
							if x >= bo && x < bo+bs {
								if lo < 0 {
									lo = x
								}
								n++
							}
						}
						start, size := Overlap(Value(uint32(int64(b)+ao)), Size(as), Value(uint32(int64(b)+bo)), Size(bs))
						if int64(size) != n {
							t.Fatalf("Overlap(+%d/%d, +%d/%d) size %d, want %d", ao, as, bo, bs, size, n)
						}
						if n > 0 && start != Value(uint32(int64(b)+lo)) {
							t.Fatalf("Overlap(+%d/%d, +%d/%d) start %d, want +%d", ao, as, bo, bs, start, lo)
						}
					}
				}
			}
		}
	}
}

// TestRandomAgainstIntegers is a seeded random check of the same laws over
// the whole 32-bit space.
func TestRandomAgainstIntegers(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200000; i++ {
		b := r.Uint32()
		d := int64(r.Int32()) // any delta in [-2^31, 2^31)
		if d == math.MinInt32 {
			continue // exactly half the space apart: order undefined
		}
		v, w := Value(b), Value(uint32(int64(b)+d))
		if v.LessThan(w) != (d > 0) || int64(v.Diff(w)) != d {
			t.Fatalf("base %d delta %d: LessThan %v Diff %d", b, d, v.LessThan(w), v.Diff(w))
		}
	}
}
