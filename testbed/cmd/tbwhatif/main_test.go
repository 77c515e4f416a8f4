package main

import "testing"

// TestChangeError: relative to the measured change where it stands out of
// the noise, else only how many standard deviations the prediction is off.
func TestChangeError(t *testing.T) {
	for _, c := range []struct {
		pred, meas, sd float64
		want           string
	}{
		{20, 18.84, 4.17, "+6 % (0.3σ)"},
		{57.09, 68.76, 7.11, "-17 % (1.6σ)"},
		{5, -0.97, 2.48, "(2.4σ)"}, // a measured change within 2σ of zero
		{0, 0, 0, "(-)"},           // nothing measured
	} {
		if got := changeError(c.pred, c.meas, c.sd); got != c.want {
			t.Errorf("changeError(%v, %v, %v) = %q, want %q", c.pred, c.meas, c.sd, got, c.want)
		}
	}
}
