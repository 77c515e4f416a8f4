package clock

import (
	"math"
	"math/rand/v2"
	"testing"
)

// clockSim is B's clock against A's: B reads t + offset + rate·(t - t0)
// at A time t, plus step after stepAt.
type clockSim struct {
	t0, offset   int64
	ppm          float64
	stepAt, step int64 // stepAt 0: none
}

func (c clockSim) off(t int64) int64 {
	o := c.offset + int64(math.Round(c.ppm*1e-6*float64(t-c.t0)))
	if c.stepAt != 0 && t >= c.stepAt {
		o += c.step
	}
	return o
}

// simPair samples events both ways every gap ns for span ns from t0 (A's
// time): one-way delays of base plus exponential queueing of mean q; B's
// timestamps are truncated to res.
func simPair(rng *rand.Rand, c clockSim, span, gap, base, q, res int64) Pair {
	var p Pair
	for t := c.t0; t < c.t0+span; t += gap + rng.Int64N(gap) {
		d := base + int64(rng.ExpFloat64()*float64(q))
		r := t + d
		p.AB.Add(Sample{Send: t, Recv: trunc(r+c.off(r), res)})
		s := t + gap/2
		d = base + int64(rng.ExpFloat64()*float64(q))
		p.BA.Add(Sample{Send: trunc(s+c.off(s), res), Recv: s + d})
	}
	return p
}

func trunc(t, res int64) int64 { return t - t%res }

// maxErr returns the largest error of m against the truth over the span.
func maxErr(m *Model, c clockSim, span int64) int64 {
	var worst int64
	for t := c.t0; t < c.t0+span; t += span / 1000 {
		if c.stepAt != 0 && abs(t-c.stepAt) < span/100 {
			continue // where the step falls between envelope points
		}
		worst = max(worst, abs(m.At(t)-c.off(t)))
	}
	return worst
}

// The target: 60 s with 40 ppm of drift, offset within 10 µs and
// drift within 0.5 ppm, over many seeds and delay shapes.
func TestFitDrift(t *testing.T) {
	const t0, span = int64(1_700_000_000e9), int64(60e9)
	tests := []struct {
		name         string
		ppm          float64
		gap, base, q int64
		res          int64
	}{
		{"40 ppm, LAN sniffers", 40, 5e6, 2e3, 20e3, 1e3},
		{"-40 ppm, hosts with queueing", -40, 2e6, 30e3, 300e3, 1},
		{"no drift", 0, 5e6, 2e3, 20e3, 1e3},
		{"200 ppm, sparse", 200, 50e6, 10e3, 100e3, 1e3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var worstPPM float64
			var worstNS int64
			defer func() { t.Logf("worst: drift %.3f ppm, offset %d ns", worstPPM, worstNS) }()
			for seed := range uint64(10) {
				rng := rand.New(rand.NewPCG(seed, 7))
				c := clockSim{t0: t0, offset: 750e6, ppm: tt.ppm}
				p := simPair(rng, c, span, tt.gap, tt.base, tt.q, tt.res)
				m := p.Fit(FitOptions{})
				if !m.Known || len(m.Segments) != 1 {
					t.Fatalf("seed %d: %+v", seed, m)
				}
				s := m.Segments[0]
				if !s.RateKnown || s.Inconsistent {
					t.Fatalf("seed %d: %+v", seed, s)
				}
				worstPPM = math.Max(worstPPM, math.Abs(s.Rate*1e6-tt.ppm))
				worstNS = max(worstNS, maxErr(&m, c, span))
				if d := math.Abs(s.Rate*1e6 - tt.ppm); d > 0.5 {
					t.Errorf("seed %d: drift %.3f ppm, want %.1f ± 0.5", seed, s.Rate*1e6, tt.ppm)
				}
				if e := abs(s.Offset - c.off(s.Epoch)); e > 10e3 {
					t.Errorf("seed %d: offset at epoch off by %d ns", seed, e)
				}
				if e := maxErr(&m, c, span); e > 10e3 {
					t.Errorf("seed %d: offset off by up to %d ns over the span", seed, e)
				}
				// The uncertainties bound the errors.
				if e := abs(s.Offset - c.off(s.Epoch)); e > s.Uncertainty+tt.res {
					t.Errorf("seed %d: offset error %d beyond its uncertainty %d", seed, e, s.Uncertainty)
				}
				if d := math.Abs(s.Rate*1e6 - tt.ppm); d > s.RateUncertainty*1e6+0.01 {
					t.Errorf("seed %d: rate error %.3f ppm beyond its uncertainty %.3f", seed, d, s.RateUncertainty*1e6)
				}
				if s.Samples != p.AB.N+p.BA.N {
					t.Errorf("seed %d: samples %d of %d", seed, s.Samples, p.AB.N+p.BA.N)
				}
			}
		})
	}
}

