package whatif

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"gonum.org/v1/gonum/stat"
)

// MinCPUWindows is the fewest windows a CPU fit takes; CPUFitT the
// per-request cost's least ratio to its standard error for the line to be
// used (below it the rates span too little to tell the fixed CPU from the
// per-request one).
const (
	MinCPUWindows = 4
	CPUFitT       = 3
)

// CPUFit is a host's CPU as an affine function of the request rate λ,
// busy = a + b·λ (in cores; b in core-seconds per request), fitted by
// least squares over the windows between consecutive samples of its CPU
// profiles, each window's rate the requests the capture shows started in
// it (or the profile's requests column): Stewart and Shen's linear
// fitting of a component's CPU usage at several input rates (§2.1).
type CPUFit struct {
	Files []string `json:"files"`
	// Windows are the windows fitted; Outside those of the profiles
	// outside the capture's requests (left out), Back those whose
	// counter went back (a process gone: left out).
	Windows int `json:"windows"`
	Outside int `json:"outside"`
	Back    int `json:"back"`
	// RateMin, RateMax and RateMean are the windows' request rates.
	RateMin  float64 `json:"rate_min_rps"`
	RateMax  float64 `json:"rate_max_rps"`
	RateMean float64 `json:"rate_mean_rps"`
	// Fixed is a (cores busy at no load) and PerRequestMS b (ms of core
	// time per request) of all the profiles' columns, with their standard
	// errors and covariance (cores·ms).
	Fixed           float64 `json:"fixed_cores"`
	FixedUnc        float64 `json:"fixed_cores_unc"`
	PerRequestMS    float64 `json:"per_request_ms"`
	PerRequestUncMS float64 `json:"per_request_unc_ms"`
	Cov             float64 `json:"cov"`
	// Columns are the same fit per column.
	Columns []CPUColumnFit `json:"columns"`
	// Identified says the line is used: enough windows, b positive and
	// at least CPUFitT standard errors. Else the profile's mean over the
	// capture (MeanBusy ± MeanBusyUnc, in cores; MeanOwn the nodes'
	// columns) is the host's busy, and Note says why.
	Identified  bool    `json:"identified"`
	MeanBusy    float64 `json:"mean_busy_cores"`
	MeanBusyUnc float64 `json:"mean_busy_cores_unc"`
	MeanOwn     float64 `json:"mean_own_cores"`
	Note        string  `json:"note,omitempty"`
	// Wake is the wake-up model fitted to the same windows
	// (cpu-model=wake), nil without.
	Wake *WakeFit `json:"wake,omitempty"`

	ws []cpuWindow
}

// CPUColumnFit is one column's line: Other marks processes that are not
// the placement's nodes.
type CPUColumnFit struct {
	Name         string  `json:"name"`
	Other        bool    `json:"other,omitempty"`
	Fixed        float64 `json:"fixed_cores"`
	PerRequestMS float64 `json:"per_request_ms"`
}

// cpuWindow is one window's rate and each column's cores busy; capture
// says the rate came from the capture's requests.
type cpuWindow struct {
	rate    float64
	cpu     []float64
	capture bool
}

// starts is the capture's requests' start times (Unix seconds, sorted)
// and their cumulative weights, for counting requests in a window.
type starts struct {
	t, cum []float64
}

// requestStarts collects the model's requests' starts.
func (m *Model) requestStarts() starts {
	type st struct{ t, w float64 }
	var all []st
	for _, r := range m.Requests {
		if r.Root >= 0 && r.StartNS > 0 {
			all = append(all, st{float64(r.StartNS) / 1e9, r.Weight})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].t < all[j].t })
	var s starts
	c := 0.0
	for _, x := range all {
		c += x.w
		s.t, s.cum = append(s.t, x.t), append(s.cum, c)
	}
	return s
}

// before is the weight of the requests started before t.
func (s starts) before(t float64) float64 {
	i := sort.SearchFloat64s(s.t, t)
	if i == 0 {
		return 0
	}
	return s.cum[i-1]
}

// ErrCPUColumns is returned by FitCPU for profiles whose CPU columns
// differ.
var ErrCPUColumns = errors.New("the CPU profiles name different columns")

