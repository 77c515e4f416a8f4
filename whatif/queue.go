package whatif

import "math"

// erlangC is the probability that an arrival at an M/M/c queue with
// offered load a = λ·E[S] (in servers) waits: Erlang's C formula, from
// the Erlang B recursion B(k) = a·B(k−1) / (k + a·B(k−1)), which stays
// finite for any c. 1 at or beyond saturation (a ≥ c).
func erlangC(c int, a float64) float64 {
	if c < 1 || a >= float64(c) {
		return 1
	}
	if a <= 0 {
		return 0
	}
	b := 1.0
	for k := 1; k <= c; k++ {
		b = a * b / (float64(k) + a*b)
	}
	return float64(c) * b / (float64(c) - a*(1-b))
}

// stretch is the mean time in a c-server processor-sharing station per
// unit of service at utilisation u (the share of the c servers busy):
// 1 + C(c, c·u) / c(1−u). Each of n jobs is served at min(1, c/n); the
// number of jobs is then the M/M/c birth-death chain whatever the service
// distribution (a symmetric queue, Kelly 1979: insensitive), so by
// Little's law the mean response of a job of demand D is D·stretch, for
// every class of job alike. +Inf at u ≥ 1.
func stretch(c int, u float64) float64 {
	if u >= 1 {
		return math.Inf(1)
	}
	u = max(u, 0)
	return 1 + erlangC(c, float64(c)*u)/(float64(c)*(1-u))
}

// inSystem is the mean number of jobs in that station at utilisation u:
// c·u·stretch(c, u) (Little's law).
func inSystem(c int, u float64) float64 {
	return float64(c) * u * stretch(c, u)
}

// solveUtil returns the utilisation u at which a c-server
// processor-sharing station holds n jobs on average (inSystem(c, u) = n):
// the inverse of a function increasing from 0 to +Inf on [0, 1), by
// bisection to 1e-12.
func solveUtil(c int, n float64) float64 {
	if !(n > 0) {
		return 0
	}
	lo, hi := 0.0, 1.0
	for hi-lo > 1e-12 {
		mid := (lo + hi) / 2
		if inSystem(c, mid) < n {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}
