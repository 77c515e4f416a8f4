package assembly

import (
	"testing"
)

// TestFIFOOnceStep checks the FIFO ratio each pass's search is given: at
// a node that learns it once, none for the blind passes (unless the next
// pass is the last), then the ratio fitted after the last blind pass,
// whatever later fits say; elsewhere the ratio fitted every pass.
func TestFIFOOnceStep(t *testing.T) {
	table := func(rank0 float64) lrTable {
		l := newFallingLR(fifoBins)
		l.addLink(0, rank0)
		l.addLink(1, 1)
		l.addOther(0, 1)
		l.addOther(1, rank0)
		return l
	}
	lr0 := func(rank0 float64) float64 {
		l := table(rank0)
		return l.logLR(0)
	}
	for _, tc := range []struct {
		name     string
		on       bool
		lastFrom int       // the first pass whose next pass is the last
		want     []float64 // the rank-0 log ratio given to passes 1, 2, ...
	}{
		{"learnt every pass", false, 9, []float64{lr0(2), lr0(3), lr0(4)}},
		{"learnt once", true, 9, []float64{0, lr0(3), lr0(3)}},
		{"a single pass after the first", true, 0, []float64{lr0(2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fifoOnce{on: tc.on}
			for pass, want := range tc.want {
				m := &nodeModel{fifo: table(float64(pass + 2))}
				f.step(m, pass, pass >= tc.lastFrom)
				if got := m.fifo.logLR(0); got != want {
					t.Errorf("pass %d: rank-0 log ratio %.3f, want %.3f", pass+1, got, want)
				}
			}
		})
	}
}

// TestFIFOOnceFanOut checks, on the generated fan-out at 16 requests in
// flight, that a shard's FIFO ratio does not confirm itself: learnt
// every pass it rose to e^4.3 for the oldest request without a cache
// read (the truth's e^1.1), and the shards' reads went to it.
func TestFIFOOnceFanOut(t *testing.T) {
	skipLongAccuracy(t)
	cfg := poolConfigOf(t, "../accuracy/testdata/unseen/fanout.yaml", 16)
	out, _, r := inferGenerated(t, cfg)
	n := r.nodeNamed(t, out.Trace.Intern("s1"))
	if !r.newFIFOOnce(n, queueTry).on {
		t.Fatal("the shard does not learn its FIFO ratio once")
	}
	got := r.models[n].fifo.logLR(0)
	t.Logf("shard s1: rank-0 log ratio %.2f", got)
	if got > 2 {
		t.Errorf("shard s1's rank-0 log FIFO ratio %.2f, want at most 2 (the truth's 1.1)", got)
	}
	// the front end makes one call a request, the aggregator calls in
	// parallel: both learn their ratio every pass
	for _, name := range []string{"front", "agg"} {
		if m := r.nodeNamed(t, out.Trace.Intern(name)); r.newFIFOOnce(m, queueTry).on {
			t.Errorf("%s learns its FIFO ratio once", name)
		}
	}
}
