package assembly

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// checkHeld checks that the FIFO evidence the local search holds
// (lsfifo.go) is the evidence under its assignment.
func checkHeld(t *testing.T, ls *local) {
	t.Helper()
	for i, ok := range ls.hold.held {
		if v := ls.fifoOne(i); ok && v != ls.hold.val[i] {
			t.Errorf("node %d, call %d: FIFO evidence %g held, %g now", ls.n, ls.order[i], ls.hold.val[i], v)
		}
	}
}

// TestSettledSkip checks that the local search's skip of settled calls
// (lssettled.go) changes no move: from assignments with calls moved at
// random, every node's sweeps end where sweeps trying every call end,
// and some tries were skipped.
func TestSettledSkip(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T) *run
		fifo bool // some node's moves weigh FIFO evidence
	}{
		{"multi-tier", func(t *testing.T) *run { return inferredRun(t, multitierTrace(t, 10*time.Second)) }, false},
		{"in flight 64", func(t *testing.T) *run {
			if testing.Short() {
				t.Skip("a generated trace of 64 requests in flight")
			}
			_, _, r := inferGenerated(t, poolConfigOf(t, "../accuracy/testdata/inflight.yaml", 64))
			return r
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) { checkSettledSkip(t, tc.run(t), tc.fifo) })
	}
}

func checkSettledSkip(t *testing.T, r *run, fifo bool) {
	rng := rand.New(rand.NewPCG(1, 2))
	skipped, moves, fifoSeen := int64(0), int64(0), false
	for n := range r.parentsOf {
		if r.entry[n] || r.models[n] == nil || len(r.childrenOf[n]) == 0 {
			continue
		}
		kids := r.childrenOf[n]
		for _, c := range kids {
			r.conf[c] = 0.5 // every call doubtful
		}
		for seed := range 3 {
			// move a third of the calls to another candidate
			r.sweep(int32(n), func(c int32, cands []int32) {
				if len(cands) > 1 && r.exact[c] < 0 && rng.IntN(3) == seed%3 {
					r.parent[c] = cands[rng.IntN(len(cands))]
				}
			})
			start := r.parentsOfCalls(kids)
			var got [2][]int32
			for i, off := range []bool{true, false} {
				r.setParentsOfCalls(kids, start)
				ls := newLocal(r, int32(n), r.models[n], r.xfits[n])
				ls.settled.off = off
				fifoSeen = fifoSeen || ls.fifoSpread() > 0
				ls.sweepAll(20)
				got[i] = r.parentsOfCalls(kids)
				checkHeld(t, ls)
				if !off {
					skipped += ls.settled.skipped
					moves += ls.moves
				}
			}
			if !slices.Equal(got[0], got[1]) {
				t.Errorf("node %d, seed %d: the sweeps with skips end elsewhere than those without", n, seed)
			}
		}
	}
	if fifo && !fifoSeen {
		t.Error("no node weighs FIFO evidence")
	}
	if skipped == 0 || moves == 0 {
		t.Errorf("%d tries skipped, %d moves made: the test does not exercise the skip", skipped, moves)
	}
	t.Logf("%d tries skipped, %d moves", skipped, moves)
}
