package assembly

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/wirepath/wirepath/causal/gen"
)

// fifoOneByFifoOf is the local search's FIFO evidence of the call at
// position i of ls.order computed as it was before localFIFO: run.fifoOf
// with the candidates, their kinds and their ready events as functions.
func fifoOneByFifoOf(ls *local, i int) float64 {
	r := ls.r
	d := ls.order[i]
	k := kindBit(r.calls[d].kind)
	p := r.parent[d]
	if p < 0 || ls.made(p, d, k) {
		return 0
	}
	if r.fanOrder(ls.m) {
		return ls.fanFIFO(p, d, k)
	}
	x := fifoCtx{kinds: func(q int32) uint64 { return ls.kindsBefore(q, d) }, ready: func(q int32) readyEv { return ls.readyFor(q, d) }}
	f, _ := r.fifoOf(ls.m, p, nil, x, func(yield func(int32)) {
		for _, q := range ls.candsOf(d) {
			if !ls.made(q, d, k) {
				yield(q)
			}
		}
	})
	return f
}

// TestLocalFIFOIsFifoOf checks that the local search's FIFO evidence
// (localFIFO) is run.fifoOf's bit for bit, for every call of every node,
// under the engine's assignment and with a third of the calls moved at
// random: at 64 requests in flight with fine timestamps (ranked by
// arrival) and at 1 ms ticks (ranked by readiness, orders left open).
func TestLocalFIFOIsFifoOf(t *testing.T) {
	if testing.Short() {
		t.Skip("generated traces of many requests in flight")
	}
	for _, tc := range []struct {
		name    string
		clients int
		res     time.Duration
		ready   bool // the run ranks by readiness (spread ticks)
	}{
		{"64 in flight", 64, 0, false},
		{"16 in flight, 1 ms ticks", 16, time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := poolConfigOf(t, "../accuracy/testdata/inflight.yaml", tc.clients)
			cfg.Resolution = gen.Duration(tc.res)
			_, _, r := inferGenerated(t, cfg)
			if got := r.l.arrLo != nil; got != tc.ready {
				t.Fatalf("ranked by readiness %v, want %v", got, tc.ready)
			}
			rng := rand.New(rand.NewPCG(3, 4))
			checked, nonzero := 0, 0
			for n := range r.parentsOf {
				if r.entry[n] || r.models[n] == nil || len(r.childrenOf[n]) == 0 {
					continue
				}
				for round := range 2 {
					if round == 1 {
						r.sweep(int32(n), func(c int32, cands []int32) {
							if len(cands) > 1 && rng.IntN(3) == 0 {
								r.parent[c] = cands[rng.IntN(len(cands))]
							}
						})
					}
					ls := newLocal(r, int32(n), r.models[n], r.xfits[n])
					for i := range ls.order {
						got, want := ls.fifoOne(i), fifoOneByFifoOf(ls, i)
						if math.Float64bits(got) != math.Float64bits(want) {
							t.Fatalf("node %d, call %d: localFIFO %v, fifoOf %v", n, ls.order[i], got, want)
						}
						checked++
						if got != 0 {
							nonzero++
						}
					}
				}
			}
			if nonzero == 0 {
				t.Fatalf("no call of %d has FIFO evidence: nothing compared", checked)
			}
			t.Logf("%d calls compared, %d with FIFO evidence", checked, nonzero)
		})
	}
}
