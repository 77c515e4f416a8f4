package assembly

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestHandoffs covers which calls count as handed a pooled connection: the
// next call on a serial connection sent within handoffMax of the reply
// that freed it, by the same caller; never on a multiplexed connection.
func TestHandoffs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		nextMS float64 // when the second call on the connection leaves
		stream uint64  // both calls' stream id (0: serial)
		want   bool
	}{
		{"handed the connection", 2.15, 0, true},
		{"sent at the instant it was freed", 2.1, 0, true},
		{"sent long after", 3, 0, false},
		{"multiplexed", 2.15, 7, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newTB()
			c0, r0 := b.rpc(1, 2, "S", "s:5000", "D", "d:5432", "q0", 40) // reply arrives at 2.1
			c1, r1 := b.rpc(tc.nextMS, tc.nextMS+1, "S", "s:5000", "D", "d:5432", "q1", 40)
			for i, m := range []int32{c0, r0, c1, r1} {
				b.ev(m).Conn = 1
				b.ev(m).Seq = uint32(i/2 + 1)
				if tc.stream != 0 {
					b.ev(m).Stream = tc.stream + uint64(i/2)
				}
			}
			_, r := runOn(t, b, DefaultOptions())
			f := r.freed[r.callOf(c1)]
			if got := f != noTime; got != tc.want {
				t.Fatalf("second call handed the connection: %v, want %v (freed %d)", got, tc.want, f)
			}
			if tc.want && f != r.calls[r.callOf(c0)].back {
				t.Errorf("freed at %d, want the first call's reply %d", f, r.calls[r.callOf(c0)].back)
			}
			if r.freed[r.callOf(c0)] != noTime {
				t.Errorf("the first call on the connection was handed it")
			}
		})
	}
}

// TestIsolated covers which requests a node served alone.
func TestIsolated(t *testing.T) {
	b := newTB()
	a, _ := b.rpc(0, 2, "C", "c:1", "S", "s:80", "a", 100)  // alone
	o1, _ := b.rpc(3, 5, "C", "c:2", "S", "s:80", "b", 100) // overlaps the next
	o2, _ := b.rpc(4, 6, "C", "c:3", "S", "s:80", "c", 100)
	l, _ := b.rpc(8, 9, "C", "c:4", "S", "s:80", "d", 100)   // alone
	u, _ := b.rpc(11, -1, "C", "c:5", "S", "s:80", "e", 100) // its reply unseen
	// alone but for the request before, which may have lasted up to the
	// longest span: a lost reply must not take every later request's
	// isolation (regression: one lost message in a trace left a handful
	// of isolated requests, whose call graph was then multiplied
	// hundredfold)
	z, _ := b.rpc(13, 14, "C", "c:6", "S", "s:80", "f", 100)
	_, r := runOn(t, b, DefaultOptions())
	var s int32 = -1
	for i, sym := range r.l.nodeSym {
		if b.t.Str(sym) == "S" {
			s = int32(i)
		}
	}
	iso := r.isolated(s)
	for _, tc := range []struct {
		msg  int32
		want bool
	}{{a, true}, {o1, false}, {o2, false}, {l, true}, {u, false}, {z, true}} {
		if got := iso[r.callOf(tc.msg)]; got != tc.want {
			t.Errorf("request at message %d isolated: %v, want %v", tc.msg, got, tc.want)
		}
	}
}

