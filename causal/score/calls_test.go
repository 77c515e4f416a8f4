package score

import (
	"testing"
	"time"

	"github.com/wirepath/wirepath/trace"
)

// TestCallLinks reads the true instances back as call links: every
// message is placed, its parent call is the truth's, and a CALL opens its
// own call; a result without instance records places nothing.
func TestCallLinks(t *testing.T) {
	out := generate(t, "multitier", 10*time.Second, nil)
	insts, lost := trueInstances(out)
	if lost != 0 {
		t.Fatal("lost messages without a loss model")
	}
	links, listed := ResultCallLinks(resultOf(out, insts), out.Trace)
	if !listed {
		t.Fatal("instances not listed")
	}
	want := TruthCallParents(out.Truth)
	byObs := out.Truth.ByObserved()
	calls := 0
	for o, l := range links {
		ti := byObs[o]
		if !l.Placed {
			t.Fatalf("message %d not placed", o)
		}
		wp := int32(-1)
		if p := want[ti]; p >= 0 {
			wp = out.Truth.Observed[p]
		}
		if l.Parent != wp {
			t.Fatalf("message %d: parent call %d, truth %d", o, l.Parent, wp)
		}
		if out.Trace.Messages[o].Kind == trace.KindCall {
			calls++
			if l.Opener != int32(o) {
				t.Fatalf("CALL %d opened by %d", o, l.Opener)
			}
		}
	}
	if calls == 0 {
		t.Fatal("no calls")
	}
	// Nothing listed: not placed.
	res := resultOf(out, insts)
	for i := range res.Patterns {
		res.Patterns[i].Instances = nil
	}
	if links, listed := ResultCallLinks(res, out.Trace); listed || links[0].Placed {
		t.Error("a result without instance records placed messages")
	}
}
