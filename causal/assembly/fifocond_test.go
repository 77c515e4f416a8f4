package assembly

import (
	"math"
	"testing"
	"time"

	"github.com/wirepath/wirepath/causal/gen"
)

// TestFIFOOrderWeight checks the FIFO evidence's weight learnt from the
// order a node serves in: requests ready earlier left waiting as often as
// independent delays make them weigh it nothing; none left waiting (a
// node serving in order) weigh it fully; with a rival or more per call, or
// nothing observed, it keeps the full weight.
func TestFIFOOrderWeight(t *testing.T) {
	// links' delays: 100 each in bins 10..19
	links := func(f *fifoKind) {
		for b := 10; b < 20; b++ {
			f.links[b] = 100
		}
	}
	// others ready earlier, waited for bin b's delay: the share still
	// waiting is the links' survival there (independence) times share
	independent := func(share float64) func(f *fifoKind) {
		return func(f *fifoKind) {
			for b := 8; b < 22; b++ {
				f.waits[b] = 100
				surv := math.Min(1, math.Max(0, float64(20-b)-0.5)/10)
				if b < 10 {
					surv = 1
				}
				f.waited[b] = 100 * surv * share
			}
		}
	}
	for _, c := range []struct {
		name          string
		fill          func(f *fifoKind)
		calls, rivals float64
		lo, hi        float64
	}{
		{"independent, few rivals", independent(1), 1000, 50, 0, 0.06},
		{"in order, few rivals", independent(0), 1000, 50, 0.95, 1},
		{"half as many waiting, few rivals", independent(0.5), 1000, 50, 0.45, 0.55},
		{"independent, a rival per call", independent(1), 1000, 1000, 1, 1},
		{"independent, half a rival per call", independent(1), 1000, 500, 0.45, 0.55},
		{"nothing observed", func(*fifoKind) {}, 0, 0, 1, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var f fifoOrder
			links(f.kind(1))
			c.fill(f.kind(1))
			f.calls, f.rivals = c.calls, c.rivals
			if c.calls == 0 {
				f = fifoOrder{}
			}
			if w := f.weight(); w < c.lo || w > c.hi {
				t.Errorf("weight %.3f, want in [%g, %g]", w, c.lo, c.hi)
			}
		})
	}
}

// TestFIFOOrderLearnt runs the engine on the Node.js-style application
// (TraceWeaver's comparison) at microsecond timestamps: its services draw
// every delay on its own, so a request ready earlier is still waiting as
// often as the delays say, and the FIFO evidence, which would count the
// delays again, is weighed down at the gateway and at todo; at 1 ms
// timestamps (spread ticks) the weight is the coarse one.
func TestFIFOOrderLearnt(t *testing.T) {
	for _, c := range []struct {
		res  time.Duration
		want func(w float64) bool
	}{
		{time.Microsecond, func(w float64) bool { return w < 0.5 }},
		{time.Millisecond, func(w float64) bool { return w == coarseFIFOWeight }},
	} {
		cfg, err := gen.LoadConfig("node")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Instances, cfg.Resolution = 1000, gen.Duration(c.res)
		out, _, r := inferGenerated(t, cfg)
		for _, name := range []string{"gateway", "todo"} {
			n := r.nodeNamed(t, out.Trace.Intern(name))
			if w := r.models[n].fifoWeight(); !c.want(w) {
				t.Errorf("%v timestamps: %s's FIFO weight %.3f", c.res, name, w)
			}
		}
	}
}
