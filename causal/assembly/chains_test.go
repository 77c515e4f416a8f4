package assembly

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// sequentialTrace generates a threaded server's trace: n requests from
// clients to "app", arriving every meanMS on average, each making a call
// to "mc" and then one to "db", one at a time, and then replying. It
// returns the trace and, by the CALL message of each of app's calls, the
// CALL message of its request.
func sequentialTrace(seed uint64, n int, meanMS float64) (*tb, map[int32]int32) {
	rng := rand.New(rand.NewPCG(seed, 1))
	exp := func(mean float64) float64 { return rng.ExpFloat64() * mean }
	b := newTB()
	truth := map[int32]int32{}
	t := 0.0
	for i := range n {
		t += exp(meanMS)
		at := t + 0.1 // the request's arrival at app
		s1 := at + 0.05 + exp(0.1)
		b1 := s1 + 0.2 + 0.1 + exp(0.3)
		s2 := b1 + 0.05 + exp(0.1)
		b2 := s2 + 0.2 + 0.2 + exp(0.6)
		rep := b2 + 0.05 + exp(0.1)
		req, _ := b.rpc(t, rep, "cli", fmt.Sprintf("cli:%d", 1000+i), "app", "app:80", fmt.Sprintf("r%d", i), 100)
		c1, _ := b.rpc(s1, b1-0.1, "app", fmt.Sprintf("app:%d", 2000+i), "mc", "mc:11211", fmt.Sprintf("r%d.mc", i), 30)
		c2, _ := b.rpc(s2, b2-0.1, "app", fmt.Sprintf("app:%d", 4000+i), "db", "db:5432", fmt.Sprintf("r%d.db", i), 60)
		truth[c1], truth[c2] = req, req
	}
	return b, truth
}

// TestChainMatchingRecoversSequential: on a threaded server's calls,
// under the model fitted on the true assignment, the beam search loses
// the true assignment (what tells two requests apart comes many events
// after the call it decides), and the chain matching, refined by the
// local search, finds an assignment with a higher objective and fewer
// wrong calls (59 of 234, 132 of 332, 360 of 456). It does not find the
// truth itself: the pairwise links match each layer of the chains
// (arrival to first call, first call's reply to second call, second
// call's reply to reply) on its own, and a chain that crosses keeps only
// its two ends' evidence.
func TestChainMatchingRecoversSequential(t *testing.T) {
	cases := []struct {
		name   string
		seed   uint64
		meanMS float64
		beam   int     // 0: the default beam, then the local search
		most   float64 // the chain matching's wrong calls, at most, as a share of the beam's
	}{
		{"about 3 in flight, beam 1", 5, 0.6, 1, 0.35},
		{"about 5 in flight, beam 2", 1, 0.3, 2, 0.5},
		{"about 10 in flight, default beam and local search", 2, 0.15, 0, 0.85},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, truth := sequentialTrace(tc.seed, 600, tc.meanMS)
			_, r := runOn(t, b, DefaultOptions())
			n := r.l.nodeOf[b.t.Intern("app")]
			tru := map[int32]int32{}
			for cm, pm := range truth {
				tru[r.callOf(cm)] = r.callOf(pm)
			}
			for _, c := range r.childrenOf[n] {
				r.parent[c] = tru[c]
			}
			m := r.fit(n, false)
			wrong := func() int {
				w := 0
				for _, c := range r.childrenOf[n] {
					if r.parent[c] != tru[c] {
						w++
					}
				}
				return w
			}
			s := newSearch(r, n, m)
			if tc.beam > 0 {
				s.beam = tc.beam
			}
			s.run(r.timeline(n))
			if tc.beam == 0 {
				r.improve(n, m, nil, 20)
			}
			beamWrong, beamObj := wrong(), newLocal(r, n, m, nil).objective()
			var cc chainCounts
			r.chainMatch(n, m, nil, &cc)
			chainWrong, chainObj := wrong(), newLocal(r, n, m, nil).objective()
			t.Logf("%d calls: beam %d wrong (objective %.1f), chain matching %d wrong (%.1f), %d crossings",
				len(r.childrenOf[n]), beamWrong, beamObj, chainWrong, chainObj, cc.crossings)
			if beamWrong < 40 {
				t.Fatalf("the beam got only %d calls wrong: not the case this test is for", beamWrong)
			}
			if cc.kept != 1 || chainObj <= beamObj {
				t.Fatalf("chain matching not kept (kept %d, objective %.1f, beam's %.1f)", cc.kept, chainObj, beamObj)
			}
			if float64(chainWrong) > tc.most*float64(beamWrong) {
				t.Fatalf("chain matching left %d calls wrong, the beam %d", chainWrong, beamWrong)
			}
		})
	}
}

// TestChainMatchingNeverLowers: whatever the assignment it starts from,
// the chain matching leaves the node's objective at least as high.
func TestChainMatchingNeverLowers(t *testing.T) {
	b, _ := sequentialTrace(3, 300, 0.2)
	_, r := runOn(t, b, DefaultOptions())
	n := r.l.nodeOf[b.t.Intern("app")]
	m := r.models[n]
	rng := rand.New(rand.NewPCG(5, 5))
	for it := range 5 {
		// scramble part of the engine's assignment among each call's candidates
		r.sweep(n, func(c int32, cands []int32) {
			if len(cands) > 0 && rng.IntN(3) == 0 && r.exact[c] < 0 {
				r.parent[c] = cands[rng.IntN(len(cands))]
			}
		})
		before := newLocal(r, n, m, nil).objective()
		var cc chainCounts
		r.chainMatch(n, m, nil, &cc)
		after := newLocal(r, n, m, nil).objective()
		if after < before-1e-6 {
			t.Fatalf("round %d: objective fell from %.3f to %.3f", it, before, after)
		}
	}
}
