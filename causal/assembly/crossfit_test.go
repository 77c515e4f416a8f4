package assembly

import (
	"fmt"
	"math/rand/v2"
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

// TestCrossFitSequential: a threaded server with a few requests in
// flight, each making a cache call and then a database call, one after
// the other, each after a processing time of at least 0.3 ms. With hard
// EM a model fitted on the engine's own assignment learns its mistakes
// (delays shorter than any true one) and keeps them; cross-fitted, each
// link is scored by a model not fitted on it.
func TestCrossFitSequential(t *testing.T) {
	right := func() (int, int) {
		b := newTB()
		rng := rand.New(rand.NewPCG(7, 8))
		type req struct{ call, a, d int32 }
		var reqs []req
		at := 0.0
		for i := range 600 {
			sa := at + 0.3 + 3*rng.Float64()
			ba := sa + 0.1 + 0.2*rng.Float64()
			sd := ba + 0.3 + 1.5*rng.Float64()
			bd := sd + 0.2 + 0.5*rng.Float64()
			rep := bd + 0.3 + 1.5*rng.Float64()
			c, _ := b.rpc(at, rep, "web", fmt.Sprintf("w:%d", i), "app", "a:80", fmt.Sprintf("q%d", i), 200)
			a, _ := b.rpc(sa, ba-0.1, "app", fmt.Sprintf("a:%d", 1000+i), "cache", "c:11211", fmt.Sprintf("a%d", i), 20)
			d, _ := b.rpc(sd, bd-0.1, "app", fmt.Sprintf("a:%d", 5000+i), "db", "d:5432", fmt.Sprintf("d%d", i), 60)
			reqs = append(reqs, req{c, a, d})
			at += 0.5 + 2*rng.Float64()
		}
		_, r := runOn(t, b, DefaultOptions())
		n := 0
		for _, q := range reqs {
			if r.parentMsg(q.a) == q.call && r.parentMsg(q.d) == q.call {
				n++
			}
		}
		return n, len(reqs)
	}
	with, all := right()
	crossFitting = false
	without, _ := right()
	crossFitting = true
	t.Logf("requests right: %d of %d cross-fitted, %d not", with, all, without)
	if with < without+all/50 {
		t.Errorf("cross-fitted %d of %d requests right, want at least 2 %% of them more than without (%d)", with, all, without)
	}
}