// FitCPU fits a host's CPU line from its profiles: a profile with a
// requests column gives its windows' rates itself; one without is matched
// against the model's requests (their start times: the requests listed
// per instance with the trace), its windows outside the capture left out.
func (m *Model) FitCPU(profiles []*CPUProfile) (*CPUFit, error) {
	if len(profiles) == 0 {
		return nil, errors.New("no CPU profile")
	}
	s := m.requestStarts()
	fit := &CPUFit{}
	var ws []cpuWindow
	for _, p := range profiles {
		if !slices.Equal(p.Columns, profiles[0].Columns) || !slices.Equal(p.Other, profiles[0].Other) {
			return nil, fmt.Errorf("%s: %w (%s, %s in %s)", p.File, ErrCPUColumns, strings.Join(p.Columns, ","), strings.Join(profiles[0].Columns, ","), profiles[0].File)
		}
		if !p.HasRequests && len(s.t) < 2 {
			return nil, fmt.Errorf("%s: no requests column, and the capture's requests have no times to match it with (give the trace, and a result made with --instances -1)", p.File)
		}
		fit.Files = append(fit.Files, p.File)
		ws = append(ws, fit.windows(p, s)...)
	}
	fit.fit(ws, profiles[0])
	if fit.MeanBusy == 0 && !fit.Identified {
		return nil, fmt.Errorf("%s: %s", strings.Join(fit.Files, ", "), fit.Note)
	}
	return fit, nil
}

// windows makes p's windows, counting those left out.
func (f *CPUFit) windows(p *CPUProfile, s starts) []cpuWindow {
	var out []cpuWindow
	for i := 1; i < len(p.Samples); i++ {
		a, b := &p.Samples[i-1], &p.Samples[i]
		dt := b.T - a.T
		w := cpuWindow{cpu: make([]float64, len(a.CPU)), capture: !p.HasRequests}
		back := false
		for j := range a.CPU {
			d := b.CPU[j] - a.CPU[j]
			back = back || d < 0
			w.cpu[j] = d / p.HZ / dt
		}
		if p.HasRequests {
			back = back || b.Requests < a.Requests
			w.rate = (b.Requests - a.Requests) / dt
		} else {
			if a.T < s.t[0] || b.T > s.t[len(s.t)-1] {
				f.Outside++
				continue
			}
			w.rate = (s.before(b.T) - s.before(a.T)) / dt
		}
		if back {
			f.Back++
			continue
		}
		out = append(out, w)
	}
	return out
}

// fit fits the line to the windows and, for a line it cannot use, the
// mean of the capture's windows.
func (f *CPUFit) fit(ws []cpuWindow, p *CPUProfile) {
	f.Windows, f.ws = len(ws), ws
	x := make([]float64, len(ws))
	tot := make([]float64, len(ws))
	f.RateMin = math.Inf(1)
	for i, w := range ws {
		x[i] = w.rate
		for _, c := range w.cpu {
			tot[i] += c
		}
		f.RateMin, f.RateMax = min(f.RateMin, w.rate), max(f.RateMax, w.rate)
		f.RateMean += w.rate / float64(len(ws))
	}
	if len(ws) == 0 {
		f.RateMin = 0
	}
	l := linFit(x, tot)
	f.Fixed, f.FixedUnc = l.a, math.Sqrt(l.va)
	f.PerRequestMS, f.PerRequestUncMS, f.Cov = 1e3*l.b, 1e3*math.Sqrt(l.vb), 1e3*l.cov
	for j, name := range p.Columns {
		y := make([]float64, len(ws))
		for i, w := range ws {
			y[i] = w.cpu[j]
		}
		lj := linFit(x, y)
		f.Columns = append(f.Columns, CPUColumnFit{Name: name, Other: p.Other[j], Fixed: lj.a, PerRequestMS: 1e3 * lj.b})
	}
	f.Identified = l.ok && l.b > 0 && l.b >= CPUFitT*math.Sqrt(l.vb)
	f.mean(ws, p.Other)
	switch {
	case f.Identified:
		f.Note = fmt.Sprintf("fitted over %d windows at %.0f to %.0f requests/s", f.Windows, f.RateMin, f.RateMax)
	case !l.ok:
		f.Note = fmt.Sprintf("%d windows at %.0f to %.0f requests/s: too few, or too narrow a span of rates, to fit a line", f.Windows, f.RateMin, f.RateMax)
	default:
		f.Note = fmt.Sprintf("the windows' rates (%.0f to %.0f requests/s) span too little to tell the fixed CPU from the per-request one (b = %.3f ±%.3f ms)", f.RateMin, f.RateMax, f.PerRequestMS, f.PerRequestUncMS)
	}
	if !f.Identified {
		if f.MeanBusy > 0 {
			f.Note += ": the profile's mean over the capture is the host's busy, the core time per request taken as independent of the load; give windows at other rates (a toggled or varying rate, or another capture's profile with its requests column)"
		} else {
			f.Note += ", and none of the windows is in the capture to take its mean"
		}
	}
}

