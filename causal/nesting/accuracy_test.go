package nesting

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/gen"
	"github.com/wirepath/wirepath/causal/internal/enginetest"
	"github.com/wirepath/wirepath/internal/genfix"
	"github.com/wirepath/wirepath/trace"
)

// inferredParents maps every message the result places in an instance to
// its parent message (-1 for roots). The result must keep all instances.
func inferredParents(res *causal.Result) map[int32]int32 {
	out := make(map[int32]int32)
	for _, p := range res.Patterns {
		for _, in := range p.Instances {
			for k, m := range in.Messages {
				par := int32(-1)
				if h := p.Hops[k].Parent; h != nil {
					par = int32(in.Messages[*h])
				}
				out[int32(m)] = par
			}
		}
	}
	return out
}

// requestAccuracy returns the fraction of requests whose messages all got
// their true parents, and the fraction of messages that did.
func requestAccuracy(tr *trace.Trace, truth *gen.TraceTruth, got map[int32]int32) (requests, messages float64) {
	bad := make(map[int32]bool)
	okMsgs := 0
	for i := range tr.Messages {
		p, ok := got[int32(i)]
		if ok && p == truth.Parent[i] {
			okMsgs++
		} else {
			bad[truth.Instance[i]] = true
		}
	}
	n := truth.NumInstances
	return float64(n-len(bad)) / float64(n), float64(okMsgs) / float64(len(tr.Messages))
}

// truthPatterns aggregates the true instances of a generated trace.
func truthPatterns(t *testing.T, tr *trace.Trace, truth *gen.TraceTruth) []causal.Pattern {
	t.Helper()
	agg := causal.NewAggregator(tr, causal.AggregateOptions{Naming: causal.DefaultNaming()})
	for _, in := range truth.Instances() {
		if err := agg.Add(in); err != nil {
			t.Fatalf("truth instance: %v", err)
		}
	}
	return agg.Patterns(causal.RankCount)
}

// multiTier generates Project 5's multi-tier system (internal/genfix).
func multiTier(t testing.TB, clients int, msgs int, ids, oneTS bool, added time.Duration, seed uint64) (*trace.Trace, *gen.TraceTruth) {
	tr, truth, err := genfix.Generate(genfix.RPC{
		Clients: clients, ThinkMin: 100 * time.Millisecond, ThinkMax: 300 * time.Millisecond,
		Messages: msgs, Added: added, NoCallIDs: !ids, OneTimestamp: oneTS, Seed: seed,
	}.Config())
	if err != nil {
		t.Fatal(err)
	}
	return tr, truth
}

// topNMisses returns, for N = 1..maxN, how many of the N most frequent
// truth patterns are missing from the N most frequent inferred ones,
// ignoring near ties (Project 5 section 7.5.1, Figure 17's "tolerance"): a
// missing pattern is not counted when its true count is within tol
// (relative) of the (N+1)-th true count, or its inferred count within tol
// of the N-th inferred count.
func topNMisses(got, want []causal.Pattern, maxN int, tol float64) []int {
	got = append([]causal.Pattern(nil), got...)
	causal.RankPatterns(got, causal.RankCount)
	canon := func(p causal.Pattern) string { c, _ := causal.Canonical(p.Signature); return c }
	inferred := make(map[string]int)
	for _, p := range got {
		inferred[canon(p)] = p.Count
	}
	var out []int
	for n := 1; n <= maxN && n <= len(want); n++ {
		top := make(map[string]bool)
		for _, p := range got[:min(n, len(got))] {
			top[canon(p)] = true
		}
		nth := 0
		if n <= len(got) {
			nth = got[n-1].Count
		}
		next := 0
		if n < len(want) {
			next = want[n].Count
		}
		miss := 0
		for _, w := range want[:n] {
			c := canon(w)
			if !top[c] && float64(inferred[c]) < (1-tol)*float64(nth) && float64(w.Count) > (1+tol)*float64(next) {
				miss++
			}
		}
		out = append(out, miss)
	}
	return out
}

