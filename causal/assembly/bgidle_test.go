package assembly

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestBackgroundIdle covers the background rate read where the node is
// idle (bgidle.go): a node whose requests (each making one call) are
// open about half the time. When the assignment leaves 30 of the
// requests' calls to background, none of which came while no request
// was open, the fitted count falls well below 30; background work of a
// kind of its own, at random times, is counted within a quarter of the
// calls it made.
func TestBackgroundIdle(t *testing.T) {
	cases := []struct {
		name string
		// bg: background calls made at random times; drop: requests'
		// calls the assignment gives no request
		bg, drop bool
		label    string
		lo, hi   float64 // the fitted count's bounds, as a share of the calls left to background (drop) or made (bg)
	}{
		{"requests' calls left to background", false, true, "GET /d", 0, 0.35},
		{"background work", true, false, "GET /x", 0.75, 1.25},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newTB()
			rng := rand.New(rand.NewPCG(7, 8))
			lab := func(m int32, l string) { b.ev(m).Label = b.t.Intern(l) }
			for i, at := 0, 1.0; at < 2000; i, at = i+1, at+4+2*rng.Float64() {
				kc, kr := b.rpc(at+0.3, at+0.9, "S", "s:6000", "D", "d:80", fmt.Sprintf("kr%d", i), 60)
				lab(kc, "GET /d")
				lab(kr, "200")
				rc, rr := b.rpc(at-0.1, at+2.5+rng.Float64(), "C", "c:1", "S", "s:80", fmt.Sprintf("r%d", i), 100)
				lab(rc, "GET /s")
				lab(rr, "200")
			}
			made := 0
			for i, at := 0, 1.0; tc.bg && at < 2000; i, at = i+1, at+10*rng.ExpFloat64() {
				made++
				c, r := b.rpc(at, at+0.2, "S", "s:7000", "D", "d:80", fmt.Sprintf("b%d", i), 60)
				lab(c, "GET /x")
				lab(r, "200")
			}
			_, r := runOn(t, b, DefaultOptions())
			var s int32 = -1
			for n := range r.l.nodeSym {
				if b.t.Str(r.l.nodeSym[n]) == "S" {
					s = int32(n)
				}
			}
			left := 0
			for _, c := range r.childrenOf[s] {
				lbl := b.t.Str(r.kinds.keys[r.calls[c].kind].label)
				if tc.drop && lbl == tc.label && r.parent[c] >= 0 && left < 30 {
					r.parent[c] = -1
				}
				if lbl == tc.label && r.parent[c] < 0 {
					left++
				}
			}
			m := r.fit(s, false)
			got := 0.0
			for k, v := range m.bg {
				if b.t.Str(r.kinds.keys[k].label) == tc.label {
					got += v
				}
			}
			of := float64(left)
			if tc.bg {
				of = float64(made)
			}
			if left == 0 || got < tc.lo*of || got > tc.hi*of {
				t.Errorf("%s: background count %.1f fitted (%d calls left to background, %d made), want %.2f–%.2f of %.0f",
					tc.label, got, left, made, tc.lo, tc.hi, of)
			}
		})
	}
}
