package assembly

import (
	"fmt"
	"slices"
	"testing"
)

// TestDiagnoseDerivedUnique asks, for each call of node
// WIREPATH_DIAG_DK whose true request is known, whether the derived
// tokens (assoc.go) single its true request out among the open candidates
// (requests that arrived before the call was sent and replied after its
// return): the true request's derived-token score is the only highest,
// shares the highest with others, or is below another's. It counts by
// whether the engine placed the call right, under the engine's final
// model and under a model fitted on the truth (which has learnt every
// true pair: an upper bound on what the derived tokens can tell).
//
//	WIREPATH_DIAG_DK=b2 WIREPATH_DIAG_TRACE=RUN/trace.tsv WIREPATH_DIAG_TRUTH=RUN/truth.jsonl \
//	  go test ./causal/assembly -run TestDiagnoseDerivedUnique -v
func TestDiagnoseDerivedUnique(t *testing.T) {
	r, d, n := diagNode(t, "WIREPATH_DIAG_DK")
	saved := slices.Clone(r.parent)
	for _, c := range r.childrenOf[n] {
		if d.tp[c] != diagUnknown {
			r.parent[c] = d.tp[c]
		}
	}
	mt := r.fit(n, false)
	copy(r.parent, saved)
	for _, m := range []struct {
		name string
		m    *nodeModel
	}{{"engine's model", r.models[n]}, {"truth's model", mt}} {
		count := map[string]int{}
		for _, c := range r.childrenOf[n] {
			tp := d.tp[c]
			if tp < 0 || r.evid[c] == evRoot {
				continue
			}
			cc := &r.calls[c]
			score := func(p int32) float64 {
				return m.m.assoc.score(r.calls[p].kind, cc.kind, r.ev[p].tok, r.ev[c].tok)
			}
			st := score(tp)
			open, tied, above := 0, 0, 0
			for _, q := range r.parentsOf[n] {
				qc := &r.calls[q]
				if q == tp || qc.arr > cc.send || (qc.rep != noTime && qc.rep < cc.back) {
					continue
				}
				open++
				switch s := score(q); {
				case s > st+1e-9:
					above++
				case s > st-1e-9:
					tied++
				}
			}
			what := "unique"
			switch {
			case above > 0:
				what = "below another"
			case tied > 0:
				what = fmt.Sprintf("tied with %s", diagBucket(tied))
			}
			right := "engine right"
			if r.parent[c] != tp {
				right = "engine wrong"
			}
			count[right+", "+what]++
			count[right+", open "+diagBucket(open)]++
		}
		keys := make([]string, 0, len(count))
		for k := range count {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			t.Logf("%s %s: %-40s %d", d.name(n), m.name, k, count[k])
		}
	}
}

// diagBucket names a count's range: 0, 1, 2-4, 5-15, 16+.
func diagBucket(k int) string {
	switch {
	case k <= 1:
		return fmt.Sprint(k)
	case k <= 4:
		return "2-4"
	case k <= 15:
		return "5-15"
	}
	return "16+"
}
