package nesting

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/internal/genfix"
	"github.com/wirepath/wirepath/trace"
)

// TestNestingTableMatchesTrace: the engine gives the same result, byte for
// byte in JSON (patterns, distributions with histograms, instances, call
// paths, accounting), on a Trace and on a Table of the same messages.
func TestNestingTableMatchesTrace(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	var traces []*trace.Trace
	for i := 0; i < 60; i++ {
		traces = append(traces, randomRPCTrace(rng))
	}
	tr, _, err := genfix.Generate(genfix.RPC{Clients: 6, Messages: 6000, Seed: 3}.Config())
	if err != nil {
		t.Fatal(err)
	}
	// Clock offsets, so that corrected times differ from the raw ones.
	tr.Meta.Offsets = []trace.Offset{{Node: "WS1", Known: true, OffsetNS: 3e5}, {Node: "DB", Known: true, OffsetNS: -2e5}}
	traces = append(traces, tr)
	for i, tr := range traces {
		opt := DefaultOptions()
		opt.Aggregate.Histograms = true
		opt.Aggregate.KeepInstances = true
		opt.Aggregate.MaxKept = 3
		opt.Workers = 1 + i%2
		want, err := mustNew(opt).Run(bgCtx, tr)
		if err != nil {
			t.Fatal(err)
		}
		got, err := mustNew(opt).Run(bgCtx, trace.NewTable(tr))
		if err != nil {
			t.Fatal(err)
		}
		wj, _ := json.Marshal(want)
		gj, _ := json.Marshal(got)
		if !bytes.Equal(wj, gj) {
			t.Fatalf("trace %d (%d messages): the Table's result differs:\n got %.600s\nwant %.600s", i, len(tr.Messages), gj, wj)
		}
		if i == len(traces)-1 && len(want.Patterns) < 5 {
			t.Fatalf("multi-tier trace gave %d patterns", len(want.Patterns))
		}
	}
}

// TestTableAggregatorMatches: an Aggregator over a Table summarises
// weighted instances exactly as one over the Trace.
func TestTableAggregatorMatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	tr := randomRPCTrace(rng)
	for len(tr.Messages) < 40 {
		tr = randomRPCTrace(rng)
	}
	opt := causal.DefaultOptions().Aggregate
	opt.Histograms = true
	a, b := causal.NewAggregator(tr, opt), causal.NewAggregator(trace.NewTable(tr), opt)
	for i := 0; i < 500; i++ {
		n := 1 + rng.IntN(4)
		inst := causal.Instance{Prob: []float64{1, 0.5, 0.25, 0}[rng.IntN(4)]}
		for k := 0; k < n; k++ {
			inst.Nodes = append(inst.Nodes, causal.InstanceNode{Msg: int32(rng.IntN(len(tr.Messages))), Parent: int32(k - 1)})
		}
		if err := a.Add(inst); err != nil {
			t.Fatal(err)
		}
		if err := b.Add(inst); err != nil {
			t.Fatal(err)
		}
	}
	wj, _ := json.Marshal(a.Patterns(causal.RankExpected))
	gj, _ := json.Marshal(b.Patterns(causal.RankExpected))
	if !bytes.Equal(wj, gj) {
		t.Fatalf("patterns differ:\n got %.400s\nwant %.400s", gj, wj)
	}
}

// TestOpenCalls checks the table of open calls against a map under random
// insertions and removals, with keys that collide in the low bits.
func TestOpenCalls(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	var o openCalls
	want := map[uint64]int32{}
	for i := 0; i < 200000; i++ {
		k := uint64(rng.IntN(300)) << 32 * uint64(1+rng.IntN(2))
		_, present := want[k]
		switch {
		case rng.IntN(2) == 0:
			s := o.get(k)
			if present != (s.head >= 0) {
				t.Fatalf("op %d: get(%x) found %v, map %v", i, k, s.head >= 0, present)
			}
			s.head, s.tail = int32(i), int32(i)
			want[k] = int32(i)
		case present:
			if s := o.find(k); s == nil || s.head != want[k] {
				t.Fatalf("op %d: find(%x) = %v, want %d", i, k, s, want[k])
			}
			o.remove(k)
			delete(want, k)
		default:
			if s := o.find(k); s != nil {
				t.Fatalf("op %d: found %x, removed", i, k)
			}
		}
		if o.n != len(want) {
			t.Fatalf("op %d: %d keys, map %d", i, o.n, len(want))
		}
	}
}
