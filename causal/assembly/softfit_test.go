package assembly

import (
	"fmt"
	"math"
	"testing"
)

// TestSoftFitRecoversMixture: each of a node's calls could be the first
// call of two requests, one that arrived 0.9 ms before it and one 0.1 ms
// before, and the last pass's posterior gives the later one probability
// pLate (the one the search picks), the earlier pEarly and none the rest.
// The delays the data hold are then a mixture: a share pEarly/(pEarly+
// pLate) of the first delays is 0.9 ms. Hard EM fits the picked request's
// delay only (0.1 ms: sharper than the mixture), soft EM the mixture, and
// the posterior of none as background (lowered by what the app's idle
// time shows, bgidle.go); auto EM is soft where the mean posterior of the
// calls' requests is below softBelow.
func TestSoftFitRecoversMixture(t *testing.T) {
	cases := []struct {
		em            EM
		pLate, pEarly float32
		wantEarly     float64 // share of the first delays at 0.9 ms
		wantBg        float64 // background weight per call
	}{
		{EMHard, 0.5, 0.5, 0, 0},
		{EMSoft, 0.5, 0.5, 0.5, 0},
		{EMSoft, 0.8, 0.2, 0.2, 0},
		{EMSoft, 1, 0, 0, 0},
		{EMSoft, 0.6, 0.1, 0.1 / 0.7, 0.3},
		// auto: soft while the calls' requests are in doubt (mean
		// posterior below softBelow), hard once they are not
		{EMAuto, 0.4, 0.4, 0.5, 0.2},
		{EMAuto, 0.8, 0.2, 0, 0},
	}
	const pairs = 60
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/%.1f-%.1f", tc.em, tc.pLate, tc.pEarly), func(t *testing.T) {
			b := newTB()
			var early, late, kids []int32
			for i := range pairs {
				at := 10 * float64(i)
				e, _ := b.rpc(at, at+3, "web", fmt.Sprintf("w:%d", 2*i), "app", "a:80", fmt.Sprintf("e%d", i), 100)
				l, _ := b.rpc(at+0.8, at+3.1, "web", fmt.Sprintf("w:%d", 2*i+1), "app", "a:80", fmt.Sprintf("l%d", i), 100)
				k, _ := b.rpc(at+1, at+1.2, "app", fmt.Sprintf("a:%d", 1000+i), "db", "d:5432", fmt.Sprintf("k%d", i), 40)
				early, late, kids = append(early, e), append(late, l), append(kids, k)
			}
			_, r := runOn(t, b, DefaultOptions())
			app := r.calls[r.callOf(early[0])].callee
			k := r.opt.Alternatives
			for i := range kids {
				c, pe, pl := r.callOf(kids[i]), r.callOf(early[i]), r.callOf(late[i])
				if r.nCand[c] != 2 {
					t.Fatalf("call %d has %d candidate requests, want 2", i, r.nCand[c])
				}
				r.parent[c], r.picked[c], r.conf[c] = pl, pl, tc.pLate
				for j := range k {
					r.alts[int(c)*k+j] = alt{-1, 0}
				}
				r.alts[int(c)*k] = alt{pe, tc.pEarly}
				if bg := 1 - tc.pLate - tc.pEarly; bg > 0 {
					r.alts[int(c)*k+1] = alt{-1, bg}
				}
			}
			r.opt.EM = tc.em
			m := r.fit(app, r.softPass(app))
			kind := r.calls[r.callOf(kids[0])].kind
			h := m.gaps[anchorArrival][gKey{lvl: 2, next: kind}]
			if h == nil {
				t.Fatal("no first delays fitted")
			}
			c0 := r.callOf(kids[0])
			bEarly := gapBin(r.sendOf(c0) - r.arrOf(r.callOf(early[0])))
			bLate := gapBin(r.sendOf(c0) - r.arrOf(r.callOf(late[0])))
			if bEarly == bLate {
				t.Fatal("the two delays share a bin")
			}
			got := h.w[bEarly] / (h.w[bEarly] + h.w[bLate])
			if math.Abs(got-tc.wantEarly) > 1e-3 {
				t.Errorf("share of first delays at 0.9 ms %.3f, want %.3f", got, tc.wantEarly)
			}
			if mass := h.w[bEarly] + h.w[bLate]; math.Abs(mass-h.n) > 1e-6 {
				t.Errorf("first delays elsewhere: %.3f of %.3f", h.n-mass, h.n)
			}
			// the posterior mass of none, lowered where the app's idle
			// time saw fewer such calls than it predicts (bgidle.go)
			lo, hi := r.sendOf(r.callOf(kids[0])), r.sendOf(r.callOf(kids[pairs-1]))
			ib := r.idleOf(app, lo, hi)
			wantBg := idleCount(tc.wantBg*pairs, ib.alone[kind], ib.idle/float64(hi-lo)) / pairs
			if got := m.bg[kind] / pairs; math.Abs(got-wantBg) > 1e-3 {
				t.Errorf("background weight per call %.3f, want %.3f", got, wantBg)
			}
		})
	}
}
