package convolution

import (
	"math"

	"gonum.org/v1/gonum/dsp/fourier"
)

// nextPow2 returns the smallest power of two >= n (1 for n <= 1). gonum's
// FFT is quadratic on prime lengths, so every transform is padded to one.
func nextPow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}

// correlator cross-correlates indicator signals of length n (a power of
// two) by FFT. It is not safe for concurrent use; each worker has one.
type correlator struct {
	n    int
	fft  *fourier.FFT
	sig  []float64    // scratch signal
	spec []complex128 // scratch spectrum
	corr []float64    // last correlation, circular: lag d >= 0 at d, d < 0 at n+d
}

func newCorrelator(n int) *correlator {
	return &correlator{
		n:    n,
		fft:  fourier.NewFFT(n),
		sig:  make([]float64, n),
		spec: make([]complex128, n/2+1),
		corr: make([]float64, n),
	}
}

// signal fills c.sig with the indicator signal of the quanta in q: the
// square root of the number of messages in each quantum (section 5.2.1).
// q holds quantum indices in [0, n).
func (c *correlator) signal(q []int32) []float64 {
	clear(c.sig)
	for _, x := range q {
		c.sig[x]++
	}
	for i, v := range c.sig {
		if v > 1 {
			c.sig[i] = math.Sqrt(v)
		}
	}
	return c.sig
}

// correlate computes C(d) = Σ_t s1(t)·s2(t+d) for every lag from the
// spectra of s1 and s2, into c.corr (circular layout).
func (c *correlator) correlate(s1, s2 []complex128) []float64 {
	for i := range c.spec {
		c.spec[i] = complexConjMul(s1[i], s2[i])
	}
	c.fft.Sequence(c.corr, c.spec)
	inv := 1 / float64(c.n)
	for i := range c.corr {
		c.corr[i] *= inv
	}
	return c.corr
}

// directCorrelation computes C(d) = Σ_t s1(t)·s2(t+d) for lags
// [-maxLag, maxLag] by the definition, into corr in the circular layout
// correlate uses (other lags are set to 0). It is the slow reference for
// correlate, and what the engine uses when asked to skip the FFT.
func directCorrelation(s1, s2 []float64, maxLag int, corr []float64) []float64 {
	n := len(corr)
	clear(corr)
	for d := -maxLag; d <= maxLag; d++ {
		sum := 0.0
		for t, v := range s1 {
			if v == 0 {
				continue
			}
			if u := t + d; u >= 0 && u < len(s2) {
				sum += v * s2[u]
			}
		}
		if d < 0 {
			corr[n+d] = sum
		} else {
			corr[d] = sum
		}
	}
	return corr
}

// complexConjMul returns conj(a)·b.
func complexConjMul(a, b complex128) complex128 {
	ar, ai := real(a), imag(a)
	br, bi := real(b), imag(b)
	return complex(ar*br+ai*bi, ar*bi-ai*br)
}

// spike is one spike of a correlation: its lag (quanta), its height in
// standard deviations above the mean, and its excess over the mean.
type spike struct {
	lag    int
	score  float64
	excess float64
}

// findSpikes finds the spikes of the correlation corr (circular layout) over
// lags [-maxLag, maxLag] (section 5.2): a spike is a local maximum at least
// nSigma standard deviations above the mean; maxima not separated by a
// point below dip standard deviations belong to one spike, represented by
// its highest point (the earliest of equal ones). It appends to out and
// returns it with the mean and standard deviation used.
//
// The mean and standard deviation are those of the correlation's noise:
// points above the dip level are left out and the two recomputed, up to
// three times (sigma clipping). Taken over every point, strong spikes
// inflate the deviation so much that weaker ones on the same correlation
// (a second, rarer delay) fall under N deviations.
func findSpikes(corr []float64, maxLag int, nSigma, dip float64, out []spike) ([]spike, float64, float64) {
	n := len(corr)
	at := func(d int) float64 {
		if d < 0 {
			return corr[n+d]
		}
		return corr[d]
	}
	// Correlations of sparse signals are mostly whole numbers, and the FFT
	// leaves them off by ~1e-12: comparisons allow eps so that ties and
	// thresholds do not depend on rounding.
	scale := 0.0
	for d := -maxLag; d <= maxLag; d++ {
		scale = max(scale, math.Abs(at(d)))
	}
	eps := 1e-9 * scale
	mean, sd := 0.0, 0.0
	cut := math.Inf(1)
	for iter := 0; iter < 4; iter++ {
		var sum, cnt float64
		for d := -maxLag; d <= maxLag; d++ {
			if v := at(d); v <= cut+eps {
				sum += v
				cnt++
			}
		}
		if cnt < 2 {
			break
		}
		m := sum / cnt
		var ss float64
		for d := -maxLag; d <= maxLag; d++ {
			if v := at(d); v <= cut+eps {
				ss += (v - m) * (v - m)
			}
		}
		dev := math.Sqrt(ss / cnt)
		if dev <= eps {
			// flat noise: keep the previous estimate, if any
			if iter == 0 {
				mean = m
			}
			break
		}
		mean, sd = m, dev
		next := mean + dip*sd
		if next >= cut {
			break
		}
		cut = next
	}
	if sd == 0 {
		return out, mean, 0
	}
	hi, lo := mean+nSigma*sd, mean+dip*sd
	inSpike := false
	var best spike
	bestV := 0.0
	for d := -maxLag; d <= maxLag; d++ {
		v := at(d)
		if v >= hi-eps {
			if !inSpike || v > bestV+eps {
				best, bestV = spike{lag: d, score: (v - mean) / sd, excess: v - mean}, v
			}
			inSpike = true
			continue
		}
		if inSpike && v < lo-eps {
			out = append(out, best)
			inSpike = false
		}
	}
	if inSpike {
		out = append(out, best)
	}
	return out, mean, sd
}
