package assembly

import (
	"math"
	"testing"
)

// TestTickBlur: delays learnt from spread millisecond timestamps pile up
// at fractions of the tick; read as intervals of the tick, a delay of
// half a tick is about as likely as the third of a tick the model saw,
// while delays much longer than the tick keep their shape, and no mass
// is lost.
func TestTickBlur(t *testing.T) {
	const ms = 1_000_000
	spiky := func() *[nGapBins]float64 {
		var m [nGapBins]float64
		m[gapBin(ms/3)] = 0.7
		m[gapBin(ms)] = 0.3
		return &m
	}
	long := func() *[nGapBins]float64 {
		var m [nGapBins]float64
		m[gapBin(200*ms)] = 1
		return &m
	}
	cases := []struct {
		name     string
		mass     *[nGapBins]float64
		tick     int64
		at, ref  int64
		maxRatio float64 // |log density(at) − log density(ref)| at most
		minRatio float64 // and at least
	}{
		{"ms ticks: half a tick near a third", spiky(), ms, ms / 2, ms / 3, 1, 0},
		{"no ticks: the spike stands", spiky(), 0, ms / 2, ms / 3, math.Inf(1), 10},
		{"ms ticks: 200 ms keeps its spike", long(), ms, 100 * ms, 200 * ms, math.Inf(1), 10},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := tickBlur(c.mass, float64(c.tick))
			sum := 0.0
			for _, v := range b {
				sum += v
			}
			if math.Abs(sum-1) > 1e-9 {
				t.Fatalf("mass %v after blur, want 1", sum)
			}
			d := logDensity(&b, 1e3)
			diff := math.Abs(d[gapBin(c.at)] - d[gapBin(c.ref)])
			if diff > c.maxRatio || diff < c.minRatio {
				t.Errorf("|log density(%d) − log density(%d)| = %.2f, want in [%v, %v]", c.at, c.ref, diff, c.minRatio, c.maxRatio)
			}
		})
	}
}

// TestFIFOWeight: at coarse timestamps (spread within their ticks) the
// FIFO evidence counts half, elsewhere fully, for every bin.
func TestFIFOWeight(t *testing.T) {
	fifo := newFallingLR(fifoBins)
	for b, n := range []float64{90, 8, 2, 0} {
		fifo.addLink(b, n)
	}
	for b, n := range []float64{10, 50, 30, 10} {
		fifo.addOther(b, n)
	}
	cases := []struct {
		name   string
		tick   float64
		weight float64
	}{
		{"µs timestamps", 0, 1},
		{"ms timestamps, spread", 1e6, 0.5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newNodeModel(1, 1e9)
			m.fifo, m.tick = fifo, c.tick
			for b := range int8(fifoBins) {
				want := c.weight * fifo.logLR(int(b))
				if got := m.logFIFO(b); math.Abs(got-want) > 1e-12 {
					t.Errorf("bin %d: logFIFO %.3f, want %.3f", b, got, want)
				}
			}
			if got := m.logFIFO(-1); got != 0 {
				t.Errorf("no bin: logFIFO %v, want 0", got)
			}
		})
	}
}
