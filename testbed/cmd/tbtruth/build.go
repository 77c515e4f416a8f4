package main

import (
	"sort"

	"github.com/wirepath/wirepath/causal/truth"
)

// connKey names a connection as its client saw it.
type connKey struct{ proto, client, server string }

// placed is one call before the connections are numbered.
type placed struct {
	key          connKey
	inside       [2]string
	ord          int
	t            int64
	call, ret    int
	caller       string
	callee       string
	callerHost   string
	calleeHost   string
	connAssigned int
	mux          bool // the connection multiplexes calls: ordinals are by stream
}

// spec describes one call to add.
type spec struct {
	proto, client, server      string
	clientInside, serverInside string
	ord                        int
	retOrd                     int    // the RETURN's ordinal, when it differs (multiplexed)
	stream                     uint64 // the multiplexing key (HTTP/2 stream id), 0 on serial connections
	label                      string
	callSend, callRecv         int64
	retSend, retRecv           int64
}

type builder struct {
	cfg     *config
	f       *truth.File
	placed  []*placed
	checks  map[string]*truth.Check
	order   []string
	clients map[string]bool // the client's nonces
}

func newBuilder(cfg *config) *builder {
	return &builder{cfg: cfg, checks: map[string]*truth.Check{}, clients: map[string]bool{},
		f: &truth.File{Meta: truth.Meta{Variant: cfg.Variant, Tracing: cfg.Tracing, InFlight: cfg.InFlight,
			Requests: cfg.Requests, Seed: cfg.Seed, WindowStartNS: cfg.WindowStartNS, WindowEndNS: cfg.WindowEndNS}}}
}

// check counts one consistency check.
func (b *builder) check(name string, ok bool) bool {
	c := b.checks[name]
	if c == nil {
		c = &truth.Check{Name: name}
		b.checks[name] = c
		b.order = append(b.order, name)
	}
	if ok {
		c.Held++
	} else {
		c.Failed++
	}
	return ok
}

func (b *builder) inWindow(t0, t1 int64) bool {
	return t0 >= b.cfg.WindowStartNS && t1 <= b.cfg.WindowEndNS
}

// call adds a CALL, then what the callee did (inside returns the message
// whose arrival caused the reply, or -1 for the CALL itself), then the
// RETURN. It returns the ids of the CALL and the RETURN.
func (b *builder) call(req, parent, callParent int, s spec, inside func(call int) int) (int, int) {
	fs := b.f
	id := len(fs.Messages)
	from, to := b.tier(s.client), b.tier(s.server)
	if s.serverInside != "" {
		to = b.tier(s.serverInside)
	}
	fs.Messages = append(fs.Messages, truth.Message{ID: id, Request: req, Ordinal: s.ord, Dir: truth.Call,
		Label: s.label, From: from, To: to, SendNS: s.callSend, RecvNS: s.callRecv,
		Parent: parent, Call: id, CallParent: callParent, Stream: s.stream})
	fs.Requests[req].Calls++
	retParent := -1
	if inside != nil {
		retParent = inside(id)
	}
	if retParent < 0 {
		retParent = id
	}
	ret := len(fs.Messages)
	retOrd := s.ord
	if s.stream != 0 {
		retOrd = s.retOrd
	}
	fs.Messages = append(fs.Messages, truth.Message{ID: ret, Request: req, Ordinal: retOrd, Dir: truth.Return,
		Label: s.label, From: to, To: from, SendNS: s.retSend, RecvNS: s.retRecv,
		Parent: retParent, Call: id, CallParent: callParent, Stream: s.stream})
	p := &placed{key: connKey{s.proto, s.client, s.server}, inside: [2]string{s.clientInside, s.serverInside},
		ord: s.ord, t: fs.Messages[id].Time(), call: id, ret: ret, caller: from, callee: to,
		callerHost: b.host(s.client), calleeHost: b.host(s.server), mux: s.stream != 0}
	if s.serverInside != "" {
		p.calleeHost = b.host(s.serverInside)
	}
	b.placed = append(b.placed, p)
	return id, ret
}

func (b *builder) newRequest(kind, path string, status int, bg bool) int {
	id := len(b.f.Requests)
	b.f.Requests = append(b.f.Requests, truth.Request{ID: id, Kind: kind, Path: path, Status: status,
		Background: bg, Root: len(b.f.Messages)})
	return id
}

func (b *builder) build(in *logsIn) *truth.File {
	b.check("nonces_unique", in.dupHops == 0)
	for _, cr := range in.client {
		b.clients[cr.Hop] = true
	}
	b.check("nonces_distinct_across_hops", distinctNonces(in))
	for _, cr := range sortedClient(in.client) {
		b.request(in, cr)
	}
	for _, r := range in.bg {
		b.background(in, r)
	}
	b.orphans(in)
	b.numberConns()
	for _, name := range b.order {
		b.f.Meta.Checks = append(b.f.Meta.Checks, *b.checks[name])
	}
	return b.f
}

