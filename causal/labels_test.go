package causal

import (
	"math"
	"testing"

	"github.com/wirepath/wirepath/trace"
)

func TestOutcomeClassAndRequestLabel(t *testing.T) {
	tests := []struct {
		call, reply string
		class, want string
	}{
		{"GET /item/{id}", "200", "2xx", "GET /item/{id} 2xx"},
		{"GET /cart", "404 Not Found", "4xx", "GET /cart 4xx"},
		{"POST /pay", "503", "5xx", "POST /pay 5xx"},
		{"redis GET", "error", "error", "redis GET error"},
		{"SELECT users", "ERROR 42P01", "error", "SELECT users error"},
		{"grpc /shop.Cart/Get", "grpc NOT_FOUND", "error", "grpc /shop.Cart/Get error"},
		{"grpc /shop.Cart/Get", "grpc OK", "", "grpc /shop.Cart/Get"},
		{"GET /x", "200 reset", "2xx", "GET /x 2xx"},
		{"GET /x", "reset", "error", "GET /x error"},
		{"memcached get", "", "", "memcached get"},
		{"SELECT users", "2000", "", "SELECT users"}, // four digits: no status
		{"SELECT users", "600", "", "SELECT users"},  // not an HTTP status class
		{"", "200", "2xx", ""},
		{"-", "200", "2xx", ""},
	}
	for _, tt := range tests {
		if got := OutcomeClass(tt.reply); got != tt.class {
			t.Errorf("OutcomeClass(%q) = %q, want %q", tt.reply, got, tt.class)
		}
		if got := RequestLabel(tt.call, tt.reply); got != tt.want {
			t.Errorf("RequestLabel(%q, %q) = %q, want %q", tt.call, tt.reply, got, tt.want)
		}
	}
}

// TestAggregatorLabels checks that patterns carry their root's request
// label and every hop's label, and that request types gather instances by
// their own label across patterns, with exact latency percentiles.
func TestAggregatorLabels(t *testing.T) {
	tr, insts := rpcTrace(10)
	get, cart := tr.Intern("GET /item/{id}"), tr.Intern("GET /cart")
	ok, missing := tr.Intern("200"), tr.Intern("404")
	db := tr.Intern("SELECT items")
	for i, in := range insts {
		m := func(k int) *trace.Message { return &tr.Messages[in.Nodes[k].Msg] }
		m(0).Label, m(3).Label, m(1).Label = get, ok, db
		if i >= 7 { // three /cart requests, one of them failing
			m(0).Label = cart
			if i == 9 {
				m(3).Label = missing
			}
		}
	}
	// Request 8 skips the cache: a pattern of its own.
	insts[8].Nodes = []InstanceNode{insts[8].Nodes[0], insts[8].Nodes[1], insts[8].Nodes[3]}
	insts[8].Nodes[2].Parent = 0
	a := NewAggregator(tr, AggregateOptions{Naming: DefaultNaming()})
	for _, in := range insts {
		if err := a.Add(in); err != nil {
			t.Fatal(err)
		}
	}
	ps := a.Patterns(RankCount)
	if len(ps) != 2 {
		t.Fatalf("%d patterns, want 2", len(ps))
	}
	if p := ps[0]; p.Label != "GET /item/{id} 2xx" || p.LabelCount != 7 || p.Count != 9 {
		t.Errorf("pattern 1: label %q ×%d of %d, want GET /item/{id} 2xx ×7 of 9", p.Label, p.LabelCount, p.Count)
	}
	if p := ps[1]; p.Label != "GET /cart 2xx" || p.LabelCount != 1 {
		t.Errorf("pattern 2: label %q ×%d, want GET /cart 2xx ×1", p.Label, p.LabelCount)
	}
	wantHops := map[string]string{"CALL 10.0.0.2": "SELECT items", "RETURN CLIENT": "200", "CALL 10.0.0.3": ""}
	for _, h := range ps[0].Hops[1:] {
		if w := wantHops[h.Kind+" "+h.To]; h.Label != w {
			t.Errorf("hop %s→%s label %q, want %q", h.From, h.To, h.Label, w)
		}
	}
	types := a.RequestTypes()
	want := []struct {
		label    string
		count    int
		patterns []int
	}{
		{"GET /item/{id} 2xx", 7, []int{1}},
		{"GET /cart 2xx", 2, []int{1, 2}},
		{"GET /cart 4xx", 1, []int{1}},
	}
	if len(types) != len(want) {
		t.Fatalf("request types %+v, want %d", types, len(want))
	}
	for i, w := range want {
		got := types[i]
		if got.Label != w.label || got.Count != w.count || math.Abs(got.Expected-0.5*float64(w.count)) > 1e-9 ||
			len(got.Patterns) != len(w.patterns) || got.Patterns[0] != w.patterns[0] {
			t.Errorf("type %d = %q ×%d (%v, %g), want %q ×%d (%v)", i, got.Label, got.Count, got.Patterns, got.Expected, w.label, w.count, w.patterns)
		}
		// Every request of rpcTrace takes 11 ms from its send to its reply.
		if got.Latency == nil || got.Latency.P50 != 11000 || got.Latency.N != w.count {
			t.Errorf("type %q latency %+v, want n %d p50 11000", w.label, got.Latency, w.count)
		}
	}
}

func TestRequestTypesNilWithoutLabels(t *testing.T) {
	tr, insts := rpcTrace(3)
	a := NewAggregator(tr, AggregateOptions{Naming: DefaultNaming()})
	for _, in := range insts {
		if err := a.Add(in); err != nil {
			t.Fatal(err)
		}
	}
	if ps := a.Patterns(RankCount); ps[0].Label != "" || ps[0].LabelCount != 0 {
		t.Errorf("label %q ×%d on a trace without labels", ps[0].Label, ps[0].LabelCount)
	}
	if types := a.RequestTypes(); types != nil {
		t.Errorf("request types %+v on a trace without labels", types)
	}
}

// TestRequestTypesLeaveOutBackground checks that a background instance
// (work no request caused) counts in its pattern but in no request type.
func TestRequestTypesLeaveOutBackground(t *testing.T) {
	tr, insts := rpcTrace(4)
	get, ok := tr.Intern("GET /item/{id}"), tr.Intern("200")
	for _, in := range insts {
		tr.Messages[in.Nodes[0].Msg].Label, tr.Messages[in.Nodes[3].Msg].Label = get, ok
	}
	insts[3].Background = true
	a := NewAggregator(tr, AggregateOptions{Naming: DefaultNaming()})
	for _, in := range insts {
		if err := a.Add(in); err != nil {
			t.Fatal(err)
		}
	}
	if ps := a.Patterns(RankCount); len(ps) != 1 || ps[0].Count != 4 {
		t.Fatalf("patterns %+v, want one of 4 instances", ps)
	}
	types := a.RequestTypes()
	if len(types) != 1 || types[0].Count != 3 || types[0].Latency == nil || types[0].Latency.N != 3 {
		t.Errorf("request types %+v, want one of 3 requests", types)
	}
}
