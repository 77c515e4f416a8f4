package causal

import (
	"math/rand/v2"
	"os"
	"testing"
	"time"
	"unsafe"

	"github.com/wirepath/wirepath/internal/rpcgen"
	"github.com/wirepath/wirepath/trace"
)

// benchTrace generates a multi-tier trace for the benchmarks. The sizes
// are small so that "make test" can smoke-run every benchmark;
// scripts/bench-nestconv.sh runs the paper's sizes.
func benchTrace(b *testing.B, clients int, cfg rpcgen.Config) *trace.Trace {
	b.Helper()
	cfg.Tracelets = rpcgen.MultiTier(0)
	cfg.Clients = clients
	cfg.ThinkMin, cfg.ThinkMax = 100*time.Millisecond, 300*time.Millisecond
	cfg.Net = 100 * time.Microsecond
	cfg.CallIDs = true
	cfg.Seed = 1
	tr, _, err := rpcgen.Generate(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return tr
}

// setMessageBytes makes the benchmark's MB/s the rate at which in-memory
// messages are consumed.
func setMessageBytes(b *testing.B, t *trace.Trace) {
	b.SetBytes(int64(len(t.Messages)) * int64(unsafe.Sizeof(trace.Message{})))
}

func BenchmarkNesting(b *testing.B) {
	tr := benchTrace(b, 6, rpcgen.Config{Messages: 20000})
	benchNesting(b, tr)
}

func benchNesting(b *testing.B, tr *trace.Trace) {
	setMessageBytes(b, tr)
	b.ReportAllocs()
	b.ResetTimer()
	var res *NestingResult
	for i := 0; i < b.N; i++ {
		var err error
		if res, err = NewNesting(DefaultNestingOptions()).Run(bgCtx, tr); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if count(res.Result, "call_pairs") < int64(len(tr.Messages))/3 || len(res.Patterns) == 0 {
		b.Fatalf("implausible result: %+v", res.Accounting)
	}
	b.ReportMetric(float64(len(tr.Messages))*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

func BenchmarkConvolution(b *testing.B) {
	tr := benchTrace(b, 24, rpcgen.Config{Duration: 50 * time.Second})
	benchConvolution(b, tr)
}

func benchConvolution(b *testing.B, tr *trace.Trace) {
	setMessageBytes(b, tr)
	b.ReportAllocs()
	b.ResetTimer()
	var res *Result
	for i := 0; i < b.N; i++ {
		var err error
		if res, err = NewConvolution(DefaultConvolutionOptions()).Infer(bgCtx, tr); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if len(res.Patterns) == 0 || count(res, "spikes_kept") == 0 {
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
	var res *NestingResult
	for b.Loop() {
		if res, err = NewNesting(DefaultNestingOptions()).Run(bgCtx, tab); err != nil {
			b.Fatal(err)
		}
	}
	if count(res.Result, "call_pairs") < int64(tab.Len())/3 || len(res.Patterns) == 0 {
		b.Fatalf("implausible result: %+v", res.Accounting)
	}
	b.ReportMetric(float64(tab.Len())*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

func BenchmarkConvolutionFile(b *testing.B) {
	benchFile(b, "WIREPATH_BENCH_CONV", benchConvolution)
}

func benchFile(b *testing.B, env string, run func(*testing.B, *trace.Trace)) {
	path := os.Getenv(env)
	if path == "" {
		b.Skipf("set %s to a trace file", env)
	}
	tr, err := trace.ReadFile(path, trace.ReadOptions{Strict: true})
	if err != nil {
		b.Fatal(err)
	}
	run(b, tr)
}

func BenchmarkCorrelate(b *testing.B) {
	const n = 1 << 16
	c := newCorrelator(n)
	rng := rand.New(rand.NewPCG(1, 1))
	var q1, q2 []int32
	for i := 0; i < n/8; i++ {
		x := int32(rng.IntN(n / 2))
		q1 = append(q1, x)
		q2 = append(q2, x+13)
	}
	s1 := c.fft.Coefficients(nil, c.signal(q1))
	s2 := c.fft.Coefficients(nil, c.signal(q2))
	b.SetBytes(n * 8)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.correlate(s1, s2)
	}
	b.StopTimer()
	if spikes, _, _ := findSpikes(c.corr, 100, 4, 3, nil); len(spikes) != 1 || spikes[0].lag != 13 {
		b.Fatalf("spikes %+v, want one at the shift of 13", spikes)
	}
}

// TestHotPathsDoNotAllocate guards the per-vertex and per-message loops.
func TestHotPathsDoNotAllocate(t *testing.T) {
	c := newCorrelator(1 << 12)
	q := []int32{1, 5, 9, 100, 2000}
	s1 := c.fft.Coefficients(nil, c.signal(q))
	s2 := c.fft.Coefficients(nil, c.signal(q))
	spikes := make([]spike, 0, 16)
	if n := testing.AllocsPerRun(20, func() {
		c.signal(q)
		c.correlate(s1, s2)
		spikes, _, _ = findSpikes(c.corr, 100, 4, 3, spikes[:0])
	}); n != 0 {
		t.Errorf("signal+correlate+findSpikes allocate %v times per run", n)
	}

	b, _, _ := figure5()
	r, _, err := NewNesting(DefaultNestingOptions()).run(bgCtx, b.t)
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
