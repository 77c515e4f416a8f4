package assembly

import (
	"math"
	"testing"
)

// TestRobustGaps: a context whose delays were all about 50 µs still
// gives a delay common at the node (2 ms, another context's) a density
// within a few nats of the node's, and keeps its own mass at zero.
func TestRobustGaps(t *testing.T) {
	cases := []struct {
		name  string
		delay int64 // ns, scored in the sharp context
		// the least log density wanted, relative to the other context's at
		// the same delay (which has all of its mass there)
		within float64
	}{
		{"the node's common delay", 2e6, math.Log(gapRobust) - 1.5},
		{"near the node's", 2.2e6, math.Log(gapRobust) - 1.5},
	}
	m := newNodeModel(2, 1e9)
	sharp := ctxKey{pk: 1, prev: noKind}
	wide := ctxKey{pk: 2, prev: noKind}
	for i := range 300 {
		m.observe(sharp, 5, 50e3+int64(i%7)*1e3, 50e3+int64(i%7)*1e3, 1, 1)
		m.observe(wide, 6, 2e6+int64(i%11)*10e3, 2e6+int64(i%11)*10e3, 1, 1)
	}
	for i := range 30 {
		m.observe(sharp, 5, 0, 0, 1, 1) // stamped with its trigger
		_ = i
	}
	ks, kw := sharp.gapKeys(5), wide.gapKeys(6)
	ds, dw := m.gapDensity(anchorLast, &ks), m.gapDensity(anchorLast, &kw)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := gapBin(tc.delay)
			if got, ref := ds[b], dw[b]; got < ref+tc.within {
				t.Errorf("log density %.2f at %d ns in the sharp context, want at least %.2f (the wide one's %.2f %+.2f)", got, tc.delay, ref+tc.within, ref, tc.within)
			}
		})
	}
	// the mass at zero is the context's own: 30 of 330 samples, within
	// the smoothing of the levels below
	if p0 := math.Exp(ds[0]) * math.Max(gapWidth[0], m.res); p0 < 0.05 || p0 > 0.12 {
		t.Errorf("mass at zero %.3f, want the context's (about 0.09)", p0)
	}
	// and the sharp context still prefers its own delays by far
	if ds[gapBin(53e3)] < ds[gapBin(2e6)]+5 {
		t.Errorf("50 µs: %.2f, 2 ms: %.2f; want the context's own delay far ahead", ds[gapBin(53e3)], ds[gapBin(2e6)])
	}
}

// TestRobustMix covers the mixture itself: the mass still sums to one
// and the zero bin is kept.
func TestRobustMix(t *testing.T) {
	cases := []struct {
		name       string
		mass, node map[int]float64
	}{
		{"disjoint", map[int]float64{0: 0.1, 100: 0.9}, map[int]float64{0: 0.5, 200: 0.5}},
		{"same", map[int]float64{100: 1}, map[int]float64{100: 1}},
		{"node all at zero", map[int]float64{0: 0.2, 100: 0.8}, map[int]float64{0: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var mass, node [nGapBins]float64
			for b, v := range tc.mass {
				mass[b] = v
			}
			for b, v := range tc.node {
				node[b] = v
			}
			zero := mass[0]
			robustMix(&mass, &node)
			sum := 0.0
			for _, v := range mass {
				sum += v
			}
			if math.Abs(sum-1) > 1e-9 {
				t.Errorf("mass sums to %v", sum)
			}
			if mass[0] != zero {
				t.Errorf("mass at zero %v, want %v", mass[0], zero)
			}
		})
	}
}
