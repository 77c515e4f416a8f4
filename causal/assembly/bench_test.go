package assembly

import (
	"context"
	"testing"
	"time"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/gen"
	"github.com/wirepath/wirepath/trace"
)

// multitierTrace generates the multi-tier system of Project 5
// (causal/gen's multitier configuration) for the given duration.
func multitierTrace(tb testing.TB, d time.Duration) *trace.Trace {
	return configTrace(tb, "multitier", d)
}

// configTrace returns the trace of causal/gen's configuration config
// generated for the given duration.
func configTrace(tb testing.TB, config string, d time.Duration) *trace.Trace {
	tb.Helper()
	cfg, err := gen.LoadConfig(config)
	if err != nil {
		tb.Fatal(err)
	}
	cfg.Duration = gen.Duration(d)
	out, err := gen.Generate(cfg, gen.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return out.Trace
}

// BenchmarkAssemble measures the whole engine (the exact pass, the
// passes of search, local search and fitting, the requests and their
// patterns) on Project 5's multi-tier system.
func BenchmarkAssemble(b *testing.B) {
	tr := multitierTrace(b, 300*time.Second)
	e, err := New(DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var res int
	for range b.N {
		r, err := e.Infer(context.Background(), tr)
		if err != nil {
			b.Fatal(err)
		}
		res = len(r.Requests)
	}
	b.ReportMetric(float64(len(tr.Messages))*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	if res == 0 {
		b.Fatal("no requests")
	}
}

// BenchmarkExactPass measures what comes before any search: reading the
// messages, pairing them into calls, kinds, and every node's candidates
// and exact links.
func BenchmarkExactPass(b *testing.B) {
	tr := multitierTrace(b, 300*time.Second)
	o := DefaultOptions()
	nm := causal.NewNamer(tr, o.Aggregate.Naming)
	b.ReportAllocs()
	b.ResetTimer()
	calls := 0
	for range b.N {
		r := newRun(o, tr, nm)
		for n := range r.parentsOf {
			if len(r.parentsOf[n]) > 0 && len(r.childrenOf[n]) > 0 {
				r.exactLinks(int32(n))
			}
		}
		calls = len(r.calls)
	}
	b.ReportMetric(float64(len(tr.Messages))*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	if calls == 0 {
		b.Fatal("no calls")
	}
}

// BenchmarkJointPass measures the joint pass alone, on one core: every
// node's exact links, searches, local search, chain matching and fitting
// (run.solve), without reading the messages before or building the
// requests after. Its msgs/s is issue 11's figure for the joint pass.
func BenchmarkJointPass(b *testing.B) {
	tr := multitierTrace(b, 300*time.Second)
	o := DefaultOptions()
	o.Workers = 1
	nm := causal.NewNamer(tr, o.Aggregate.Naming)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		r := newRun(o, tr, nm)
		b.StartTimer()
		if err := r.solve(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(tr.Messages))*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}
