package assembly

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestShadowsDoubt runs the engine on Project 5's multi-tier system, busy
// enough to cross-fit, with and without the shadow searches (shadow.go):
// they change no request, and where a half's search gives a call another
// request, the call's confidence is lower than the main search alone
// states, and no higher than the ensemble's weighted mean (members.go)
// with the main search sure of it.
func TestShadowsDoubt(t *testing.T) {
	tr := multitierTrace(t, 120*time.Second)
	opt := DefaultOptions()
	opt.Workers = 1 // the hook below writes the run
	e, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	_, with, err := e.infer(context.Background(), tr)
	if err != nil {
		t.Fatal(err)
	}
	_, without, err := e.inferHook(context.Background(), tr, func(r *run, _ int32, _ int) { r.noShadows = true })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(with.parent, without.parent) {
		t.Fatal("the shadow searches changed the assignment")
	}
	k1 := opt.Alternatives + 1
	var ran, doubted int
	var lower float64
	for c := range with.calls {
		if with.exact[c] >= 0 || with.nCand[c] < 2 || with.shadowPost[0][c*k1].p == noShadow {
			continue
		}
		ran++
		a := with.parent[c]
		if with.shadowPost[0][c*k1].p == a && with.shadowPost[1][c*k1].p == a {
			continue
		}
		doubted++
		lower += float64(without.conf[c] - with.conf[c])
		// a weighted mean of three probabilities, the main search's at
		// most 1 (each member's is normalised over the candidates, hence
		// the slack)
		bound := memberW(0)
		for k := range with.shadowPost {
			var p [1]float64
			with.shadowOf(k, int32(c), []int32{a}, p[:], int(with.nCand[c]))
			bound += memberW(k+1) * p[0]
		}
		if float64(with.conf[c]) > bound+0.02 {
			t.Errorf("call %d: confidence %.4f, above the three searches' mean at most %.4f", c, with.conf[c], bound)
		}
	}
	t.Logf("%d calls searched by the halves, %d given another request by one; their confidence lower by %.3f on average", ran, doubted, lower/float64(max(doubted, 1)))
	if ran == 0 || doubted == 0 {
		t.Fatalf("%d calls searched by the halves, %d doubted: the test sees no disagreement", ran, doubted)
	}
	if lower <= 0 {
		t.Errorf("the calls a half gave another request are not stated less sure (mean change %.4f)", -lower/float64(doubted))
	}
}