// mean sets the mean cores busy over the capture's windows and its
// standard error (from blocks of 5 windows, which a window's CPU spilling
// into the next does not correlate).
func (f *CPUFit) mean(ws []cpuWindow, other []bool) {
	var tot, own []float64
	for _, w := range ws {
		if !w.capture {
			continue
		}
		t, o := 0.0, 0.0
		for j, c := range w.cpu {
			t += c
			if !other[j] {
				o += c
			}
		}
		tot, own = append(tot, t), append(own, o)
	}
	if len(tot) == 0 {
		return
	}
	f.MeanBusy, f.MeanOwn = stat.Mean(tot, nil), stat.Mean(own, nil)
	var blocks []float64
	for i := 0; i+5 <= len(tot); i += 5 {
		blocks = append(blocks, stat.Mean(tot[i:i+5], nil))
	}
	if len(blocks) < 2 {
		blocks = tot
	}
	if len(blocks) >= 2 {
		f.MeanBusyUnc = stat.StdDev(blocks, nil) / math.Sqrt(float64(len(blocks)))
	}
}

// line is a least-squares line y = a + b·x with the variances of a and b
// and their covariance; ok is false when it cannot be fitted (fewer than
// MinCPUWindows points, or all at one x).
type line struct {
	a, b, va, vb, cov float64
	ok                bool
}

// linFit fits y = a + b·x by ordinary least squares; the standard errors
// are from the residuals' variance over n−2.
func linFit(x, y []float64) line {
	n := float64(len(x))
	if len(x) < MinCPUWindows {
		return line{}
	}
	mx, my := stat.Mean(x, nil), stat.Mean(y, nil)
	var sxx, sxy float64
	for i := range x {
		sxx += (x[i] - mx) * (x[i] - mx)
		sxy += (x[i] - mx) * (y[i] - my)
	}
	if !(sxx > 1e-12*max(mx*mx, 1)*n) {
		return line{a: my}
	}
	l := line{b: sxy / sxx, ok: true}
	l.a = my - l.b*mx
	ssr := 0.0
	for i := range x {
		r := y[i] - l.a - l.b*x[i]
		ssr += r * r
	}
	s2 := ssr / (n - 2)
	l.vb = s2 / sxx
	l.va = s2 * (1/n + mx*mx/sxx)
	l.cov = -mx * s2 / sxx
	return l
}

// at returns the fitted cores busy at rate λ and its standard error.
func (f *CPUFit) at(rate float64) (busy, unc float64) {
	b, vb, cov := f.PerRequestMS/1e3, math.Pow(f.PerRequestUncMS/1e3, 2), f.Cov/1e3
	busy = f.Fixed + b*rate
	v := f.FixedUnc*f.FixedUnc + rate*rate*vb + 2*rate*cov
	return busy, math.Sqrt(max(v, 0))
}

// otherAt is the fitted cores the other processes' columns keep busy at
// rate λ.
func (f *CPUFit) otherAt(rate float64) float64 {
	o := 0.0
	for _, c := range f.Columns {
		if c.Other {
			o += c.Fixed + c.PerRequestMS/1e3*rate
		}
	}
	return o
}

// otherSlope is the other processes' core-seconds per request.
func (f *CPUFit) otherSlope() float64 {
	o := 0.0
	for _, c := range f.Columns {
		if c.Other {
			o += c.PerRequestMS / 1e3
		}
	}
	return o
}

// saturation is the rate at which the line reaches c cores, with its
// standard error from a's and b's and their covariance.
func (f *CPUFit) saturation(c int) (rps, unc float64) {
	a, b := f.Fixed, f.PerRequestMS/1e3
	if !(b > 0) || a >= float64(c) {
		return math.Inf(1), 0
	}
	rest := float64(c) - a
	rps = rest / b
	va, vb, cov := f.FixedUnc*f.FixedUnc, math.Pow(f.PerRequestUncMS/1e3, 2), f.Cov/1e3
	// ∂/∂a = −1/b, ∂/∂b = −rest/b².
	v := va/(b*b) + rest*rest*vb/(b*b*b*b) + 2*rest*cov/(b*b*b)
	return rps, math.Sqrt(max(v, 0))
}

// AnnotateCPU returns p with a requests column from the model's requests
// (the weight of those started before each sample), keeping the samples
// within the capture's requests: a profile another capture's prediction
// can fit without this capture (FitCPU).
func (m *Model) AnnotateCPU(p *CPUProfile) (*CPUProfile, error) {
	s := m.requestStarts()
	if len(s.t) < 2 {
		return nil, fmt.Errorf("%s: the capture's requests have no times to count (give the trace, and a result made with --instances -1)", p.File)
	}
	out := *p
	out.HasRequests, out.Samples = true, nil
	for _, smp := range p.Samples {
		if smp.T < s.t[0] || smp.T > s.t[len(s.t)-1] {
			continue
		}
		smp.Requests = math.Round(s.before(smp.T)*1e9) / 1e9
		out.Samples = append(out.Samples, smp)
	}
	if len(out.Samples) < 2 {
		return nil, fmt.Errorf("%s: %d of its samples are within the capture's requests (%.3f to %.3f s): not a profile of this capture?", p.File, len(out.Samples), s.t[0], s.t[len(s.t)-1])
	}
	return &out, nil
}
