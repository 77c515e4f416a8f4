package whatif

import (
	"math"
	"strings"
	"testing"
)

// TestLinFit: least squares against lines worked by hand.
func TestLinFit(t *testing.T) {
	for _, c := range []struct {
		name              string
		x, y              []float64
		a, b, va, vb, cov float64
		ok                bool
	}{
		// An exact line: no residuals, no uncertainty.
		{name: "exact", x: []float64{100, 150, 200, 300}, y: []float64{0.3, 0.4, 0.5, 0.7}, a: 0.1, b: 0.002, ok: true},
		// x̄ = ȳ = 2.5, Sxx = 5, Sxy = 4: b = 0.8, a = 0.5; residuals
		// −0.3, 0.9, −0.9, 0.3, s² = 1.8/2; var b = s²/Sxx, var a =
		// s²(1/n + x̄²/Sxx), cov = −x̄·s²/Sxx.
		{name: "noisy", x: []float64{1, 2, 3, 4}, y: []float64{1, 3, 2, 4}, a: 0.5, b: 0.8, va: 1.35, vb: 0.18, cov: -0.45, ok: true},
		{name: "one rate", x: []float64{5, 5, 5, 5}, y: []float64{1, 2, 3, 2}, a: 2},
		{name: "too few", x: []float64{1, 2, 3}, y: []float64{1, 2, 3}},
	} {
		l := linFit(c.x, c.y)
		if l.ok != c.ok || !close(l.a, c.a) || !close(l.b, c.b) || !close(l.va, c.va) || !close(l.vb, c.vb) || !close(l.cov, c.cov) {
			t.Errorf("%s: %+v", c.name, l)
		}
	}
}

// close compares to 1e-9 absolute or relative.
func close(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b))
}

// startsModel is a model whose requests start at the times given (Unix
// seconds).
func startsModel(times []float64) *Model {
	m := &Model{}
	for i, t := range times {
		m.Requests = append(m.Requests, Request{Root: i, Weight: 1, StartNS: int64(math.Round(t * 1e9))})
	}
	return m
}

// steps is requests at rate[i] per second in second i from t0, evenly.
func steps(t0 float64, rates ...int) []float64 {
	var out []float64
	for i, r := range rates {
		for k := 0; k < r; k++ {
			out = append(out, t0+float64(i)+(float64(k)+0.5)/float64(r))
		}
	}
	return out
}

// cpuProfile is a profile of one column in CPU-seconds sampled at times ts
// with the cumulative values cum (hz=1).
func cpuProfile(ts, cum []float64) *CPUProfile {
	p := &CPUProfile{File: "p.cpu", HZ: 1, Columns: []string{"cpu"}, Other: []bool{false}}
	for i := range ts {
		p.Samples = append(p.Samples, CPUSample{T: ts[i], CPU: []float64{cum[i]}, Line: i + 2})
	}
	return p
}

// TestFitCPU: windows matched with the capture's requests. The capture
// runs at 100, 300, 100, 300, 200, 100 requests/s in seconds 0–5 from t0;
// the host uses 0.1 cores + 2 ms per request. Samples one second apart
// from t0−1 to t0+7: the first two windows and the last two are outside
// the capture (its requests start at t0+0.005 and end at t0+5.995), the
// other four fit exactly.
func TestFitCPU(t *testing.T) {
	m, p := linearCapture()
	fit, err := m.FitCPU([]*CPUProfile{p})
	if err != nil {
		t.Fatal(err)
	}
	if !fit.Identified || fit.Windows != 4 || fit.Outside != 4 || !close(fit.Fixed, 0.1) || !close(fit.PerRequestMS, 2) || fit.PerRequestUncMS > 1e-6 {
		t.Fatalf("fit %+v", *fit)
	}
	if rps, _ := fit.saturation(2); !close(rps, 950) {
		t.Errorf("saturation %g, want (2 − 0.1)/0.002 = 950", rps)
	}
	// A counter going back (a process gone with its CPU time) leaves
	// its window out.
	for i := 3; i < len(p.Samples); i++ {
		p.Samples[i].CPU[0] -= 1
	}
	if fit, _ = m.FitCPU([]*CPUProfile{p}); fit.Back != 1 || fit.Windows != 3 || fit.Identified || fit.MeanBusy == 0 {
		t.Errorf("a counter going back: %+v", *fit)
	}
}

