package score

import (
	"bytes"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/truth"
	"github.com/wirepath/wirepath/trace"
)

const t0 = int64(1_700_000_000_000_000_000)

// fixture is a hand-made truth and the trace a perfect capture of it
// would give.
type fixture struct {
	f *truth.File
	// inside picks the connections whose trace messages carry the names
	// the server saw (across the NAT), as canonicalisation may leave them.
	inside map[int]bool
}

func (x *fixture) conn(proto, client, server, cin, sin, caller, callee string) int {
	id := len(x.f.Conns)
	x.f.Conns = append(x.f.Conns, truth.Conn{ID: id, Proto: proto, Client: client, Server: server,
		ClientInside: cin, ServerInside: sin, Caller: caller, Callee: callee})
	return id
}

func (x *fixture) request(kind string, bg bool) int {
	id := len(x.f.Requests)
	x.f.Requests = append(x.f.Requests, truth.Request{ID: id, Kind: kind, Background: bg, Root: len(x.f.Messages)})
	return id
}

// call adds a CALL at time at (µs after t0) and, via inside, what it
// caused, then its RETURN dur µs after the last message inside.
func (x *fixture) call(req, parent, callParent, conn, ord int, at int64, inside func(call int) (last int, end int64)) (int, int64) {
	c := &x.f.Conns[conn]
	id := len(x.f.Messages)
	x.f.Messages = append(x.f.Messages, truth.Message{ID: id, Request: req, Conn: conn, Ordinal: ord, Dir: truth.Call,
		From: c.Caller, To: c.Callee, SendNS: t0 + at*1000, RecvNS: t0 + (at+10)*1000, Parent: parent, Call: id, CallParent: callParent})
	x.f.Requests[req].Calls++
	last, end := id, at+20
	if inside != nil {
		last, end = inside(id)
	}
	ret := len(x.f.Messages)
	x.f.Messages = append(x.f.Messages, truth.Message{ID: ret, Request: req, Conn: conn, Ordinal: ord, Dir: truth.Return,
		From: c.Callee, To: c.Caller, SendNS: t0 + end*1000, RecvNS: t0 + (end+10)*1000, Parent: last, Call: id, CallParent: callParent})
	return ret, end + 20
}

// newFixture makes two overlapping requests client→web→app→redis, whose
// Redis calls share one pooled connection, and a background Redis call on
// the same connection. Messages: request 0 is 0..5, request 1 is 6..11,
// the background call 12, 13.
func newFixture() *fixture {
	x := &fixture{f: &truth.File{Meta: truth.Meta{Variant: "ids", Tracing: "sniffed", InFlight: 2,
		WindowStartNS: t0, WindowEndNS: t0 + 10_000_000}}, inside: map[int]bool{}}
	redis := x.conn("tcp", "192.0.2.1:41000", "192.0.2.2:6379", "", "", "app", "redis")
	for r, port := range []string{"40000", "40002"} {
		base := int64(r * 100)
		front := x.conn("tcp", "198.51.100.2:"+port, "198.51.100.100:80", "203.0.113.1:"+port, "203.0.113.11:80", "client", "web")
		up := x.conn("tcp", "203.0.113.11:5000"+string(rune('0'+r)), "203.0.113.21:8080", "", "", "web", "app")
		req := x.request("item", false)
		x.call(req, -1, -1, front, 0, base, func(c0 int) (int, int64) {
			return x.call(req, c0, c0, up, 0, base+30, func(c1 int) (int, int64) {
				return x.call(req, c1, c1, redis, r, base+60, nil)
			})
		})
	}
	bg := x.request("bg-refresh", true)
	x.call(bg, -1, -1, redis, 2, 400, nil)
	// the first request's front connection named outside the NAT, the
	// second's inside
	x.inside[x.f.Messages[6].Conn] = true
	if err := x.f.Check(); err != nil {
		panic(err)
	}
	return x
}

// traceOf returns the trace of every true message but those in drop, in
// time order, and each trace message's true message.
func (x *fixture) traceOf(drop map[int]bool, dup int) (*trace.Trace, []int) {
	t := &trace.Trace{}
	var of []int
	add := func(i int) {
		m := &x.f.Messages[i]
		c := &x.f.Conns[m.Conn]
		cl, sv := c.Client, c.Server
		if x.inside[m.Conn] {
			cl, sv = c.ClientInside, c.ServerInside
		}
		src, dst := cl, sv
		if m.Dir == truth.Return {
			src, dst = sv, cl
		}
		kind := trace.KindCall
		if m.Dir == truth.Return {
			kind = trace.KindReturn
		}
		t.Messages = append(t.Messages, trace.Message{SendTS: trace.Timestamp(m.SendNS), RecvTS: trace.Timestamp(m.RecvNS),
			Src: t.Intern(src), Dst: t.Intern(dst), SrcNode: t.Intern(src), DstNode: t.Intern(dst), Kind: kind, Proto: trace.ProtoTCP})
		of = append(of, i)
	}
	for i := range x.f.Messages {
		if !drop[i] {
			add(i)
		}
		if i == dup { // the second part of a split message, 50 µs later
			add(i)
			t.Messages[len(t.Messages)-1].SendTS += 50_000
		}
	}
	return t, of
}

