package report

import (
	"errors"
	"testing"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

// ownShop is the shop's result with its instances also as the requests an
// assembling engine gives (Result.Requests): per link a confidence and
// its evidence, the RETURNs paired with their CALLs.
func ownShop() (*causal.Result, *trace.Trace) {
	tr, insts := shopTrace()
	res := resultOf(tr, insts, "assembly", false, -1)
	for k, in := range insts {
		q := causal.Request{ID: k, Root: int(in.Nodes[0].Msg), Confidence: in.Prob}
		// page and lookup: CALL, CALL, RETURN, CALL, RETURN, RETURN; hit:
		// CALL, RETURN.
		calls := []int{0, 1, 1, 3, 3, 0}
		callParents := []int{-1, 0, 0, 0, 0, -1}
		if len(in.Nodes) == 2 {
			calls, callParents = []int{0, 0}, []int{-1, -1}
		}
		for i, n := range in.Nodes {
			m := causal.RequestMessage{Msg: int(n.Msg), Parent: int(n.Parent), Call: calls[i], CallParent: callParents[i],
				Kind: tr.Messages[n.Msg].Kind.String(), Confidence: in.Prob, Evidence: "joint-timing"}
			if m.Kind == "RETURN" {
				m.Confidence, m.Evidence = 1, "order"
			}
			if i == 0 {
				m.Confidence, m.Evidence = 1, "root"
			}
			q.Messages = append(q.Messages, m)
		}
		res.Requests = append(res.Requests, q)
	}
	return res, tr
}

// TestOwnRequests exports an engine's own requests: each with its links'
// confidence and evidence, an unseen RETURN and an unseen CALL placed on
// the nodes of the other message of their call, --top keeping the
// requests of the top patterns, a trace of another result refused.
func TestOwnRequests(t *testing.T) {
	hit := shopPageN + shopLookupN // the first hit request
	cases := []struct {
		name   string
		edit   func(*causal.Result)
		top    int
		want   int
		err    error
		unseen int // request whose message 1 is unseen, checked for its nodes
	}{
		{name: "all", want: shopPageN + shopLookupN + shopHitN, unseen: -1},
		{name: "unseen return", edit: func(r *causal.Result) { r.Requests[0].Messages[2].Msg = -1 }, want: shopPageN + shopLookupN + shopHitN, unseen: 0},
		{name: "unseen root call", edit: func(r *causal.Result) { r.Requests[hit].Messages[0].Msg = -1 }, want: shopPageN + shopLookupN + shopHitN, unseen: hit},
		{name: "top pattern", top: 1, want: shopPageN, unseen: -1},
		{name: "another trace", edit: func(r *causal.Result) { r.Trace.Messages++ }, err: ErrTraceMismatch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, tr := ownShop()
			if tc.edit != nil {
				tc.edit(res)
			}
			reqs, err := exportRequests(res, tr, tc.top)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if tc.err != nil {
				return
			}
			if len(reqs) != tc.want {
				t.Fatalf("%d requests, want %d", len(reqs), tc.want)
			}
			for i := range reqs {
				r := &reqs[i]
				// A request's pattern is that of the instance at its
				// first seen message (none when its root was unseen
				// here: the instances start at the root).
				if !r.Own || r.Instance != -1 || (r.Pattern == 0 || r.Signature == "") != (r.ID == tc.unseen && r.Msgs[0].Msg < 0) {
					t.Fatalf("request %d: own %v, instance %d, pattern %d %q", r.ID, r.Own, r.Instance, r.Pattern, r.Signature)
				}
				for k := range r.Msgs {
					m := &r.Msgs[k]
					if m.Evidence == "" || m.From == "" || m.To == "" {
						t.Errorf("request %d message %d: evidence %q, %s -> %s", r.ID, k, m.Evidence, m.From, m.To)
					}
				}
				if r.ID == tc.unseen {
					checkUnseen(t, r)
				}
			}
			doc, err := buildOTLP([]*causal.Result{res}, ExportOptions{Trace: tr, Top: tc.top})
			if err != nil {
				t.Fatal(err)
			}
			spans, evid := 0, 0
			for _, rs := range doc.ResourceSpans {
				for _, s := range rs.ScopeSpans[0].Spans {
					spans++
					if s.StartTimeUnixNano[0] == '-' || s.EndTimeUnixNano < s.StartTimeUnixNano && len(s.EndTimeUnixNano) == len(s.StartTimeUnixNano) {
						t.Errorf("span %s %s: %s to %s", s.SpanID, s.Name, s.StartTimeUnixNano, s.EndTimeUnixNano)
					}
					for _, a := range s.Attributes {
						if a.Key == "wirepath.link.evidence" {
							evid++
						}
					}
				}
			}
			if spans == 0 || evid != spans {
				t.Errorf("%d spans, %d with wirepath.link.evidence", spans, evid)
			}
		})
	}
}

// checkUnseen checks that the unseen messages of r lie on the nodes of
// the other message of their call, the other way round.
func checkUnseen(t *testing.T, r *request) {
	t.Helper()
	ret := returnsOf(r)
	n := 0
	for i := range r.Msgs {
		m := &r.Msgs[i]
		if m.Msg >= 0 {
			continue
		}
		n++
		other := m.Call
		if m.Call == i {
			other = ret[i]
		}
		if o := &r.Msgs[other]; m.From != o.To || m.To != o.From || m.Src != o.Dst {
			t.Errorf("unseen message %d: %s -> %s (%s), its call's other message %s -> %s (%s)", i, m.From, m.To, m.Src, o.From, o.To, o.Dst)
		}
	}
	if n != 1 {
		t.Errorf("%d unseen messages, want 1", n)
	}
}
