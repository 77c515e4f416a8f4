package assembly

import (
	"math"
	"testing"

	"github.com/wirepath/wirepath/causal/gen"
)

// poolConfig is a generated gateway that calls an API server once per
// request over a keep-alive pool: with more requests in flight than
// connections, a call waits for one and leaves when the previous user's
// reply frees it.
const poolConfig = `
name: pool
seed: %d
instances: 1000
clients: %d
think: 1ms..3ms
defaults: {delay: 150us±50us+exp(150us), reply: 300us±100us+exp(200us), net: 100us±10us}
evidence: {conns: true, labels: true}
nodes:
  gateway: {addr: 10.0.1.1, port: 80, pool: 16}
  api:     {addr: 10.0.2.1, port: 3000, pool: 8}
  db:      {addr: 10.0.3.1, port: 5432, pool: 4}
tracelets:
  - name: page
    rpc:
      to: gateway
      calls:
        - to: api
          calls:
            - {to: db, reply: 400us±100us}
`

// TestNoCollapse checks the assignment of a node whose every request
// makes one call, through a pool of connections, at loads up to a
// saturated pool (64 in flight over 16 or 32 connections), where the
// reply freeing a connection is followed at once by the call of another
// request handed it. Few requests may be left with no call, or given
// more than two. Counted by the deconvolution as a request's next call
// after a reply, the handoffs made the first model say that half the
// requests that got a reply call again, and the first pass gave 971 of
// pool.yaml's 1,000 requests no call and a few up to 32 (the eventloop
// gateway 972, the workerpool proxy 892); EM kept it (dcedge.go).
func TestNoCollapse(t *testing.T) {
	skipLongAccuracy(t)
	for _, tc := range []struct {
		name    string
		config  string // a generator configuration, or a file of one
		clients int
		node    string
	}{
		{"pool, 4 in flight", poolConfig, 4, "gateway"},
		{"pool, 16 in flight", poolConfig, 16, "gateway"},
		{"pool, 64 in flight", poolConfig, 64, "gateway"},
		{"unseen eventloop, 64 in flight", "../accuracy/testdata/unseen/eventloop.yaml", 64, "gateway"},
		{"unseen workerpool, 64 in flight", "../accuracy/testdata/unseen/workerpool.yaml", 64, "proxy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := poolConfigOf(t, tc.config, tc.clients)
			out, err := gen.Generate(cfg, gen.Options{})
			if err != nil {
				t.Fatal(err)
			}
			sym := out.Trace.Intern(tc.node)
			var first, again float64
			initHook = func(r *run, n int32, m *nodeModel) {
				if r.l.nodeSym[n] != sym || first != 0 {
					return
				}
				pk := r.calls[r.parentsOf[n][0]].kind
				kid := &r.calls[r.childrenOf[n][0]]
				first = math.Exp(m.logTrans(ctxKey{pk: pk, prev: noKind}, kid.kind))
				again = math.Exp(m.logTrans(ctxKey{pk: pk, prev: kid.kind, pos: 1, ret: kid.retClass}, kid.kind))
			}
			defer func() { initHook = nil }()
			e, err := New(DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			_, r, err := e.infer(bgCtx, out.Trace)
			if err != nil {
				t.Fatal(err)
			}
			n := r.nodeNamed(t, sym)
			by := map[int32]int{}
			for _, c := range r.childrenOf[n] {
				if p := r.parent[c]; p >= 0 {
					by[p]++
				}
			}
			none := len(r.parentsOf[n]) - len(by)
			many := 0
			for _, k := range by {
				if k > 2 {
					many++
				}
			}
			t.Logf("first model: P(first call) %.2f, P(call again after its reply) %.2f; of %d requests, %d with no call, %d with more than two", first, again, len(r.parentsOf[n]), none, many)
			if none > len(r.parentsOf[n])/10 || many > len(r.parentsOf[n])/50 {
				t.Errorf("of %d requests, %d with no call and %d with more than two calls, want at most a tenth and a fiftieth", len(r.parentsOf[n]), none, many)
			}
		})
	}
}