// TestNestingMultiTierAccuracy runs the engine on generated traces of the
// multi-tier system of Project 5 Figure 10 and checks it against the truth.
// The thresholds sit a few points under what the engine measures (logged),
// so they catch regressions; the errors left are the algorithm's: two
// requests that reach a node within the spread of its delays cannot be told
// apart by timing, and the nesting algorithm swaps their children.
func TestNestingMultiTierAccuracy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		clients int
		ids     bool
		oneTS   bool
		minReq  float64 // fraction of requests entirely right
		maxMiss int     // top-N truth patterns missing, N = 1..10, 6% tolerance
	}{
		// At parallelism 3 and above, ranks 7 to 11 of the truth are five
		// patterns of equal expected frequency (5% each: "two queries" via
		// AP1 or AP2, "no auth" via AP1 or AP2), whose true counts differ by
		// chance only; the engine undercounts the "two queries" ones, so one
		// to three of them fall out of a top N near these ranks, depending
		// on the seed (over seeds 1 to 12: 1 to 3 with this generator, 0 to
		// 2 with the fixture generator it replaced; seed 7 gives 2 here).
		{"parallelism 1.4", 5, true, false, 0.90, 0},
		{"parallelism 3", 20, true, false, 0.62, 2},
		{"parallelism 5", 40, true, false, 0.40, 2},
		{"no call ids", 5, false, false, 0.90, 0},
		{"one timestamp", 5, true, true, 0.90, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, truth := multiTier(t, tc.clients, 20000, tc.ids, tc.oneTS, 0, 7)
			opt := DefaultOptions()
			opt.Aggregate.KeepInstances = true
			res, err := mustNew(opt).Run(bgCtx, tr)
			if err != nil {
				t.Fatal(err)
			}
			reqAcc, msgAcc := requestAccuracy(tr, truth, inferredParents(res.Result))
			par := float64(enginetest.Count(res.Result, "candidate_nestings")) / float64(enginetest.Count(res.Result, "pairs_with_candidates"))
			misses := topNMisses(res.Patterns, truthPatterns(t, tr, truth), 10, 0.06)
			t.Logf("%d messages, mean per-node parallelism %.2f: %.1f%% of requests and %.1f%% of messages right, %d patterns, top-N misses %v",
				len(tr.Messages), par, 100*reqAcc, 100*msgAcc, len(res.Patterns), misses)
			if reqAcc < tc.minReq {
				t.Errorf("only %.3f of requests right, want at least %.3f", reqAcc, tc.minReq)
			}
			for i, m := range misses {
				if m > tc.maxMiss {
					t.Errorf("top %d: %d truth patterns missing, want at most %d", i+1, m, tc.maxMiss)
				}
			}
			checkNestingBalance(t, res.Result)
		})
	}
}

// TestNestingAddedDelay: the 200 ms delay added at WS2 between its calls to
// AUTH and to an application server shows up within 10% in the call
// paths: the median gap between AUTH's return and the next call.
func TestNestingAddedDelay(t *testing.T) {
	tr, _ := multiTier(t, 10, 20000, true, false, 200*time.Millisecond, 3)
	res, err := mustNew(DefaultOptions()).Run(bgCtx, tr)
	if err != nil {
		t.Fatal(err)
	}
	gap := func(ws string) float64 {
		for _, cp := range res.CallPaths {
			if cp.Signature == "CLIENT->"+ws+"("+ws+"->AUTH,"+ws+"->AP1(AP1->DB))" {
				c := cp.Calls
				return (c[2].CallDelay.P50 - c[1].CallDelay.P50 - c[1].Latency.P50) / 1e3
			}
		}
		t.Fatalf("no call path for %s; have %v", ws, callPathSigs(res.CallPaths))
		return 0
	}
	g1, g2 := gap("WS1"), gap("WS2")
	t.Logf("gap after AUTH: WS1 %.1f ms, WS2 %.1f ms", g1, g2)
	if added := g2 - g1; math.Abs(added-200) > 20 {
		t.Errorf("added delay measured %.1f ms, want 200 ms ± 10%%", added)
	}
	if math.Abs(g1-10) > 2 {
		t.Errorf("WS1's gap after AUTH measured %.1f ms, want 10 ms", g1)
	}
}

func callPathSigs(cps []CallPath) string {
	var s []string
	for i, cp := range cps {
		if i == 8 {
			break
		}
		s = append(s, cp.Signature)
	}
	return strings.Join(s, " ")
}
