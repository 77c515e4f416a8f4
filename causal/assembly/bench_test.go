package assembly

import (
	"context"
	"testing"
	"time"

	"github.com/wirepath/wirepath/causal/gen"
	"github.com/wirepath/wirepath/trace"
)

// benchTrace generates the multi-tier system of Project 5 (causal/gen's
// multitier configuration) for the given duration.
func benchTrace(b *testing.B, d time.Duration) *trace.Trace {
	b.Helper()
	cfg, err := gen.LoadConfig("multitier")
	if err != nil {
		b.Fatal(err)
	}
	cfg.Duration = gen.Duration(d)
	out, err := gen.Generate(cfg, gen.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return out.Trace
}

func BenchmarkAssemble(b *testing.B) {
	tr := benchTrace(b, 300*time.Second)
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
