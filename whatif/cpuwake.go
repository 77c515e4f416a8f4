package whatif

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// The models of a host's CPU against the request rate that its
// saturation can come from (cpu-model= in a placement).
const (
	// CPUModelLine is Stewart and Shen's line, busy = a + b·λ (CPUFit).
	CPUModelLine = "line"
	// CPUModelWake adds a wake-up cost paid by requests that find the
	// system idle (WakeFit).
	CPUModelWake = "wake"
)

// WakeFit is a host's CPU against the request rate λ with a wake-up
// cost: busy = a + λ·(w + k·e^{−λR}), in cores. Each request costs w of
// core time, and k more when it finds no request in progress (an idle
// server sleeping in epoll or on a futex is woken; a busy one picks the
// request up in the same wake-up); e^{−λR} is that probability for
// Poisson arrivals (the M/G/∞ probability of no request in progress,
// which arrivals see by PASTA), R the capture's mean request latency.
// It is fitted by ordinary least squares in a, w and k over the same
// windows as the line. At saturation requests are always in progress,
// the wake-ups vanish, and the host's cores are reached at
// λ = (c − a)/w.
type WakeFit struct {
	// LatencyMS is R.
	LatencyMS float64 `json:"latency_ms"`
	// Fixed is a (cores), WorkMS w and WakeMS k (ms of core time per
	// request), with their standard errors; CovFixedWork is a's and
	// w's covariance (cores·ms).
	Fixed        float64 `json:"fixed_cores"`
	FixedUnc     float64 `json:"fixed_cores_unc"`
	WorkMS       float64 `json:"work_ms"`
	WorkUncMS    float64 `json:"work_unc_ms"`
	WakeMS       float64 `json:"wake_ms"`
	WakeUncMS    float64 `json:"wake_unc_ms"`
	CovFixedWork float64 `json:"cov_fixed_work"`
	// Identified says the model is used: w positive and at least
	// CPUFitT standard errors, and k not negative (a per-request cost
	// that rises with the rate is no wake-up saving). Note says why
	// not.
	Identified bool   `json:"identified"`
	Note       string `json:"note,omitempty"`
}

// fitWake fits the wake-up model to the fit's windows with R = latencyS
// (seconds).
func (f *CPUFit) fitWake(latencyS float64) *WakeFit {
	wf := &WakeFit{LatencyMS: 1e3 * latencyS}
	if !(latencyS > 0) {
		wf.Note = "the capture's requests have no latency to take the probability of an idle system from"
		return wf
	}
	n := len(f.ws)
	if n < MinCPUWindows+1 {
		wf.Note = fmt.Sprintf("%d windows: too few to fit three parameters", n)
		return wf
	}
	x := mat.NewDense(n, 3, nil)
	y := mat.NewVecDense(n, nil)
	for i, w := range f.ws {
		x.SetRow(i, []float64{1, w.rate, w.rate * math.Exp(-w.rate*latencyS)})
		t := 0.0
		for _, c := range w.cpu {
			t += c
		}
		y.SetVec(i, t)
	}
	beta, cov, ok := ols(x, y)
	if !ok {
		wf.Note = fmt.Sprintf("the windows' rates (%.0f to %.0f requests/s) do not tell the fixed, the per-request and the wake-up CPU apart", f.RateMin, f.RateMax)
		return wf
	}
	wf.Fixed, wf.FixedUnc = beta[0], math.Sqrt(cov.At(0, 0))
	wf.WorkMS, wf.WorkUncMS = 1e3*beta[1], 1e3*math.Sqrt(cov.At(1, 1))
	wf.WakeMS, wf.WakeUncMS = 1e3*beta[2], 1e3*math.Sqrt(cov.At(2, 2))
	wf.CovFixedWork = 1e3 * cov.At(0, 1)
	switch {
	case !(wf.WorkMS > 0) || wf.WorkMS < CPUFitT*wf.WorkUncMS:
		wf.Note = fmt.Sprintf("the per-request CPU without wake-ups, w = %.3f ±%.3f ms, is not %d standard errors above 0", wf.WorkMS, wf.WorkUncMS, CPUFitT)
	case wf.WakeMS < 0:
		wf.Note = fmt.Sprintf("the wake-up cost k = %.3f ±%.3f ms is negative: the CPU per request does not fall as the system gets busier", wf.WakeMS, wf.WakeUncMS)
	default:
		wf.Identified = true
		wf.Note = fmt.Sprintf("fitted over %d windows at %.0f to %.0f requests/s", n, f.RateMin, f.RateMax)
	}
	return wf
}

// ols solves y = X·β by ordinary least squares, with β's covariance from
// the residuals' variance over n − p; ok is false when XᵀX is singular or
// there are no more points than parameters.
func ols(x *mat.Dense, y *mat.VecDense) (beta []float64, cov *mat.SymDense, ok bool) {
	n, p := x.Dims()
	if n <= p {
		return nil, nil, false
	}
	var xtx mat.SymDense
	xtx.SymOuterK(1, x.T())
	var ch mat.Cholesky
	if !ch.Factorize(&xtx) || ch.Cond() > 1e14 {
		return nil, nil, false
	}
	var xty, b mat.VecDense
	xty.MulVec(x.T(), y)
	if err := ch.SolveVecTo(&b, &xty); err != nil {
		return nil, nil, false
	}
	var r mat.VecDense
	r.MulVec(x, &b)
	r.SubVec(y, &r)
	s2 := mat.Dot(&r, &r) / float64(n-p)
	cov = mat.NewSymDense(p, nil)
	if err := ch.InverseTo(cov); err != nil {
		return nil, nil, false
	}
	cov.ScaleSym(s2, cov)
	return mat.Col(nil, 0, &b), cov, true
}

// at returns the model's cores busy at rate λ.
func (wf *WakeFit) at(rate float64) float64 {
	return wf.Fixed + rate*(wf.WorkMS+wf.WakeMS*math.Exp(-rate*wf.LatencyMS/1e3))/1e3
}

// saturation is the rate at which the model reaches c cores with the
// per-request CPU w scaled by ratio (the nodes' speed-ups), and its
// standard error from a's and w's and their covariance.
func (wf *WakeFit) saturation(c int, ratio float64) (rps, unc float64) {
	a, w := wf.Fixed, wf.WorkMS/1e3*ratio
	if !(w > 0) || a >= float64(c) {
		return math.Inf(1), 0
	}
	rest := float64(c) - a
	rps = rest / w
	va, vw, cov := wf.FixedUnc*wf.FixedUnc, math.Pow(wf.WorkUncMS/1e3*ratio, 2), wf.CovFixedWork/1e3*ratio
	v := va/(w*w) + rest*rest*vw/(w*w*w*w) + 2*rest*cov/(w*w*w)
	return rps, math.Sqrt(max(v, 0))
}

// meanLatency is the capture's requests' mean latency (seconds), 0
// without any.
func (m *Model) meanLatency() float64 {
	var s, n float64
	for _, r := range m.Requests {
		if r.Root >= 0 && r.LatencyUS > 0 {
			s += r.Weight * r.LatencyUS
			n += r.Weight
		}
	}
	if n == 0 {
		return 0
	}
	return s / n / 1e6
}
