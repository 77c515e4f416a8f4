package assembly

import (
	"testing"
	"time"

	"github.com/wirepath/wirepath/trace"
)

// TestExactLinksAndConstraints: which requests of node N a call N makes can
// belong to (the hard constraints, with the tolerance), and which links the
// trace gives exactly (a request id shared with one candidate only; the
// thread that received a request and served no other meanwhile).
func TestExactLinksAndConstraints(t *testing.T) {
	// Two requests into N: P1 open from 0 to 20 ms, P2 from 5 to 30 ms
	// (times are sends; arrivals are 0.1 ms later).
	base := func(b *tb) (p1, p2 int32) {
		p1, _ = b.rpc(0, 20, "C", "c:1", "N", "n:80", "p1", 100)
		p2, _ = b.rpc(5, 30, "C", "c:2", "N", "n:80", "p2", 100)
		return p1, p2
	}
	for _, tc := range []struct {
		name     string
		tol      time.Duration
		build    func(b *tb) (child, want int32) // want: the exact parent's CALL, -1 none
		cands    int32
		evidence string
	}{
		{
			name: "request id shared with one candidate",
			build: func(b *tb) (int32, int32) {
				p1, p2 := base(b)
				c, _ := b.rpc(10, 12, "N", "n:5000", "S", "s:6379", "k", 30)
				b.ev(p1).ReqID, b.ev(p2).ReqID, b.ev(c).ReqID = b.t.Intern("x-request-id:a"), b.t.Intern("x-request-id:b"), b.t.Intern("x-request-id:b")
				return c, p2
			},
			cands: 2, evidence: "exact-id",
		},
		{
			name: "request id shared with two candidates",
			build: func(b *tb) (int32, int32) {
				p1, p2 := base(b)
				c, _ := b.rpc(10, 12, "N", "n:5000", "S", "s:6379", "k", 30)
				id := b.t.Intern("traceparent:7")
				b.ev(p1).ReqID, b.ev(p2).ReqID, b.ev(c).ReqID = id, id, id
				return c, -1
			},
			cands: 2,
		},
		{
			name: "the thread that received the request, and served no other",
			build: func(b *tb) (int32, int32) {
				p1, p2 := base(b)
				c, _ := b.rpc(10, 12, "N", "n:5000", "S", "s:6379", "k", 30)
				b.ev(p1).Receiver = trace.Task{PID: 9, TID: 1}
				b.ev(p2).Receiver = trace.Task{PID: 9, TID: 2}
				b.ev(c).Sender = trace.Task{PID: 9, TID: 1}
				return c, p1
			},
			cands: 2, evidence: "thread",
		},
		{
			name: "a thread that interleaves two requests is no proof",
			build: func(b *tb) (int32, int32) {
				p1, p2 := base(b)
				c, _ := b.rpc(10, 12, "N", "n:5000", "S", "s:6379", "k", 30)
				b.ev(p1).Receiver = trace.Task{PID: 9, TID: 1}
				b.ev(p2).Receiver = trace.Task{PID: 9, TID: 1}
				b.ev(c).Sender = trace.Task{PID: 9, TID: 1}
				return c, -1
			},
			cands: 2,
		},
		{
			name: "sent before the request arrived",
			build: func(b *tb) (int32, int32) {
				base(b)
				c, _ := b.rpc(2, 4, "N", "n:5000", "S", "s:6379", "k", 30)
				return c, -1
			},
			cands: 1,
		},
		{
			name: "sent before the request arrived, within the tolerance",
			tol:  4 * time.Millisecond,
			build: func(b *tb) (int32, int32) {
				base(b)
				c, _ := b.rpc(2, 4, "N", "n:5000", "S", "s:6379", "k", 30)
				return c, -1
			},
			cands: 2,
		},
		{
			name: "answered after the request's reply left",
			build: func(b *tb) (int32, int32) {
				base(b)
				c, _ := b.rpc(10, 25, "N", "n:5000", "S", "s:6379", "k", 30)
				return c, -1
			},
			cands: 1,
		},
		{
			name: "answer not seen",
			build: func(b *tb) (int32, int32) {
				base(b)
				c, _ := b.rpc(10, -1, "N", "n:5000", "S", "s:6379", "k", 30)
				return c, -1
			},
			cands: 2,
		},
		{
			name: "no request open",
			build: func(b *tb) (int32, int32) {
				base(b)
				c, _ := b.rpc(40, 41, "N", "n:5000", "S", "s:6379", "k", 30)
				return c, -1
			},
			cands: 0, evidence: "background",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newTB()
			child, want := tc.build(b)
			o := DefaultOptions()
			o.Tolerance = tc.tol
			res, r := runOn(t, b, o)
			c := r.callOf(child)
			if got := r.nCand[c]; got != tc.cands {
				t.Errorf("candidates %d, want %d", got, tc.cands)
			}
			gotExact := int32(-1)
			if r.exact[c] >= 0 {
				gotExact = r.calls[r.exact[c]].callMsg
			}
			if gotExact != want {
				t.Errorf("exact parent %d, want %d", gotExact, want)
			}
			if want >= 0 && r.parentMsg(child) != want {
				t.Errorf("parent %d, want the exact one %d", r.parentMsg(child), want)
			}
			if tc.evidence != "" {
				if ev := evidenceOf(res, child); ev != tc.evidence {
					t.Errorf("evidence %q, want %q", ev, tc.evidence)
				}
			}
		})
	}
}
