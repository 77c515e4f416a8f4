package assembly

import (
	"context"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

// TestLocalShape runs the engine on two traces (the multi-tier system, and
// 64 requests in flight at a pooled web tier) and checks every local
// search's shape held (lsshape.go) against the shape found anew at that
// moment, and that the results are those of a run that finds every
// shape anew.
func TestLocalShape(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("a generated trace of 64 requests in flight, inferred twice (not under -short or -race)")
	}
	for _, tc := range []struct {
		name  string
		infer func(t *testing.T) any
	}{
		{"multi-tier", func(t *testing.T) any {
			_, res, _ := inferTrace(t, multitierTrace(t, 20*time.Second))
			return res
		}},
		{"in flight 64", func(t *testing.T) any {
			_, res, _ := inferGenerated(t, poolConfigOf(t, "../accuracy/testdata/inflight.yaml", 64))
			return res
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The hook is called from the nodes' goroutines at once.
			var held, bad atomic.Int64
			checkLocalShape = func(r *run, n int32, sh *localShape) {
				held.Add(1)
				if !reflect.DeepEqual(sh, r.newLocalShape(n)) {
					bad.Add(1)
				}
			}
			got := tc.infer(t)
			checkLocalShape = nil
			if bad.Load() > 0 {
				t.Fatalf("%d of %d shapes held differ from the shape found anew", bad.Load(), held.Load())
			}
			if held.Load() == 0 {
				t.Fatal("no shape held: nothing checked")
			}
			noLocalShape = true
			want := tc.infer(t)
			noLocalShape = false
			if !reflect.DeepEqual(got, want) {
				t.Fatal("the results differ from those found with every shape anew")
			}
			t.Logf("%d shapes held, checked", held.Load())
		})
	}
}

// inferTrace runs the engine with its defaults on tr.
func inferTrace(t *testing.T, tr *trace.Trace) (*trace.Trace, *causal.Result, *run) {
	t.Helper()
	e, err := New(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	res, r, err := e.infer(context.Background(), tr)
	if err != nil {
		t.Fatal(err)
	}
	return tr, res, r
}
