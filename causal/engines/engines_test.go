package engines_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/assembly"
	"github.com/wirepath/wirepath/causal/convolution"
	"github.com/wirepath/wirepath/causal/engines"
	"github.com/wirepath/wirepath/causal/gen"
	"github.com/wirepath/wirepath/causal/linking"
	"github.com/wirepath/wirepath/causal/nesting"
	"github.com/wirepath/wirepath/trace"
)

// generated returns a short generated trace of a shipped configuration.
func generated(t *testing.T, name string, d time.Duration) *trace.Trace {
	t.Helper()
	cfg, err := gen.LoadConfig(name)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Duration = gen.Duration(d)
	out, err := gen.Generate(cfg, gen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return out.Trace
}

func TestChoose(t *testing.T) {
	rpc := generated(t, "multitier", 10*time.Second)
	relay := generated(t, "relay", 10*time.Second)
	// Calls without returns (one-way messages on connections of their
	// own, as flows labels them) are not RPC traffic either.
	calls := &trace.Trace{}
	for i := range 10 {
		calls.Messages = append(calls.Messages, trace.Message{SendTS: trace.Timestamp(i), RecvTS: trace.Timestamp(i + 1), Kind: trace.KindCall})
	}
	tests := []struct {
		name  string
		t     *trace.Trace
		share float64
		want  string
	}{
		{"multitier (RPC)", rpc, 1, assembly.Name},
		{"relay (no kinds)", relay, 0, linking.Name},
		{"calls only", calls, 0, linking.Name},
		{"empty", &trace.Trace{}, 0, linking.Name},
	}
	for _, tc := range tests {
		if got := engines.RPCShare(tc.t); got != tc.share {
			t.Errorf("%s: RPCShare %v, want %v", tc.name, got, tc.share)
		}
		got, why := engines.Choose(tc.t)
		if got != tc.want || why == "" {
			t.Errorf("%s: Choose = %q (%q), want %q", tc.name, got, why, tc.want)
		}
	}
}

func TestResolve(t *testing.T) {
	rpc := generated(t, "multitier", 5*time.Second)
	tests := []struct {
		sel     string
		want    []string
		reason  bool
		wantErr bool
	}{
		{"all", []string{"linking", "nesting", "convolution", "assembly"}, false, false},
		{"auto", []string{"assembly"}, true, false},
		{"", []string{"assembly"}, true, false},
		{"linking", []string{"linking"}, false, false},
		{"convolution", []string{"convolution"}, false, false},
		{"assembly", []string{"assembly"}, false, false},
		{"link", nil, false, true},
	}
	for _, tc := range tests {
		got, why, err := engines.Resolve(tc.sel, rpc)
		if (err != nil) != tc.wantErr || !slices.Equal(got, tc.want) || (why != "") != tc.reason {
			t.Errorf("Resolve(%q) = %v, %q, %v; want %v", tc.sel, got, why, err, tc.want)
		}
	}
}

func TestOptionsNew(t *testing.T) {
	o := engines.DefaultOptions()
	c := causal.DefaultOptions()
	c.Rank = causal.RankCount
	o.SetCommon(c)
	if o.Linking.Rank != causal.RankCount || o.Nesting.Rank != causal.RankCount || o.Convolution.Rank != causal.RankCount || o.Assembly.Rank != causal.RankCount {
		t.Errorf("SetCommon did not reach every engine: %+v", o)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, name := range engines.Names {
		e, err := o.New(name)
		if err != nil {
			t.Fatalf("New(%q): %v", name, err)
		}
		if e.Name() != name {
			t.Errorf("New(%q) built %q", name, e.Name())
		}
	}
	if _, err := o.New("tracing"); !errors.Is(err, engines.ErrUnknownEngine) {
		t.Errorf("New of an unknown engine: %v", err)
	}
	o.SetWorkers(3)
	if o.Linking.Workers != 3 || o.Nesting.Workers != 3 || o.Convolution.Workers != 3 || o.Assembly.Workers != 3 {
		t.Errorf("SetWorkers did not reach every engine: %+v", o)
	}
	// Each engine's own validation applies.
	bad := engines.DefaultOptions()
	bad.Nesting.Bins = 0
	var oe *causal.OptionError
	if _, err := bad.New(nesting.Name); !errors.As(err, &oe) {
		t.Errorf("New with bad nesting options: %v, want an *OptionError", err)
	}
	if err := bad.Validate(); err == nil {
		t.Error("Validate accepted bad nesting options")
	}
	bad = engines.DefaultOptions()
	bad.Convolution.Quantum = 0
	if _, err := bad.New(convolution.Name); err == nil {
		t.Error("New accepted a zero quantum")
	}
	bad = engines.DefaultOptions()
	bad.Linking.Window = -1
	if _, err := bad.New(linking.Name); err == nil {
		t.Error("New accepted a negative linking window")
	}
	bad = engines.DefaultOptions()
	bad.Assembly.Beam = 0
	if _, err := bad.New(assembly.Name); !errors.As(err, &oe) || oe.Option != "beam" {
		t.Errorf("New with a zero beam: %v, want an *OptionError for beam", err)
	}
}

// TestInferAll runs every engine on one trace: the results come in the
// order of the engines, each the same as running the engine alone.
func TestInferAll(t *testing.T) {
	tr := generated(t, "multitier", 20*time.Second)
	o := engines.DefaultOptions()
	var engs []causal.Engine
	for _, name := range engines.Names {
		e, err := o.New(name)
		if err != nil {
			t.Fatal(err)
		}
		engs = append(engs, e)
	}
	var started []int
	res, err := causal.InferAll(context.Background(), tr, engs, func(i int, e causal.Engine) {
		started = append(started, i)
		if e != engs[i] {
			t.Errorf("start(%d) was given another engine", i)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(started, []int{0, 1, 2, 3}) || len(res) != 4 {
		t.Fatalf("started %v, %d results", started, len(res))
	}
	for i, r := range res {
		if r.Engine != engines.Names[i] || len(r.Patterns) == 0 {
			t.Errorf("result %d: engine %q, %d patterns", i, r.Engine, len(r.Patterns))
		}
		alone, err := engs[i].Infer(context.Background(), tr)
		if err != nil {
			t.Fatal(err)
		}
		if len(alone.Patterns) != len(r.Patterns) || alone.Patterns[0].Signature != r.Patterns[0].Signature {
			t.Errorf("%s: %d patterns in InferAll, %d alone", r.Engine, len(r.Patterns), len(alone.Patterns))
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := causal.InferAll(ctx, tr, engs, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled InferAll: %v", err)
	}
}

// TestTraceAndTableAgree: every engine gives the same result on a Trace and
// on a Table of the same messages (both are trace.Messages).
func TestTraceAndTableAgree(t *testing.T) {
	tr := generated(t, "multitier", 10*time.Second)
	tab := trace.NewTable(tr)
	o := engines.DefaultOptions()
	o.SetWorkers(2)
	for _, name := range engines.Names {
		e, err := o.New(name)
		if err != nil {
			t.Fatal(err)
		}
		a, err := e.Infer(context.Background(), tr)
		if err != nil {
			t.Fatal(err)
		}
		b, err := e.Infer(context.Background(), tab)
		if err != nil {
			t.Fatal(err)
		}
		aj, _ := json.Marshal(a)
		bj, _ := json.Marshal(b)
		if len(a.Patterns) == 0 || !bytes.Equal(aj, bj) {
			t.Errorf("%s: %d patterns from the Trace; the Table's result differs: %v", name, len(a.Patterns), !bytes.Equal(aj, bj))
		}
	}
}
