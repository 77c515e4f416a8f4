package clock

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestHalves(t *testing.T) {
	for x := int64(-9); x <= 9; x++ {
		if got, want := FloorHalf(x), int64(math.Floor(float64(x)/2)); got != want {
			t.Errorf("FloorHalf(%d) = %d, want %d", x, got, want)
		}
		if got, want := CeilHalf(x), int64(math.Ceil(float64(x)/2)); got != want {
			t.Errorf("CeilHalf(%d) = %d, want %d", x, got, want)
		}
	}
	for _, c := range []struct{ x, floor, ceil int64 }{
		{math.MaxInt64, math.MaxInt64 / 2, math.MaxInt64/2 + 1},
		{math.MinInt64 + 1, math.MinInt64/2 + 1 - 1, math.MinInt64/2 + 1},
		{3_000_000_001, 1_500_000_000, 1_500_000_001},
		{-3_000_000_001, -1_500_000_001, -1_500_000_000},
	} {
		if got := FloorHalf(c.x); got != c.floor {
			t.Errorf("FloorHalf(%d) = %d, want %d", c.x, got, c.floor)
		}
		if got := CeilHalf(c.x); got != c.ceil {
			t.Errorf("CeilHalf(%d) = %d, want %d", c.x, got, c.ceil)
		}
	}
}

// pair builds a Pair from the delays each way (send times 1000 apart).
func pair(ab, ba []int64) Pair {
	var p Pair
	for i, d := range ab {
		p.AB.Add(Sample{Send: int64(i) * 1000, Recv: int64(i)*1000 + d})
	}
	for i, d := range ba {
		p.BA.Add(Sample{Send: int64(i) * 1000, Recv: int64(i)*1000 + d})
	}
	return p
}

func TestEstimate(t *testing.T) {
	tests := []struct {
		name   string
		ab, ba []int64
		want   Estimate
	}{
		{"no samples", nil, nil, Estimate{}},
		{"one way only", []int64{100, 50}, nil, Estimate{}},
		{"the other way only", nil, []int64{7}, Estimate{}},
		{"symmetric, no offset", []int64{100}, []int64{100}, Estimate{Known: true, Offset: 0, Uncertainty: 100, Samples: 2}},
		{"B 50 ahead, 100 each way", []int64{150}, []int64{50}, Estimate{Known: true, Offset: 50, Uncertainty: 100, Samples: 2}},
		{"B 50 behind", []int64{50}, []int64{150}, Estimate{Known: true, Offset: -50, Uncertainty: 100, Samples: 2}},
		{"smallest each way counts", []int64{900, 150, 400}, []int64{50, 70}, Estimate{Known: true, Offset: 50, Uncertainty: 100, Samples: 5}},
		{"odd difference rounds the offset down, the uncertainty up", []int64{3}, []int64{0}, Estimate{Known: true, Offset: 1, Uncertainty: 2, Samples: 2}},
		{"negative odd difference rounds down too", []int64{0}, []int64{3}, Estimate{Known: true, Offset: -2, Uncertainty: 2, Samples: 2}},
		{"zero round trip: exact", []int64{5}, []int64{-5}, Estimate{Known: true, Offset: 5, Uncertainty: 0, Samples: 2}},
		{"negative round trip: inconsistent, magnitude rounded up", []int64{-5}, []int64{2}, Estimate{Known: true, Offset: -4, Uncertainty: 2, Samples: 2, Inconsistent: true}},
		{"negative even round trip", []int64{-4}, []int64{0}, Estimate{Known: true, Offset: -2, Uncertainty: 2, Samples: 2, Inconsistent: true}},
		{"large", []int64{2_000_000_001}, []int64{-1_999_999_000}, Estimate{Known: true, Offset: 1_999_999_500, Uncertainty: 501, Samples: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := pair(tt.ab, tt.ba)
			got := p.Estimate()
			if got != tt.want {
				t.Fatalf("Estimate() = %+v, want %+v", got, tt.want)
			}
			if r := got.Reverse(); r.Offset != -got.Offset || r.Uncertainty != got.Uncertainty || r.Known != got.Known {
				t.Errorf("Reverse() = %+v", r)
			}
			if got.Known && p.RoundTrip() != p.AB.MinDelay()+p.BA.MinDelay() {
				t.Errorf("RoundTrip() = %d", p.RoundTrip())
			}
		})
	}
}

