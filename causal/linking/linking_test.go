package linking

import (
	"context"
	"errors"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

// linkMS is a millisecond in trace nanoseconds.
const linkMS = int64(time.Millisecond)

// linkTB builds small traces by hand: nodes without endpoints (so none is
// a client) and timestamps in milliseconds.
type linkTB struct{ t *trace.Trace }

func newLinkTB() *linkTB { return &linkTB{t: &trace.Trace{}} }

// msg adds from→to sent at send ms (on from's clock) and received at recv
// ms (on to's clock); a negative time is unknown. It returns the index.
func (b *linkTB) msg(from, to string, send, recv float64) int {
	ts := func(v float64) trace.Timestamp {
		if v < 0 {
			return trace.NoTime
		}
		return trace.Timestamp(math.Round(v * float64(linkMS)))
	}
	b.t.Messages = append(b.t.Messages, trace.Message{
		SendTS: ts(send), RecvTS: ts(recv),
		SrcNode: b.t.Intern(from), DstNode: b.t.Intern(to), Bytes: 1,
	})
	return len(b.t.Messages) - 1
}

// linkNew returns a one-worker linking engine with WAP5's options
// (PureWAP5Options), changed by mod: the tests of this file pin the
// paper's algorithm. linkNewDefault starts from DefaultOptions.
func linkNew(t *testing.T, mod func(o *Options)) *Engine {
	t.Helper()
	return linkNewFrom(t, PureWAP5Options(), mod)
}

func linkNewDefault(t *testing.T, mod func(o *Options)) *Engine {
	t.Helper()
	return linkNewFrom(t, DefaultOptions(), mod)
}

func linkNewFrom(t *testing.T, o Options, mod func(o *Options)) *Engine {
	t.Helper()
	o.Workers = 1
	if mod != nil {
		mod(&o)
	}
	l, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func linkGraph(t *testing.T, l *Engine, tr *trace.Trace) *Graph {
	t.Helper()
	g, err := l.Link(context.Background(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func linkNear(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

// parentP returns the probability of the link parent→child (0 if none).
func parentP(g *Graph, child, parent int) float64 {
	for _, l := range g.Parents(child) {
		if l.Msg == parent {
			return l.P
		}
	}
	return 0
}

// linkFigure5 is WAP5's Figures 5-7: X→B, Y→B and Z→B arrive at B at 1, 2
// and 3 ms; B→C leaves at 4 ms and B→D at 4.2 ms.
func linkFigure5() (tr *trace.Trace, x, y, z, c, d int) {
	b := newLinkTB()
	x = b.msg("X", "B", 0.5, 1)
	y = b.msg("Y", "B", 1.5, 2)
	z = b.msg("Z", "B", 2.5, 3)
	c = b.msg("B", "C", 4, 4.5)
	d = b.msg("B", "D", 4.2, 4.7)
	return b.t, x, y, z, c, d
}

// TestLinkingFigures6And7 reproduces WAP5's Figures 6 and 7: with one B→C
// message the mean smallest delay is 1 ms, so λ = 1/ms and the weights are
// e^-1, e^-2, e^-3 for Z, Y, X and e^-4 for spontaneity, which normalise to
// 0.64, 0.24, 0.09 and 0.03. B→D, sent later, links a little less surely.
func TestLinkingFigures6And7(t *testing.T) {
	tr, x, y, z, c, d := linkFigure5()
	g := linkGraph(t, linkNew(t, nil), tr)
	sum := math.Exp(-1) + math.Exp(-2) + math.Exp(-3) + math.Exp(-4)
	for _, tc := range []struct {
		name        string
		parent      int
		want, paper float64
	}{
		{"Z", z, math.Exp(-1) / sum, 0.64},
		{"Y", y, math.Exp(-2) / sum, 0.24},
		{"X", x, math.Exp(-3) / sum, 0.09},
	} {
		got := parentP(g, c, tc.parent)
		if !linkNear(got, tc.want, 1e-12) || !linkNear(got, tc.paper, 0.005) {
			t.Errorf("P(%s→B caused B→C) = %.6f, want %.6f (paper %.2f)", tc.name, got, tc.want, tc.paper)
		}
	}
	if got := g.Spontaneous(c); !linkNear(got, math.Exp(-4)/sum, 1e-12) || !linkNear(got, 0.03, 0.005) {
		t.Errorf("P(B→C spontaneous) = %.6f, want %.6f (paper 0.03)", got, math.Exp(-4)/sum)
	}
	if g.MostLikelyCause(c) != z {
		t.Errorf("most likely cause of B→C = %d, want Z→B (%d)", g.MostLikelyCause(c), z)
	}
	// B→D: d = 1.2 ms, so Z weighs e^-1, Y e^-(2.2/1.2), X e^-(3.2/1.2).
	sumD := math.Exp(-1) + math.Exp(-2.2/1.2) + math.Exp(-3.2/1.2) + math.Exp(-4)
	if got := parentP(g, d, z); !linkNear(got, math.Exp(-1)/sumD, 1e-12) || got >= parentP(g, c, z) {
		t.Errorf("P(Z→B caused B→D) = %.6f, want %.6f, below B→C's", got, math.Exp(-1)/sumD)
	}
	total := g.Spontaneous(d)
	for _, l := range g.Parents(d) {
		total += l.P
	}
	if !linkNear(total, 1, 1e-12) {
		t.Errorf("B→D's causes sum to %v, want 1", total)
	}
}

// TestLinkingFigure8Inversion checks WAP5's Figure 8: every message's
// possible children carry the probabilities of its possible-parent links.
func TestLinkingFigure8Inversion(t *testing.T) {
	tr, x, y, z, c, d := linkFigure5()
	g := linkGraph(t, linkNew(t, nil), tr)
	for _, p := range []int{x, y, z} {
		kids := g.Children(p)
		if len(kids) != 2 || kids[0].Msg != c || kids[1].Msg != d {
			t.Fatalf("children of %d = %v, want B→C and B→D", p, kids)
		}
		for _, k := range kids {
			if k.P != parentP(g, k.Msg, p) {
				t.Errorf("child link %d→%d has p %v, parent link %v", p, k.Msg, k.P, parentP(g, k.Msg, p))
			}
		}
	}
	if got := g.Children(c); len(got) != 0 {
		t.Errorf("B→C has children %v", got)
	}
}

// linkHandGraph builds a Graph from explicit links for tests of step 3:
// links[i] = {parent, child, p}; spont gives each message's probability of
// being spontaneous. Each message's most likely cause is computed as the
// engine does.
func linkHandGraph(tr *trace.Trace, links [][3]float64, spont []float64) *Graph {
	n := len(tr.Messages)
	g := &Graph{msgs: tr.Messages, mode: make([]uint8, n), spont: slices.Clone(spont), top: make([]int32, n)}
	best := make([]float64, n)
	for i := range g.top {
		g.mode[i] = linkSender
		g.top[i] = -1
		best[i] = spont[i]
	}
	slices.SortStableFunc(links, func(a, b [3]float64) int { return int(a[1] - b[1]) })
	g.kidStart = make([]int32, n+1)
	for _, l := range links {
		g.kidStart[int(l[0])+1]++
		if c := int(l[1]); l[2] > best[c] {
			best[c], g.top[c] = l[2], int32(l[0])
		}
	}
	for i := 0; i < n; i++ {
		g.kidStart[i+1] += g.kidStart[i]
	}
	g.kidMsg = make([]int32, len(links))
	g.kidP = make([]float64, len(links))
	next := slices.Clone(g.kidStart[:n])
	for _, l := range links {
		p := int(l[0])
		g.kidMsg[next[p]], g.kidP[next[p]] = int32(l[1]), l[2]
		next[p]++
	}
	return g
}

// linkFigure4 is the link probability tree of WAP5's Figure 4(a), with one
// more message X→B that is the more likely cause of B→D and B→E, so that
// A→B is not (the paper's condition for those links to be probably false).
func linkFigure4() (*trace.Trace, *Graph) {
	b := newLinkTB()
	b.msg("A", "B", 0, 1) // 0
	b.msg("B", "C", 2, 3) // 1
	b.msg("B", "D", 2, 3) // 2
	b.msg("B", "E", 2, 3) // 3
	b.msg("B", "F", 2, 3) // 4
	b.msg("C", "G", 4, 5) // 5
	b.msg("X", "B", 0, 1) // 6
	links := [][3]float64{
		{0, 1, 0.8}, {0, 2, 0.2}, {0, 3, 0.1}, {0, 4, 0.48}, {1, 5, 0.9},
		{6, 2, 0.75}, {6, 3, 0.8},
	}
	spont := []float64{1, 0.2, 0.05, 0.1, 0.52, 0.1, 1}
	return b.t, linkHandGraph(b.t, links, spont)
}

type linkInst struct {
	nodes []causal.InstanceNode
	p     float64
}

func linkCollect(t *testing.T, l *Engine, g *Graph) []linkInst {
	t.Helper()
	var out []linkInst
	err := l.Paths(context.Background(), g, func(in causal.Instance) error {
		out = append(out, linkInst{slices.Clone(in.Nodes), in.Prob})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLinkingFigure4 reproduces WAP5's Figure 4: from the root A→B, B→C
// (0.8) and C→G (0.9) are probably true, B→D (0.2) and B→E (0.1) probably
// false and B→F (0.48) is tried both ways, giving the instances
// p1 = 0.8·0.9·(1-0.2)·(1-0.1)·(1-0.48) ≈ 0.270 and p2 = ...·0.48 ≈ 0.249.
func TestLinkingFigure4(t *testing.T) {
	tr, g := linkFigure4()
	l := linkNew(t, nil)
	var fromA []linkInst
	for _, in := range linkCollect(t, l, g) {
		if in.nodes[0].Msg == 0 {
			fromA = append(fromA, in)
		}
	}
	p1 := 0.8 * 0.9 * (1 - 0.2) * (1 - 0.1) * (1 - 0.48)
	p2 := 0.8 * 0.9 * (1 - 0.2) * (1 - 0.1) * 0.48
	want := []linkInst{
		{[]causal.InstanceNode{{Msg: 0, Parent: -1}, {Msg: 1, Parent: 0}, {Msg: 4, Parent: 0}, {Msg: 5, Parent: 1}}, p2}, // try-both: keep first
		{[]causal.InstanceNode{{Msg: 0, Parent: -1}, {Msg: 1, Parent: 0}, {Msg: 5, Parent: 1}}, p1},
	}
	if len(fromA) != len(want) {
		t.Fatalf("%d instances from A→B, want 2: %v", len(fromA), fromA)
	}
	for i := range want {
		if !slices.Equal(fromA[i].nodes, want[i].nodes) || !linkNear(fromA[i].p, want[i].p, 1e-12) {
			t.Errorf("instance %d = %v p %v, want %v p %v", i, fromA[i].nodes, fromA[i].p, want[i].nodes, want[i].p)
		}
	}
	if !linkNear(p1, 0.270, 0.0005) || !linkNear(p2, 0.249, 0.0005) {
		t.Errorf("p1 %v p2 %v, paper 0.270 and 0.249", p1, p2)
	}
	// Aggregated, they are the two patterns of Figure 4(b).
	agg := causal.NewAggregator(tr, causal.DefaultOptions().Aggregate)
	for _, in := range fromA {
		if err := agg.Add(causal.Instance{Nodes: in.nodes, Prob: in.p}); err != nil {
			t.Fatal(err)
		}
	}
	ps := agg.Patterns(causal.RankExpected)
	if len(ps) != 2 || ps[0].Signature != "A->B(B->C(C->G))" || ps[1].Signature != "A->B(B->C(C->G),B->F)" ||
		!linkNear(ps[0].Expected, p1, 1e-12) || !linkNear(ps[1].Expected, p2, 1e-12) {
		for _, p := range ps {
			t.Logf("%s %v", p.Signature, p.Expected)
		}
		t.Errorf("patterns differ from Figure 4(b)")
	}
}

// TestLinkingRoots checks which messages start instances: those with no
// possible parent, those whose spontaneity is not probably false, and
// those for which spontaneity is the most likely explanation.
func TestLinkingRoots(t *testing.T) {
	_, g := linkFigure4()
	ti := g.treeInput(0.3)
	// A→B and X→B have no parents; B→F is spontaneous with 0.52 > 0.48.
	if want := []int32{0, 4, 6}; !slices.Equal(ti.roots, want) {
		t.Errorf("roots %v, want %v", ti.roots, want)
	}
	if want := []float64{1, 0.52, 1}; !slices.Equal(ti.rootP, want) {
		t.Errorf("root probabilities %v, want %v", ti.rootP, want)
	}
}

func TestLinkingClassify(t *testing.T) {
	for _, tc := range []struct {
		p    float64
		top  bool
		want int
	}{
		{0.8, false, decideTrue},
		{0.71, false, decideTrue},
		{0.7, false, decideTryBoth},
		{0.48, false, decideTryBoth},
		{0.3, false, decideTryBoth},
		{0.29, false, decideFalse},
		{0.2, false, decideFalse},
		{0.2, true, decideTryBoth}, // the most likely cause is always considered
		{0.9, true, decideTrue},
		{0, false, decideFalse},
	} {
		if got := classify(tc.p, tc.top, 0.3, 0.7); got != tc.want {
			t.Errorf("classify(%v, top %v) = %d, want %d", tc.p, tc.top, got, tc.want)
		}
	}
}

// TestLinkingBudget checks that try-both decisions stop branching when the
// budget is spent: with four ambiguous children of the root, budget k gives
// 2^min(k,4) instances, and over budget a link is kept only if p ≥ 0.5 or
// it is the child's most likely cause.
func TestLinkingBudget(t *testing.T) {
	b := newLinkTB()
	b.msg("A", "B", 0, 1)
	for i := 0; i < 4; i++ {
		b.msg("B", "C", 2, 3)
	}
	// Two children more likely caused by A→B than spontaneous (top), two
	// less (spontaneity is their most likely explanation).
	links := [][3]float64{{0, 1, 0.55}, {0, 2, 0.6}, {0, 3, 0.45}, {0, 4, 0.4}}
	spont := []float64{1, 0.45, 0.4, 0.55, 0.6}
	g := linkHandGraph(b.t, links, spont)
	for k := 0; k <= 5; k++ {
		l := linkNew(t, func(o *Options) { o.TryBothBudget = k })
		var fromA []linkInst
		for _, in := range linkCollect(t, l, g) {
			if in.nodes[0].Msg == 0 {
				fromA = append(fromA, in)
			}
		}
		if want := 1 << min(k, 4); len(fromA) != want {
			t.Errorf("budget %d: %d instances, want %d", k, len(fromA), want)
		}
		total := 0.0
		for _, in := range fromA {
			total += in.p
		}
		if k >= 4 && !linkNear(total, 1, 1e-12) {
			t.Errorf("budget %d: instance probabilities sum to %v, want 1", k, total)
		}
		if k == 0 {
			// Over budget: keep 0.55 and 0.6 (≥ 0.5, and top), drop 0.45 and 0.4.
			want := []causal.InstanceNode{{Msg: 0, Parent: -1}, {Msg: 1, Parent: 0}, {Msg: 2, Parent: 0}}
			if !slices.Equal(fromA[0].nodes, want) || !linkNear(fromA[0].p, 0.55*0.6*0.55*0.6, 1e-12) {
				t.Errorf("budget 0: %v p %v, want %v p %v", fromA[0].nodes, fromA[0].p, want, 0.55*0.6*0.55*0.6)
			}
		}
	}
}

// TestLinkingConditional checks the decision on a message with two
// possible parents in the same instance: A→B causes B→A (call and
// return) and C→B; B→D may come from A→B (0.2) or from C→B (0.6). Once
// the link from A→B is left out (factor 0.8), the link from C→B is
// decided on 0.6/0.8 = 0.75 (probably true), so the instance has
// probability 0.8·0.75 = 0.6 = P(C→B caused B→D), as it must.
func TestLinkingConditional(t *testing.T) {
	b := newLinkTB()
	b.msg("A", "B", 0, 1) // 0
	b.msg("B", "C", 2, 3) // 1
	b.msg("C", "B", 4, 5) // 2
	b.msg("B", "D", 6, 7) // 3
	links := [][3]float64{{0, 1, 1}, {1, 2, 1}, {0, 3, 0.2}, {2, 3, 0.6}}
	spont := []float64{1, 0, 0, 0.2}
	g := linkHandGraph(b.t, links, spont)
	ins := linkCollect(t, linkNew(t, nil), g)
	if len(ins) != 1 {
		t.Fatalf("%d instances, want 1: %v", len(ins), ins)
	}
	want := []causal.InstanceNode{{Msg: 0, Parent: -1}, {Msg: 1, Parent: 0}, {Msg: 2, Parent: 1}, {Msg: 3, Parent: 2}}
	if !slices.Equal(ins[0].nodes, want) || !linkNear(ins[0].p, 0.6, 1e-12) {
		t.Errorf("instance %v p %v, want %v p 0.6", ins[0].nodes, ins[0].p, want)
	}
}

// TestLinkingMaxTree checks that instances stop growing at MaxTreeSize and
// are counted as truncated.
func TestLinkingMaxTree(t *testing.T) {
	b := newLinkTB()
	b.msg("A", "B", 0, 1)
	var links [][3]float64
	spont := []float64{1}
	for i := 1; i <= 6; i++ {
		b.msg("B", "C", 2, 3)
		links = append(links, [3]float64{0, float64(i), 0.9})
		spont = append(spont, 0.1)
	}
	g := linkHandGraph(b.t, links, spont)
	l := linkNew(t, func(o *Options) { o.MaxTreeSize = 4 })
	st, err := l.paths(context.Background(), g.treeInput(0.3), func(in causal.Instance) error {
		if len(in.Nodes) != 4 {
			t.Errorf("instance of %d messages, want 4", len(in.Nodes))
		}
		return nil
	})
	if err != nil || st.instances != 1 || st.truncated != 1 {
		t.Errorf("stats %+v err %v, want one truncated instance", st, err)
	}
}

// TestLinkingDelayEstimate checks step 1 by hand: d(B→C) is the mean of
// the smallest delay before each B→C message, leaving out a B→C message
// with nothing into B within the window; with Iterations it becomes the
// probability-weighted mean delay of the links.
func TestLinkingDelayEstimate(t *testing.T) {
	b := newLinkTB()
	b.msg("A", "B", 0, 0)       // arrives at 0
	b.msg("A", "B", 9, 10)      // arrives at 10
	b.msg("B", "C", 3, 4)       // nearest arrival 3 ms before
	b.msg("B", "C", 12, 13)     // nearest arrival 2 ms before
	b.msg("B", "C", 5000, 5001) // nothing within 2 s: spontaneous
	b.msg("B", "D", 10.5, 10.6) // another pair: 0.5 ms
	g := linkGraph(t, linkNew(t, nil), b.t)
	got := map[string]PairDelay{}
	for _, d := range g.Delays() {
		got[b.t.Str(d.From)+"->"+b.t.Str(d.To)] = d
	}
	if d := got["B->C"]; d.Mean != 2500*time.Microsecond || d.Samples != 2 || d.ReceiverClock {
		t.Errorf("d(B→C) = %+v, want 2.5 ms from 2 samples", d)
	}
	if d := got["B->D"]; d.Mean != 500*time.Microsecond || d.Samples != 1 {
		t.Errorf("d(B→D) = %+v, want 0.5 ms", d)
	}
	if g.Spontaneous(4) != 1 || len(g.Parents(4)) != 0 {
		t.Errorf("the late B→C has parents %v, spontaneous %v", g.Parents(4), g.Spontaneous(4))
	}

	// One iteration, by hand. With d = 2.5 ms: message 2 (at 3 ms) has one
	// parent at 3 ms; message 3 (at 12 ms) has parents at 2 and 12 ms.
	d := 2.5
	z2 := math.Exp(-3/d) + math.Exp(-4)
	p2 := math.Exp(-3/d) / z2
	w3a, w3b := math.Exp(-2/d), math.Exp(-12/d)
	z3 := w3a + w3b + math.Exp(-4)
	p3a, p3b := w3a/z3, w3b/z3
	want := (p2*3 + p3a*2 + p3b*12) / (p2 + p3a + p3b)
	g1 := linkGraph(t, linkNew(t, func(o *Options) { o.Iterations = 1 }), b.t)
	for _, pd := range g1.Delays() {
		if b.t.Str(pd.To) == "C" {
			if gotMS := float64(pd.Mean) / float64(time.Millisecond); !linkNear(gotMS, want, 1e-6) || !linkNear(pd.Samples, p2+p3a+p3b, 1e-12) {
				t.Errorf("d(B→C) after one iteration = %v ms from mass %v, want %v ms from %v", gotMS, pd.Samples, want, p2+p3a+p3b)
			}
		}
	}
}

// TestLinkingUntraced checks WAP5's rule for untraced nodes: B is not
// traced, so A→B has only a send time and B→A only a receive time (both on
// A's clock). B→A may only be caused by A→B (A→B→A), not by A2→B, and its
// delay is measured on A's clock.
func TestLinkingUntraced(t *testing.T) {
	b := newLinkTB()
	b.msg("A", "B", 10, -1)    // 0
	b.msg("A2", "B", 10.5, -1) // 1
	b.msg("B", "A", -1, 13)    // 2: only A→B sent at 10 ms can cause it
	b.msg("A", "B", 20, -1)    // 3
	b.msg("B", "A", -1, 21)    // 4
	g := linkGraph(t, linkNew(t, nil), b.t)
	// d(B→A) on A's clock = mean(13-10, 21-20) = 2 ms.
	var d PairDelay
	for _, pd := range g.Delays() {
		if b.t.Str(pd.From) == "B" {
			d = pd
		}
	}
	if !d.ReceiverClock || d.Mean != 2*time.Millisecond || d.Samples != 2 {
		t.Errorf("d(B→A) = %+v, want 2 ms on the receiver's clock", d)
	}
	w := func(ms float64) float64 { return math.Exp(-ms / 2) }
	if got := g.Parents(2); len(got) != 1 || got[0].Msg != 0 || !linkNear(got[0].P, w(3)/(w(3)+math.Exp(-4)), 1e-12) {
		t.Errorf("parents of the first B→A = %v, want only A→B with %v", got, w(3)/(w(3)+math.Exp(-4)))
	}
	z := w(1) + w(11) + math.Exp(-4)
	if got := g.Parents(4); len(got) != 2 || got[0].Msg != 3 || !linkNear(got[0].P, w(1)/z, 1e-12) || got[1].Msg != 0 || !linkNear(got[1].P, w(11)/z, 1e-12) {
		t.Errorf("parents of the second B→A = %v, want A→B at 20 ms (%v) and at 10 ms (%v)", got, w(1)/z, w(11)/z)
	}
	for _, c := range []int{2, 4} {
		if parentP(g, c, 1) != 0 {
			t.Errorf("B→A %d linked to A2→B", c)
		}
	}
	// Aggregated, the untraced hop has no node delay at B, and no network
	// delay (one end unseen).
	res, err := linkNew(t, nil).Infer(context.Background(), b.t)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Patterns {
		for _, h := range p.Hops {
			if h.From == "B" && (h.NodeDelay != nil || h.NetDelay != nil) {
				t.Errorf("pattern %s: untraced hop B→%s has node delay %v, net delay %v", p.Signature, h.To, h.NodeDelay, h.NetDelay)
			}
		}
	}
}

// TestLinkingClientRoots checks that messages sent by clients start paths
// by default and are linked like any other with ClientRoots off.
func TestLinkingClientRoots(t *testing.T) {
	tr := &trace.Trace{}
	add := func(src, dst string, send, recv int64) {
		sh, _ := trace.SplitEndpoint(src)
		dh, _ := trace.SplitEndpoint(dst)
		tr.Messages = append(tr.Messages, trace.Message{
			SendTS: trace.Timestamp(send * linkMS), RecvTS: trace.Timestamp(recv * linkMS),
			Src: tr.Intern(src), Dst: tr.Intern(dst), SrcNode: tr.Intern(sh), DstNode: tr.Intern(dh),
			Kind: trace.KindCall,
		})
	}
	// A client calls web:80, gets the answer, and calls again 3 ms later.
	add("10.0.0.9:40000", "10.0.0.1:80", 0, 1)
	add("10.0.0.1:80", "10.0.0.9:40000", 2, 3)
	add("10.0.0.9:40000", "10.0.0.1:80", 6, 7)
	tr.Messages[1].Kind = trace.KindReturn
	for _, tc := range []struct {
		clientRoots bool
		wantSpont   float64
	}{{true, 1}, {false, math.Exp(-4) / (math.Exp(-1) + math.Exp(-4))}} {
		l := linkNew(t, func(o *Options) { o.ClientRoots = tc.clientRoots })
		g := linkGraph(t, l, tr)
		if got := g.Spontaneous(2); !linkNear(got, tc.wantSpont, 1e-12) {
			t.Errorf("ClientRoots %v: second call spontaneous with %v, want %v", tc.clientRoots, got, tc.wantSpont)
		}
	}
}

// TestLinkingOptionsValidate: every option out of range is refused with
// a *causal.OptionError that names it by its flag.
func TestLinkingOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mod    func(o *Options)
		option string // "" = valid
	}{
		{"defaults", func(o *Options) {}, ""},
		{"max-delay", func(o *Options) { o.Window = 0 }, "max-delay"},
		{"y", func(o *Options) { o.SpontaneousFactor = 0 }, "spontaneous-factor"},
		{"y NaN", func(o *Options) { o.SpontaneousFactor = math.NaN() }, "spontaneous-factor"},
		{"budget", func(o *Options) { o.TryBothBudget = -1 }, "try-both-budget"},
		{"budget big", func(o *Options) { o.TryBothBudget = 31 }, "try-both-budget"},
		{"low", func(o *Options) { o.TryBothLow = 0.6 }, "try-both-low"},
		{"high", func(o *Options) { o.TryBothHigh = 0.4 }, "try-both-high"},
		{"min link", func(o *Options) { o.MinLinkProbability = 0.5 }, "min-link"},
		{"iterations", func(o *Options) { o.Iterations = -1 }, "iterations"},
		{"tree", func(o *Options) { o.MaxTreeSize = 0 }, "max-tree"},
		{"workers", func(o *Options) { o.Workers = -1 }, "workers"},
		{"delay model", func(o *Options) { o.DelayModel = "gamma" }, "delay-model"},
		{"rank", func(o *Options) { o.Rank = "best" }, "rank"},
		{"rank count", func(o *Options) { o.Rank = causal.RankCount }, ""},
	} {
		o := DefaultOptions()
		tc.mod(&o)
		_, err := New(o)
		var oe *causal.OptionError
		switch {
		case tc.option == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.option != "" && (!errors.As(err, &oe) || oe.Option != tc.option || oe.Engine != Name):
			t.Errorf("%s: err %v (%+v), want an *OptionError for %q", tc.name, err, oe, tc.option)
		}
	}
}

// TestLinkingNoTimestamp checks that a message with no usable timestamp is
// counted and left out, and that an empty trace gives an empty result.
func TestLinkingNoTimestamp(t *testing.T) {
	b := newLinkTB()
	b.msg("A", "B", -1, -1)
	b.msg("A", "B", 1, 2)
	res, err := linkNew(t, nil).Infer(context.Background(), b.t)
	if err != nil {
		t.Fatal(err)
	}
	acc := map[string]int64{}
	for _, c := range res.Accounting {
		acc[c.Name] = c.Value
	}
	if acc["no_timestamp"] != 1 || acc["messages_in_no_instance"] != 1 || acc["messages_in_instances"] != 1 || len(res.Patterns) != 1 {
		t.Errorf("accounting %v, %d patterns", acc, len(res.Patterns))
	}
	res, err = linkNew(t, nil).Infer(context.Background(), &trace.Trace{})
	if err != nil || len(res.Patterns) != 0 {
		t.Errorf("empty trace: %v, %v", res, err)
	}
}

func TestLinkingCancel(t *testing.T) {
	tr, _ := linkRandomTrace(1, 2000)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, w := range []int{1, 2} {
		l := linkNew(t, func(o *Options) { o.Workers = w })
		if _, err := l.Infer(ctx, tr); !errors.Is(err, context.Canceled) {
			t.Errorf("workers %d: err %v, want context.Canceled", w, err)
		}
	}
}

// TestLinkingStopsOnCallbackError checks that an error from the instance
// callback stops Paths and is returned, with one or more workers.
func TestLinkingStopsOnCallbackError(t *testing.T) {
	tr, _ := linkRandomTrace(2, 3000)
	boom := errors.New("boom")
	for _, w := range []int{1, 2} {
		l := linkNew(t, func(o *Options) { o.Workers = w })
		g := linkGraph(t, l, tr)
		n := 0
		err := l.Paths(context.Background(), g, func(causal.Instance) error {
			n++
			if n == 10 {
				return boom
			}
			return nil
		})
		if !errors.Is(err, boom) || n != 10 {
			t.Errorf("workers %d: err %v after %d instances, want boom after 10", w, err, n)
		}
	}
}

// TestAggregatorMaxPatterns checks that MaxPatterns returns exactly the
// first patterns of the full ranking, for every metric, including ties
// broken by signature.
func TestAggregatorMaxPatterns(t *testing.T) {
	tr, _ := linkRandomTrace(5, 3000)
	l := linkNew(t, nil)
	g := linkGraph(t, l, tr)
	for _, metric := range causal.RankMetrics {
		full := causal.NewAggregator(tr, causal.AggregateOptions{Naming: causal.DefaultNaming()})
		cut := causal.NewAggregator(tr, causal.AggregateOptions{Naming: causal.DefaultNaming(), MaxPatterns: 7})
		err := l.Paths(context.Background(), g, func(in causal.Instance) error {
			if err := full.Add(in); err != nil {
				return err
			}
			return cut.Add(in)
		})
		if err != nil {
			t.Fatal(err)
		}
		all, top := full.Patterns(metric), cut.Patterns(metric)
		if len(all) < 20 || len(top) != 7 {
			t.Fatalf("%s: %d patterns, %d kept", metric, len(all), len(top))
		}
		if !reflect.DeepEqual(all[:7], top) {
			t.Errorf("%s: the kept patterns are not the first of the full ranking", metric)
		}
		ranked := slices.Clone(all)
		causal.RankPatterns(ranked, metric)
		if !reflect.DeepEqual(ranked, all) {
			t.Errorf("%s: RankPatterns reorders what Patterns ranked", metric)
		}
	}
}