// A synthetic NTP step of 2 ms halfway through: two segments, the step
// found where it was and as large as it was.
func TestFitStep(t *testing.T) {
	const t0, span = int64(1_700_000_000e9), int64(60e9)
	for _, step := range []int64{2e6, -2e6} {
		for seed := range uint64(5) {
			rng := rand.New(rand.NewPCG(seed, 11))
			c := clockSim{t0: t0, offset: -300e6, ppm: 40, stepAt: t0 + 31e9, step: step}
			p := simPair(rng, c, span, 5e6, 2e3, 20e3, 1e3)
			m := p.Fit(FitOptions{})
			if len(m.Segments) != 2 {
				t.Fatalf("step %d seed %d: %d segments: %+v", step, seed, len(m.Segments), m.Segments)
			}
			if at := m.Segments[1].Start; abs(at-c.stepAt) > 50e6 {
				t.Errorf("step %d seed %d: step at %+d ms from the truth", step, seed, (at-c.stepAt)/1e6)
			}
			for i, s := range m.Segments {
				if d := math.Abs(s.Rate*1e6 - 40); d > 0.5 || s.Inconsistent {
					t.Errorf("step %d seed %d segment %d: drift %.3f ppm inconsistent %v", step, seed, i, s.Rate*1e6, s.Inconsistent)
				}
			}
			if e := maxErr(&m, c, span); e > 10e3 {
				t.Errorf("step %d seed %d: offset off by up to %d ns", step, seed, e)
			}
			if m.Steps() != 1 {
				t.Errorf("Steps() = %d", m.Steps())
			}
		}
	}
}

// Steps shorter than the minimum segment, or smaller than MinStep, are
// not split at; MaxSegments 1 never splits.
func TestFitNoStep(t *testing.T) {
	const t0, span = int64(1_700_000_000e9), int64(60e9)
	rng := rand.New(rand.NewPCG(3, 3))
	tests := []struct {
		name string
		c    clockSim
		opts FitOptions
	}{
		{"drift only", clockSim{t0: t0, ppm: 40}, FitOptions{}},
		{"a step too near the end", clockSim{t0: t0, ppm: 40, stepAt: t0 + 58e9, step: 2e6}, FitOptions{}},
		{"a step below MinStep", clockSim{t0: t0, ppm: 40, stepAt: t0 + 30e9, step: 10e3}, FitOptions{}},
		{"no steps asked for", clockSim{t0: t0, ppm: 40, stepAt: t0 + 30e9, step: 2e6}, FitOptions{MaxSegments: 1}},
	}
	for _, tt := range tests {
		p := simPair(rng, tt.c, span, 5e6, 2e3, 20e3, 1e3)
		if m := p.Fit(tt.opts); len(m.Segments) != 1 {
			t.Errorf("%s: %d segments", tt.name, len(m.Segments))
		}
	}
}

// One event paired wrongly (3 s off, as a reused UDP port once made) is
// left out; without the outlier filter it ruins the fit.
func TestFitOutlier(t *testing.T) {
	const t0, span = int64(1_700_000_000e9), int64(10e9)
	rng := rand.New(rand.NewPCG(1, 2))
	c := clockSim{t0: t0, offset: 5e3}
	p := simPair(rng, c, span, 3e6, 20e3, 200e3, 1)
	p.AB.Add(Sample{Send: t0 + 5e9, Recv: t0 + 5e9 - 2_970_000_000})
	m := p.Fit(FitOptions{})
	if m.Outliers != 1 {
		t.Errorf("outliers %d, want 1", m.Outliers)
	}
	if e := maxErr(&m, c, span); e > 10e3 || m.Segments[0].Inconsistent {
		t.Errorf("offset off by %d ns: %+v", e, m.Segments[0])
	}
	raw := p.Fit(FitOptions{OutlierFloor: -1})
	if !raw.Segments[0].Inconsistent {
		t.Errorf("without the filter: %+v", raw.Segments[0])
	}
}