func TestWay(t *testing.T) {
	var w Way
	if w.MinDelay() != math.MaxInt64 {
		t.Fatalf("empty MinDelay %d", w.MinDelay())
	}
	w.Add(Sample{10, 30})
	w.Add(Sample{50, 65})
	w.Add(Sample{90, 105}) // equal delay: the first stays
	if w.N != 3 || w.Min != (Sample{50, 65}) || w.MinDelay() != 15 {
		t.Fatalf("after three: %+v", w)
	}
	var o Way
	o.Add(Sample{7, 10})
	w.Merge(o)
	w.Merge(Way{})
	if w.N != 4 || w.Min != (Sample{7, 10}) {
		t.Fatalf("after merge: %+v", w)
	}
	var e Way
	e.Merge(w)
	if e.N != w.N || e.Min != w.Min || len(e.Envelope()) != len(w.Envelope()) {
		t.Fatalf("merge into empty: %+v", e)
	}
	if p := (Pair{AB: w}); p.RoundTrip() != math.MinInt64 {
		t.Fatalf("RoundTrip one way: %d", p.RoundTrip())
	}
}

// Whatever the delays each way (not negative), the true offset lies
// within the estimate's uncertainty; and when the smallest delays are
// equal, the estimate is exact (to the rounding).
func TestEstimateBoundsTruth(t *testing.T) {
	for off := int64(-7); off <= 7; off++ {
		for dab := int64(0); dab <= 6; dab++ {
			for dba := int64(0); dba <= 6; dba++ {
				var p Pair
				p.AB.Add(Sample{Send: 100, Recv: 100 + dab + off})
				p.AB.Add(Sample{Send: 300, Recv: 300 + dab + 9 + off}) // queued longer
				p.BA.Add(Sample{Send: 200 + off, Recv: 200 + dba})
				e := p.Estimate()
				if !e.Known || e.Inconsistent {
					t.Fatalf("off %d delays %d/%d: %+v", off, dab, dba, e)
				}
				if d := abs(e.Offset - off); d > e.Uncertainty {
					t.Errorf("off %d delays %d/%d: estimate %d ± %d misses the truth", off, dab, dba, e.Offset, e.Uncertainty)
				}
				if e.Uncertainty != CeilHalf(dab+dba) {
					t.Errorf("off %d delays %d/%d: uncertainty %d, want half the round trip", off, dab, dba, e.Uncertainty)
				}
				if dab == dba && e.Offset != off {
					t.Errorf("off %d symmetric delays %d: estimate %d", off, dab, e.Offset)
				}
			}
		}
	}
}

func est(off, unc int64, samples int) Estimate {
	return Estimate{Known: true, Offset: off, Uncertainty: unc, Samples: samples}
}

