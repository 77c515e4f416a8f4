package assembly

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/wirepath/wirepath/causal/gen"
)

// TestAffectedByMoves checks that the calls the local search weighs for a
// move (local.affected with local.movedKinds) include every call whose
// FIFO evidence the move changes: two calls of one kind swapped between
// their requests at random, every call's evidence computed before and
// after. At 1 ms ticks (ranked by readiness) a swap changes the evidence
// of later calls of other kinds, which the moved kind alone missed.
func TestAffectedByMoves(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  time.Duration
	}{
		{"fine timestamps", 0},
		{"1 ms ticks", time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := gen.LoadConfig("node")
			if err != nil {
				t.Fatal(err)
			}
			cfg.Instances, cfg.Compress = 300, 4
			cfg.Resolution = gen.Duration(tc.res)
			_, _, r := inferGenerated(t, cfg)
			if got := r.l.arrLo != nil; got != (tc.res > 0) {
				t.Fatalf("ranked by readiness %v", got)
			}
			if checked := checkAffected(t, r); checked < 50 {
				t.Fatalf("%d swaps checked, want at least 50", checked)
			}
		})
	}
}

// checkAffected swaps calls at random at every node of r and fails t
// where a call whose FIFO evidence changed is not among the affected; it
// returns the number of swaps checked.
func checkAffected(t *testing.T, r *run) int {
	t.Helper()
	rng := rand.New(rand.NewPCG(5, 6))
	checked := 0
	for n := range r.parentsOf {
		if r.entry[n] || r.models[n] == nil || len(r.childrenOf[n]) == 0 {
			continue
		}
		ls := newLocal(r, int32(n), r.models[n], r.xfits[n])
		for range 200 {
			c := ls.order[rng.IntN(len(ls.order))]
			a := r.parent[c]
			if a < 0 {
				continue
			}
			var ds []int32
			for _, q := range ls.candsOf(c) {
				for _, d := range ls.kidsOf(q) {
					if q != a && r.calls[d].kind == r.calls[c].kind && slices.Contains(ls.candsOf(d), a) {
						ds = append(ds, d)
					}
				}
			}
			if len(ds) == 0 {
				continue
			}
			d := ds[rng.IntN(len(ds))]
			q := r.parent[d]
			before := make([]float64, len(ls.order))
			for i := range ls.order {
				before[i] = ls.fifoOne(i)
			}
			lo := min(r.sendOf(c), r.sendOf(d))
			at, ok := ls.affected([]int32{a, q}, []int32{c, d}, ls.movedKinds(kindBit(r.calls[c].kind)), lo)
			if !ok {
				continue
			}
			at = slices.Clone(at)
			swapCalls(ls, c, d)
			for i := range ls.order {
				if v := ls.fifoOne(i); math.Abs(v-before[i]) > 1e-9 && !slices.Contains(at, i) {
					t.Fatalf("node %d: swapping calls %d and %d changed the FIFO evidence of call %d (%.3f → %.3f), not among the affected", n, c, d, ls.order[i], before[i], v)
				}
			}
			swapCalls(ls, c, d)
			checked++
		}
	}
	return checked
}

// swapCalls exchanges the requests of calls c and d in the local
// search's assignment.
func swapCalls(ls *local, c, d int32) {
	r := ls.r
	a, q := r.parent[c], r.parent[d]
	ja, jq := r.parentPos[a], r.parentPos[q]
	ls.kids[ja] = ls.with(new([]int32), without(new([]int32), ls.kids[ja], c), d)
	ls.kids[jq] = ls.with(new([]int32), without(new([]int32), ls.kids[jq], d), c)
	r.parent[c], r.parent[d] = q, a
}