// request adds one client request and everything it caused.
func (b *builder) request(in *logsIn, cr *clientRec) {
	b.check("request_answered", cr.Status != 0)
	b.check("request_in_window", b.inWindow(cr.SendNS, cr.RecvNS))
	ng := in.nginx[cr.Hop]
	if !b.check("request_reached_nginx", ng != nil) {
		return
	}
	ng.used = true
	b.check("nginx_ordinal_is_client_ordinal", atoi(ng.ConnReq)-1 == cr.Ord)
	kind := cr.Kind
	var app *serverRec
	if ng.Upstream != "" {
		app = in.app[ng.RID]
		if b.check("nginx_request_reached_app", app != nil) {
			app.used = true
			b.check("client_nonce_not_forwarded", !b.clients[app.Hop])
			if len(app.Calls) > 0 && app.Calls[0].Hit != nil && (kind == "item" || kind == "cart") {
				kind += map[bool]string{true: "-hit", false: "-miss"}[*app.Calls[0].Hit]
			}
		}
	} else {
		b.check("static_served_by_nginx", cr.Kind == "static")
	}
	if cr.Status == 0 || cr.Status >= 500 {
		kind = "error"
	}
	req := b.newRequest(kind, cr.Path, cr.Status, false)
	root := spec{proto: "tcp", client: cr.Local, server: cr.Remote, clientInside: ng.Remote, serverInside: ng.Server,
		ord: cr.Ord, label: label("GET", cr.Path), callSend: cr.SendNS, retRecv: cr.RecvNS}
	b.call(req, -1, -1, root, func(in0 int) int {
		if app == nil {
			return -1
		}
		up := spec{proto: "tcp", client: app.Peer, server: app.Local, ord: app.Ord, label: label("GET", app.Path),
			callRecv: app.RecvNS, retSend: app.SendNS}
		_, ret := b.call(req, in0, in0, up, func(in1 int) int { return b.appServe(in, req, in1, app) })
		return ret
	})
}

// appServe adds the application's sequential calls while serving the CALL
// in; it returns the message that caused the reply.
func (b *builder) appServe(in *logsIn, req, in1 int, app *serverRec) int {
	prev := in1
	for i := range app.Calls {
		c := &app.Calls[i]
		s := b.callSpec(c)
		var inside func(int) int
		if c.Svc == "tier2" {
			t2 := in.tier2[c.Hop]
			if b.check("app_call_reached_tier2", t2 != nil) {
				t2.used = true
				b.sameEnds("tier2", c, t2)
				s.callRecv, s.retSend = t2.RecvNS, t2.SendNS
				inside = func(in2 int) int { return b.fanOut(in, req, in2, t2) }
			}
		}
		_, prev = b.call(req, prev, in1, s, inside)
	}
	return prev
}

// fanOut adds tier2's parallel calls while serving the CALL in2; the reply
// was caused by the last of their replies to arrive.
func (b *builder) fanOut(in *logsIn, req, in2 int, t2 *serverRec) int {
	last, lastT := -1, int64(0)
	for i := range t2.Calls {
		c := &t2.Calls[i]
		s, inside := b.backendSpec(in, req, c)
		_, ret := b.call(req, in2, in2, s, inside)
		if c.RecvNS >= lastT {
			last, lastT = ret, c.RecvNS
		}
	}
	return last
}

// backendSpec is a call from tier2 to a backend, with the backend's times,
// and what the backend did while serving it (its queries to PostgreSQL).
func (b *builder) backendSpec(in *logsIn, req int, c *callRec) (spec, func(int) int) {
	s := b.callSpec(c)
	be := in.backends[c.Hop]
	if !b.check("tier2_call_reached_backend", be != nil) {
		return s, nil
	}
	be.used = true
	b.sameEnds("backend", c, be)
	s.callRecv, s.retSend = be.RecvNS, be.SendNS
	if len(be.Calls) == 0 {
		return s, nil
	}
	return s, func(in3 int) int { return b.sequential(req, in3, be.Calls) }
}

// sequential adds the calls a server made one after the other while
// serving the CALL in (calls no other tier logs the other end of); it
// returns the message that caused the reply.
func (b *builder) sequential(req, in int, calls []callRec) int {
	prev := in
	for i := range calls {
		_, prev = b.call(req, prev, in, b.callSpec(&calls[i]), nil)
	}
	return prev
}

// sameEnds checks that the callee named the connection and the ordinal as
// the caller did (over HTTP/2 the callee cannot see the stream: it logs
// ordinal -1, and the caller's stream and response ordinal are checked
// present instead).
func (b *builder) sameEnds(what string, c *callRec, srv *serverRec) {
	b.check(what+"_endpoints_agree", srv.Peer == c.Local && srv.Local == c.Remote)
	if c.Stream != 0 {
		b.check(what+"_stream_known", c.ROrd != nil && srv.Ord == -1)
		return
	}
	b.check(what+"_ordinal_agrees", srv.Ord == c.Ord)
}

