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

// TestGapBinUp: from any earlier delay's bin (or a wrong one, above or
// below), gapBinUp gives gapBin's bin, on increasing delays as the
// deconvolution meets them and on a few that go back.
func TestGapBinUp(t *testing.T) {
	cases := []struct {
		name   string
		delays []int64
	}{
		{"increasing", func() []int64 {
			var ds []int64
			for g := int64(-3); g < 2e11; g = g*21/20 + 7 {
				ds = append(ds, g)
			}
			return append(ds, math.MaxInt64)
		}()},
		{"repeated", []int64{0, 0, 1, 1, 999, 1000, 1000, 1059, 1060, 1060, 5e7, 5e7}},
		{"decreasing", []int64{1e9, 5e7, 1e6, 1060, 1000, 999, 1, 0, -1}},
		{"zigzag", []int64{5, 2e6, 1e3, 3e9, 4e4, 4e4 + 1, 7, 1e12}},
	}
	for _, tc := range cases {
		b := 0
		for _, g := range tc.delays {
			got, want := gapBinUp(b, g), gapBin(g)
			if got != want {
				t.Fatalf("%s: gapBinUp(%d, %d) = %d, gapBin %d", tc.name, b, g, got, want)
			}
			b = got
		}
		for _, g := range tc.delays {
			for _, from := range []int{0, 1, 2, nGapBins / 2, nGapBins - 1} {
				if got, want := gapBinUp(from, g), gapBin(g); got != want {
					t.Fatalf("%s: gapBinUp(%d, %d) = %d, gapBin %d", tc.name, from, g, got, want)
				}
			}
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

// TestLogTransFloor: a kind of call never seen after a context is
// improbable, but not rarer than one in the node's observations: the
// back-off, which shrinks it once per level by the same observations, is
// floored there. A call seen in a context keeps the probability the
// counts give it.
func TestLogTransFloor(t *testing.T) {
	const search, login, profile = 1, 2, 3
	m := newNodeModel(3, 1e9)
	first := ctxKey{pk: 0, prev: noKind}
	for i := range 1000 {
		next := int32(search)
		if i%3 == 0 {
			next = profile
		}
		m.observe(first, next, 1e5, 1e5, 1, 1)
		m.observe(ctxKey{pk: 0, prev: next, pos: 1}, endKind, 1e5, 2e5, 1, 1)
	}
	n := 2000.0 // every observation, at the node's coarsest level
	if got, floor := m.logTrans(first, login), -math.Log(n+1); got < floor-1e-9 || got > floor+1e-9 {
		t.Errorf("log P(login first) = %.2f, want the floor %.2f", got, floor)
	}
	if got, want := m.logTrans(first, search), math.Log(2.0/3); math.Abs(got-want) > 0.01 {
		t.Errorf("log P(search first) = %.3f, want about %.3f", got, want)
	}
}

// TestUnseenWeight: a relation whose differences repeat keeps the least
// weight of chance, one whose every difference is new is chance, and in
// between chance weighs n1·n/(n−n1).
func TestUnseenWeight(t *testing.T) {
	for _, tc := range []struct {
		name string
		link map[int64]float64
		want float64
	}{
		{"one difference, repeated", map[int64]float64{40: 100}, 2},
		{"every difference seen once", map[int64]float64{1: 1, 2: 1, 3: 1, 4: 1}, 1e9},
		{"half seen once", map[int64]float64{0: 50, 1: 1, 2: 1, 3: 1, 4: 1, 5: 1, 6: 1, 7: 1, 8: 1, 9: 1, 10: 1,
			11: 1, 12: 1, 13: 1, 14: 1, 15: 1, 16: 1, 17: 1, 18: 1, 19: 1, 20: 1, 21: 1, 22: 1, 23: 1, 24: 1, 25: 1,
			26: 1, 27: 1, 28: 1, 29: 1, 30: 1, 31: 1, 32: 1, 33: 1, 34: 1, 35: 1, 36: 1, 37: 1, 38: 1, 39: 1, 40: 1,
			41: 1, 42: 1, 43: 1, 44: 1, 45: 1, 46: 1, 47: 1, 48: 1, 49: 1, 50: 1}, 100},
		{"few seen once", map[int64]float64{0: 60, 1: 30, 2: 1}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &sizeLink{link: tc.link}
			for _, v := range tc.link {
				s.n += v
			}
			if got := s.unseenWeight(); math.Abs(got-tc.want) > 1e-9*tc.want {
				t.Errorf("unseenWeight = %g, want %g", got, tc.want)
			}
		})
	}
}

// TestFallingLR: a falling table is the plain ratio where that already
// falls with the bin, and where it rises the rising bins share the ratio
// of their summed counts (pool adjacent violators), so it never rises.
func TestFallingLR(t *testing.T) {
	pooled := func(l, o, nl, no, m, k float64) float64 {
		return math.Log((l+0.5*m)/(nl+0.5*k)) - math.Log((o+0.5*m)/(no+0.5*k))
	}
	cases := []struct {
		name        string
		link, other []float64
		// blocks are the bins pooled together, in order
		blocks [][]int
	}{
		{"already falling", []float64{900, 80, 15, 5}, []float64{60, 150, 30, 20}, [][]int{{0}, {1}, {2}, {3}}},
		{"second bin likelier (learnt off by one)", []float64{424, 800, 8, 0}, []float64{850, 186, 309, 64}, [][]int{{0, 1}, {2}, {3}}},
		{"rising throughout", []float64{13, 12, 59, 213}, []float64{752, 722, 603, 535}, [][]int{{0, 1, 2, 3}}},
		{"a rise at the tail", []float64{1279, 5, 0, 1}, []float64{6, 733, 303, 14}, [][]int{{0}, {1}, {2, 3}}},
		{"flat", []float64{10, 10, 10, 10}, []float64{10, 10, 10, 10}, [][]int{{0}, {1}, {2}, {3}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plain, fall := newLR(len(tc.link)), newFallingLR(len(tc.link))
			for b := range tc.link {
				plain.addLink(b, tc.link[b])
				plain.addOther(b, tc.other[b])
				fall.addLink(b, tc.link[b])
				fall.addOther(b, tc.other[b])
			}
			k := float64(len(tc.link))
			for _, bl := range tc.blocks {
				var l, o float64
				for _, b := range bl {
					l += tc.link[b]
					o += tc.other[b]
				}
				want := pooled(l, o, fall.nl, fall.no, float64(len(bl)), k)
				if len(bl) == 1 {
					want = plain.logLR(bl[0])
				}
				for _, b := range bl {
					if got := fall.logLR(b); math.Abs(got-want) > 1e-12 {
						t.Errorf("bin %d: %.4f, want %.4f", b, got, want)
					}
				}
			}
			for b := 1; b < len(tc.link); b++ {
				if fall.logLR(b) > fall.logLR(b-1)+1e-12 {
					t.Errorf("bin %d rises: %.4f after %.4f", b, fall.logLR(b), fall.logLR(b-1))
				}
			}
		})
	}
}
