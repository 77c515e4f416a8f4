package nesting

import (
	"os"
	"testing"
	"unsafe"

	"github.com/wirepath/wirepath/causal/internal/enginetest"
	"github.com/wirepath/wirepath/trace"
)

func BenchmarkNesting(b *testing.B) {
	tr := enginetest.MultiTier(b, 6, 20000, 0)
	benchNesting(b, tr)
}

func benchNesting(b *testing.B, tr *trace.Trace) {
	enginetest.SetMessageBytes(b, tr)
	b.ReportAllocs()
	b.ResetTimer()
	var res *Result
	for i := 0; i < b.N; i++ {
		var err error
		if res, err = mustNew(DefaultOptions()).Run(bgCtx, tr); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if enginetest.Count(res.Result, "call_pairs") < int64(len(tr.Messages))/3 || len(res.Patterns) == 0 {
		b.Fatalf("implausible result: %+v", res.Accounting)
	}
	b.ReportMetric(float64(len(tr.Messages))*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkNestingFile and BenchmarkConvolutionFile run the engines alone
// (the trace already in memory) on the files scripts/bench-nestconv.sh
// generates; they are skipped unless WIREPATH_BENCH_NEST and
// WIREPATH_BENCH_CONV name them.
func BenchmarkNestingFile(b *testing.B) {
	path := os.Getenv("WIREPATH_BENCH_NEST")
	if path == "" {
		b.Skip("set WIREPATH_BENCH_NEST to a trace file")
	}
	tab, err := trace.ReadFileTable(path, trace.ReadOptions{Strict: true})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(tab.Len()) * int64(unsafe.Sizeof(trace.Message{})))
	b.ReportAllocs()
	var res *Result
	for b.Loop() {
		if res, err = mustNew(DefaultOptions()).Run(bgCtx, tab); err != nil {
			b.Fatal(err)
		}
	}
	if enginetest.Count(res.Result, "call_pairs") < int64(tab.Len())/3 || len(res.Patterns) == 0 {
		b.Fatalf("implausible result: %+v", res.Accounting)
	}
	b.ReportMetric(float64(tab.Len())*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// TestHotPathsDoNotAllocate guards the per-message loop of the
// conversion of call paths into trees of messages.
func TestHotPathsDoNotAllocate(t *testing.T) {
	b, _, _ := figure5()
	r, _, err := mustNew(DefaultOptions()).run(bgCtx, b.t)
	if err != nil {
		t.Fatal(err)
	}
	// rebuild the children lists the way findCallPaths does
	kidOff := make([]int32, len(r.pairs)+1)
	var kids []int32
	var roots []int32
	for p := range r.pairs {
		kidOff[p] = int32(len(kids))
		for c, par := range r.parent {
			if par == int32(p) {
				kids = append(kids, int32(c))
			}
		}
		if r.parent[p] < 0 {
			roots = append(roots, int32(p))
		}
	}
	kidOff[len(r.pairs)] = int32(len(kids))
	ib := nestInstances{r: r, kidOff: kidOff, kids: kids}
	ib.build(roots[0]) // grow the scratch once
	if n := testing.AllocsPerRun(20, func() { ib.build(roots[0]) }); n != 0 {
		t.Errorf("building a tree of messages allocates %v times per call path", n)
	}
}
