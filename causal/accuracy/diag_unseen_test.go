package accuracy

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/wirepath/wirepath/causal/score"
	"github.com/wirepath/wirepath/trace"
)

// TestDiagnoseUnseen counts the assembly engine's wrong links on one of
// the systems it was not tuned on, by the tracelet and label of the call,
// what its parent should have been and what it got (a request's label
// and tracelet, or root/background). It is a diagnostic for
// docs/accuracy.md, run by hand:
//
//	WIREPATH_DIAG_UNSEEN=background WIREPATH_DIAG_CLIENTS=1 \
//	  go test ./causal/accuracy -run TestDiagnoseUnseen -v
func TestDiagnoseUnseen(t *testing.T) {
	name := os.Getenv("WIREPATH_DIAG_UNSEEN")
	if name == "" {
		t.Skip("set WIREPATH_DIAG_UNSEEN (and WIREPATH_DIAG_CLIENTS) to diagnose an unseen system")
	}
	cfg, err := UnseenConfig(name)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := strconv.Atoi(os.Getenv("WIREPATH_DIAG_CLIENTS")); err == nil {
		cfg.Clients = c
	}
	out, res := assembleGenerated(ctx, t, cfg)
	a, _ := EngineAssignment(res, out.Trace)
	s, _ := exactVerdicts(out, a)
	t.Logf("%d of %d requests right, %d of %d calls, %d of %d background trees", s.Right, s.Requests, s.CallsRight, s.Calls, s.BackgroundRgt, s.Background)
	tr := out.Truth
	parents := score.TruthCallParents(tr)
	byObs := tr.ByObserved()
	tracelet := func(i int32) string { return tr.Meta.Tracelets[tr.Tracelet[i]] }
	label := func(i int32) string { return out.Trace.Str(out.Trace.Messages[tr.Observed[i]].Label) }
	parent := func(o int32) string {
		if o < 0 || byObs[o] < 0 {
			return "root/background"
		}
		return fmt.Sprintf("%s [%s]", label(byObs[o]), tracelet(byObs[o]))
	}
	wrong := map[string]int{}
	byInst := map[int32]map[string]bool{} // a request's wrong calls' labels
	for i := range tr.Trace.Messages {
		o := tr.Observed[i]
		if tr.Trace.Messages[i].Kind == trace.KindReturn || o < 0 {
			continue
		}
		want := int32(-1)
		if p := parents[i]; p >= 0 {
			want = tr.Observed[p]
		}
		if got := a[o]; got != want {
			wrong[fmt.Sprintf("%s %s: want %s, got %s", tracelet(int32(i)), label(int32(i)), parent(want), parent(got))]++
			inst := tr.Instance[i]
			if byInst[inst] == nil {
				byInst[inst] = map[string]bool{}
			}
			byInst[inst][label(int32(i))] = true
		}
	}
	diagWrongRequests(t, byInst)
	diagHosts(t, out, a, byInst)
	keys := slices.SortedFunc(maps.Keys(wrong), func(x, y string) int { return cmp.Or(cmp.Compare(wrong[y], wrong[x]), cmp.Compare(x, y)) })
	for _, k := range keys {
		t.Logf("%5d %s", wrong[k], k)
	}
}

// diagWrongRequests logs, by the label of a call, how many requests have
// a wrong call of that label, and how many have wrong calls of that label
// only.
func diagWrongRequests(t *testing.T, byInst map[int32]map[string]bool) {
	anyOf, only := map[string]int{}, map[string]int{}
	for _, ls := range byInst {
		for l := range ls {
			anyOf[l]++
			if len(ls) == 1 {
				only[l]++
			}
		}
	}
	t.Logf("%d requests with a wrong call; by the label of their wrong calls (any / only that label):", len(byInst))
	for _, l := range slices.SortedFunc(maps.Keys(anyOf), func(x, y string) int { return cmp.Or(cmp.Compare(anyOf[y], anyOf[x]), cmp.Compare(x, y)) }) {
		t.Logf("%5d / %5d %s", anyOf[l], only[l], l)
	}
}
