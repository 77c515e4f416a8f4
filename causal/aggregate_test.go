package causal

import (
	"math"
	"testing"

	"github.com/wirepath/wirepath/trace"
)

// rpcTrace builds a trace of n requests CLIENT c -> web:80, web -> db:5432 and
// web -> cache:11211 in parallel (order alternating), with returns.
func rpcTrace(n int) (*trace.Trace, []Instance) {
	t := &trace.Trace{}
	var insts []Instance
	ms := int64(1e6)
	add := func(send, recv int64, src, dst, srcNode, dstNode string, k trace.Kind) int32 {
		t.Messages = append(t.Messages, trace.Message{
			SendTS: trace.Timestamp(send), RecvTS: trace.Timestamp(recv),
			Src: t.Intern(src), Dst: t.Intern(dst), SrcNode: t.Intern(srcNode), DstNode: t.Intern(dstNode),
			Bytes: 100, Kind: k, Proto: trace.ProtoTCP,
		})
		return int32(len(t.Messages) - 1)
	}
	for i := 0; i < n; i++ {
		base := int64(i) * 100 * ms
		cl := "10.0.9." + string(rune('1'+i%5))
		cep := cl + ":4" + string(rune('0'+i%10)) + "000"
		call := add(base, base+ms, cep, "10.0.0.1:80", cl, "10.0.0.1", trace.KindCall)
		d1, d2 := int64(2), int64(3)
		if i%2 == 1 {
			d1, d2 = 3, 2
		}
		db := add(base+d1*ms, base+(d1+1)*ms, "10.0.0.1:5000"+string(rune('0'+i%10)), "10.0.0.2:5432", "10.0.0.1", "10.0.0.2", trace.KindCall)
		ca := add(base+d2*ms, base+(d2+1)*ms, "10.0.0.1:6000"+string(rune('0'+i%10)), "10.0.0.3:11211", "10.0.0.1", "10.0.0.3", trace.KindCall)
		ret := add(base+10*ms, base+11*ms, "10.0.0.1:80", cep, "10.0.0.1", cl, trace.KindReturn)
		insts = append(insts, Instance{Prob: 0.5, Nodes: []InstanceNode{
			{Msg: call, Parent: -1}, {Msg: db, Parent: 0}, {Msg: ca, Parent: 0}, {Msg: ret, Parent: 0},
		}})
	}
	return t, insts
}

func TestAggregatorGroupsParallelChildren(t *testing.T) {
	tr, insts := rpcTrace(10)
	a := NewAggregator(tr, AggregateOptions{Naming: DefaultNaming(), Histograms: true, KeepInstances: true})
	for _, in := range insts {
		if err := a.Add(in); err != nil {
			t.Fatal(err)
		}
	}
	ps := a.Patterns(RankExpected)
	if len(ps) != 1 {
		for _, p := range ps {
			t.Log(p.Signature)
		}
		t.Fatalf("got %d patterns, want 1", len(ps))
	}
	p := ps[0]
	want := "CLIENT->10.0.0.1(10.0.0.1->10.0.0.2,10.0.0.1->10.0.0.3,10.0.0.1->CLIENT)"
	if p.Signature != want {
		t.Errorf("signature %s, want %s", p.Signature, want)
	}
	if p.Count != 10 || math.Abs(p.Expected-5) > 1e-9 || p.MaxProbability != 0.5 {
		t.Errorf("count %d expected %v max %v", p.Count, p.Expected, p.MaxProbability)
	}
	// Hop 1 (db) starts at 2 or 3 ms: mean 2.5 ms = 2500 µs.
	if got := p.Hops[1].Start.Mean; math.Abs(got-2500) > 1e-6 {
		t.Errorf("db start mean %v µs, want 2500", got)
	}
	if got := p.Hops[3].NodeDelay.Mean; math.Abs(got-9000) > 1e-6 {
		t.Errorf("return node delay %v µs, want 9000 (recv of call at 1 ms, send at 10 ms)", got)
	}
	if got := p.Hops[0].NetDelay.Mean; math.Abs(got-1000) > 1e-6 {
		t.Errorf("net delay %v µs, want 1000", got)
	}
	if p.Hops[1].ToEndpoint != "10.0.0.2:5432" || p.Hops[3].ToEndpoint != "10.0.9.*" && p.Hops[3].ToEndpoint == "" {
		t.Errorf("endpoints %q %q", p.Hops[1].ToEndpoint, p.Hops[3].ToEndpoint)
	}
	if len(p.Instances) != 10 || len(p.Instances[0].Messages) != 4 {
		t.Errorf("instances %v", p.Instances)
	}
	c1, err := Canonical(p.Signature)
	if err != nil {
		t.Fatal(err)
	}
	c2, _ := Canonical("CLIENT->10.0.0.1(10.0.0.1->CLIENT,10.0.0.1->10.0.0.3,10.0.0.1->10.0.0.2)")
	if c1 != c2 {
		t.Errorf("canonical forms differ: %s vs %s", c1, c2)
	}
}

