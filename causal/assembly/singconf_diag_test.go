package assembly

import (
	"testing"
)

// TestDiagnoseMembers reports, per node of a diagnosed run
// (WIREPATH_DIAG_TRACE, WIREPATH_DIAG_TRUTH), its joint links' mean
// stated confidence and share right, and each ensemble member's mean
// probability of the link's request (members.go): where a node's
// confidences are off, which member puts them off. A diagnostic for
// docs/accuracy.md, run by hand.
func TestDiagnoseMembers(t *testing.T) {
	r, d := diagInfer(t)
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
		if r.singles[n].kept > 0 {
			d.bins(t, n)
		}
		fk := float64(k)
		t.Logf("%-10s singles %+v: %d joint links, stated %.3f right %.3f; members %.3f %.3f %.3f; over the right ones %.3f %.3f %.3f",
			d.name(n), r.singles[n], k, stated/fk, float64(right)/fk, mem[0]/fk, mem[1]/fk, mem[2]/fk,
			memR[0]/max(1, float64(right)), memR[1]/max(1, float64(right)), memR[2]/max(1, float64(right)))
	}
}

// bins logs node n's joint links' reliability by tenths of the stated
// confidence, and what the wrong ones' alternatives give the truth.
func (d *diag) bins(t *testing.T, n int32) {
	r := d.r
	var cnt, right [10]int
	var st [10]float64
	wrong, listed := 0, 0
	tp := 0.0
	for _, c := range r.childrenOf[n] {
		if r.exact[c] >= 0 || r.nCand[c] < 2 || d.tp[c] == diagUnknown {
			continue
		}
		b := min(int(r.conf[c]*10), 9)
		cnt[b]++
		st[b] += float64(r.conf[c])
		if r.parent[c] == d.tp[c] {
			right[b]++
			continue
		}
		wrong++
		if r.conf[c] > 0.9 {
			t.Logf("    sure and wrong: call %d to %d (truth %d, given %.3f; own call of the truth %v, its request's call %v)", c, r.parent[c], d.tp[c], d.trueAlt(c), ownOf(r, n, d.tp[c]), ownOf(r, n, r.parent[c]))
		}
		if a := d.trueAlt(c); a >= 0 {
			listed++
			tp += a
		}
	}
	for b := range cnt {
		if cnt[b] > 0 {
			t.Logf("  %s stated %.1f-%.1f: %d links, stated %.3f right %.3f", d.name(n), float64(b)/10, float64(b+1)/10, cnt[b], st[b]/float64(cnt[b]), float64(right[b])/float64(cnt[b]))
		}
	}
	t.Logf("  %s: %d wrong, the truth listed for %d, given %.3f on average", d.name(n), wrong, listed, tp/max(1, float64(listed)))
}

// ownOf returns request p's calls at node n.
func ownOf(r *run, n, p int32) []int32 {
	var ks []int32
	for _, c := range r.childrenOf[n] {
		if p >= 0 && r.parent[c] == p {
			ks = append(ks, c)
		}
	}
	return ks
}