// treeResult makes a result whose instances are the trees of parent (true
// message ids, -1 for a root); messages missing from the trace are left
// out, their children hung under their parents.
func treeResult(t *trace.Trace, of []int, parent map[int]int) *causal.Result {
	idx := map[int]int{}
	for ti, fi := range of {
		if _, dup := idx[fi]; !dup {
			idx[fi] = ti
		}
	}
	kids := map[int][]int{}
	var roots []int
	for fi := range idx {
		p := parent[fi]
		for p >= 0 {
			if _, ok := idx[p]; ok {
				break
			}
			p = parent[p]
		}
		if p < 0 {
			roots = append(roots, fi)
		} else {
			kids[p] = append(kids[p], fi)
		}
	}
	res := &causal.Result{Version: causal.ResultVersion, Engine: "test"}
	for _, r := range sortInts(roots) {
		pat := causal.Pattern{}
		var ids []int
		var walk func(fi, parentHop int)
		walk = func(fi, parentHop int) {
			h := causal.Hop{ID: len(pat.Hops)}
			if parentHop >= 0 {
				p := parentHop
				h.Parent = &p
			}
			pat.Hops = append(pat.Hops, h)
			ids = append(ids, idx[fi])
			for _, k := range sortInts(kids[fi]) {
				walk(k, h.ID)
			}
		}
		walk(r, -1)
		pat.Instances = []causal.InstanceRecord{{Messages: ids, Probability: 1}}
		res.Patterns = append(res.Patterns, pat)
	}
	return res
}

// requestResult lists the instances of res as requests (the assembly
// engine's form): each message with its parent, and the call it belongs
// to and its call's parent call, as the instances' call trees give them.
func requestResult(t *trace.Trace, res *causal.Result) *causal.Result {
	out := &causal.Result{Version: causal.ResultVersion, Engine: "requests"}
	for _, pat := range res.Patterns {
		for _, in := range pat.Instances {
			ids := in.Messages
			parent := func(i int) int {
				if pat.Hops[i].Parent == nil {
					return -1
				}
				return *pat.Hops[i].Parent
			}
			ct := buildCallTree(msgTree{n: len(ids), parent: parent,
				kind: func(i int) trace.Kind { return t.Messages[ids[i]].Kind },
				from: func(i int) string { return t.Str(t.Messages[ids[i]].Src) },
				to:   func(i int) string { return t.Str(t.Messages[ids[i]].Dst) }})
			q := causal.Request{ID: len(out.Requests), Root: ids[0], Confidence: in.Probability}
			for i, id := range ids {
				c := ct.of[i]
				cp := -1
				if pc := ct.parent[c]; pc >= 0 {
					cp = int(ct.opener[pc])
				}
				q.Messages = append(q.Messages, causal.RequestMessage{Msg: id, Parent: parent(i), Call: int(ct.opener[c]),
					CallParent: cp, Kind: t.Messages[id].Kind.String()})
			}
			out.Requests = append(out.Requests, q)
		}
	}
	return out
}

func sortInts(a []int) []int {
	b := append([]int(nil), a...)
	for i := 1; i < len(b); i++ {
		for j := i; j > 0 && b[j] < b[j-1]; j-- {
			b[j], b[j-1] = b[j-1], b[j]
		}
	}
	return b
}

func trueParents(f *truth.File) map[int]int {
	p := map[int]int{}
	for _, m := range f.Messages {
		p[m.ID] = m.Parent
	}
	return p
}