func TestAggregatorRejectsBadInstances(t *testing.T) {
	tr, _ := rpcTrace(1)
	a := NewAggregator(tr, AggregateOptions{Naming: DefaultNaming()})
	for _, in := range []Instance{
		{},
		{Nodes: []InstanceNode{{Msg: 0, Parent: 0}}},
		{Nodes: []InstanceNode{{Msg: 0, Parent: -1}, {Msg: 1, Parent: 1}}},
		{Nodes: []InstanceNode{{Msg: 99, Parent: -1}}},
	} {
		if err := a.Add(in); err == nil {
			t.Errorf("Add(%v) accepted a bad instance", in)
		}
	}
	if a.Rejected() != 4 {
		t.Errorf("rejected %d, want 4", a.Rejected())
	}
}

func TestSignatureRoundTrip(t *testing.T) {
	for _, s := range []string{
		"A->B",
		"A->B(B->C(C->B(B->A)))",
		`CLIENT->"web 1"("web 1"->db:5432,"web 1"->"x->y")`,
	} {
		n, err := ParseSignature(s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if n.String() != s {
			t.Errorf("round trip %s -> %s", s, n.String())
		}
	}
	for _, bad := range []string{"", "A", "A->", "A->B(", "A->B(C->D)", "A->B(B->C", "A->B)"} {
		if _, err := ParseSignature(bad); err == nil {
			t.Errorf("ParseSignature(%q) accepted", bad)
		}
	}
}

func TestDistBuilder(t *testing.T) {
	var d DistBuilder
	for i := 1; i <= 100; i++ {
		d.Add(float64(i), 1)
	}
	r := d.Dist(true)
	if r.N != 100 || r.Mean != 50.5 || r.P50 != 50 || r.P90 != 90 || r.P99 != 99 || r.Min != 1 || r.Max != 100 {
		t.Errorf("dist %+v", r)
	}
	var big DistBuilder
	for i := 1; i <= 100000; i++ {
		big.Add(float64(i), 1)
	}
	r = big.Dist(false)
	if math.Abs(r.P50-50000)/50000 > 0.011 || math.Abs(r.P90-90000)/90000 > 0.011 {
		t.Errorf("binned percentiles off: %+v", r)
	}
	if r.Mean != 50000.5 {
		t.Errorf("mean %v", r.Mean)
	}
}

// TestAggregatorMixedEndpoint checks that a hop whose instances reach
// different endpoints reports "*", and that percentiles are exact beyond
// the DistBuilder's 4096 exact samples.
func TestAggregatorMixedEndpoint(t *testing.T) {
	tr := &trace.Trace{}
	var insts []Instance
	for i := 0; i < 5000; i++ {
		dst := "10.0.0.2:53"
		if i%2 == 1 {
			dst = "10.0.0.2:80"
		}
		base := int64(i) * 1e9
		tr.Messages = append(tr.Messages,
			trace.Message{SendTS: trace.Timestamp(base), RecvTS: trace.Timestamp(base + 1e6), Src: tr.Intern("10.0.0.1:40000"), Dst: tr.Intern("10.0.0.1:80"),
				SrcNode: tr.Intern("A"), DstNode: tr.Intern("B")},
			trace.Message{SendTS: trace.Timestamp(base + 1e6 + int64(i+1)*1e3), RecvTS: trace.Timestamp(base + 3e6 + int64(i+1)*1e3), Src: tr.Intern("10.0.0.1:50000"), Dst: tr.Intern(dst),
				SrcNode: tr.Intern("B"), DstNode: tr.Intern("C")})
		insts = append(insts, Instance{Prob: 1, Nodes: []InstanceNode{{Msg: int32(2 * i), Parent: -1}, {Msg: int32(2*i + 1), Parent: 0}}})
	}
	a := NewAggregator(tr, AggregateOptions{Naming: DefaultNaming()})
	for _, in := range insts {
		if err := a.Add(in); err != nil {
			t.Fatal(err)
		}
	}
	ps := a.Patterns(RankExpected)
	if len(ps) != 1 {
		t.Fatalf("%d patterns", len(ps))
	}
	h := ps[0].Hops[1]
	if h.ToEndpoint != "*" {
		t.Errorf("endpoint %q, want *", h.ToEndpoint)
	}
	// Node delays are 1, 2, ..., 5000 µs: exact percentiles.
	if d := h.NodeDelay; d.N != 5000 || d.P50 != 2500 || d.P90 != 4500 || d.P99 != 4950 || d.Mean != 2500.5 {
		t.Errorf("node delay %+v, want exact percentiles of 1..5000", d)
	}
}

// TestAggregatorSiblingTies checks that siblings sent at the same moment
// are ordered by their subtrees' canonical text, not by label ids or
// hashes, which depend on the order names were first seen (an engine may
// name nodes through the Namer before it adds instances).
func TestAggregatorSiblingTies(t *testing.T) {
	tr := &trace.Trace{}
	msg := func(from, to string, send, recv float64) { // ms; -1 unknown
		ts := func(v float64) trace.Timestamp {
			if v < 0 {
				return trace.NoTime
			}
			return trace.Timestamp(v * 1e6)
		}
		tr.Messages = append(tr.Messages, trace.Message{
			SendTS: ts(send), RecvTS: ts(recv), SrcNode: tr.Intern(from), DstNode: tr.Intern(to), Bytes: 1,
		})
	}
	msg("E", "A", 0, -1)  // 0: root, arrival unknown
	msg("A", "B", 5, 6)   // 1: two calls sent at the same time
	msg("A", "B", 5, 6.5) // 2
	msg("B", "A", 7, 8)   // 3: answer to 1
	msg("B", "A", 8, 9)   // 4: answer to 2
	msg("A", "D", 10, 11) // 5: after 3
	msg("A", "C", 11, 12) // 6: after 4
	in := Instance{Prob: 1, Nodes: []InstanceNode{{0, -1}, {1, 0}, {2, 0}, {3, 1}, {4, 2}, {5, 3}, {6, 4}}}
	var sigs []string
	for _, order := range [][]string{nil, {"D", "C", "B", "A", "E"}, {"C", "E", "D"}} {
		a := NewAggregator(tr, AggregateOptions{Naming: DefaultNaming()})
		for _, n := range order {
			s, _ := tr.Syms.Lookup(n)
			a.Namer().Node(s)
		}
		if err := a.Add(in); err != nil {
			t.Fatal(err)
		}
		sigs = append(sigs, a.Patterns(RankExpected)[0].Signature)
	}
	want := "E->A(A->B(B->A(A->C)),A->B(B->A(A->D)))"
	for i, s := range sigs {
		if s != want {
			t.Errorf("naming order %d: signature %s, want %s", i, s, want)
		}
	}
}

// TestAggregatorAddNoAllocs: adding an instance of a known pattern to an
// Aggregator with room allocates nothing, from a Trace or from a Table.
func TestAggregatorAddNoAllocs(t *testing.T) {
	tr, insts := rpcTrace(40)
	for name, a := range map[string]*Aggregator{
		"trace": NewAggregator(tr, DefaultOptions().Aggregate),
		"table": NewAggregator(trace.NewTable(tr), DefaultOptions().Aggregate),
	} {
		for _, in := range insts {
			if err := a.Add(in); err != nil {
				t.Fatal(err)
			}
		}
		a.Reserve(1000, 4000)
		if n := testing.AllocsPerRun(200, func() { _ = a.Add(insts[3]) }); n != 0 {
			t.Errorf("%s: Add allocates %v times per instance", name, n)
		}
	}
}

// BenchmarkAggregator adds the instances of a 4,000-request trace and
// summarises their patterns (from a Table, as the nesting engine does).
func BenchmarkAggregator(b *testing.B) {
	tr, insts := rpcTrace(4000)
	tab := trace.NewTable(tr)
	b.SetBytes(int64(len(tr.Messages)) * 48)
	b.ReportAllocs()
	var ps []Pattern
	for b.Loop() {
		a := NewAggregator(tab, DefaultOptions().Aggregate)
		for _, in := range insts {
			_ = a.Add(in)
		}
		ps = a.Patterns(RankExpected)
	}
	if len(ps) == 0 || ps[0].Count < 1000 {
		b.Fatalf("%d patterns", len(ps))
	}
}

// TestAggregatorZeroNetDelay: a message seen whole by one capture point has
// SendTS == RecvTS, a measured network delay of zero; only a trace that says
// it carries one timestamp per message (Meta.SingleClock) has none.
func TestAggregatorZeroNetDelay(t *testing.T) {
	for _, single := range []bool{false, true} {
		tr := &trace.Trace{}
		tr.Meta.SingleClock = single
		add := func(send, recv int64, src, dst string, k trace.Kind) int32 {
			tr.Messages = append(tr.Messages, trace.Message{
				SendTS: trace.Timestamp(send), RecvTS: trace.Timestamp(recv),
				Src: tr.Intern(src), Dst: tr.Intern(dst), SrcNode: tr.Intern(src[:8]), DstNode: tr.Intern(dst[:8]), Kind: k,
			})
			return int32(len(tr.Messages) - 1)
		}
		call := add(1000, 1000, "10.0.0.1:40000", "10.0.0.2:80", trace.KindCall)
		ret := add(5000, 5000, "10.0.0.2:80", "10.0.0.1:40000", trace.KindReturn)
		a := NewAggregator(tr, AggregateOptions{Naming: DefaultNaming()})
		if err := a.Add(Instance{Prob: 1, Nodes: []InstanceNode{{Msg: call, Parent: -1}, {Msg: ret, Parent: 0}}}); err != nil {
			t.Fatal(err)
		}
		p := a.Patterns(RankExpected)[0]
		for _, h := range p.Hops {
			switch {
			case single && h.NetDelay != nil:
				t.Errorf("single clock: hop %s->%s has a network delay %+v", h.From, h.To, h.NetDelay)
			case !single && (h.NetDelay == nil || h.NetDelay.Mean != 0):
				t.Errorf("hop %s->%s: network delay %+v, want a measured 0", h.From, h.To, h.NetDelay)
			}
		}
		if got := p.Hops[1].NodeDelay; got == nil || got.Mean != 4 {
			t.Errorf("single=%v: node delay %+v, want 4 µs", single, got)
		}
	}
}
