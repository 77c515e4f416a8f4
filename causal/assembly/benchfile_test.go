package assembly

import (
	"context"
	"os"
	"testing"

	"github.com/wirepath/wirepath/trace"
)

// BenchmarkAssembleFile measures the whole engine on one core on the
// trace named by WIREPATH_BENCH_TRACE (a testbed run's trace.tsv, a
// generated trace); it is skipped when that is unset. It is what the
// search's cost figures of docs/scale.md were profiled on
// (-cpuprofile).
func BenchmarkAssembleFile(b *testing.B) {
	path := os.Getenv("WIREPATH_BENCH_TRACE")
	if path == "" {
		b.Skip("WIREPATH_BENCH_TRACE not set")
	}
	tr, err := trace.ReadFile(path, trace.ReadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	o := DefaultOptions()
	o.Workers = 1
	e, err := New(o)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := e.Infer(context.Background(), tr); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(tr.Messages))*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// scorerModel returns a node model that observed delays in every
// context of scorerContexts (four request kinds, five previous kinds,
// eight positions), its anchors' weights learnt.
func scorerModel() *nodeModel {
	m := newNodeModel(5, 1e9)
	for i := range 4000 {
		cx := ctxKey{pk: int32(i % 4), prev: int32(i%5) - 1, pos: uint8(i % 8), ret: uint8(i % 3)}
		gl := int64(1e3 + (i*7919)%2e6)
		m.observe(cx, int32(i%5), gl, gl+int64(i%13)*1e4, 1, 1)
	}
	m.finishAnchors()
	return m
}

// BenchmarkScorer measures building a node model's scorers, the search's
// per context and next kind (its map emptied at each operation, as a
// change of the call graph empties it; the delays' densities stay
// cached): 4 request kinds × 5 previous × 8 positions × 5 next kinds.
func BenchmarkScorer(b *testing.B) {
	m := scorerModel()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		clear(m.scorers)
		for pk := range int32(4) {
			for prev := range int32(5) {
				for pos := range uint8(8) {
					for next := range int32(5) {
						m.scorer(ctxKey{pk: pk, prev: prev - 1, pos: pos}, next)
					}
				}
			}
		}
	}
}
