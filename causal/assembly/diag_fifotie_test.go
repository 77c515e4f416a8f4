package assembly

import (
	"os"
	"testing"
)

// TestDiagnoseArrivalOrder measures, on a generated trace with coarse
// timestamps (WIREPATH_DIAG_TRACE and WIREPATH_DIAG_TRUTH, as
// TestDiagnose), how well the order of two requests' arrivals at a node
// is known where the timestamps leave it open (arrTied): how often the
// guess spreadTicks makes (arrivedBefore) is right, and the mean
// probability orderProb gives the true order, for pairs whose arrival
// intervals are the same and for the others; and how often the guess is
// right for two requests from one sender in one receive tick (read as
// ordered by their sends); WIREPATH_DIAG_ORDER=NODE looks at one node
// only. A diagnostic for docs/accuracy.md, run by hand:
//
//	WIREPATH_DIAG_ORDER=1 WIREPATH_DIAG_TRACE=media.tsv WIREPATH_DIAG_TRUTH=media.truth.tsv \
//	  go test ./causal/assembly -run TestDiagnoseArrivalOrder -v
func TestDiagnoseArrivalOrder(t *testing.T) {
	if os.Getenv("WIREPATH_DIAG_ORDER") == "" {
		t.Skip("set WIREPATH_DIAG_ORDER (and WIREPATH_DIAG_TRACE, WIREPATH_DIAG_TRUTH)")
	}
	r, d := diagInfer(t)
	g := d.f.g
	if g == nil || r.l.arrLo == nil {
		t.Skip("needs a generated truth and coarse timestamps")
	}
	trueRecv := make(map[int32]int64, len(g.Observed))
	for i, o := range g.Observed {
		if o >= 0 {
			trueRecv[o] = int64(g.Trace.Messages[i].RecvTS)
		}
	}
	type tally struct {
		n, guess     int
		prob, stated float64
	}
	var same, diff, sender tally
	only := os.Getenv("WIREPATH_DIAG_ORDER")
	for n := range r.parentsOf {
		if only != "1" && d.name(int32(n)) != only {
			continue
		}
		ps := r.parentsOf[n]
		for i, p := range ps {
			for _, q := range ps[i+1:] {
				a, b := r.calls[p].callMsg, r.calls[q].callMsg
				if a < 0 || b < 0 || r.l.msgs[a].RecvTS != r.l.msgs[b].RecvTS {
					continue
				}
				truth := trueRecv[b] < trueRecv[a] // q before p
				guess := r.arrivedBefore(q, p) == truth
				switch {
				case r.l.msgs[a].SrcNode == r.l.msgs[b].SrcNode:
					sender.n++
					if guess {
						sender.guess++
					}
				case r.arrTied(q, p):
					tl := &diff
					if r.l.arrLo[a] == r.l.arrLo[b] && r.l.arrHi[a] == r.l.arrHi[b] {
						tl = &same
					}
					tl.n++
					if guess {
						tl.guess++
					}
					pr := r.orderProb(nil, q, p, 0, 0) // the timestamps alone
					tl.stated += max(pr, 1-pr)
					if !truth {
						pr = 1 - pr
					}
					tl.prob += pr
				}
			}
		}
	}
	for _, x := range []struct {
		name string
		t    tally
	}{{"open, same interval", same}, {"open, other intervals", diff}, {"one sender, one tick", sender}} {
		t.Logf("%-22s pairs %6d  guess right %5.1f %% (orderProb says %5.1f %%)  orderProb of the truth %.3f", x.name, x.t.n,
			100*float64(x.t.guess)/float64(max(1, x.t.n)), 100*x.t.stated/float64(max(1, x.t.n)), x.t.prob/float64(max(1, x.t.n)))
	}
}