// Data shorter than MinDriftSpan get the constant estimate of Estimate.
func TestFitShort(t *testing.T) {
	for _, tt := range []struct{ ab, ba []int64 }{
		{[]int64{150}, []int64{50}},
		{[]int64{900, 150, 400}, []int64{50, 70}},
		{[]int64{-5}, []int64{2}},
		{[]int64{3}, []int64{0}},
	} {
		p := pair(tt.ab, tt.ba)
		m := p.Fit(FitOptions{})
		e := p.Estimate()
		s := m.Segments[0]
		if s.RateKnown || s.Rate != 0 || abs(s.Offset-e.Offset) > 1 || abs(s.Uncertainty-e.Uncertainty) > 1 || s.Inconsistent != e.Inconsistent {
			t.Errorf("%v/%v: %+v, estimate %+v", tt.ab, tt.ba, s, e)
		}
	}
	var p Pair
	p.AB.Add(Sample{1, 2})
	if m := p.Fit(FitOptions{}); m.Known {
		t.Errorf("one way only: %+v", m)
	}
}

// The envelope stays bounded and keeps the smallest delay of every bin,
// whatever the order samples come in.
func TestEnvelope(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	var inOrder, shuffled, merged Way
	var a, b Way
	n := 20000
	ts := make([]int64, n)
	for i := range ts {
		ts[i] = int64(i)*3e6 + rng.Int64N(1e6)
	}
	ds := make([]int64, n)
	for i := range ds {
		ds[i] = 1e3 + rng.Int64N(1e6)
	}
	for i := range ts {
		inOrder.Add(Sample{ts[i], ts[i] + ds[i]})
		if i%2 == 0 {
			a.Add(Sample{ts[i], ts[i] + ds[i]})
		} else {
			b.Add(Sample{ts[i], ts[i] + ds[i]})
		}
	}
	for _, i := range rng.Perm(n) {
		shuffled.Add(Sample{ts[i], ts[i] + ds[i]})
	}
	merged.Merge(a)
	merged.Merge(b)
	want := inOrder.Envelope()
	if len(want) > MaxBins || len(want) < MaxBins/2 {
		t.Fatalf("%d bins", len(want))
	}
	for name, w := range map[string]*Way{"shuffled": &shuffled, "merged": &merged} {
		got := w.Envelope()
		if len(got) != len(want) {
			t.Fatalf("%s: %d bins, want %d", name, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: bin %d %+v, want %+v", name, i, got[i], want[i])
			}
		}
	}
	// Each bin holds the smallest delay of the samples in its time.
	width := int64(1) << inOrder.shift
	for _, s := range want {
		k := s.Send >> inOrder.shift
		for i := range ts {
			if ts[i]>>inOrder.shift == k && ds[i] < s.Delay() {
				t.Fatalf("bin %d (width %d) keeps delay %d, sample %d has %d", k, width, s.Delay(), i, ds[i])
			}
		}
	}
	// Merge leaves a copy of the receiver alone.
	c := a
	before := len(c.Envelope())
	a.Merge(b)
	if len(c.Envelope()) != before {
		t.Errorf("merge changed a copy")
	}
}

func TestComposeDrift(t *testing.T) {
	mk := func(off int64, ppm float64, epoch int64) Model {
		return Model{Known: true, Segments: []Segment{{Start: math.MinInt64, Epoch: epoch, Offset: off, Rate: ppm * 1e-6, RateKnown: true, Uncertainty: 10, RateUncertainty: 1e-8, Samples: 5}}}
	}
	edges := []Edge{{A: 0, B: 1, Estimate: est(100, 10, 5)}, {A: 2, B: 1, Estimate: est(50, 10, 5)}}
	models := []Model{mk(100, 40, 1e9), mk(50, -10, 2e9)}
	roots := []Root{{Clock: 0}}
	offs := Chain(3, roots, edges, Options{})
	ms := Compose(offs, roots, edges, models)
	for _, tt := range []struct {
		c    int
		t    int64
		want int64
	}{
		{0, 5e9, 0},
		{1, 1e9, 100},
		{1, 2e9, 100 + 40e3},
		// Clock 2 = clock 1 minus (2 against 1): 100 + 40 ppm·(t-1 s) - 50 + 10 ppm·(t-2 s).
		{2, 2e9, 100 + 40e3 - 50},
		{2, 3e9, 100 + 80e3 - 50 + 10e3},
	} {
		if got := ms[tt.c].At(tt.t); abs(got-tt.want) > 1 {
			t.Errorf("clock %d at %d: %d, want %d", tt.c, tt.t, got, tt.want)
		}
	}
	if ms[2].Segments[0].Uncertainty < 20 {
		t.Errorf("uncertainties do not add: %+v", ms[2].Segments[0])
	}
	// Local inverts At.
	m := ms[1]
	for _, r := range []int64{0, 1e9, 7e9} {
		l := r + m.At(r)
		if got := m.Local(l); got != r {
			t.Errorf("Local(%d) = %d, want %d", l, got, r)
		}
	}
}

