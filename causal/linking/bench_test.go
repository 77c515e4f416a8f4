package linking

import (
	"context"
	"testing"
	"time"
	"unsafe"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/internal/genfix"
	"github.com/wirepath/wirepath/trace"
)

// The benchmarks run on a CDN trace of about 20,000 messages (cheap to
// make, so that `make test` can smoke-run them). scripts/bench-link.sh
// measures the whole command on a 4.7-million-message trace.

func linkBenchTrace(b *testing.B) *trace.Trace {
	b.Helper()
	tr, _, err := genfix.Generate(genfix.CDN(540, 10*time.Second, 1))
	if err != nil {
		b.Fatal(err)
	}
	return tr
}

// linkBenchBoth runs f with WAP5's options and with the defaults.
func linkBenchBoth(b *testing.B, f func(*testing.B, Options)) {
	b.Run("WAP5", func(b *testing.B) { f(b, PureWAP5Options()) })
	b.Run("default", func(b *testing.B) { f(b, DefaultOptions()) })
}

func linkBenchReport(b *testing.B, n int) {
	b.SetBytes(int64(n) * int64(unsafe.Sizeof(trace.Message{})))
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkLinkingInfer is the whole engine: roles, links, trees and
// aggregation into patterns.
func BenchmarkLinkingInfer(b *testing.B) { linkBenchBoth(b, benchmarkLinkingInfer) }

func benchmarkLinkingInfer(b *testing.B, opt Options) {
	tr := linkBenchTrace(b)
	l, _ := New(opt)
	b.ReportAllocs()
	b.ResetTimer()
	var res *causal.Result
	for i := 0; i < b.N; i++ {
		var err error
		if res, err = l.Infer(context.Background(), tr); err != nil {
			b.Fatal(err)
		}
	}
	linkBenchReport(b, len(tr.Messages))
	if len(res.Patterns) == 0 {
		b.Fatal("no patterns")
	}
}

// BenchmarkLinkingLink is steps 1 and 2: delay estimates and link
// probabilities.
func BenchmarkLinkingLink(b *testing.B) { linkBenchBoth(b, benchmarkLinkingLink) }

func benchmarkLinkingLink(b *testing.B, opt Options) {
	tr := linkBenchTrace(b)
	l, _ := New(opt)
	roles := trace.ClassifyRoles(tr, trace.DefaultRoleOptions())
	b.ReportAllocs()
	b.ResetTimer()
	var g *Graph
	for i := 0; i < b.N; i++ {
		var err error
		if g, err = l.Link(context.Background(), tr, roles); err != nil {
			b.Fatal(err)
		}
	}
	linkBenchReport(b, len(tr.Messages))
	if g.counts.links == 0 {
		b.Fatal("no links")
	}
}

// BenchmarkLinkingPaths is step 3 without aggregation.
func BenchmarkLinkingPaths(b *testing.B) { linkBenchBoth(b, benchmarkLinkingPaths) }

func benchmarkLinkingPaths(b *testing.B, opt Options) {
	tr := linkBenchTrace(b)
	l, _ := New(opt)
	g, err := l.Link(context.Background(), tr, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for i := 0; i < b.N; i++ {
		if err := l.Paths(context.Background(), g, func(causal.Instance) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
	}
	linkBenchReport(b, len(tr.Messages))
	if n == 0 {
		b.Fatal("no instances")
	}
}

// TestLinkingAllocs guards the hot paths: scoring a message's possible
// parents, building a root's instances, and aggregating an instance of a
// known pattern allocate nothing once their buffers have grown.
func TestLinkingAllocs(t *testing.T) {
	tr, _ := linkRandomTrace(3, 2000)
	l := linkNew(t, nil)
	g := linkGraph(t, l, tr)
	ti := g.treeInput(l.opt.TryBothLow)
	nodes := 0
	b := newTreeBuilder(ti, &l.opt, func(ns []causal.InstanceNode, p float64) { nodes += len(ns) })
	for i := range ti.roots {
		b.build(i)
	}
	if a := testing.AllocsPerRun(10, func() {
		for i := range ti.roots {
			b.build(i)
		}
	}); a != 0 {
		t.Errorf("building every root's instances allocates %v times", a)
	}

	agg := causal.NewAggregator(tr, causal.AggregateOptions{Naming: causal.DefaultNaming()})
	in := causal.Instance{Nodes: []causal.InstanceNode{{Msg: 0, Parent: -1}, {Msg: 1, Parent: 0}, {Msg: 2, Parent: 0}}, Prob: 0.5}
	if err := agg.Add(in); err != nil {
		t.Fatal(err)
	}
	if a := testing.AllocsPerRun(1000, func() { _ = agg.Add(in) }); a > 0.05 {
		t.Errorf("adding an instance of a known pattern allocates %v times", a)
	}
	if nodes == 0 {
		t.Fatal("no instances built")
	}

	// The call-aware builder (RETURNs joining their CALLs, parents chosen
	// when an instance is complete, probabilities per root) too.
	rpc, _ := linkRPCTrace(2, 200, true, 0)
	ld := linkNewDefault(t, nil)
	gd := linkGraph(t, ld, rpc)
	tid := gd.treeInput(ld.opt.TryBothLow)
	bd := newTreeBuilder(tid, &ld.opt, func(ns []causal.InstanceNode, p float64) { nodes += len(ns) })
	for i := range tid.roots {
		bd.build(i)
	}
	if a := testing.AllocsPerRun(10, func() {
		for i := range tid.roots {
			bd.build(i)
		}
	}); a != 0 {
		t.Errorf("building every root's instances with the default options allocates %v times", a)
	}
}
