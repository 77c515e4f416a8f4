package assembly

import "testing"

// TestPooledTimers runs the engine on the unseen background system at 16
// requests in flight, where the web tier's health checks and the
// application's database pings share the requests' small pools and wait
// for a connection (all but one of them handed one just freed): the
// calls of both kinds are kept out of requests. On main (fe90bbf) none
// was: their intervals, the period plus a wait, were no beat, and the
// first pass, with no background rate at a node never idle, hung them
// under requests whose call graph then learnt them.
func TestPooledTimers(t *testing.T) {
	skipLongAccuracy(t)
	cfg := poolConfigOf(t, "../accuracy/testdata/unseen/background.yaml", 16)
	out, _, r := inferGenerated(t, cfg)
	for _, tc := range []struct{ node, kind string }{
		{"web", "GET /health"},
		{"app", "SELECT 1"},
	} {
		n := r.nodeNamed(t, out.Trace.Intern(tc.node))
		kept, all := 0, 0
		for _, c := range r.childrenOf[n] {
			if r.kinds.name(r.calls[c].kind) != tc.kind {
				continue
			}
			all++
			if r.parent[c] == -1 {
				kept++
			}
		}
		t.Logf("%s: %d of %d %q calls kept out of requests", tc.node, kept, all, tc.kind)
		if all == 0 || float64(kept) < 0.85*float64(all) {
			t.Errorf("%s: %d of %d %q calls kept out of requests, want at least 85 %%", tc.node, kept, all, tc.kind)
		}
	}
}