// A drift of C against B is read on B's clock: chained behind a clock B
// seconds ahead of A, it must not be read seconds off.
func TestComposeAxis(t *testing.T) {
	const t0 = int64(1_700_000_000e9)
	b := Model{Known: true, Segments: []Segment{{Start: math.MinInt64, Epoch: t0, Offset: 2_500_000_000, Rate: 40e-6, RateKnown: true}}}
	// C against B: -700 ms at B's time t0 + 2.5 s, -65 ppm.
	c := Model{Known: true, Segments: []Segment{{Start: math.MinInt64, Epoch: t0 + 2_500_000_000, Offset: -700_000_000, Rate: -65e-6, RateKnown: true}}}
	sum := b.Add(c)
	for _, at := range []int64{t0, t0 + 30e9, t0 - 7e9} {
		bAt := b.At(at)
		want := bAt + c.At(at+bAt)
		if got := sum.At(at); abs(got-want) > 2 {
			t.Errorf("at %d: %d, want %d (off by %d)", at-t0, got, want, got-want)
		}
	}
}

func TestModelSteps(t *testing.T) {
	m := Model{Known: true, Segments: []Segment{
		{Start: math.MinInt64, Offset: 0},
		{Start: 100, Offset: 2000},
	}}
	o := Constant(est(5, 1, 1))
	sum := m.Add(o)
	for _, tt := range []struct{ t, want int64 }{{50, 5}, {99, 5}, {100, 2005}, {1e9, 2005}} {
		if got := sum.At(tt.t); got != tt.want {
			t.Errorf("At(%d) = %d, want %d", tt.t, got, tt.want)
		}
	}
	if r := sum.Reverse(); r.At(50) != -5 || r.At(3000) != -2005 {
		t.Errorf("reverse: %d %d", r.At(50), r.At(3000))
	}
	if (&Model{}).At(5) != 0 || (Model{}).Add(o).Known {
		t.Errorf("unknown models")
	}
}

// BenchmarkFit fits 60 s of samples (12 000 each way, 40 ppm) with the
// search for steps.
func BenchmarkFit(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	c := clockSim{t0: 1_700_000_000e9, offset: 750e6, ppm: 40}
	p := simPair(rng, c, 60e9, 5e6, 2e3, 20e3, 1e3)
	b.ReportAllocs()
	var m Model
	for b.Loop() {
		m = p.Fit(FitOptions{})
	}
	if math.Abs(m.Segments[0].Rate*1e6-40) > 0.5 {
		b.Fatalf("drift %v", m.Segments[0].Rate*1e6)
	}
}

// BenchmarkAdd adds samples in time order to a Way.
func BenchmarkAdd(b *testing.B) {
	b.ReportAllocs()
	var w Way
	t := int64(0)
	for b.Loop() {
		t += 1e5
		w.Add(Sample{Send: t, Recv: t + 1000 + t%7919})
	}
	if len(w.Envelope()) > MaxBins {
		b.Fatal("unbounded")
	}
}

func TestUncertaintyOver(t *testing.T) {
	m := Model{Known: true, Segments: []Segment{
		{Start: math.MinInt64, Epoch: 1000, Uncertainty: 10, RateKnown: true, RateUncertainty: 1e-3},
		{Start: 5000, Epoch: 6000, Uncertainty: 20},
	}}
	for _, tt := range []struct{ from, to, want int64 }{
		{1000, 1000, 10},
		{0, 3000, 10 + 2},      // 2000 ns from the epoch at 1e-3
		{0, 4999, 10 + 4},      // the first segment ends at 4999
		{5000, 7000, 20 + 1},   // 1000 ns at UnknownRate: 0.1, rounded up
		{0, 1e9, 20 + 100_000}, // the second, 1e9-6000 ns at 100 ppm, rounded up
	} {
		if got := m.UncertaintyOver(tt.from, tt.to); got != tt.want {
			t.Errorf("UncertaintyOver(%d, %d) = %d, want %d", tt.from, tt.to, got, tt.want)
		}
	}
}
