package assembly

import (
	"slices"
	"testing"
)

// TestFIFOStartSaturatedPool checks that a gateway's calls over a
// saturated pool go to their requests in order of arrival: on the unseen
// event loop at 64 in flight the engine gave 428 of the gateway's 1,000
// calls to another request without the first-come start, and the worker
// pool's proxy 206 (the single-call matching's test there asks for half);
// and the fan-out's aggregator, whose calls of two kinds wait so.
func TestFIFOStartSaturatedPool(t *testing.T) {
	skipLongAccuracy(t)
	for _, tc := range []struct {
		name, config, node string
		right              float64 // the least share of the node's calls right
	}{
		{"unseen eventloop, 64 in flight", "../accuracy/testdata/unseen/eventloop.yaml", "gateway", 0.95},
		{"unseen workerpool, 64 in flight", "../accuracy/testdata/unseen/workerpool.yaml", "proxy", 0.9},
		// the aggregator's calls to s1 and s2 (one each a request, over
		// saturated pools) matched apart from its others: 2,225 of its
		// 3,439 calls right without the first-come start (2,869 with it)
		{"unseen fanout, 64 in flight", "../accuracy/testdata/unseen/fanout.yaml", "agg", 0.7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := poolConfigOf(t, tc.config, 64)
			out, _, r := inferGenerated(t, cfg)
			n := r.nodeNamed(t, out.Trace.Intern(tc.node))
			right, all := r.callsRight(out, n)
			t.Logf("%d of %d of the %s's calls right; first-come starts %+v", right, all, tc.node, r.fifoStarts[n])
			if float64(right) < tc.right*float64(all) {
				t.Errorf("%d of %d calls right, want at least %.0f %%", right, all, 100*tc.right)
			}
		})
	}
}

// TestFIFOMatch covers the first-come matching: the calls go to the
// requests in order of arrival where the times allow it, a request whose
// only call came before it arrived is left none, and an exactly linked
// call keeps its request.
func TestFIFOMatch(t *testing.T) {
	for _, tc := range []struct {
		name  string
		arr   []int64 // the requests' arrivals (ms)
		send  []int64 // the calls' sends (ms)
		cands [][]int32
		exact map[int]int32 // call index → its exact request
		want  []int32       // each call's request
	}{
		{"in order", []int64{0, 1, 2}, []int64{10, 11, 12}, [][]int32{{0, 1, 2}, {0, 1, 2}, {0, 1, 2}}, nil, []int32{0, 1, 2}},
		{"the last call only the last request's", []int64{0, 1, 2}, []int64{10, 11, 12}, [][]int32{{0, 1}, {0, 1}, {2}}, nil, []int32{0, 1, 2}},
		{"a call each, the first request's reply early", []int64{0, 1, 2}, []int64{10, 11, 12}, [][]int32{{1, 2}, {0, 1, 2}, {0, 1, 2}}, nil, []int32{1, 0, 2}},
		{"an exact link", []int64{0, 1, 2}, []int64{10, 11, 12}, [][]int32{{0, 1, 2}, {0, 1, 2}, {0, 1, 2}}, map[int]int32{0: 2}, []int32{2, 0, 1}},
		{"more calls than requests", []int64{0, 1}, []int64{10, 11, 12}, [][]int32{{0, 1}, {0, 1}, {0, 1}}, nil, []int32{0, 1, -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nr, nc := len(tc.arr), len(tc.send)
			r := &run{}
			r.arrAt = make([]int64, nr+nc)
			r.sendAt = make([]int64, nr+nc)
			r.parent = make([]int32, nr+nc)
			r.exact = make([]int32, nr+nc)
			var reqs, calls []int32
			for j, a := range tc.arr {
				r.arrAt[j] = a * 1e6
				reqs = append(reqs, int32(j))
			}
			cands := map[int32][]int32{}
			for i, s := range tc.send {
				c := int32(nr + i)
				r.sendAt[c] = s * 1e6
				calls = append(calls, c)
				cands[c] = tc.cands[i]
			}
			for i := range r.exact {
				r.exact[i], r.parent[i] = -1, -1
			}
			for i, p := range tc.exact {
				r.exact[nr+i] = p
			}
			if !r.fifoMatch(reqs, calls, cands) {
				t.Fatal("matching failed")
			}
			got := r.parent[nr:]
			if !slices.Equal(got, tc.want) {
				t.Errorf("requests %v, want %v", got, tc.want)
			}
		})
	}
}

// TestFIFOKinds covers which calls the first-come start matches at a
// node: all of them where its requests make one call each over a
// saturated pool, else each kind made about once a request and mostly
// handed a pooled connection.
func TestFIFOKinds(t *testing.T) {
	const reqs = 20
	for _, tc := range []struct {
		name   string
		kinds  []int32 // each call's kind
		handed int     // how many of the first calls were handed a connection
		single bool
		groups int
	}{
		{"one call each, handed", rep(0, reqs), reqs, true, 1},
		{"one call each, half handed", rep(0, reqs), reqs / 2, false, 0},
		{"two kinds once each, handed", append(rep(0, reqs), rep(1, reqs)...), 2 * reqs, false, 2},
		{"two kinds once each, the second not handed", append(rep(0, reqs), rep(1, reqs)...), reqs, false, 1},
		{"a kind made by half the requests", append(rep(0, reqs), rep(1, reqs/2)...), 3 * reqs / 2, false, 1},
		{"a kind made twice a request", rep(0, 2*reqs), 2 * reqs, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := len(tc.kinds)
			r := &run{parentsOf: [][]int32{nil}, childrenOf: [][]int32{nil}}
			r.calls = make([]call, reqs+nc)
			r.freed = make([]int64, reqs+nc)
			for i := range r.freed {
				r.freed[i] = noTime
			}
			for p := range reqs {
				r.parentsOf[0] = append(r.parentsOf[0], int32(p))
			}
			for i, k := range tc.kinds {
				c := int32(reqs + i)
				r.childrenOf[0] = append(r.childrenOf[0], c)
				r.calls[c].kind = k
				if i < tc.handed {
					r.freed[c] = int64(i)
				}
			}
			if got := r.fifoSingle(0); got != tc.single {
				t.Errorf("fifoSingle = %v, want %v", got, tc.single)
			}
			if got := len(r.fifoKinds(0)); got != tc.groups {
				t.Errorf("fifoKinds: %d kinds, want %d", got, tc.groups)
			}
		})
	}
}

// rep returns n copies of k.
func rep(k int32, n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = k
	}
	return out
}
