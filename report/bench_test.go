package report

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/wirepath/wirepath/causal"
)

// benchResult is the shop result with its patterns repeated to n patterns
// (renamed so that they stay distinct), plus one long chain of chainHops
// hops, the shape of an iterative DHT lookup.
func benchResult(n, chainHops int) *causal.Result {
	base, _ := shopResult()
	res := *base
	res.Patterns = nil
	for i := 0; len(res.Patterns) < n; i++ {
		p := base.Patterns[i%len(base.Patterns)]
		p.Rank = len(res.Patterns) + 1
		p.Signature = fmt.Sprintf("%s#%d", p.Signature, i)
		p.Instances = nil
		res.Patterns = append(res.Patterns, p)
	}
	if chainHops > 0 {
		c := causal.Pattern{Rank: n + 1, Signature: "chain", Count: 10, Expected: 5, MaxProbability: 0.5}
		for i := 0; i < chainHops; i++ {
			h := causal.Hop{ID: i, From: fmt.Sprintf("n%d", i), To: fmt.Sprintf("n%d", i+1), Kind: "-",
				Start: &causal.Dist{N: 1, Weight: 1, Mean: float64(i) * 100}, NetDelay: &causal.Dist{N: 1, Weight: 1, Mean: 40}}
			if i > 0 {
				par := i - 1
				h.Parent = &par
				h.NodeDelay = &causal.Dist{N: 1, Weight: 1, Mean: 60}
			}
			c.Hops = append(c.Hops, h)
		}
		res.Patterns = append(res.Patterns, c)
	}
	return &res
}

func benchWrite(b *testing.B, format string, res *causal.Result, opt Options) {
	var buf bytes.Buffer
	if err := Write(&buf, format, res, opt); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := Write(io.Discard, format, res, opt); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWrite renders 100 patterns and a 2000-hop chain in every format
// (HTML draws the first 50 in detail). b.SetBytes is the output size.
func BenchmarkWrite(b *testing.B) {
	res := benchResult(100, 2000)
	for _, f := range Formats {
		b.Run(f, func(b *testing.B) { benchWrite(b, f, res, Options{Top: 50}) })
	}
}