// linearCapture is TestFitCPU's capture and profile.
func linearCapture() (*Model, *CPUProfile) {
	const t0 = 1e9
	m := startsModel(steps(t0, 100, 300, 100, 300, 200, 100))
	var ts, cum []float64
	c := 0.0
	for i, r := range []float64{0, 0, 100, 300, 100, 300, 200, 100, 0} {
		ts = append(ts, t0-1+float64(i))
		if i > 0 {
			c += 0.1 + 0.002*r
		}
		cum = append(cum, c)
	}
	return m, cpuProfile(ts, cum)
}

// TestFitCPUEstimated: one rate throughout cannot separate a from b: the
// profile's mean over the capture is used, and the note says why.
func TestFitCPUEstimated(t *testing.T) {
	const t0 = 1e9
	m := startsModel(steps(t0, 150, 150, 150, 150, 150, 150, 150))
	var ts, cum []float64
	for i := range 7 {
		ts = append(ts, t0+float64(i))
		cum = append(cum, 0.4*float64(i)+0.01*float64(i%2))
	}
	fit, err := m.FitCPU([]*CPUProfile{cpuProfile(ts, cum)})
	if err != nil {
		t.Fatal(err)
	}
	if fit.Identified || math.Abs(fit.MeanBusy-0.4) > 0.01 || !strings.Contains(fit.Note, "too narrow a span of rates") {
		t.Errorf("one rate: %+v", *fit)
	}
	// Only other captures' windows (a requests column) and one rate:
	// nothing to take a mean of for this capture.
	p := cpuProfile(ts, cum)
	p.HasRequests = true
	for i := range p.Samples {
		p.Samples[i].Requests = 150 * float64(i)
	}
	if _, err := m.FitCPU([]*CPUProfile{p}); err == nil || !strings.Contains(err.Error(), "none of the windows is in the capture") {
		t.Errorf("no window of this capture: %v", err)
	}
	if _, err := (&Model{}).FitCPU([]*CPUProfile{cpuProfile(ts, cum)}); err == nil || !strings.Contains(err.Error(), "no times to match it with") {
		t.Errorf("no request times: %v", err)
	}
}

// TestAnnotateCPU: a capture's requests counted into its profile give the
// same line without the capture.
func TestAnnotateCPU(t *testing.T) {
	m, p := linearCapture()
	a, err := m.AnnotateCPU(p)
	if err != nil {
		t.Fatal(err)
	}
	if !a.HasRequests || len(a.Samples) != 5 || a.Samples[0].Requests != 100 || a.Samples[4].Requests != 1000 {
		t.Fatalf("annotated %+v", a.Samples)
	}
	other := startsModel(steps(2e9, 10, 10))
	fit, err := other.FitCPU([]*CPUProfile{a})
	if err != nil || !fit.Identified || fit.Windows != 4 || !close(fit.Fixed, 0.1) || !close(fit.PerRequestMS, 2) {
		t.Fatalf("fit of the annotated profile: %v, %+v", err, fit)
	}
	if _, err := other.AnnotateCPU(p); err == nil || !strings.Contains(err.Error(), "not a profile of this capture") {
		t.Errorf("another capture's profile: %v", err)
	}
}

