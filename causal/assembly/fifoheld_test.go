package assembly

import (
	"math"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// TestFIFOHeld runs the engine on two traces where the searches rank
// slots by FIFO (the multi-tier system, and 64 requests in flight at a
// pooled web tier) and checks every FIFO answer held within a send
// (fifoRanksHeld) against fifoRanks's own, bit for bit.
func TestFIFOHeld(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("a generated trace of 64 requests in flight (not under -short or -race)")
	}
	for _, tc := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"multi-tier", func(t *testing.T) { inferredRun(t, multitierTrace(t, 20*time.Second)) }},
		{"in flight 64", func(t *testing.T) {
			inferGenerated(t, poolConfigOf(t, "../accuracy/testdata/inflight.yaml", 64))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The hook is called from the nodes' goroutines at once.
			var hits, bad atomic.Int64
			checkFIFOHeld = func(held, fresh []float64) {
				hits.Add(1)
				if !slices.EqualFunc(held, fresh, func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }) {
					bad.Add(1)
				}
			}
			defer func() { checkFIFOHeld = nil }()
			tc.run(t)
			if bad.Load() > 0 {
				t.Fatalf("%d of %d answers held differ from fifoRanks's", bad.Load(), hits.Load())
			}
			if hits.Load() == 0 {
				t.Fatal("no answer held: nothing checked")
			}
			t.Logf("%d answers held, checked", hits.Load())
		})
	}
}
