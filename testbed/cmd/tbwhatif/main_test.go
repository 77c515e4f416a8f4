package main

import (
	"testing"

	"github.com/wirepath/wirepath/testbed/internal/clientlog"
)

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

// TestPhase: a toggled run's request met the change when it was sent and
// answered within one odd window; spanning a switch or sent in the
// warm-up, it is left out.
func TestPhase(t *testing.T) {
	const s = int64(1e9)
	w := windows{toggle: s, warmup: 2 * s}
	first := 100 * s
	for _, c := range []struct {
		name       string
		send, recv int64
		want       phase
	}{
		{"warm-up", first + s + 1, first + s + 2, skipped},
		{"off window", first + 2*s + 10, first + 2*s + 20, off},
		{"on window", first + 3*s + 10, first + 3*s + 20, on},
		{"spans a switch", first + 3*s - 5, first + 3*s + 5, skipped},
		{"ends on the last ns of its window", first + 5*s, first + 6*s - 1, on},
	} {
		if got := w.phase(clientlog.Request{SendNS: c.send, RecvNS: c.recv}, first); got != c.want {
			t.Errorf("%s: phase = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestMeanError: the predicted mean's error relative to the measured one.
func TestMeanError(t *testing.T) {
	for _, c := range []struct {
		pred, meas, sd float64
		want           string
	}{
		{22, 20, 1, "+10.0 % (2.0σ)"},
		{18, 20, 4, "-10.0 % (0.5σ)"},
		{5, 0, 1, "-"},
		{5, 4, 0, "+25.0 % (-)"},
	} {
		if got := meanError(c.pred, c.meas, c.sd); got != c.want {
			t.Errorf("meanError(%v, %v, %v) = %q, want %q", c.pred, c.meas, c.sd, got, c.want)
		}
	}
}

// TestToggleRow: a kind's row of a toggled run; a kind whose base
// requests were all predicted saturated keeps its measured latencies and
// says saturated where a prediction would be.
func TestToggleRow(t *testing.T) {
	accOf := func(vs ...float64) *acc {
		a := &acc{}
		for _, v := range vs {
			a.add(v)
		}
		return a
	}
	off, on := accOf(2, 2, 2, 2), accOf(3, 3, 3, 3)
	for _, c := range []struct {
		name string
		b, p *acc
		pv   *acc
		want string
	}{
		{"predicted", accOf(2, 2), accOf(2.5, 2.5), nil,
			"| k | 4 | 2.00 ±0.00 | 4 | 3.00 ±0.00 | +1.00 ±0.00 | +0.50 | 2.50 | -16.7 % (-) | -50 % (-) |"},
		{"saturated", &acc{}, &acc{sat: 7}, nil,
			"| k | 4 | 2.00 ±0.00 | 4 | 3.00 ±0.00 | +1.00 ±0.00 | saturated | saturated | - | - |"},
		{"saturated, with an earlier model", &acc{}, &acc{sat: 7}, &acc{},
			"| k | 4 | 2.00 ±0.00 | 4 | 3.00 ±0.00 | +1.00 ±0.00 | saturated | saturated | - | - | - | - |"},
		{"with an earlier model", accOf(2, 2), accOf(2.5, 2.5), accOf(3, 3),
			"| k | 4 | 2.00 ±0.00 | 4 | 3.00 ±0.00 | +1.00 ±0.00 | +0.50 | 2.50 | -16.7 % (-) | -50 % (-) | +1.00 | +0 % (-) |"},
	} {
		if got := toggleRow("k", c.b, c.p, on, off, c.pv); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}