func TestScoreRequests(t *testing.T) {
	type want struct {
		right, observed                 int
		redisRight, webAppRight         int
		bgRight                         int
		msgRight, msgAll                int
		truthUnmatched, surplus, alignd int
	}
	cases := []struct {
		name string
		drop map[int]bool
		dup  int
		edit func(p map[int]int)
		want want
	}{
		{name: "oracle", dup: -1,
			want: want{right: 2, observed: 2, redisRight: 2, webAppRight: 2, bgRight: 1, msgRight: 14, msgAll: 14}},
		{name: "redis calls swapped between the requests", dup: -1,
			edit: func(p map[int]int) { p[2], p[8], p[4], p[10] = 7, 1, 9, 3 },
			want: want{right: 0, observed: 2, redisRight: 0, webAppRight: 2, bgRight: 1, msgRight: 10, msgAll: 14}},
		{name: "background call pulled into a request", dup: -1,
			edit: func(p map[int]int) { p[12] = 3 },
			want: want{right: 1, observed: 2, redisRight: 2, webAppRight: 2, bgRight: 0, msgRight: 13, msgAll: 14}},
		{name: "a RETURN hung in the other request", dup: -1,
			edit: func(p map[int]int) { p[3] = 8; p[4] = 2 },
			want: want{right: 0, observed: 2, redisRight: 1, webAppRight: 2, bgRight: 1, msgRight: 12, msgAll: 14}},
		{name: "web→app call made a root", dup: -1,
			edit: func(p map[int]int) { p[1] = -1 },
			want: want{right: 1, observed: 2, redisRight: 2, webAppRight: 1, bgRight: 1, msgRight: 13, msgAll: 14}},
		{name: "a Redis RETURN lost by every sniffer", drop: map[int]bool{3: true}, dup: -1,
			want: want{right: 1, observed: 1, redisRight: 2, webAppRight: 2, bgRight: 1, msgRight: 12, msgAll: 13,
				truthUnmatched: 1, alignd: 2}},
		{name: "a message split in two", dup: 1,
			want: want{right: 2, observed: 2, redisRight: 2, webAppRight: 2, bgRight: 1, msgRight: 14, msgAll: 14, surplus: 1, alignd: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			x := newFixture()
			tr, of := x.traceOf(tc.drop, tc.dup)
			p := trueParents(x.f)
			if tc.edit != nil {
				tc.edit(p)
			}
			res := treeResult(tr, of, p)
			s := NewRequestScores([]*causal.Result{res, requestResult(tr, res)}, tr, x.f, DefaultMapOptions())
			r := s.Engines[0]
			if rq := s.Engines[1]; rq.Requests != r.Requests || rq.Messages != r.Messages || rq.Background != r.Background || rq.Unplaced != r.Unplaced {
				t.Errorf("scored from requests: %+v %+v %+v; from instances: %+v %+v %+v", rq.Requests, rq.Messages, rq.Background, r.Requests, r.Messages, r.Background)
			}
			if c := s.Engines[1].Calibration; r.Calibration != nil || c == nil ||
				c.Requests.N != r.Requests.Observed || c.Requests.Right != r.Requests.Right || c.JointLinks.N != 0 {
				t.Errorf("calibration from instances %+v, from requests %+v (requests %+v)", r.Calibration, c, r.Requests)
			}
			links := map[string]LinkCount{}
			for _, l := range r.Links {
				links[l.Link] = l
			}
			got := want{right: r.Requests.Right, observed: r.Requests.Observed,
				redisRight: links["app→redis"].Right, webAppRight: links["web→app"].Right, bgRight: r.Background.Right,
				msgRight: r.Messages.Right, msgAll: r.Messages.All,
				truthUnmatched: s.Mapping.TruthUnmatched, surplus: s.Mapping.TraceSurplus, alignd: s.Mapping.ByAlignment}
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
			if r.Requests.All != 2 || r.Roots.All != 2 || r.Background.All != 1 || !r.Instances {
				t.Errorf("requests %+v roots %+v background %+v instances %v", r.Requests, r.Roots, r.Background, r.Instances)
			}
			var buf bytes.Buffer
			if err := WriteRequestText(&buf, s); err != nil || !strings.Contains(buf.String(), "engine test:") {
				t.Errorf("text: %v\n%s", err, buf.String())
			}
		})
	}
}

// TestMapTraceNames checks the mapping itself: NAT names on either side,
// ordinals on a shared connection, and a port reused by a later connection.
func TestMapTraceNames(t *testing.T) {
	x := newFixture()
	// a second connection on the same names as the first request's, 5 s later
	later := x.conn("tcp", "198.51.100.2:40000", "198.51.100.100:80", "203.0.113.1:40000", "203.0.113.12:80", "client", "web")
	req := x.request("static", false)
	x.call(req, -1, -1, later, 0, 5_000_000, nil)
	x.f.Meta.WindowEndNS = t0 + 10_000_000_000
	if err := x.f.Check(); err != nil {
		t.Fatal(err)
	}
	tr, of := x.traceOf(nil, -1)
	m := MapTrace(tr, x.f, DefaultMapOptions())
	for ti, fi := range of {
		if got := m.TraceToTruth[ti]; got != int32(fi) {
			t.Errorf("trace message %d (%s→%s) matched %d, want %d", ti, tr.Str(tr.Messages[ti].Src), tr.Str(tr.Messages[ti].Dst), got, fi)
		}
	}
	if m.Stats.Matched != len(of) || m.Stats.TruthUnmatched != 0 || m.Stats.ByOrdinal != len(of) {
		t.Errorf("stats %+v", m.Stats)
	}
	// A message of an unknown connection, and one after the window.
	tr.Messages = append(tr.Messages, trace.Message{SendTS: trace.Timestamp(t0 + 1000), Src: tr.Intern("10.9.9.9:1"), Dst: tr.Intern("10.9.9.9:2"), Proto: trace.ProtoTCP},
		trace.Message{SendTS: trace.Timestamp(t0 + 20_000_000_000), Src: tr.Intern("10.9.9.9:1"), Dst: tr.Intern("10.9.9.9:2"), Proto: trace.ProtoTCP})
	m = MapTrace(tr, x.f, DefaultMapOptions())
	if m.Stats.TraceNoConn != 1 || m.Stats.TraceOutsideWindow != 1 {
		t.Errorf("unmatched: %+v", m.Stats)
	}
	if len(m.Stats.NoConnSeen) != 1 || !strings.Contains(m.Stats.NoConnSeen[0], "10.9.9.9:1→10.9.9.9:2") {
		t.Errorf("messages of no connection named %q, want the one at 10.9.9.9:1→10.9.9.9:2", m.Stats.NoConnSeen)
	}
}

