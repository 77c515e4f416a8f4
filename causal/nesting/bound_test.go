package nesting

import (
	"fmt"
	"testing"

	"github.com/wirepath/wirepath/trace"
)

// distinctNames builds n call paths, each a call from a client to a server
// with names of their own and a nested call from the server to a backend
// of its own: n call-path patterns of one instance each.
func distinctNames(n int) *trace.Trace {
	b := newP5()
	for i := range n {
		at := float64(i) * 10
		c, s, d := fmt.Sprintf("client%d", i), fmt.Sprintf("server%d", i), fmt.Sprintf("db%d", i)
		b.call(at, c, s, fmt.Sprintf("a%d", i))
		b.call(at+1, s, d, fmt.Sprintf("b%d", i))
		b.ret(at+2, d, s, fmt.Sprintf("b%d", i))
		b.ret(at+3, s, c, fmt.Sprintf("a%d", i))
	}
	return b.t
}

// TestMaxPatterns: with Aggregate.MaxPatterns the result keeps that many
// patterns and call-path patterns, the most frequent, and counts the rest
// (a trace with a million distinct node names made a million of each).
func TestMaxPatterns(t *testing.T) {
	const n = 3000
	tr := distinctNames(n)
	b := &p5{t: tr}
	for i := range 5 { // one shape seen five times
		at := float64(n*10 + i*10)
		id := fmt.Sprintf("r%d", i)
		b.call(at, "web", "app", id)
		b.ret(at+3, "app", "web", id)
	}
	for _, tc := range []struct {
		limit, kept, notKept, pathsNotKept int
	}{
		{100, 100, n + 1 - 100, n + 1 - 100},
		{0, n + 1, 0, 0},
		{n + 1, n + 1, 0, 0},
	} {
		o := DefaultOptions()
		o.Aggregate.MaxPatterns = tc.limit
		res, err := mustNew(o).Run(bgCtx, tr)
		if err != nil {
			t.Fatal(err)
		}
		acc := map[string]int64{}
		for _, c := range res.Accounting {
			acc[c.Name] = c.Value
		}
		if len(res.CallPaths) != tc.kept || len(res.Patterns) != tc.kept || acc["call_path_patterns"] != int64(tc.kept) {
			t.Errorf("limit %d: %d call paths, %d patterns kept, want %d", tc.limit, len(res.CallPaths), len(res.Patterns), tc.kept)
		}
		if res.CallPaths[0].Count != 5 || res.CallPaths[0].Signature != "web->app" {
			t.Errorf("limit %d: first call path %s x%d, want web->app x5", tc.limit, res.CallPaths[0].Signature, res.CallPaths[0].Count)
		}
		if acc["call_path_patterns_not_kept"] != int64(tc.notKept) || acc["call_paths_not_kept"] != int64(tc.pathsNotKept) ||
			acc["patterns_not_kept"] != int64(tc.notKept) {
			t.Errorf("limit %d: accounting %v", tc.limit, acc)
		}
		if warned := len(res.Warnings) > 0; warned != (tc.notKept > 0) {
			t.Errorf("limit %d: warnings %q", tc.limit, res.Warnings)
		}
		// Kept and not kept add up to every call path.
		total := acc["call_paths_not_kept"]
		for _, cp := range res.CallPaths {
			total += int64(cp.Count)
		}
		if total != acc["call_paths"] {
			t.Errorf("limit %d: %d call paths kept and not, %d found", tc.limit, total, acc["call_paths"])
		}
	}
}

// TestSparseScoreboard: without smoothing the scoreboard keeps the bins
// used, not 340 of them per (caller, callee, child) triple: a trace of
// distinct node names has as many triples as nestings.
func TestSparseScoreboard(t *testing.T) {
	r, _, err := mustNew(DefaultOptions()).run(bgCtx, distinctNames(2000))
	if err != nil {
		t.Fatal(err)
	}
	if r.nTrips != 2000 || len(r.cell) != 2000 || r.hist != nil {
		t.Errorf("%d histograms, %d cells, %d dense values; want 2000, 2000, 0", r.nTrips, len(r.cell), len(r.hist))
	}
}