// TestHostCPULine: a host whose CPU profile fits busy = 0.1 cores + 2 ms
// per request (the nodes 0.06 + 1.5 ms, a load generator beside them
// 0.04 + 0.5 ms). At the capture's rate λ the host's U is the line's over
// its 2 cores, the nodes' core share from their own columns; at twice
// the load U' = (0.1 + 2·0.002·λ)/2; saturation where the line reaches 2
// cores, 950 requests/s, whatever the capture's rate.
func TestHostCPULine(t *testing.T) {
	m := models(t, false)["requests"]
	h, err := ParseHostSpec("app,db=2 cpu=line.cpu name=h")
	if err != nil {
		t.Fatal(err)
	}
	p := lineProfile()
	h.Profiles = []*CPUProfile{p}
	if err := m.Place([]HostSpec{h}); err != nil {
		t.Fatal(err)
	}
	hst, lam := m.Hosts[0], m.RateRPS
	u, own := (0.1+0.002*lam)/2, (0.06+0.0015*lam)/2
	f := min(2*own*stretch(2, u)/hst.InProgress, 1)
	if !hst.CPU.Identified || !near(hst.Utilisation, u) || hst.UtilSource != Given || !near(hst.CoreShare, f) || !strings.Contains(hst.Note, "includes other processes on the host: client 0.040 cores + 0.500 ms per request") {
		t.Fatalf("host %+v, want U %g, f %g", *hst, u, f)
	}
	rep, err := m.Predict(scenario(t, "load 2"))
	if err != nil {
		t.Fatal(err)
	}
	if hi := rep.Hosts[0]; !near(hi.NewUtilisation, (0.1+0.004*lam)/2) || !near(rep.SaturationRPS, 950) || rep.Bottleneck != "host h" {
		t.Errorf("load ×2: %+v, saturation %g at %s", hi, rep.SaturationRPS, rep.Bottleneck)
	}
	// An exact line has no uncertainty; a noisy one moves the
	// prediction and the saturation.
	if rep.SaturationUnc > 1e-6 {
		t.Errorf("exact line: saturation ± %g", rep.SaturationUnc)
	}
	m2 := models(t, false)["requests"]
	p.Samples[3].CPU[0] += 0.02
	if err := m2.Place([]HostSpec{h}); err != nil {
		t.Fatal(err)
	}
	noisy, _ := m2.Predict(scenario(t, "load 2"))
	if p := noisy.Patterns[0]; p.UncertaintyUS <= rep.Patterns[0].UncertaintyUS || !(noisy.SaturationUnc > 0) {
		t.Errorf("noisy line: uncertainty %g (exact %g), saturation ± %g", p.UncertaintyUS, rep.Patterns[0].UncertaintyUS, noisy.SaturationUnc)
	}
	// db twice as fast halves the nodes' share of the per-request part
	// for db's share of their core time, not the load generator's.
	rep, _ = m.Predict(scenario(t, "faster db 2"))
	if !(rep.SaturationRPS > 950) || rep.SaturationRPS >= 1900/0.0005 {
		t.Errorf("faster db: saturation %g", rep.SaturationRPS)
	}
	// busy= and cpu= together are refused.
	if _, err := ParseHostSpec("app,db=2 busy=0.2 cpu=x.cpu"); err == nil || !strings.Contains(err.Error(), "busy= and cpu= both given") {
		t.Errorf("busy= and cpu=: %v", err)
	}
}

// lineProfile is a profile of an exact CPU line, 0.1 cores + 2 ms per
// request (tiers 0.06 + 1.5 ms, client 0.04 + 0.5 ms), at rates up to
// 300 requests/s.
func lineProfile() *CPUProfile {
	p := &CPUProfile{File: "line.cpu", HZ: 1, Columns: []string{"tiers", "client"}, Other: []bool{false, true}, HasRequests: true}
	var tiers, client, reqs float64
	for i, r := range []float64{0, 50, 100, 200, 100, 50, 300} {
		tiers += 0.06 + 0.0015*r
		client += 0.04 + 0.0005*r
		reqs += r
		p.Samples = append(p.Samples, CPUSample{T: 1e9 + float64(i), CPU: []float64{tiers, client}, Requests: reqs})
	}
	return p
}

// TestSaturationModel: the report names the model behind its saturation
// and its inputs: the M/G/1 node, the host's utilisation, or the CPU
// line with how far beyond its fitted rates the saturation lies.
func TestSaturationModel(t *testing.T) {
	line, err := ParseHostSpec("app,db=2 cpu=line.cpu name=h")
	if err != nil {
		t.Fatal(err)
	}
	line.Profiles = []*CPUProfile{lineProfile()}
	for _, tc := range []struct {
		name  string
		hosts []HostSpec
		want  []string
	}{
		{"dedicated", nil, []string{"M/G/1: the capture's", "over the node's utilisation"}},
		{"host estimated", []HostSpec{mustSpec(t, "app,db=1 name=h")}, []string{"host utilisation (estimated)", "the core time per request taken as independent of the rate"}},
		{"host busy", []HostSpec{mustSpec(t, "app,db=2 busy=0.2%")}, []string{"host utilisation (given)"}},
		{"CPU line", []HostSpec{line}, []string{"CPU line: 0.100 cores + 2.000 ms per request", "reaches 2 cores", "6 windows at 50 to 300 requests/s, so extrapolated 3.2× beyond"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := models(t, false)["requests"]
			if tc.hosts != nil {
				if err := m.Place(tc.hosts); err != nil {
					t.Fatal(err)
				}
			}
			rep, err := m.Predict(scenario(t, "load 1"))
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(rep.SaturationModel, w) {
					t.Errorf("saturation %g (%s) from %q: want %q in it", rep.SaturationRPS, rep.Bottleneck, rep.SaturationModel, w)
				}
			}
		})
	}
}

// mustSpec parses a host spec.
func mustSpec(t *testing.T, s string) HostSpec {
	t.Helper()
	h, err := ParseHostSpec(s)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
