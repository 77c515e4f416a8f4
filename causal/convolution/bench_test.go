package convolution

import (
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/internal/enginetest"
	"github.com/wirepath/wirepath/trace"
)

func BenchmarkConvolution(b *testing.B) {
	tr := enginetest.MultiTier(b, 24, 0, 50*time.Second)
	benchConvolution(b, tr)
}

func benchConvolution(b *testing.B, tr *trace.Trace) {
	enginetest.SetMessageBytes(b, tr)
	b.ReportAllocs()
	b.ResetTimer()
	var res *causal.Result
	for i := 0; i < b.N; i++ {
		var err error
		if res, err = mustNew(DefaultOptions()).Infer(bgCtx, tr); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if len(res.Patterns) == 0 || enginetest.Count(res, "spikes_kept") == 0 {
		b.Fatalf("implausible result: %+v", res.Accounting)
	}
	b.ReportMetric(float64(len(tr.Messages))*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
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

// TestHotPathsDoNotAllocate guards the per-vertex loop.
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
}
