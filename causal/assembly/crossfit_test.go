package assembly

import (
	"fmt"
	"math"
	"testing"
)

// TestCrossFitBlocks covers the blocks: a node with too few requests has
// none, and each event is scored by the model of the other parity.
func TestCrossFitBlocks(t *testing.T) {
	cases := []struct {
		requests int
		blocks   int // 0: not cross-fitted
	}{
		{2*crossMinBlocks*crossBlock - 1, 0},
		{2 * crossMinBlocks * crossBlock, 2 * crossMinBlocks},
		{2*crossMinBlocks*crossBlock + 1, 2*crossMinBlocks + 1},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.requests), func(t *testing.T) {
			b := newTB()
			for i := range tc.requests {
				at := float64(i)
				b.rpc(at, at+0.5, "web", fmt.Sprintf("w:%d", i), "app", "a:80", fmt.Sprintf("q%d", i), 100)
				b.rpc(at+0.1, at+0.3, "app", fmt.Sprintf("a:%d", 1000+i), "db", "d:5432", fmt.Sprintf("k%d", i), 40)
			}
			_, r := runOn(t, b, DefaultOptions())
			app := r.calls[r.callOf(0)].callee
			starts := r.blocks(app)
			if got := len(starts); tc.blocks == 0 && starts != nil || tc.blocks > 0 && got+1 != tc.blocks {
				t.Fatalf("%d blocks, want %d", got+1, tc.blocks)
			}
			if starts == nil {
				return
			}
			x := &crossFit{starts: starts, ms: [2]*nodeModel{newNodeModel(1, 0), newNodeModel(1, 0)}}
			ps := r.parentsOf[app]
			for i, p := range ps {
				want := x.ms[1-(i/crossBlock)%2]
				if x.scoring(r.arrOf(p)) != want {
					t.Fatalf("request %d (block %d) scored by the model fitted on its own block", i, i/crossBlock)
				}
			}
		})
	}
}

// TestCrossFitHoldsOut: the model that scores a block's events was
// fitted on the other blocks' requests only, and the evidence's likelihood
// ratios are the full model's. Each request makes one call inside its
// own time (no other request open), so the assignment is exact and every
// request adds two events to the call graph (its call and its reply;
// weighed by how sure the engine was of them, all but 1).
func TestCrossFitHoldsOut(t *testing.T) {
	cases := []int{2 * crossMinBlocks * crossBlock, 5*crossBlock + 17}
	for _, nreq := range cases {
		t.Run(fmt.Sprint(nreq), func(t *testing.T) {
			b := newTB()
			for i := range nreq {
				at := 2 * float64(i)
				b.rpc(at, at+1, "web", fmt.Sprintf("w:%d", i), "app", "a:80", fmt.Sprintf("q%d", i), 100)
				b.rpc(at+0.3, at+0.6, "app", fmt.Sprintf("a:%d", 1000+i), "db", "d:5432", fmt.Sprintf("k%d", i), 40)
			}
			_, r := runOn(t, b, DefaultOptions())
			app := r.calls[r.callOf(0)].callee
			full := r.models[app]
			x := r.crossFitModels(app, nil, full, false)
			if x == nil {
				t.Fatal("not cross-fitted")
			}
			ps := r.parentsOf[app]
			inParity := [2]float64{}
			for i := range ps {
				inParity[(i/crossBlock)%2] += 2
			}
			all := tKey{lvl: 8}
			for i, p := range ps {
				own := (i / crossBlock) % 2
				m := x.scoring(r.arrOf(p))
				if got := m.trans[all].n; math.Abs(got-inParity[1-own]) > 0.5 {
					t.Fatalf("request %d (block parity %d) scored by a model of %v events, want the other parity's %v", i, own, got, inParity[1-own])
				}
				if m.fifo.nl != full.fifo.nl || m.fifo.no != full.fifo.no || m.tok.nl != full.tok.nl {
					t.Fatalf("request %d: the likelihood ratios are not the full model's", i)
				}
			}
			s := &search{m: full, x: x}
			for _, p := range ps[:3*crossBlock] {
				if s.modelAt(r.arrOf(p)) != x.scoring(r.arrOf(p)) {
					t.Fatal("the search scores an event with another model than its block's")
				}
			}
		})
	}
}