func (b *builder) callSpec(c *callRec) spec {
	lbl := c.Svc + " " + c.Op
	if c.Svc == "tier2" || c.Svc == "backend" {
		lbl = label(c.Op, c.Key)
	}
	s := spec{proto: c.Proto, client: c.Local, server: c.Remote, ord: c.Ord, label: lbl,
		callSend: c.SendNS, retRecv: c.RecvNS, stream: c.Stream}
	if c.ROrd != nil {
		s.retOrd = *c.ROrd
	}
	return s
}

// background adds one background job's call if it lies in the window.
func (b *builder) background(in *logsIn, r *serverRec) {
	if len(r.Calls) != 1 {
		b.check("background_job_is_one_call", false)
		return
	}
	c := &r.Calls[0]
	if !b.inWindow(c.SendNS, c.RecvNS) {
		if c.Svc == "backend" {
			if be := in.backends[c.Hop]; be != nil {
				be.used = true
			}
		}
		return
	}
	req := b.newRequest("bg-"+r.Job, c.Key, 0, true)
	s := b.callSpec(c)
	var inside func(int) int
	if c.Svc == "backend" {
		s, inside = b.backendSpec(in, req, c)
	}
	b.call(req, -1, -1, s, inside)
}

// orphans checks that every request a server logged in the window belongs
// to a request of the truth.
func (b *builder) orphans(in *logsIn) {
	for _, ng := range in.nginx {
		b.check("nginx_request_claimed", ng.used)
	}
	for _, m := range []map[string]*serverRec{in.app, in.tier2, in.backends} {
		for _, r := range m {
			if b.inWindow(r.RecvNS, r.RecvNS) {
				b.check("server_request_claimed", r.used)
			}
		}
	}
}

// numberConns splits the calls on each client-side 4-tuple into
// connections (a new one starts where the ordinal does not grow: a reused
// port) and numbers them by first use.
func (b *builder) numberConns() {
	byKey := map[connKey][]*placed{}
	for _, p := range b.placed {
		byKey[p.key] = append(byKey[p.key], p)
	}
	var firsts []*placed
	for _, ps := range byKey {
		sort.Slice(ps, func(i, j int) bool {
			if ps[i].mux && ps[j].mux {
				// concurrent calls: their send times need not follow
				// their streams' order
				return ps[i].ord < ps[j].ord
			}
			if ps[i].t != ps[j].t {
				return ps[i].t < ps[j].t
			}
			return ps[i].ord < ps[j].ord
		})
		for i, p := range ps {
			if i == 0 || p.ord <= ps[i-1].ord {
				firsts = append(firsts, p)
				p.connAssigned = -1
				continue
			}
			// (a multiplexed connection's background call that straddles
			// the window's edge leaves a hole among the streams)
			b.check("ordinals_consecutive", p.ord == ps[i-1].ord+1 || p.mux && p.ord > ps[i-1].ord)
			b.check("nat_names_agree", p.inside == ps[i-1].inside)
			p.connAssigned = -2 // same as the previous
		}
	}
	sort.Slice(firsts, func(i, j int) bool { return firsts[i].t < firsts[j].t })
	for id, p := range firsts {
		b.f.Conns = append(b.f.Conns, truth.Conn{ID: id, Proto: p.key.proto, Client: p.key.client, Server: p.key.server,
			ClientInside: p.inside[0], ServerInside: p.inside[1], Caller: p.caller, Callee: p.callee,
			CallerHost: p.callerHost, CalleeHost: p.calleeHost})
		p.connAssigned = id
	}
	for _, ps := range byKey {
		for i, p := range ps {
			if p.connAssigned == -2 {
				p.connAssigned = ps[i-1].connAssigned
			}
			b.f.Messages[p.call].Conn = p.connAssigned
			b.f.Messages[p.ret].Conn = p.connAssigned
		}
	}

}

// distinctNonces reports whether every per-hop nonce was sent on one hop
// only: the client's, nginx's ($request_id), the application's to tier2
// and tier2's to the backends. A nonce shared by a parent request and its
// child would be causal evidence the engines could use; the testbed's
// nonces must give none.
func distinctNonces(in *logsIn) bool {
	seen := map[string]bool{}
	fresh := func(n string) bool {
		if n == "" || seen[n] {
			return false
		}
		seen[n] = true
		return true
	}
	ok := true
	for _, cr := range in.client {
		ok = fresh(cr.Hop) && ok
	}
	for _, ng := range in.nginx {
		ok = fresh(ng.RID) && ok
	}
	for _, m := range []map[string]*serverRec{in.app, in.tier2} {
		for _, r := range m {
			for _, c := range r.Calls {
				if c.Hop != "" {
					ok = fresh(c.Hop) && ok
				}
			}
		}
	}
	for _, r := range in.bg {
		for _, c := range r.Calls {
			if c.Hop != "" {
				ok = fresh(c.Hop) && ok
			}
		}
	}
	return ok
}
