package gen

import (
	"io"
	"testing"
	"time"

	"github.com/wirepath/wirepath/causal"
)

// BenchmarkGenerate generates 10 s of the multi-tier system (about 1 500
// messages) per iteration; msgs/s is the generator's speed.
func BenchmarkGenerate(b *testing.B) {
	c := mustBuiltin(b, "multitier", 10*time.Second)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		out, err := Generate(c, Options{})
		if err != nil {
			b.Fatal(err)
		}
		n += out.Stats.Messages
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "msgs/s")
	if n == 0 {
		b.Fatal("nothing generated")
	}
}

// BenchmarkTruthPatterns aggregates the true instances of 10 s of traffic.
func BenchmarkTruthPatterns(b *testing.B) {
	out := mustGenerate(b, mustBuiltin(b, "multitier", 10*time.Second))
	b.ReportAllocs()
	for b.Loop() {
		ps, err := out.Truth.Patterns(causal.AggregateOptions{Naming: causal.DefaultNaming()})
		if err != nil || len(ps) == 0 {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteTruth writes the truth of 10 s of traffic; B/s counts the
// bytes written.
func BenchmarkWriteTruth(b *testing.B) {
	out := mustGenerate(b, mustBuiltin(b, "multitier", 10*time.Second))
	var cw countWriter
	if err := WriteTruth(&cw, out.Truth); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(cw.n)
	b.ReportAllocs()
	for b.Loop() {
		if err := WriteTruth(io.Discard, out.Truth); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWritePcaps writes the mirror capture of 2 s of traffic.
func BenchmarkWritePcaps(b *testing.B) {
	c := mustBuiltin(b, "multitier", 2*time.Second)
	out := mustGenerate(b, c)
	dir := b.TempDir()
	b.ReportAllocs()
	pk := 0
	for b.Loop() {
		st, err := WritePcaps(dir, out, c)
		if err != nil {
			b.Fatal(err)
		}
		pk += st[0].Packets
	}
	b.ReportMetric(float64(pk)/b.Elapsed().Seconds(), "pkts/s")
}

type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }
