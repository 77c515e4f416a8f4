package assembly

import "testing"

// TestDiagnoseOwnFit scores node WIREPATH_DIAG_OF's assignment and the
// truth's each under models fitted on itself as the engine fits them
// (cross-fitted), unrefined and refined by the local search under those
// models: the criterion the usual-call fill (usualcall.go) compares
// assignments by. A diagnostic for docs/accuracy.md, run by hand:
//
//	WIREPATH_DIAG_OF=app WIREPATH_DIAG_TRACE=RUN/trace.tsv WIREPATH_DIAG_TRUTH=RUN/truth.jsonl \
//	  go test ./causal/assembly -run 'TestDiagnoseOwnFit$' -v -count=1
func TestDiagnoseOwnFit(t *testing.T) {
	r, d, n := diagNode(t, "WIREPATH_DIAG_OF")
	saved := r.parentsOfCalls(r.childrenOf[n])
	own := func() (float64, float64) {
		m := r.fit(n, false)
		x := r.crossFitModels(n, nil, m, false)
		ls := newLocal(r, n, m, x)
		o := ls.objective()
		ls.sweepAll(20)
		return o, ls.objective()
	}
	eu, er := own()
	r.setParentsOfCalls(r.childrenOf[n], saved)
	for _, c := range r.childrenOf[n] {
		if d.tp[c] != diagUnknown && r.evid[c] != evRoot {
			r.parent[c] = d.tp[c]
		}
	}
	tu, tr := own()
	r.setParentsOfCalls(r.childrenOf[n], saved)
	t.Logf("node %s, objective under models fitted on itself (unrefined, refined): engine %.1f, %.1f; truth %.1f, %.1f; truth−engine %.1f, %.1f",
		d.name(n), eu, er, tu, tr, tu-eu, tr-er)
}
