package whatif

import (
	"math"
	"strings"
	"testing"
)

// wakeWindows are windows at the rates given whose cores busy follow the
// wake-up model a + λ·(w + k·e^{−λR}) exactly, plus noise[i] cores.
func wakeWindows(rates []float64, a, w, k, r float64, noise []float64) *CPUFit {
	f := &CPUFit{RateMin: math.Inf(1)}
	for i, l := range rates {
		c := a + l*(w+k*math.Exp(-l*r))
		if i < len(noise) {
			c += noise[i]
		}
		f.ws = append(f.ws, cpuWindow{rate: l, cpu: []float64{c}})
		f.RateMin, f.RateMax = min(f.RateMin, l), max(f.RateMax, l)
	}
	return f
}

func TestFitWake(t *testing.T) {
	rates := []float64{100, 150, 200, 300, 150, 400, 600, 250, 120}
	noise := []float64{0.01, -0.012, 0.008, -0.005, 0.011, -0.009, 0.004, -0.007, 0.003}
	for _, tc := range []struct {
		name          string
		rates         []float64
		a, w, k, r    float64
		noise         []float64
		latency       float64 // R given to the fit (s)
		identified    bool
		note          string
		wantSat, near float64 // (c − a)/w on 2 cores, and how near
	}{
		{name: "exact", rates: rates, a: 0.1, w: 1e-3, k: 2e-3, r: 3e-3, latency: 3e-3, identified: true, note: "fitted over 9 windows at 100 to 600", wantSat: 1900, near: 1e-6},
		{name: "noisy", rates: rates, a: 0.1, w: 1e-3, k: 2e-3, r: 3e-3, noise: noise, latency: 3e-3, identified: true, wantSat: 1900, near: 0.05},
		{name: "no wake-up: k 0", rates: rates, a: 0.05, w: 1.5e-3, r: 3e-3, latency: 3e-3, identified: true, wantSat: 1950 / 1.5, near: 1e-6},
		{name: "cost rising with the rate", rates: rates, a: 0.1, w: 2e-3, k: -1e-3, r: 3e-3, latency: 3e-3, note: "is negative"},
		{name: "too few windows", rates: rates[:4], a: 0.1, w: 1e-3, k: 2e-3, r: 3e-3, latency: 3e-3, note: "too few"},
		{name: "one rate", rates: []float64{200, 200, 200, 200, 200, 200}, a: 0.1, w: 1e-3, r: 3e-3, latency: 3e-3, note: "do not tell"},
		{name: "no latency", rates: rates, a: 0.1, w: 1e-3, k: 2e-3, r: 3e-3, note: "no latency"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := wakeWindows(tc.rates, tc.a, tc.w, tc.k, tc.r, tc.noise)
			wf := f.fitWake(tc.latency)
			if wf.Identified != tc.identified || !strings.Contains(wf.Note, tc.note) {
				t.Fatalf("fit %+v: want identified %v, note with %q", *wf, tc.identified, tc.note)
			}
			if !tc.identified {
				return
			}
			sat, unc := wf.saturation(2, 1)
			if math.Abs(sat/tc.wantSat-1) > tc.near {
				t.Errorf("saturation %g ±%g, want %g (a %g, w %g ms, k %g ms)", sat, unc, tc.wantSat, wf.Fixed, wf.WorkMS, wf.WakeMS)
			}
			if tc.noise == nil && unc > 1e-6*sat {
				t.Errorf("exact data: saturation ±%g", unc)
			}
			if tc.noise != nil && !(unc > 0) {
				t.Errorf("noisy data: saturation ±%g, want > 0", unc)
			}
			if l := 500.0; tc.noise == nil && math.Abs(wf.at(l)-(tc.a+l*(tc.w+tc.k*math.Exp(-l*tc.r)))) > 1e-9 {
				t.Errorf("at %g: %g", l, wf.at(l))
			}
			// A speed-up's ratio divides the saturation's rate and
			// its uncertainty alike.
			if s2, u2 := wf.saturation(2, 0.5); math.Abs(s2-2*sat) > 1e-6*sat || math.Abs(u2-2*unc) > 1e-6*max(unc, 1) {
				t.Errorf("ratio 0.5: %g ±%g, want %g ±%g", s2, u2, 2*sat, 2*unc)
			}
		})
	}
}

// TestHostWake: with cpu-model=wake a host's saturation is where the
// wake-up model reaches its cores, (c − a)/w, not where its line does,
// and the report says so; the capture's U and the load's latencies still
// come from the line.
func TestHostWake(t *testing.T) {
	m := models(t, false)["requests"]
	r := m.meanLatency()
	if !(r > 0) {
		t.Fatalf("mean latency %g", r)
	}
	const a, w, k = 0.1, 1e-3, 2e-3
	p := &CPUProfile{File: "wake.cpu", HZ: 1, Columns: []string{"cpu"}, Other: []bool{false}, HasRequests: true}
	var cpu, reqs float64
	for i, l := range []float64{0, 100, 150, 200, 300, 150, 400, 600, 250, 120} {
		cpu += a + l*(w+k*math.Exp(-l*r))
		reqs += l
		p.Samples = append(p.Samples, CPUSample{T: 1e9 + float64(i), CPU: []float64{cpu}, Requests: reqs})
	}
	line := mustSpec(t, "app,db=2 cpu=wake.cpu name=h")
	line.Profiles = []*CPUProfile{p}
	wake := line
	wake.CPUModel = CPUModelWake
	var reps []*Report
	var fits []*CPUFit
	for _, h := range []HostSpec{line, wake} {
		m := models(t, false)["requests"]
		if err := m.Place([]HostSpec{h}); err != nil {
			t.Fatal(err)
		}
		rep, err := m.Predict(scenario(t, "load 2"))
		if err != nil {
			t.Fatal(err)
		}
		reps, fits = append(reps, rep), append(fits, m.Hosts[0].CPU)
	}
	lineRep, wakeRep := reps[0], reps[1]
	if !near(wakeRep.SaturationRPS, (2-a)/w) || !strings.HasPrefix(wakeRep.SaturationModel, "CPU with wake-up cost: 0.100 cores + λ·(1.000 ms + 2.000 ms·e^") {
		t.Errorf("wake: saturation %g from %q, want %g", wakeRep.SaturationRPS, wakeRep.SaturationModel, (2-a)/w)
	}
	if ls, _ := fits[0].saturation(2); !near(lineRep.SaturationRPS, ls) || near(ls, wakeRep.SaturationRPS) || !strings.HasPrefix(lineRep.SaturationModel, "CPU line:") {
		t.Errorf("line: saturation %g from %q, want the line's %g", lineRep.SaturationRPS, lineRep.SaturationModel, ls)
	}
	if lp, wp := lineRep.Patterns[0], wakeRep.Patterns[0]; lp.PredictedUS != wp.PredictedUS || lineRep.Hosts[0].NewUtilisation != wakeRep.Hosts[0].NewUtilisation {
		t.Errorf("latency or U differ: line %+v %+v, wake %+v %+v", lp, lineRep.Hosts[0], wp, wakeRep.Hosts[0])
	}
	if !strings.Contains(wakeRep.Hosts[0].CPU, "wake-up model (cpu-model=wake): 0.100 ±0.000 cores") {
		t.Errorf("host's CPU note %q", wakeRep.Hosts[0].CPU)
	}
}
