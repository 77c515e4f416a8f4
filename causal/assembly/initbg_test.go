package assembly

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestInitialBackground covers the first model's background rate: a node
// whose requests (each making one call) are open about half of the time,
// while background calls go on at random times, of a kind of their own
// or of the requests'; the first model counts the calls sent with no
// request open (about half of the background), and none of a kind always
// sent within a request.
func TestInitialBackground(t *testing.T) {
	cases := []struct{ name, bgLabel string }{
		{"a kind of its own", "GET /x"},
		{"the requests' kind", "GET /d"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newTB()
			rng := rand.New(rand.NewPCG(7, 8))
			lab := func(m int32, l string) { b.ev(m).Label = b.t.Intern(l) }
			nReq := 0
			for at := 1.0; at < 2000; at += 4 + 2*rng.Float64() {
				id := fmt.Sprintf("r%d", nReq)
				nReq++
				kc, kr := b.rpc(at+0.3, at+0.9, "S", "s:6000", "D", "d:80", "k"+id, 60)
				lab(kc, "GET /d")
				lab(kr, "200")
				rc, rr := b.rpc(at-0.1, at+2.5+rng.Float64(), "C", "c:1", "S", "s:80", id, 100)
				lab(rc, "GET /s")
				lab(rr, "200")
			}
			nBg := 0
			for at := 1.0; at < 2000; at += 10 * rng.ExpFloat64() {
				c, r := b.rpc(at, at+0.2, "S", "s:7000", "D", "d:80", fmt.Sprintf("b%d", nBg), 60)
				lab(c, tc.bgLabel)
				lab(r, "200")
				nBg++
			}
			_, r := runOn(t, b, DefaultOptions())
			var s int32 = -1
			for n := range r.l.nodeSym {
				if b.t.Str(r.l.nodeSym[n]) == "S" {
					s = int32(n)
				}
			}
			m := r.initialModel(s)
			byLabel := map[string]float64{}
			for k, v := range m.bg {
				byLabel[b.t.Str(r.kinds.keys[k].label)] += v
			}
			want := float64(nBg) / 2
			if got := byLabel[tc.bgLabel]; got < 0.6*want || got > 1.4*want {
				t.Errorf("background %s: %.0f calls counted, %d made (about half with no request open)", tc.bgLabel, got, nBg)
			}
			if tc.bgLabel != "GET /d" && byLabel["GET /d"] != 0 {
				t.Errorf("the requests' kind: %.0f background calls counted, none made", byLabel["GET /d"])
			}
		})
	}
}
