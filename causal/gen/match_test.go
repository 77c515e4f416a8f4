package gen

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

// TestMatchTrace rebuilds a trace as a capture pipeline might — other node
// names, another order, skewed clocks, lost messages — and matches it back
// to the truth.
func TestMatchTrace(t *testing.T) {
	c := mustBuiltin(t, "multitier", 20*time.Second)
	c.Skew = map[string]Duration{"WS1": Duration(3 * time.Millisecond)}
	c.Drop = Drop{Random: 0.05}
	out := mustGenerate(t, c)
	truthOf := out.Truth.ByObserved()

	re := &trace.Trace{}
	var want []int32
	rng := rand.New(rand.NewPCG(1, 2))
	perm := rng.Perm(len(out.Trace.Messages))
	for _, i := range perm {
		m := out.Trace.Messages[i]
		if i%10 == 0 {
			continue // lost by the pipeline too
		}
		o := out.Trace
		m.Src, m.Dst = re.Intern(o.Str(m.Src)), re.Intern(o.Str(m.Dst))
		m.SrcNode, m.DstNode = re.Intern("host-"+o.Str(m.SrcNode)), re.Intern("host-"+o.Str(m.DstNode))
		m.CallID = 0
		if i%7 == 0 {
			m.SendTS = trace.NoTime // seen at the receiver only
		}
		re.Messages = append(re.Messages, m)
		want = append(want, truthOf[i])
	}
	got, st := MatchTrace(re, out.Truth, int64(10*time.Millisecond))
	if st.Matched != len(re.Messages) || st.Unmatched != 0 {
		t.Fatalf("stats %+v", st)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("message %d matched to %d, want %d", i, got[i], want[i])
		}
	}
	// With a tolerance below the skew, WS1's sends do not match.
	_, st = MatchTrace(re, out.Truth, int64(time.Millisecond))
	if st.Unmatched == 0 {
		t.Error("matched across a 3 ms skew with a 1 ms tolerance")
	}

	out.Truth.AdoptNames(re, got)
	ps, err := out.Truth.Patterns(causal.AggregateOptions{Naming: causal.DefaultNaming()})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		for _, h := range p.Hops {
			if h.From != "CLIENT" && !strings.HasPrefix(h.From, "host-") {
				t.Fatalf("node %q not renamed in %s", h.From, p.Signature)
			}
		}
	}
}
