package score

import (
	"testing"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/truth"
	"github.com/wirepath/wirepath/trace"
)

// The fixture is one real testbed run (testbed/testbed.sh with VARIANT=ids
// TRACING=sniffed INFLIGHT=8 REQUESTS=60 SEED=3): its truth and the trace
// wirepath analyze made of its captures.
func loadTestbedFixture(t *testing.T) (*truth.File, *trace.Trace) {
	t.Helper()
	f, err := truth.ReadFile("testdata/testbed/ids-8.truth.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trace.ReadFile("testdata/testbed/ids-8.trace.tsv.gz", trace.ReadOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	return f, tr
}

// oracleOf is the result a perfect engine would give: every matched
// message under its true parent (true messages missing from the trace
// skipped, their children under their nearest matched ancestor).
func oracleOf(tr *trace.Trace, f *truth.File, m *Mapping, parent map[int]int) *causal.Result {
	var of []int
	for ti := range tr.Messages {
		of = append(of, int(m.TraceToTruth[ti]))
	}
	var keep []int
	var ofKept []int
	for ti, fi := range of {
		if fi >= 0 {
			keep = append(keep, ti)
			ofKept = append(ofKept, fi)
		}
	}
	res := treeResult(tr, ofKept, parent)
	for pi := range res.Patterns {
		for ii := range res.Patterns[pi].Instances {
			ids := res.Patterns[pi].Instances[ii].Messages
			for k, idx := range ids {
				ids[k] = keep[idx]
			}
		}
	}
	return res
}

// TestTestbedFixture scores a perfect result and deliberately wrong ones
// on a real run's trace: the mapping must find every true message, the
// oracle must score perfectly, and each planted error must cost exactly
// the requests it touches.
func TestTestbedFixture(t *testing.T) {
	f, tr := loadTestbedFixture(t)
	m := MapTrace(tr, f, DefaultMapOptions())
	if m.Stats.TruthUnmatched != 0 || m.Stats.Matched != len(f.Messages) || m.Stats.TraceNoConn != 0 || m.Stats.TraceSurplus != 0 {
		t.Fatalf("mapping of a complete capture: %+v", m.Stats)
	}
	reqs := 0
	for _, q := range f.Requests {
		if !q.Background {
			reqs++
		}
	}
	oracle := ScoreRequests(oracleOf(tr, f, m, trueParents(f)), tr, f, m)
	if oracle.Requests.Right != reqs || oracle.Requests.Observed != reqs || oracle.Messages.Right != len(f.Messages) ||
		oracle.Background.Right != oracle.Background.All || oracle.Unplaced != 0 {
		t.Errorf("the oracle scores %+v, messages %+v, background %+v, unplaced %d", oracle.Requests, oracle.Messages, oracle.Background, oracle.Unplaced)
	}
	for _, l := range oracle.Links {
		if l.Right != l.Calls {
			t.Errorf("oracle link %s: %d of %d right", l.Link, l.Right, l.Calls)
		}
	}
	for _, n := range oracle.Nodes {
		if n.MeanAbsErrorUS != 0 || n.NoParent != 0 {
			t.Errorf("oracle node %s: delay error %.1f µs, %d made roots", n.Node, n.MeanAbsErrorUS, n.NoParent)
		}
	}

	// Swap the first two Redis calls of different requests: both requests
	// go wrong, and only the two Redis calls.
	var a, b int = -1, -1
	for i, msg := range f.Messages {
		if msg.Dir == truth.Call && msg.To == "redis" && !f.Requests[msg.Request].Background {
			if a < 0 {
				a = i
			} else if f.Messages[a].Request != msg.Request {
				b = i
				break
			}
		}
	}
	if b < 0 {
		t.Fatal("the fixture has no two requests with Redis calls")
	}
	// The messages their RETURNs caused follow them, as an engine that
	// swapped the two calls would hang them.
	p := trueParents(f)
	p[a], p[b] = p[b], p[a]
	retA, retB := returnOf(f, a), returnOf(f, b)
	for i, msg := range f.Messages {
		switch msg.Parent {
		case retA:
			p[i] = retB
		case retB:
			p[i] = retA
		}
	}
	wrong := ScoreRequests(oracleOf(tr, f, m, p), tr, f, m)
	if wrong.Requests.Right != reqs-2 {
		t.Errorf("two Redis calls swapped: %d of %d requests right, want %d", wrong.Requests.Right, reqs, reqs-2)
	}
	for _, l := range wrong.Links {
		want := l.Calls
		if l.Link == "app→redis" {
			want -= 2
		}
		if l.Right != want {
			t.Errorf("two Redis calls swapped: link %s %d of %d right, want %d", l.Link, l.Right, l.Calls, want)
		}
	}
}

func returnOf(f *truth.File, call int) int {
	for i, msg := range f.Messages {
		if msg.Dir == truth.Return && msg.Call == call {
			return i
		}
	}
	return -1
}

func BenchmarkScoreTestbed(b *testing.B) {
	f, err := truth.ReadFile("testdata/testbed/ids-8.truth.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	tr, err := trace.ReadFile("testdata/testbed/ids-8.trace.tsv.gz", trace.ReadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	m := MapTrace(tr, f, DefaultMapOptions())
	res := oracleOf(tr, f, m, trueParents(f))
	b.ReportAllocs()
	b.ResetTimer()
	var r *RequestReport
	for i := 0; i < b.N; i++ {
		r = ScoreRequests(res, tr, f, MapTrace(tr, f, DefaultMapOptions()))
	}
	if r.Requests.Right != r.Requests.All {
		b.Fatalf("the oracle scored %+v", r.Requests)
	}
}
