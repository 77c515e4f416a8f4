package assembly

import (
	"fmt"
	"testing"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/internal/enginetest"
)

// entry is what a test expects of one message of a request: its trace
// index and the trace indices of its parent message and of the CALLs of
// its call and of its call's parent call (-1 none).
type entry struct{ msg, parent, call, callParent int }

func entries(q *causal.Request) []entry {
	idx := func(i int) int {
		if i < 0 {
			return -1
		}
		return q.Messages[i].Msg
	}
	var out []entry
	for _, m := range q.Messages {
		out = append(out, entry{m.Msg, idx(m.Parent), idx(m.Call), idx(m.CallParent)})
	}
	return out
}

// TestRequestTrees: a request's messages, their hop parents (the latest
// reply its call received before each message left, else the call
// itself) and calls; a message not seen stays in its tree as a
// placeholder; a call made while no request was open is a background tree.
func TestRequestTrees(t *testing.T) {
	b := newTB()
	c0, r0 := b.rpc(0, 30, "C", "c:1", "W", "w:80", "r", 100)     // 0, 1
	a0, a1 := b.rpc(2, 20, "W", "w:5001", "A", "a:8080", "a", 90) // 2, 3
	d0, d1 := b.rpc(21, 25, "W", "w:5002", "D", "d:53", "d", 30)  // 4, 5
	// a second request whose call's reply was lost
	c1, r1 := b.rpc(100, 130, "C", "c:2", "W", "w:80", "r2", 100)  // 6, 7
	e0, _ := b.rpc(102, -1, "W", "w:5003", "A", "a:8080", "e", 90) // 8
	// a call with no request open: background
	g0, g1 := b.rpc(60, 61, "W", "w:5004", "D", "d:53", "g", 30) // 9, 10
	res, _ := runOn(t, b, DefaultOptions())
	if len(res.Requests) != 3 {
		t.Fatalf("%d requests, want 3", len(res.Requests))
	}
	byRoot := map[int]*causal.Request{}
	for i := range res.Requests {
		byRoot[res.Requests[i].Root] = &res.Requests[i]
	}
	check := func(root int32, want []entry, background bool, unseen int) {
		t.Helper()
		q := byRoot[int(root)]
		if q == nil {
			t.Fatalf("no request rooted at %d", root)
		}
		got := entries(q)
		if len(got) != len(want) {
			t.Fatalf("request %d: %v, want %v", root, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("request %d message %d: %+v, want %+v", root, i, got[i], want[i])
			}
		}
		if q.Background != background || q.Unseen != unseen {
			t.Errorf("request %d: background %v unseen %d, want %v %d", root, q.Background, q.Unseen, background, unseen)
		}
	}
	I := func(i int32) int { return int(i) }
	check(c0, []entry{
		{I(c0), -1, I(c0), -1},
		{I(a0), I(c0), I(a0), I(c0)},
		{I(a1), I(a0), I(a0), I(c0)},
		{I(d0), I(a1), I(d0), I(c0)},
		{I(d1), I(d0), I(d0), I(c0)},
		{I(r0), I(d1), I(c0), -1},
	}, false, 0)
	check(c1, []entry{
		{I(c1), -1, I(c1), -1},
		{I(e0), I(c1), I(e0), I(c1)},
		{-1, I(e0), I(e0), I(c1)},
		{I(r1), I(c1), I(c1), -1},
	}, false, 1)
	check(g0, []entry{
		{I(g0), -1, I(g0), -1},
		{I(g1), I(g0), I(g0), -1},
	}, true, 0)
	if n := enginetest.Count(res, "unseen_messages"); n != 1 {
		t.Errorf("unseen_messages %d, want 1", n)
	}
	if n := enginetest.Count(res, "background_trees"); n != 1 {
		t.Errorf("background_trees %d, want 1", n)
	}
	var expected float64
	for _, p := range res.Patterns {
		expected += p.Expected
	}
	var conf float64
	for _, q := range res.Requests {
		conf += q.Confidence
	}
	if d := expected - conf; d > 1e-9 || d < -1e-9 {
		t.Errorf("patterns expect %v instances, the requests' confidences sum to %v", expected, conf)
	}
}

// TestBreakCycles: a call found on its own chain of parents loses its
// parent, and every other link stays.
func TestBreakCycles(t *testing.T) {
	r := &run{calls: make([]call, 5), parent: []int32{1, 2, 0, 2, -1}, evid: make([]uint8, 5)}
	if n := r.breakCycles(); n != 1 {
		t.Fatalf("%d cycles broken, want 1", n)
	}
	roots := 0
	for c, p := range r.parent {
		if p < 0 {
			roots++
		}
		seen := map[int32]bool{}
		for q := int32(c); q >= 0; q = r.parent[q] {
			if seen[q] {
				t.Fatalf("call %d is still on a cycle: %v", c, r.parent)
			}
			seen[q] = true
		}
	}
	if roots != 2 {
		t.Errorf("%d roots, want 2: %v", roots, r.parent)
	}
}

// TestRequestClosedWithCallInFlight: a request whose reply was not seen is
// taken to close when its span ends; a call of it still in flight then
// must not confuse the search (a regression: it panicked).
func TestRequestClosedWithCallInFlight(t *testing.T) {
	b := newTB()
	b.rpc(100, 110, "C", "c:1", "N", "n:80", "p1", 100) // sets the span: 15 ms
	p2, _ := b.rpc(0, -1, "C", "c:2", "N", "n:80", "p2", 100)
	c, _ := b.rpc(5, 20, "N", "n:5000", "S", "s:6379", "k", 30)
	b.rpc(30, 31, "N", "n:5001", "S", "s:6379", "k2", 30)
	_, r := runOn(t, b, DefaultOptions())
	if got := r.parentMsg(c); got != p2 {
		t.Errorf("the call went to %d, want the request whose reply was not seen (%d)", got, p2)
	}
}

// TestBuildAllocs guards that building a request of a two-tier system
// (a client calls a gateway, which calls a service) and handing its
// instance to the aggregator allocate nothing per request in steady
// state but the chunks requests' messages and latencies are carved from
// (one per slabSize entries).
func TestBuildAllocs(t *testing.T) {
	b := newTB()
	for i := range 400 {
		at := float64(3 * i)
		id := fmt.Sprint(i)
		b.rpc(at, at+2, "C", "c:1", "G", "g:80", "c"+id, 100)
		b.rpc(at+0.5, at+1.5, "G", "g:2", "S", "s:80", "s"+id, 100)
	}
	_, r := runOn(t, b, DefaultOptions())
	var roots []int32
	for c := range r.calls {
		if r.parent[c] < 0 {
			roots = append(roots, int32(c))
		}
	}
	if len(roots) != 400 {
		t.Fatalf("%d roots, want 400", len(roots))
	}
	bd := r.newBuilder()
	agg := causal.NewAggregator(b.t, r.opt.Aggregate)
	agg.Reserve(4*len(roots), 8*len(roots))
	i := 0
	step := func() {
		req, _ := bd.build(roots[i%len(roots)])
		bd.instance(agg, &req)
		i++
	}
	step()
	if n := testing.AllocsPerRun(len(roots)-1, step); n != 0 {
		t.Errorf("%v allocations per request", n)
	}
}
