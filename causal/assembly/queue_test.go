package assembly

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/causal/gen"
)

// TestQueueStarts checks the FCFS k-server recursion on hand-made
// arrivals and replies.
func TestQueueStarts(t *testing.T) {
	type req struct{ arr, rep int64 }
	for _, tc := range []struct {
		name string
		k    int
		reqs []req
		want []int64
	}{
		{"one thread", 1, []req{{0, 10}, {2, 15}, {3, 30}, {40, 45}}, []int64{0, 10, 15, 40}},
		{"two threads", 2, []req{{0, 10}, {2, 15}, {3, 30}, {4, 31}, {40, 45}}, []int64{0, 2, 10, 15, 40}},
		{"enough threads", 3, []req{{0, 10}, {2, 15}, {3, 30}}, []int64{0, 2, 3}},
		// a reply stamped before the start the recursion gives (the order
		// of service was not that of arrival) frees the thread at the start
		{"reply before start", 1, []req{{0, 10}, {1, 5}, {2, 20}}, []int64{0, 10, 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &run{}
			var ps []int32
			for i, q := range tc.reqs {
				r.calls = append(r.calls, call{arr: q.arr, rep: q.rep})
				ps = append(ps, int32(i))
			}
			var h timeHeap
			if got := r.queueStarts(ps, tc.k, nil, &h); !slices.Equal(got, tc.want) {
				t.Errorf("starts %v, want %v", got, tc.want)
			}
		})
	}
}

// queueConfig is a generated system of a proxy in front of a server whose
// concurrency is bounded as spec says, each request reading a database,
// then a cache.
const queueConfig = `
name: queue
seed: %d
instances: 400
clients: %d
think: 1ms..3ms
defaults: {delay: 200us±50us+exp(100us), reply: 300us±100us+exp(100us), net: 100us±10us}
evidence: {conns: true, labels: true}
nodes:
  proxy:  {addr: 10.0.1.1, port: 80, pool: 32}
  server: {addr: 10.0.2.1, port: 8000, pool: 32, %s}
  db:     {addr: 10.0.3.1, port: 5432, pool: 16}
  cache:  {addr: 10.0.4.1, port: 6379, pool: 16}
tracelets:
  - name: page
    rpc:
      to: proxy
      calls:
        - to: server
          calls:
            - {to: db, reply: 500us±150us+exp(300us)}
            - {to: cache, reply: 100us±30us}
`

// TestQueueLearnt generates servers of bounded and unbounded concurrency
// and checks the thread count the engine learns from the capture (0: it
// does not queue, and nothing changes) and how many of the server's calls
// it gives their true request: a server of 2 or 4 threads whose requests
// queue is learnt as such, and its calls, read from the start of their
// request's service, are mostly right (93 % and 75 %; without the queue
// 30 % and 11 %); where the concurrency is not bounded nothing is learnt
// (32 % either way).
func TestQueueLearnt(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and assembles four traces")
	}
	for _, tc := range []struct {
		name    string
		spec    string
		clients int
		k       []int   // the thread counts accepted
		right   float64 // the least share of the server's calls right
	}{
		{"two threads", "threads: 2", 8, []int{2}, 0.85},
		{"four threads", "threads: 4", 16, []int{4}, 0.7},
		{"unbounded", "traced: false", 16, []int{0}, 0.3},
		{"event loop", "event_loop: true", 16, []int{0}, 0.3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := gen.ParseConfig(strings.NewReader(fmt.Sprintf(queueConfig, 3, tc.clients, tc.spec)), "queue.yaml")
			if err != nil {
				t.Fatal(err)
			}
			out, _, r := inferGenerated(t, cfg)
			server := r.nodeNamed(t, out.Trace.Intern("server"))
			if k := r.queue[server].k; !slices.Contains(tc.k, k) {
				t.Errorf("learnt %d threads, want one of %v", k, tc.k)
			}
			right, all := r.callsRight(out, server)
			t.Logf("%d threads learnt; %d of %d calls right", r.queue[server].k, right, all)
			if float64(right) < tc.right*float64(all) {
				t.Errorf("%d of %d of the server's calls right, want at least %.0f %%", right, all, 100*tc.right)
			}
		})
	}
}

// nodeNamed returns the node whose name is sym.
func (r *run) nodeNamed(t *testing.T, sym any) int32 {
	t.Helper()
	for n, s := range r.l.nodeSym {
		if any(s) == sym {
			return int32(n)
		}
	}
	t.Fatalf("no node %v", sym)
	return -1
}

// callsRight counts node n's calls given their true request, of those
// whose true request is in the trace.
func (r *run) callsRight(out *gen.Output, n int32) (right, all int) {
	return r.callsRightIf(out, n, nil)
}