// TestPooledQueries is a backend that makes one query per request over a
// pool of one database connection: at bursts of requests the queries wait
// for the connection and each leaves as the previous one's reply frees
// it, long after its request arrived and just after another request's
// reply, as a serial request's next call would. The engine must still
// give every request exactly one query, in the order the requests waited
// (regression: requests that took a second query, others none).
func TestPooledQueries(t *testing.T) {
	b := newTB()
	rng := rand.New(rand.NewPCG(1, 2))
	type req struct{ call, query int32 }
	var reqs []req
	var seq uint32
	query := func(at float64, id string) (c, r int32, back float64) {
		seq++
		d := 0.4 + 0.2*rng.Float64()
		c, r = b.rpc(at, at+d, "S", "s:5000", "D", "d:5432", id, 40)
		for _, m := range []int32{c, r} {
			b.ev(m).Conn, b.ev(m).Seq = 1, seq
		}
		return c, r, at + d + 0.1
	}
	t0, free := 0.0, 0.0
	for burst := range 60 {
		n := 1
		if burst%3 == 2 {
			n = 3 // three requests at once: two wait for the connection
		}
		for k := range n {
			id := fmt.Sprintf("r%d.%d", burst, k)
			arr := t0 + 0.3*float64(k)
			ready := arr + 0.15 + 0.05*rng.Float64()
			at := max(ready, free+0.05)
			qc, _, back := query(at, "q"+id)
			free = back
			rc, _ := b.rpc(arr-0.1, back+0.3+2*rng.Float64(), "C", fmt.Sprintf("c:%d", len(reqs)), "S", "s:80", id, 100)
			reqs = append(reqs, req{rc, qc})
		}
		t0 += 20
	}
	_, r := runOn(t, b, DefaultOptions())
	right := 0
	got := map[int32]int{}
	for _, q := range reqs {
		p := r.parentMsg(q.query)
		got[p]++
		if p == q.call {
			right++
		}
	}
	for p, n := range got {
		if p >= 0 && n > 1 {
			t.Errorf("request at message %d was given %d queries", p, n)
		}
	}
	if right < len(reqs)*9/10 {
		t.Errorf("%d of %d queries given their request, want at least 90 %%", right, len(reqs))
	}
}

// TestIsoWeight covers the weight of an isolated request: one at no
// load, growing with how long it lasted against the arrival rate, capped.
func TestIsoWeight(t *testing.T) {
	for _, tc := range []struct {
		rate float64
		d    int64
		want float64
	}{
		{0, 5e6, 1},
		{1e-6, 0, 1},
		{1e-6, 1e6, math.E},
		{1e-6, -5, 1},
		{1e-3, 1e6, maxIsoWeight},
	} {
		if got := isoWeight(tc.rate, tc.d); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("isoWeight(%v, %d) = %v, want %v", tc.rate, tc.d, got, tc.want)
		}
	}
}

// TestReplicaSamples covers which isolated requests a node borrows from
// its replicas (the callees a caller sends the same labelled kind of
// request to): those whose calls it makes too, with the kinds mapped to
// its own; not those with a call it never makes, nor its own.
func TestReplicaSamples(t *testing.T) {
	b := newTB()
	label := func(i int32, l string) { b.t.Messages[i].Label = b.t.Intern(l) }
	at := 0.0
	// B1: five isolated part requests, each making one query
	for i := range 5 {
		p, _ := b.rpc(at, at+3, "F", fmt.Sprintf("f:%d", i), "B1", "b1:80", fmt.Sprintf("p1-%d", i), 100)
		q, _ := b.rpc(at+1, at+2, "B1", fmt.Sprintf("b1:%d", 9000+i), "DB", "db:5432", fmt.Sprintf("q1-%d", i), 60)
		label(p, "GET /part")
		label(q, "SELECT")
		at += 10
	}
	// B2: part requests in overlapping pairs, none isolated
	for i := range 3 {
		for j := range 2 {
			k := 2*i + j
			p, _ := b.rpc(at+float64(j), at+5+float64(j), "F", fmt.Sprintf("f:%d", 20+k), "B2", "b2:80", fmt.Sprintf("p2-%d", k), 100)
			q, _ := b.rpc(at+2+float64(j), at+3+float64(j), "B2", fmt.Sprintf("b2:%d", 9000+k), "DB", "db:5432", fmt.Sprintf("q2-%d", k), 60)
			label(p, "GET /part")
			label(q, "SELECT")
		}
		at += 10
	}
	// B3: isolated part requests that call a cache B2 never calls
	for i := range 5 {
		p, _ := b.rpc(at, at+3, "F", fmt.Sprintf("f:%d", 40+i), "B3", "b3:80", fmt.Sprintf("p3-%d", i), 100)
		q, _ := b.rpc(at+1, at+2, "B3", fmt.Sprintf("b3:%d", 9000+i), "C", "c:11211", fmt.Sprintf("q3-%d", i), 60)
		label(p, "GET /part")
		label(q, "get")
		at += 10
	}
	_, r := runOn(t, b, DefaultOptions())
	node := func(name string) int32 {
		for i, sym := range r.l.nodeSym {
			if b.t.Str(sym) == name {
				return int32(i)
			}
		}
		t.Fatalf("no node %s", name)
		return -1
	}
	b1, b2 := node("B1"), node("B2")
	if n := len(r.isoSamples[b2]); n != 0 {
		t.Fatalf("B2 has %d isolated requests of its own, want none", n)
	}
	got := r.replicaSamples(b2)
	if len(got) != 5 {
		t.Fatalf("B2 borrows %d requests, want B1's 5", len(got))
	}
	pk, qk := r.calls[r.parentsOf[b2][0]].kind, r.calls[r.childrenOf[b2][0]].kind
	for _, s := range got {
		if r.calls[s.p].callee != b1 || len(s.kids) != 1 {
			t.Fatalf("borrowed request %d (callee %d, %d calls), want one of B1's with its query", s.p, r.calls[s.p].callee, len(s.kids))
		}
		if k := s.kindAt(r.calls[s.p].kind); k != pk {
			t.Errorf("B1's part request is kind %d at B2, want %d", k, pk)
		}
		if k := s.kindAt(r.calls[s.kids[0]].kind); k != qk {
			t.Errorf("B1's query is kind %d at B2, want %d", k, qk)
		}
	}
	if got := r.replicaSamples(b1); len(got) != 0 {
		t.Errorf("B1 borrows %d requests, want none (B3's call a cache it never calls)", len(got))
	}
}

