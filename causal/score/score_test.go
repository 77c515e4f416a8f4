package score

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/gen"
	"github.com/wirepath/wirepath/trace"
)

func generate(t testing.TB, name string, dur time.Duration, edit func(*gen.Config)) *gen.Output {
	t.Helper()
	c, err := gen.LoadConfig(name)
	if err != nil {
		t.Fatal(err)
	}
	c.Duration = gen.Duration(dur)
	if edit != nil {
		edit(c)
	}
	out, err := gen.Generate(c, gen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// resultOf aggregates instances over the observed trace into a result, as
// an engine would.
func resultOf(out *gen.Output, insts []causal.Instance) *causal.Result {
	agg := causal.NewAggregator(out.Trace, causal.AggregateOptions{Naming: causal.DefaultNaming(), KeepInstances: true})
	for _, in := range insts {
		if err := agg.Add(in); err != nil {
			panic(err)
		}
	}
	return &causal.Result{
		Version:  causal.ResultVersion,
		Engine:   "oracle",
		Trace:    causal.Summarize(out.Trace),
		Patterns: agg.Patterns(causal.RankExpected),
	}
}

// trueInstances returns the true instances over the observed trace's
// indices, leaving out those with a lost message, and how many it left out.
func trueInstances(out *gen.Output) ([]causal.Instance, int) {
	var res []causal.Instance
	lost := 0
	for _, in := range out.Truth.Instances() {
		ok := true
		nodes := make([]causal.InstanceNode, len(in.Nodes))
		for k, nd := range in.Nodes {
			o := out.Truth.Observed[nd.Msg]
			if o < 0 {
				ok = false
				break
			}
			nodes[k] = causal.InstanceNode{Msg: o, Parent: nd.Parent}
		}
		if !ok {
			lost++
			continue
		}
		res = append(res, causal.Instance{Nodes: nodes, Prob: 1})
	}
	return res, lost
}

func mustScore(t *testing.T, res *causal.Result, tr *gen.Truth, opt Options) *Report {
	t.Helper()
	r, err := Score(res, tr, opt)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestTrueInstancesScorePerfectly(t *testing.T) {
	for _, name := range []string{"multitier", "children-parallel", "penalty-breaker", "relay"} {
		out := generate(t, name, 20*time.Second, nil)
		insts, _ := trueInstances(out)
		r := mustScore(t, resultOf(out, insts), out.Truth, DefaultOptions())
		if p := r.Patterns; p.FalsePositives != 0 || p.FalseNegatives != 0 || p.TruePositives != r.Truth.Patterns {
			t.Errorf("%s: patterns %+v", name, p)
		}
		if i := r.Instances; i == nil || i.FalsePositives != 0 || i.FalseNegatives != 0 || i.Correct != r.Truth.Instances || i.WeightedFalseNegatives != 0 {
			t.Errorf("%s: instances %+v (warnings %v)", name, i, r.Warnings)
		}
		if m := r.Messages; m == nil || m.FalsePositives != 0 || m.FalseNegatives != 0 || m.Correct != r.Truth.Messages {
			t.Errorf("%s: messages %+v", name, m)
		}
		for _, pt := range r.TopN {
			if pt.Omitted != 0 {
				t.Errorf("%s: top %d omits %d", name, pt.N, pt.Omitted)
			}
		}
		if len(r.TopN) != r.Truth.Patterns {
			t.Errorf("%s: top-N curve has %d points for %d patterns", name, len(r.TopN), r.Truth.Patterns)
		}
		if r.Delays.Hops == 0 || r.Delays.NodeMaxErrorUS > 1e-6 || r.Delays.NetRelError > 1e-9 {
			t.Errorf("%s: delays %+v", name, r.Delays)
		}
		if len(r.Warnings) != 0 {
			t.Errorf("%s: warnings %v", name, r.Warnings)
		}
	}
}

// TestRemovedPattern removes the instances of one pattern and checks every
// figure against what that must give.
func TestRemovedPattern(t *testing.T) {
	out := generate(t, "multitier", 30*time.Second, nil)
	insts, _ := trueInstances(out)
	full := resultOf(out, insts)
	const k = 3 // remove the third most frequent pattern (1-based)
	gone := full.Patterns[k-1]
	skip := make(map[int]bool)
	for _, rec := range gone.Instances {
		skip[rec.Messages[0]] = true
	}
	var kept []causal.Instance
	for _, in := range insts {
		if !skip[int(in.Nodes[0].Msg)] {
			kept = append(kept, in)
		}
	}
	r := mustScore(t, resultOf(out, kept), out.Truth, DefaultOptions())
	if p := r.Patterns; p.FalseNegatives != 1 || p.FalsePositives != 0 || p.FalseNegativeList[0].Signature != gone.Signature {
		t.Errorf("patterns %+v", p)
	}
	c := gone.Count
	hops := len(gone.Hops)
	if i := r.Instances; i.FalseNegatives != c || i.FalsePositives != 0 || i.Inferred != r.Truth.Instances-c {
		t.Errorf("instances %+v, want %d false negatives", i, c)
	}
	if m := r.Messages; m.FalseNegatives != c*hops || m.FalsePositives != 0 {
		t.Errorf("messages %+v, want %d false negatives", m, c*hops)
	}
	for _, pt := range r.TopN {
		want := 0
		if pt.N >= k {
			want = 1
		}
		if pt.Omitted != want || pt.Excused != 0 {
			t.Errorf("top %d: omitted %d excused %d, want %d", pt.N, pt.Omitted, pt.Excused, want)
		}
	}
}

// TestAlteredPattern moves one hop of every instance of one pattern to its
// grandparent: a wrong tree over the right messages.
func TestAlteredPattern(t *testing.T) {
	out := generate(t, "multitier", 30*time.Second, nil)
	insts, _ := trueInstances(out)
	full := resultOf(out, insts)
	var target *causal.Pattern
	for i := range full.Patterns {
		if len(full.Patterns[i].Hops) == 8 { // CLIENT->WS->AUTH->WS->AP->DB->AP->WS->CLIENT chain
			target = &full.Patterns[i]
			break
		}
	}
	if target == nil {
		t.Fatal("no 8-hop pattern")
	}
	roots := make(map[int]bool)
	for _, rec := range target.Instances {
		roots[rec.Messages[0]] = true
	}
	// Re-parent the instance's last message (the return to the client)
	// to the root: CLIENT->WS(WS->CLIENT, WS->AUTH(...)) with the return
	// caused by the call, as a careless engine might say.
	altered := 0
	for i, in := range insts {
		if !roots[int(in.Nodes[0].Msg)] {
			continue
		}
		nodes := append([]causal.InstanceNode(nil), in.Nodes...)
		last := len(nodes) - 1
		nodes[last].Parent = 0
		insts[i] = causal.Instance{Nodes: nodes, Prob: 1}
		altered++
	}
	r := mustScore(t, resultOf(out, insts), out.Truth, DefaultOptions())
	c := target.Count
	if altered != c {
		t.Fatalf("altered %d of %d", altered, c)
	}
	if p := r.Patterns; p.FalseNegatives != 1 || p.FalsePositives != 1 || p.FalseNegativeList[0].Signature != target.Signature {
		t.Errorf("patterns %+v", p)
	}
	if i := r.Instances; i.FalseNegatives != c || i.FalsePositives != c {
		t.Errorf("instances %+v, want %d false positives and negatives", i, c)
	}
	if m := r.Messages; m.FalseNegatives != 8*c || m.FalsePositives != 8*c {
		t.Errorf("messages %+v, want %d", m, 8*c)
	}
}

// TestProject5Example is the example of Project 5 section 7.5.1: the path
// A->B->C->D ran twice; the algorithm found it once, plus A->B and C->D.
func TestProject5Example(t *testing.T) {
	tt := &trace.Trace{}
	add := func(ts int64, a, b string) {
		tt.Messages = append(tt.Messages, trace.Message{SendTS: trace.Timestamp(ts), RecvTS: trace.Timestamp(ts + 1), SrcNode: tt.Intern(a), DstNode: tt.Intern(b)})
	}
	for i := range 2 {
		base := int64(i) * 1000
		add(base, "A", "B")
		add(base+10, "B", "C")
		add(base+20, "C", "D")
	}
	truth := &gen.Truth{
		Trace:    tt,
		Instance: []int32{0, 0, 0, 1, 1, 1},
		Parent:   []int32{-1, 0, 1, -1, 3, 4},
		Observed: []int32{0, 1, 2, 3, 4, 5},
		Tracelet: make([]int32, 6),
		Meta:     gen.TruthMeta{Version: 1, Observed: 6, Tracelets: []string{"abcd"}},
	}
	out := &gen.Output{Trace: tt, Truth: truth}
	res := resultOf(out, []causal.Instance{
		{Prob: 1, Nodes: []causal.InstanceNode{{Msg: 0, Parent: -1}, {Msg: 1, Parent: 0}, {Msg: 2, Parent: 1}}},
		{Prob: 1, Nodes: []causal.InstanceNode{{Msg: 3, Parent: -1}}},
		{Prob: 1, Nodes: []causal.InstanceNode{{Msg: 5, Parent: -1}}},
	})
	r := mustScore(t, res, truth, DefaultOptions())
	if p := r.Patterns; p.FalseNegatives != 0 || p.FalsePositives != 2 {
		t.Errorf("patterns: %d false negatives, %d false positives; the paper says 0 and 2", p.FalseNegatives, p.FalsePositives)
	}
	if i := r.Instances; i.FalseNegatives != 1 || i.FalsePositives != 2 {
		t.Errorf("instances: %d false negatives, %d false positives; the paper says 1 and 2", i.FalseNegatives, i.FalsePositives)
	}
	if m := r.Messages; m.FalseNegatives != 3 || m.FalsePositives != 2 || m.Correct != 3 {
		t.Errorf("messages %+v: want 3 of 6 not ascribed to the correct path, 2 placed in wrong ones", m)
	}
}

// TestNearTieTolerance swaps two adjacent patterns by a hair and checks
// that the tolerance excuses exactly that.
func TestNearTieTolerance(t *testing.T) {
	out := generate(t, "multitier", 30*time.Second, nil)
	insts, _ := trueInstances(out)
	res := resultOf(out, insts)
	ps := res.Patterns
	const k = 4
	ps[k-1].Expected = 0.99 * ps[k].Expected
	causal.RankPatterns(ps, causal.RankExpected)
	for _, tol := range []float64{0, 0.02} {
		opt := DefaultOptions()
		opt.Tolerance = tol
		r := mustScore(t, res, out.Truth, opt)
		pt := r.TopN[k-1]
		wantEx := 0
		if tol > 0 {
			wantEx = 1
		}
		if pt.Omitted != 1 || pt.Excused != wantEx {
			t.Errorf("tolerance %v: top %d omitted %d excused %d", tol, k, pt.Omitted, pt.Excused)
		}
		if r.TopN[k].Omitted != 0 {
			t.Errorf("top %d omits %d", k+1, r.TopN[k].Omitted)
		}
	}
}

// TestNetDelayErrorIsTheSkew scores the true instances of a trace whose
// WS2 clock is 30 ms fast: node delays (one clock) stay exact, the network
// delays of WS2's hops are off by exactly the skew.
func TestNetDelayErrorIsTheSkew(t *testing.T) {
	skew := 30 * time.Millisecond
	out := generate(t, "multitier", 20*time.Second, func(c *gen.Config) {
		c.Skew = map[string]gen.Duration{"WS2": gen.Duration(skew)}
	})
	insts, _ := trueInstances(out)
	r := mustScore(t, resultOf(out, insts), out.Truth, DefaultOptions())
	n := 0
	for _, h := range r.Hops {
		if h.NodeErrorUS != nil && math.Abs(*h.NodeErrorUS) > 1e-6 {
			t.Errorf("hop %s->%s node error %v", h.From, h.To, *h.NodeErrorUS)
		}
		want := 0.0
		switch {
		case h.To == "WS2":
			want = float64(skew.Microseconds())
		case h.From == "WS2":
			want = -float64(skew.Microseconds())
		}
		if h.NetErrorUS == nil || math.Abs(*h.NetErrorUS-want) > 1e-3 {
			t.Errorf("hop %s->%s net error %v, want %v", h.From, h.To, h.NetErrorUS, want)
		}
		if want != 0 {
			n++
		}
	}
	if n == 0 {
		t.Error("no WS2 hop")
	}
}

func TestLostMessagesAreFalseNegatives(t *testing.T) {
	out := generate(t, "multitier", 20*time.Second, func(c *gen.Config) { c.Drop = gen.Drop{Random: 0.02} })
	insts, lost := trueInstances(out)
	r := mustScore(t, resultOf(out, insts), out.Truth, DefaultOptions())
	if lost == 0 || r.Instances.FalseNegatives != lost || r.Instances.FalsePositives != 0 {
		t.Errorf("instances %+v, %d instances lost a message", r.Instances, lost)
	}
	if r.Messages.Lost != out.Stats.LostRandom {
		t.Errorf("lost %d, generator lost %d", r.Messages.Lost, out.Stats.LostRandom)
	}
}

func TestWeightedInstances(t *testing.T) {
	out := generate(t, "children-d-cc", 10*time.Second, nil)
	insts, _ := trueInstances(out)
	// Every true instance with probability 0.7, plus a wrong one (the root
	// alone) with 0.3, as a probabilistic engine would say.
	var all []causal.Instance
	for _, in := range insts {
		in.Prob = 0.7
		all = append(all, in, causal.Instance{Prob: 0.3, Nodes: in.Nodes[:1]})
	}
	r := mustScore(t, resultOf(out, all), out.Truth, DefaultOptions())
	n := float64(len(insts))
	i := r.Instances
	if i.FalseNegatives != 0 || i.FalsePositives != len(insts) {
		t.Errorf("unweighted %+v", i)
	}
	if math.Abs(i.WeightedFalseNegatives-0.3*n) > 1e-6 || math.Abs(i.WeightedFalsePositives-0.3*n) > 1e-6 || math.Abs(i.WeightedFalsePositiveRate-0.3) > 1e-9 {
		t.Errorf("weighted %+v", i)
	}
}

func TestNeedsInstances(t *testing.T) {
	out := generate(t, "children-0-2", 5*time.Second, nil)
	insts, _ := trueInstances(out)
	res := resultOf(out, insts)
	res.Patterns[0].Instances = res.Patterns[0].Instances[:1]
	r := mustScore(t, res, out.Truth, DefaultOptions())
	if r.Instances != nil || r.Messages != nil || len(r.Warnings) == 0 || !strings.Contains(r.Warnings[0], "--instances -1") {
		t.Errorf("scored incomplete instances: %+v %v", r.Instances, r.Warnings)
	}
	if r.Patterns.FalseNegatives != 0 {
		t.Error("pattern scoring needs no instances")
	}
	res = resultOf(out, insts)
	res.Trace.Messages++
	r = mustScore(t, res, out.Truth, DefaultOptions())
	if r.Instances != nil || !strings.Contains(strings.Join(r.Warnings, " "), "do not match") {
		t.Errorf("scored a result of another trace: %v", r.Warnings)
	}
}

func TestWriteText(t *testing.T) {
	out := generate(t, "children-d-cc", 10*time.Second, nil)
	insts, _ := trueInstances(out)
	res := resultOf(out, insts[1:])
	r := mustScore(t, res, out.Truth, DefaultOptions())
	var b bytes.Buffer
	if err := WriteText(&b, r, TextOptions{Hops: 1}); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	for _, want := range []string{"engine oracle", "patterns", "instances", "top-N", "node delays", "per-hop delays"} {
		if !strings.Contains(s, want) {
			t.Errorf("text lacks %q:\n%s", want, s)
		}
	}
}

func callSig(t *testing.T, sig string, kinds ...string) string {
	t.Helper()
	n, err := causal.ParseSignature(sig)
	if err != nil {
		t.Fatal(err)
	}
	p := &causal.Pattern{}
	var walk func(n *causal.SigNode, parent *int)
	walk = func(n *causal.SigNode, parent *int) {
		id := len(p.Hops)
		p.Hops = append(p.Hops, causal.Hop{ID: id, Parent: parent, From: n.From, To: n.To, Kind: kinds[id]})
		for _, c := range n.Children {
			walk(c, &id)
		}
	}
	walk(n, nil)
	return patternCallTree(p).signature()
}

func TestCallTreeSignatures(t *testing.T) {
	const C, R = "CALL", "RETURN"
	for _, tc := range []struct {
		sig   string
		kinds []string
		want  string
	}{
		// Serial calls: a chain of messages, two children in the call tree.
		{"A->B(B->C(C->B(B->D(D->B(B->A)))))", []string{C, C, R, C, R, R}, "A->B(B->C,B->D)"},
		// Parallel calls with the return under the last child return.
		{"A->B(B->C(C->B),B->C(C->B(B->A)))", []string{C, C, R, C, R, R}, "A->B(B->C,B->C)"},
		// The same two calls read as serial by a converter.
		{"A->B(B->C(C->B(B->C(C->B(B->A)))))", []string{C, C, R, C, R, R}, "A->B(B->C,B->C)"},
		// Nested: B calls C, which calls D.
		{"A->B(B->C(C->D(D->C(C->B(B->A)))))", []string{C, C, C, R, R, R}, "A->B(B->C(C->D))"},
		// The return hung under the call instead of the child's return.
		{"A->B(B->C(C->B),B->A)", []string{C, C, R, R}, "A->B(B->C)"},
		// A return with no open call is a call of its own that matches nothing.
		{"A->B(B->A(A->C))", []string{C, R, R}, `A->B(A->"RETURN->C")`},
		// A call after the root call returned hangs under the root call.
		{"A->B(B->A(A->C(C->A)))", []string{C, R, C, R}, "A->B(A->C)"},
		// One-way messages are calls without returns.
		{"A->B(B->C(C->A))", []string{"-", "-", "-"}, "A->B(B->C(C->A))"},
	} {
		if got := callSig(t, tc.sig, tc.kinds...); got != tc.want {
			t.Errorf("%s: call tree %s, want %s", tc.sig, got, tc.want)
		}
	}
}

// TestCallView re-parents the second of two parallel calls to the first
// one's return, as a converter that cannot tell parallel from serial calls
// does: wrong as trees of messages, right as call trees.
func TestCallView(t *testing.T) {
	out := generate(t, "children-parallel", 20*time.Second, nil)
	insts, _ := trueInstances(out)
	msgs := out.Trace.Messages
	changed := 0
	for i, in := range insts {
		if len(in.Nodes) != 6 {
			continue
		}
		// Parent-first order: 0 root CALL, 1 and 2 the C calls; their
		// returns follow. Hang call 2 under call 1's return.
		var ret1 int32 = -1
		for k, nd := range in.Nodes {
			if nd.Parent == 1 && msgs[nd.Msg].Kind == trace.KindReturn {
				ret1 = int32(k)
			}
		}
		nodes := append([]causal.InstanceNode(nil), in.Nodes...)
		nodes[2].Parent = ret1
		// Reorder parent-first: move node 2 after ret1.
		order := []int32{0, 1}
		for k := 3; k < len(nodes); k++ {
			order = append(order, int32(k))
			if int32(k) == ret1 {
				order = append(order, 2)
			}
		}
		pos := make(map[int32]int32)
		for k, o := range order {
			pos[o] = int32(k)
		}
		re := make([]causal.InstanceNode, len(nodes))
		for k, o := range order {
			re[k] = causal.InstanceNode{Msg: nodes[o].Msg, Parent: -1}
			if nodes[o].Parent >= 0 {
				re[k].Parent = pos[nodes[o].Parent]
			}
		}
		insts[i] = causal.Instance{Nodes: re, Prob: 1}
		changed++
	}
	res := resultOf(out, insts)
	m := mustScore(t, res, out.Truth, DefaultOptions())
	opt := DefaultOptions()
	opt.View = ViewCalls
	c := mustScore(t, res, out.Truth, opt)
	if changed == 0 || m.Instances.FalseNegatives != changed || m.Patterns.FalsePositives == 0 {
		t.Errorf("message view: %d changed, %+v %+v", changed, m.Instances, m.Patterns)
	}
	if c.Instances.FalseNegatives != 0 || c.Instances.FalsePositives != 0 || c.Patterns.FalsePositives != 0 || c.Patterns.Truth != 2 || c.View != ViewCalls {
		t.Errorf("call view: %+v %+v", c.Instances, c.Patterns)
	}
	for _, pt := range c.TopN {
		if pt.Omitted != 0 {
			t.Errorf("call view: top %d omits %d", pt.N, pt.Omitted)
		}
	}
	// The true instances are perfect in the call view too.
	insts, _ = trueInstances(out)
	if c := mustScore(t, resultOf(out, insts), out.Truth, opt); c.Instances.FalseNegatives != 0 || c.Patterns.FalsePositives != 0 {
		t.Errorf("true instances in the call view: %+v", c.Instances)
	}
}
