package assembly

import (
	"context"
	"testing"
)

// TestDiagnoseMembers reports, per node of a diagnosed run
// (WIREPATH_DIAG_TRACE, WIREPATH_DIAG_TRUTH), its joint links' mean
// stated confidence and share right, and each ensemble member's mean
// probability of the link's request (members.go): where a node's
// confidences are off, which member puts them off. A diagnostic for
// docs/accuracy.md, run by hand.
func TestDiagnoseMembers(t *testing.T) {
	tr, f := diagRun(t)
	e, err := New(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	_, r, err := e.inferHook(context.Background(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := newDiag(r, tr, f)
	for n := range int32(len(r.parentsOf)) {
		var k, right int
		var stated float64
		var mem [nMembers]float64
		var memR [nMembers]float64 // mean member probability over the links right
		for _, c := range r.childrenOf[n] {
			if r.exact[c] >= 0 || r.nCand[c] < 2 || d.tp[c] == diagUnknown {
				continue
			}
			k++
			ok := r.parent[c] == d.tp[c]
			if ok {
				right++
			}
			stated += float64(r.conf[c])
			for e := range mem {
				mem[e] += float64(r.mconf[e][c])
				if ok {
					memR[e] += float64(r.mconf[e][c])
				}
			}
		}
		if k == 0 {
			continue
		}
		fk := float64(k)
		t.Logf("%-10s singles %+v: %d joint links, stated %.3f right %.3f; members %.3f %.3f %.3f; over the right ones %.3f %.3f %.3f",
			d.name(n), r.singles[n], k, stated/fk, float64(right)/fk, mem[0]/fk, mem[1]/fk, mem[2]/fk,
			memR[0]/max(1, float64(right)), memR[1]/max(1, float64(right)), memR[2]/max(1, float64(right)))
	}
}
