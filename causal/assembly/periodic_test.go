package assembly

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// gapsOf returns n intervals (ns) drawn by draw.
func gapsOf(n int, draw func(rng *rand.Rand) float64) []int64 {
	rng := rand.New(rand.NewPCG(3, 4))
	gs := make([]int64, n)
	for i := range gs {
		gs[i] = int64(math.Max(1, draw(rng)))
	}
	return gs
}

// TestRhythm covers which intervals between a kind's calls are a timer's:
// a period with a little jitter, with or without missed beats, is; a
// Poisson process, a closed loop with a think time spread over a range,
// and bursts of calls (the median interval the bursts' own) are not.
func TestRhythm(t *testing.T) {
	const p = 5e6 // 5 ms
	cases := []struct {
		name string
		draw func(rng *rand.Rand) float64
		want bool
	}{
		{"timer, 2 % jitter", func(rng *rand.Rand) float64 { return p * (1 + 0.02*rng.NormFloat64()) }, true},
		{"timer sleeping after a reply of 0.3 to 0.8 ms", func(rng *rand.Rand) float64 { return p + 3e5 + 5e5*rng.Float64() }, true},
		{"timer, a fifth of the beats missed", func(rng *rand.Rand) float64 {
			if rng.Float64() < 0.2 {
				return 2 * p * (1 + 0.01*rng.NormFloat64())
			}
			return p * (1 + 0.01*rng.NormFloat64())
		}, true},
		{"Poisson", func(rng *rand.Rand) float64 { return p * rng.ExpFloat64() }, false},
		{"closed loop, 1 to 3 ms think", func(rng *rand.Rand) float64 { return 5e5 + 1e6 + 2e6*rng.Float64() }, false},
		{"bursts of three 18 µs apart", func(rng *rand.Rand) float64 {
			if rng.Float64() < 2.0/3 {
				return 18e3 * (1 + 0.02*rng.NormFloat64())
			}
			return 2e6 * rng.ExpFloat64()
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gs := gapsOf(300, tc.draw)
			sum := int64(0)
			for _, g := range gs {
				sum += g
			}
			lambda := float64(len(gs)) / float64(sum)
			h, gain := fitRhythm(gs, lambda, false, false)
			if got := h != nil; got != tc.want {
				t.Fatalf("rhythm %v (gain %.2f nats an interval), want %v", got, gain, tc.want)
			}
			if h == nil {
				return
			}
			// a call on the beat (the median interval) is likelier
			// background than at the rate, one half-way between beats
			// less likely
			med := slices.Sorted(slices.Values(gs))[len(gs)/2]
			if on := h.logF(med); on < math.Log(lambda)+2 {
				t.Errorf("on the beat: log density %.1f, rate %.1f", on, math.Log(lambda))
			}
			if off := h.logF(med / 2); off > math.Log(lambda) {
				t.Errorf("half-way between beats: log density %.1f, rate %.1f", off, math.Log(lambda))
			}
		})
	}
}

// TestPeriodicBackground runs the engine on a node serving one request at
// a time, each making one call, while a timer at the node makes a call to
// the same service every 5 ms, with its own label (a health check) or the
// requests' (a cache refresh): the timer's calls are background, the
// requests keep theirs. Without the rhythm, about half of the timer's
// calls sent while a request was open were hung under it.
func TestPeriodicBackground(t *testing.T) {
	for _, label := range []string{"GET /health", "GET /d"} {
		t.Run(label, func(t *testing.T) {
			b := newTB()
			rng := rand.New(rand.NewPCG(5, 6))
			lab := func(m int32, l string) { b.ev(m).Label = b.t.Intern(l) }
			type kid struct{ call, parent int32 }
			var kids []kid
			nk := 0
			var timer []int32
			for tm := 1.0; tm < 2000; tm += 5 + 0.05*rng.NormFloat64() {
				c, r := b.rpc(tm, tm+0.3+0.1*rng.Float64(), "S", "s:7000", "D", "d:80", fmt.Sprintf("t%d", len(timer)), 60)
				lab(c, label)
				lab(r, "200")
				timer = append(timer, c)
			}
			for at := 1.0; at < 2000; {
				id := fmt.Sprintf("r%d", nk)
				rep := at
				// one call, half of the requests a second after it
				for k := range 1 + rng.IntN(2) {
					send := rep + 0.2 + 0.1*rng.Float64()
					back := send + 0.3 + 0.2*rng.Float64()
					kc, kr := b.rpc(send, back, "S", "s:6000", "D", "d:80", fmt.Sprintf("k%s.%d", id, k), 60)
					lab(kc, "GET /d")
					lab(kr, "200")
					kids = append(kids, kid{kc, -1})
					rep = back + 0.1
				}
				rep += 0.2 + 0.1*rng.Float64()
				rc, rr := b.rpc(at-0.1, rep, "C", "c:1", "S", "s:80", id, 100)
				lab(rc, "GET /s")
				lab(rr, "200")
				for i := range kids[nk:] {
					kids[nk+i].parent = rc
				}
				nk = len(kids)
				at = rep + 0.1 + 0.2 + 0.8*rng.Float64()
			}
			_, r := runOn(t, b, DefaultOptions())
			bg := 0
			for _, c := range timer {
				if r.parentMsg(c) < 0 {
					bg++
				}
			}
			right := 0
			for _, k := range kids {
				if r.parentMsg(k.call) == k.parent {
					right++
				}
			}
			if bg < len(timer)*95/100 {
				t.Errorf("%d of %d timer calls background, want at least 95 %%", bg, len(timer))
			}
			if right < len(kids)*95/100 {
				t.Errorf("%d of %d requests' calls given their request, want at least 95 %%", right, len(kids))
			}
		})
	}
}
