package assembly

import (
	"math/rand/v2"
	"testing"
)

// TestRhythmFloor covers the rhythm of a timer whose calls wait for a
// pooled connection: the period plus a wait, never shorter than the
// period. Its intervals are a rhythm where the calls were handed a
// connection (pooled), not otherwise (the same intervals from calls that
// never waited are a closed loop's think time, TestRhythm); a Poisson
// process and bursts are not one either way.
func TestRhythmFloor(t *testing.T) {
	const p = 5e6 // 5 ms
	cases := []struct {
		name           string
		draw           func(rng *rand.Rand) float64
		pooled, nonPol bool // want a rhythm with and without pooled
	}{
		{"timer, waits of 0 to 4 ms", func(rng *rand.Rand) float64 { return p + 4e6*rng.Float64() }, true, false},
		{"timer, waits exponential of mean 1 ms", func(rng *rand.Rand) float64 { return p + 1e6*rng.ExpFloat64() }, true, false},
		{"timer, 2 % jitter", func(rng *rand.Rand) float64 { return p * (1 + 0.02*rng.NormFloat64()) }, true, true},
		{"Poisson", func(rng *rand.Rand) float64 { return p * rng.ExpFloat64() }, false, false},
		{"a timer and a Poisson source of the same kind", func(rng *rand.Rand) float64 {
			if rng.Float64() < 0.5 {
				return p * rng.ExpFloat64()
			}
			return p + 4e6*rng.Float64()
		}, false, false},
		{"bursts of three 18 µs apart", func(rng *rand.Rand) float64 {
			if rng.Float64() < 2.0/3 {
				return 18e3 * (1 + 0.02*rng.NormFloat64())
			}
			return 2e6 * rng.ExpFloat64()
		}, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gs := gapsOf(60, tc.draw)
			sum := int64(0)
			for _, g := range gs {
				sum += g
			}
			lambda := float64(len(gs)) / float64(sum)
			for _, pooled := range []bool{true, false} {
				want := tc.nonPol
				if pooled {
					want = tc.pooled
				}
				h, gain := fitRhythm(gs, lambda, false, pooled)
				if got := h != nil; got != want {
					t.Errorf("pooled %v: rhythm %v (gain %.2f nats an interval, floor %v), want %v", pooled, got, gain, onFloor(gs), want)
				}
			}
		})
	}
}