func TestChain(t *testing.T) {
	ref := []Root{{Clock: 0}}
	tests := []struct {
		name  string
		n     int
		roots []Root
		edges []Edge
		opts  Options
		want  []Offset
	}{{
		name:  "a line: offsets and uncertainties add, samples are the fewest",
		n:     3,
		roots: ref,
		edges: []Edge{{0, 1, est(100, 10, 5)}, {1, 2, est(-30, 20, 3)}},
		want: []Offset{
			{Known: true, Root: 0, Prev: -1, Edge: -1},
			{Known: true, Offset: 100, Uncertainty: 10, Samples: 5, Hops: 1, Root: 0, Prev: 0, Edge: 0},
			{Known: true, Offset: 70, Uncertainty: 30, Samples: 3, Hops: 2, Root: 0, Prev: 1, Edge: 1},
		},
	}, {
		name:  "an edge against the grain is negated",
		n:     2,
		roots: ref,
		edges: []Edge{{1, 0, est(7, 4, 2)}},
		want: []Offset{
			{Known: true, Root: 0, Prev: -1, Edge: -1},
			{Known: true, Offset: -7, Uncertainty: 4, Samples: 2, Hops: 1, Root: 0, Prev: 0, Edge: 0},
		},
	}, {
		name:  "least summed uncertainty: two good hops beat one poor",
		n:     3,
		roots: ref,
		edges: []Edge{{0, 2, est(1, 500, 9)}, {0, 1, est(2, 100, 9)}, {1, 2, est(3, 100, 9)}},
		want: []Offset{
			{Known: true, Root: 0, Prev: -1, Edge: -1},
			{Known: true, Offset: 2, Uncertainty: 100, Samples: 9, Hops: 1, Root: 0, Prev: 0, Edge: 1},
			{Known: true, Offset: 5, Uncertainty: 200, Samples: 9, Hops: 2, Root: 0, Prev: 1, Edge: 2},
		},
	}, {
		name:  "a hop cost prefers the direct estimate",
		n:     3,
		roots: ref,
		edges: []Edge{{0, 2, est(1, 500, 9)}, {0, 1, est(2, 100, 9)}, {1, 2, est(3, 100, 9)}},
		opts:  Options{HopCost: 1000},
		want: []Offset{
			{Known: true, Root: 0, Prev: -1, Edge: -1},
			{Known: true, Offset: 2, Uncertainty: 100, Samples: 9, Hops: 1, Root: 0, Prev: 0, Edge: 1},
			{Known: true, Offset: 1, Uncertainty: 500, Samples: 9, Hops: 1, Root: 0, Prev: 0, Edge: 0},
		},
	}, {
		name:  "equal uncertainty: fewer hops",
		n:     3,
		roots: ref,
		edges: []Edge{{0, 1, est(2, 100, 9)}, {1, 2, est(3, 100, 9)}, {0, 2, est(1, 200, 9)}},
		want: []Offset{
			{Known: true, Root: 0, Prev: -1, Edge: -1},
			{Known: true, Offset: 2, Uncertainty: 100, Samples: 9, Hops: 1, Root: 0, Prev: 0, Edge: 0},
			{Known: true, Offset: 1, Uncertainty: 200, Samples: 9, Hops: 1, Root: 0, Prev: 0, Edge: 2},
		},
	}, {
		name:  "equal uncertainty and hops: through the lower clock",
		n:     4,
		roots: ref,
		edges: []Edge{{0, 2, est(20, 100, 9)}, {0, 1, est(10, 100, 9)}, {2, 3, est(2, 50, 9)}, {1, 3, est(1, 50, 9)}},
		want: []Offset{
			{Known: true, Root: 0, Prev: -1, Edge: -1},
			{Known: true, Offset: 10, Uncertainty: 100, Samples: 9, Hops: 1, Root: 0, Prev: 0, Edge: 1},
			{Known: true, Offset: 20, Uncertainty: 100, Samples: 9, Hops: 1, Root: 0, Prev: 0, Edge: 0},
			{Known: true, Offset: 11, Uncertainty: 150, Samples: 9, Hops: 2, Root: 0, Prev: 1, Edge: 3},
		},
	}, {
		name:  "parallel edges: the better, or the first given",
		n:     3,
		roots: ref,
		edges: []Edge{{0, 1, est(5, 10, 1)}, {1, 0, est(-6, 10, 2)}, {0, 2, est(9, 30, 1)}, {0, 2, est(8, 20, 4)}},
		want: []Offset{
			{Known: true, Root: 0, Prev: -1, Edge: -1},
			{Known: true, Offset: 5, Uncertainty: 10, Samples: 1, Hops: 1, Root: 0, Prev: 0, Edge: 0},
			{Known: true, Offset: 8, Uncertainty: 20, Samples: 4, Hops: 1, Root: 0, Prev: 0, Edge: 3},
		},
	}, {
		name:  "several roots: each clock from the cheapest; a root is never replaced",
		n:     4,
		roots: []Root{{Clock: 0}, {Clock: 3, Offset: 1000, Uncertainty: 400}, {Clock: 3, Offset: 5}},
		edges: []Edge{{0, 1, est(10, 300, 2)}, {1, 3, est(990, 50, 3)}, {3, 2, est(-7, 10, 4)}, {0, 3, est(0, 1, 9)}},
		want: []Offset{
			{Known: true, Root: 0, Prev: -1, Edge: -1},
			{Known: true, Offset: 10, Uncertainty: 300, Samples: 2, Hops: 1, Root: 0, Prev: 0, Edge: 0},
			{Known: true, Offset: 993, Uncertainty: 410, Samples: 4, Hops: 1, Root: 3, Prev: 3, Edge: 2},
			{Known: true, Offset: 1000, Uncertainty: 400, Root: 3, Prev: -1, Edge: -1},
		},
	}, {
		name:  "unreachable, unknown, looping and out-of-range edges and roots are ignored",
		n:     3,
		roots: []Root{{Clock: -1}, {Clock: 3}, {Clock: 1, Offset: 4}},
		edges: []Edge{{1, 1, est(1, 1, 1)}, {1, 2, Estimate{Offset: 3}}, {1, 5, est(1, 1, 1)}, {-1, 0, est(1, 1, 1)}},
		want: []Offset{
			{Root: -1, Prev: -1, Edge: -1},
			{Known: true, Offset: 4, Root: 1, Prev: -1, Edge: -1},
			{Root: -1, Prev: -1, Edge: -1},
		},
	}, {
		name:  "no root: nothing known",
		n:     2,
		edges: []Edge{{0, 1, est(1, 1, 1)}},
		want:  []Offset{{Root: -1, Prev: -1, Edge: -1}, {Root: -1, Prev: -1, Edge: -1}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Chain(tt.n, tt.roots, tt.edges, tt.opts)
			for i := range tt.want {
				if got[i] != tt.want[i] {
					t.Errorf("clock %d: %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestPath(t *testing.T) {
	offs := Chain(5, []Root{{Clock: 2}}, []Edge{{2, 0, est(1, 1, 1)}, {0, 4, est(1, 1, 1)}}, Options{})
	for c, want := range map[int][]int{2: {2}, 0: {2, 0}, 4: {2, 0, 4}, 1: nil, 3: nil, 9: nil} {
		got := Path(offs, c)
		if len(got) != len(want) {
			t.Errorf("Path(%d) = %v, want %v", c, got, want)
			continue
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("Path(%d) = %v, want %v", c, got, want)
			}
		}
	}
}

// Chain finds the cheapest path a brute-force search over every simple
// path from every root finds, on random small graphs.
func TestChainMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 2000 {
		n := 1 + rng.IntN(6)
		var roots []Root
		for c := range n {
			if c == 0 || rng.IntN(5) == 0 {
				roots = append(roots, Root{Clock: c, Offset: rng.Int64N(1e6), Uncertainty: rng.Int64N(3) * rng.Int64N(1e4)})
			}
		}
		var edges []Edge
		for range rng.IntN(3 * n) {
			edges = append(edges, Edge{rng.IntN(n), rng.IntN(n), est(rng.Int64N(2e6)-1e6, rng.Int64N(1e5), 1+rng.IntN(50))})
		}
		opts := Options{HopCost: rng.Int64N(2) * 1000}
		got := Chain(n, roots, edges, opts)
		for c := range n {
			want, unique := bruteForce(c, roots, edges, opts)
			g := got[c]
			if g.Known != want.known {
				t.Fatalf("round %d clock %d: known %v, brute force %v", round, c, g.Known, want.known)
			}
			if !g.Known {
				continue
			}
			cost := g.Uncertainty + int64(g.Hops)*opts.HopCost
			if cost != want.cost || g.Hops != want.hops {
				t.Fatalf("round %d clock %d: cost %d in %d hops, brute force %d in %d", round, c, cost, g.Hops, want.cost, want.hops)
			}
			if unique && (g.Offset != want.offset || g.Samples != want.samples) {
				t.Fatalf("round %d clock %d: offset %d (%d samples), brute force %d (%d)", round, c, g.Offset, g.Samples, want.offset, want.samples)
			}
		}
	}
}

type bruteBest struct {
	known           bool
	cost            int64
	hops            int
	offset          int64
	samples         int
	differentOffset bool
}

// bruteForce tries every simple path to c from a root (c itself when it
// is one) and returns the cheapest (fewest hops on ties), and whether no
// equally cheap path gives another offset or sample count.
func bruteForce(c int, roots []Root, edges []Edge, opts Options) (bruteBest, bool) {
	for _, r := range roots {
		if r.Clock == c {
			return bruteBest{known: true, cost: r.Uncertainty, offset: r.Offset}, true
		}
	}
	isRoot := map[int]bool{}
	for _, r := range roots {
		isRoot[r.Clock] = true
	}
	var best bruteBest
	seen := map[int]bool{}
	var walk func(at int, cost int64, hops int, off int64, samples int)
	walk = func(at int, cost int64, hops int, off int64, samples int) {
		if at == c {
			better := !best.known || cost < best.cost || cost == best.cost && hops < best.hops
			switch {
			case better:
				best = bruteBest{known: true, cost: cost, hops: hops, offset: off, samples: samples}
			case cost == best.cost && hops == best.hops && (off != best.offset || samples != best.samples):
				best.differentOffset = true
			}
			return
		}
		seen[at] = true
		defer delete(seen, at)
		for _, e := range edges {
			if !e.Known || e.A == e.B {
				continue
			}
			next, o := e.B, e.Offset
			if e.B == at {
				next, o = e.A, -e.Offset
			} else if e.A != at {
				continue
			}
			if seen[next] || isRoot[next] {
				continue
			}
			walk(next, cost+e.Uncertainty+opts.HopCost, hops+1, off+o, min(samples, e.Samples))
		}
	}
	done := map[int]bool{}
	for _, r := range roots {
		if done[r.Clock] {
			continue
		}
		done[r.Clock] = true
		walk(r.Clock, r.Uncertainty, 0, r.Offset, math.MaxInt)
	}
	return best, !best.differentOffset
}