func TestScoreRequestsNoInstances(t *testing.T) {
	x := newFixture()
	tr, _ := x.traceOf(nil, -1)
	res := &causal.Result{Engine: "convolution", Patterns: []causal.Pattern{{Hops: []causal.Hop{{ID: 0}}}}}
	r := ScoreRequests(res, tr, x.f, MapTrace(tr, x.f, DefaultMapOptions()))
	if r.Instances || r.Requests.Right != 0 {
		t.Errorf("a result without instances scored: %+v", r.Requests)
	}
}

// TestMapTraceStreams: three calls multiplexed on one connection whose
// responses arrive in another order than their requests, and whose trace
// messages' times tie: matched by their stream ids, not their order.
func TestMapTraceStreams(t *testing.T) {
	x := &fixture{f: &truth.File{Meta: truth.Meta{Variant: "ids", Tracing: "sniffed", InFlight: 3,
		WindowStartNS: t0, WindowEndNS: t0 + 10_000_000}}, inside: map[int]bool{}}
	c := x.conn("tcp", "203.0.113.41:40000", "203.0.113.51:9000", "", "", "tier2", "backend")
	retOrd := []int{2, 0, 1} // the first call's response arrives last
	for i := range 3 {
		req := x.request("bg-health", true)
		x.call(req, -1, -1, c, i, int64(10*i), nil)
		n := len(x.f.Messages)
		x.f.Messages[n-2].Stream, x.f.Messages[n-1].Stream = uint64(2*i+1), uint64(2*i+1)
		x.f.Messages[n-1].Ordinal = retOrd[i]
	}
	if err := x.f.Check(); err != nil {
		t.Fatal(err)
	}
	tr, of := x.traceOf(nil, -1)
	for i := range tr.Messages {
		tr.Messages[i].Stream = x.f.Messages[of[i]].Stream
		if tr.Messages[i].Kind == trace.KindReturn {
			tr.Messages[i].SendTS = trace.Timestamp(t0 + 500_000) // in one packet
		}
	}
	m := MapTrace(tr, x.f, DefaultMapOptions())
	for ti, fi := range of {
		if got := m.TraceToTruth[ti]; got != int32(fi) {
			t.Errorf("trace message %d matched %d, want %d", ti, got, fi)
		}
	}
	if m.Stats.ByStream != 6 || m.Stats.Matched != 6 {
		t.Errorf("stats %+v", m.Stats)
	}
}

// TestScoreRequestsUnseenCall: a request may list a call whose CALL no
// sniffer saw (its entry's msg is -1) and whose RETURN was; the RETURN's
// call then names no trace message. The scorer counts the request and
// does not read outside the mapping (it panicked on an index of -1).
func TestScoreRequestsUnseenCall(t *testing.T) {
	x := newFixture()
	tr, of := x.traceOf(nil, -1)
	res := treeResult(tr, of, trueParents(x.f))
	rq := requestResult(tr, res)
	cut := 0
	for qi := range rq.Requests {
		ms := rq.Requests[qi].Messages
		for i := range ms {
			if c := ms[i].Call; ms[i].Kind == "RETURN" && c >= 0 && c != i && ms[c].Msg >= 0 {
				ms[c].Msg = -1
				cut++
				break
			}
		}
	}
	if cut == 0 {
		t.Fatal("the fixture has no call to cut")
	}
	s := NewRequestScores([]*causal.Result{rq}, tr, x.f, DefaultMapOptions())
	r := s.Engines[0]
	if r.Requests.All != 2 || r.Requests.Right > r.Requests.Observed {
		t.Errorf("requests %+v", r.Requests)
	}
}
