package convolution

import (
	"testing"

	"github.com/wirepath/wirepath/causal/internal/enginetest"

	"github.com/wirepath/wirepath/internal/fuzzseed"
)

func FuzzConvolution(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	fuzzseed.Files(f, "cmd/wirepath/testdata/traces/*.tsv", "trace/testdata/*.tsv")
	seed := make([]byte, 0, 500)
	for i := 0; i < 100; i++ {
		// n0 -> n1 then, 30 ms later, n1 -> n2
		seed = append(seed, byte(i%7), 100, 0x08, 0, 1, 11, 184, 0x11, 0, 1)
	}
	f.Add(seed)
	f.Add([]byte{0, 1, 0x08, 0x10, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 2000 {
			return // 400 messages are plenty; longer traces only make signals longer
		}
		tr := enginetest.FuzzTrace(data, 10e3) // gaps up to 0.65 s
		opt := DefaultOptions()
		opt.MinCount = 2
		opt.Quantum = 10e6
		// Random traffic between 8 nodes makes every edge correlate with
		// every other: bound the exploration so that runs stay quick.
		opt.MaxDepth = 5
		opt.MaxVertices = 64
		opt.Roots = []string{"n0"}
		res, err := mustNew(opt).Infer(bgCtx, tr)
		if err != nil {
			return // e.g. a span too long for the quantum
		}
		checkConvBalance(t, res)
		enginetest.CheckPatterns(t, res)
		for _, p := range res.Patterns {
			if p.Count != int(p.Expected) || p.MaxProbability != 1 {
				t.Fatalf("pattern %s: count %d expected %v max %v", p.Signature, p.Count, p.Expected, p.MaxProbability)
			}
			for _, h := range p.Hops[1:] {
				sum := 0
				for _, d := range h.Delays {
					sum += d.Count
					if d.DelayUS < 0 {
						t.Fatalf("negative delay %+v", d)
					}
				}
				if h.Start == nil || sum != h.Start.N {
					t.Fatalf("hop %s->%s: delays count %d messages, the hop has %v", h.From, h.To, sum, h.Start)
				}
			}
		}
	})
}
