package accuracy

import (
	"cmp"
	"maps"
	"slices"
	"testing"

	"github.com/wirepath/wirepath/causal/gen"
	"github.com/wirepath/wirepath/trace"
)

// diagHosts logs the requests wrong only because another request's call
// was hung under one of theirs (their own calls all right: byInst lacks
// them), by the label of that call and of the call it was hung under:
// the wrong requests TestDiagnoseUnseen's count of requests with a wrong
// call leaves out.
func diagHosts(t *testing.T, out *gen.Output, a Assignment, byInst map[int32]map[string]bool) {
	tr := out.Truth
	byObs := tr.ByObserved()
	label := func(o int32) string { return out.Trace.Str(out.Trace.Messages[o].Label) }
	hosts := map[int32]bool{}
	by := map[string]int{}
	for i := range tr.Trace.Messages {
		o := tr.Observed[i]
		if o < 0 || tr.Trace.Messages[i].Kind == trace.KindReturn {
			continue
		}
		got := a[o]
		if got < 0 || int(got) >= len(byObs) || byObs[got] < 0 {
			continue
		}
		host := tr.Instance[byObs[got]]
		if host == tr.Instance[i] || byInst[host] != nil {
			continue
		}
		hosts[host] = true
		by[label(o)+" under "+label(got)]++
	}
	t.Logf("%d requests wrong only for another request's call hung under theirs; by that call (calls):", len(hosts))
	for _, k := range slices.SortedFunc(maps.Keys(by), func(x, y string) int { return cmp.Or(cmp.Compare(by[y], by[x]), cmp.Compare(x, y)) }) {
		t.Logf("%5d %s", by[k], k)
	}
}