// TestPassPlan covers when a node's passes stop: after Passes when its
// assignment has settled, else when a pass moves few calls or at
// MaxPasses; and, when an extra pass leaves more requests without a call
// or more calls without a request (EM collapsing), after one more pass
// with the same model.
func TestPassPlan(t *testing.T) {
	settled := passStats{moved: 5, calls: 100, noCall: 10, reqs: 100, noReq: 2}
	moving := passStats{moved: 40, calls: 100, noCall: 10, reqs: 100, noReq: 2}
	for _, tc := range []struct {
		name       string
		min, max   int
		stats      []passStats // after each pass but the last
		wantPasses int
		wantKeep   bool
	}{
		{"settled after the minimum", 3, 8, []passStats{moving, settled}, 3, false},
		{"no more than the minimum allowed", 3, 3, []passStats{moving, moving}, 3, false},
		{"moving: more passes until settled", 3, 8, []passStats{moving, moving, moving, settled}, 5, false},
		{"moving: up to the most", 3, 5, []passStats{moving, moving, moving, moving}, 5, false},
		{"one pass", 1, 8, nil, 1, false},
		{"two passes: nothing to compare after the first", 2, 8, []passStats{moving}, 2, false},
		{"requests losing every call", 3, 8, []passStats{moving, moving, {moved: 40, calls: 100, noCall: 13, reqs: 100, noReq: 2}}, 4, true},
		{"calls going to no request", 3, 8, []passStats{moving, moving, {moved: 40, calls: 100, noCall: 10, reqs: 100, noReq: 5}}, 4, true},
		{"a rise within the noise", 3, 8, []passStats{moving, moving, {moved: 40, calls: 100, noCall: 12, reqs: 100, noReq: 4}, settled}, 5, false},
		{"a rise within the minimum passes is no collapse", 3, 8, []passStats{moving, {moved: 40, calls: 100, noCall: 30, reqs: 100, noReq: 2}, settled}, 4, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl := &passPlan{min: tc.min, max: max(tc.min, tc.max)}
			keep, passes := false, 0
			for pass := 0; ; pass++ {
				passes++
				if pl.last(pass) {
					break
				}
				if pass >= len(tc.stats) {
					t.Fatalf("pass %d is not the last, and the test has no statistics for it", pass)
				}
				keep = pl.decide(pass, tc.stats[pass])
			}
			if passes != tc.wantPasses || keep != tc.wantKeep {
				t.Errorf("%d passes, last keeping the model %v; want %d, %v", passes, keep, tc.wantPasses, tc.wantKeep)
			}
		})
	}
}
