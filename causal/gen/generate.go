package gen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"slices"
	"sort"

	"github.com/wirepath/wirepath/trace"
)

// DefaultMaxMessages is the most messages Generate produces unless told
// otherwise; a config that would produce more is refused.
const DefaultMaxMessages = 50_000_000

// Options tune Generate beyond the Config.
type Options struct {
	// MaxMessages bounds the generated messages (0: DefaultMaxMessages).
	MaxMessages int
}

// Output is a generated trace and its ground truth.
type Output struct {
	// Trace is what the sniffers saw: skewed timestamps, lost messages
	// removed, sorted by Message.Time.
	Trace *trace.Trace
	// Truth holds every generated message with true timestamps, its path
	// instance, its causal parent and its index in Trace.
	Truth *Truth
	Stats Stats

	// tokens holds, by truth index, the content tokens of each message
	// for the payloads of WritePcaps (nil without tokens).
	tokens [][]tokenID
}

// Stats summarise a generated trace.
type Stats struct {
	Instances int `json:"instances"`
	// Messages were generated; Observed reached the trace; LostQueue
	// overflowed the sniffer's queue; LostRandom were lost at random.
	Messages   int `json:"messages"`
	Observed   int `json:"observed"`
	LostQueue  int `json:"lost_queue"`
	LostRandom int `json:"lost_random"`
	// Parallelism is the mean number of instances in progress.
	Parallelism float64 `json:"parallelism"`
	// CallParallelism is Project 5's mean per-node parallelism (section
	// 5.1.2): the mean number of candidate parents of a nested call, that
	// is of calls into its sender that are open (CALL sent, RETURN not yet)
	// when it is sent.
	CallParallelism float64 `json:"call_parallelism"`
	// SpanNS is the time from the first send to the last arrival.
	SpanNS int64 `json:"span_ns"`
	// Background counts the instances no request caused (rpc tracelets
	// with from); Skipped the optional calls not made; Failed the calls
	// that returned an error; ThreadWaits and PoolWaits the calls that
	// waited for a thread of their callee or a connection of their pool.
	Background  int `json:"background,omitempty"`
	Skipped     int `json:"skipped,omitempty"`
	Failed      int `json:"failed,omitempty"`
	ThreadWaits int `json:"thread_waits,omitempty"`
	PoolWaits   int `json:"pool_waits,omitempty"`
}

// LossRate is the fraction of generated messages that did not reach the
// trace.
func (s Stats) LossRate() float64 {
	if s.Messages == 0 {
		return 0
	}
	return float64(s.LostQueue+s.LostRandom) / float64(s.Messages)
}

// gmsg is one generated message before observation.
type gmsg struct {
	send, recv                 int64 // true times
	src, dst, srcNode, dstNode trace.Sym
	callID                     trace.Sym
	bytes                      int32
	kind                       trace.Kind
	proto                      trace.Proto
	inst                       int32
	parent                     int32 // generation index of the cause, -1 for a root
	tracelet                   int32
	ev                         trace.Evidence
	tok                        [2]uint32 // the message's tokens in evState.arena
}

// party is a sender or receiver: a node (node >= 0) or a client.
type party struct {
	node   int
	client int
}

type state struct {
	p       *plan
	rng     *rand.Rand
	arrRNG  *rand.Rand // open-loop arrivals, apart so that compress keeps the instances
	t       *trace.Trace
	msgs    []gmsg
	limit   int
	nodeEP  []trace.Sym
	nodeSym []trace.Sym
	nodeEph []uint16
	clAddr  []netip.Addr
	clSym   []trace.Sym
	clEph   []uint16
	// clock offsets of ClockSpread, by node and by client
	nodeOff []int64
	clOff   []int64
	// resources and evidence
	threads []*threadPool // by node; nil entries: no pool
	pools   map[[2]int]*connPool
	connSeq [][2]uint32 // by evidence connection number
	ev      evState
	stats   Stats // the counters generation keeps (Background ... PoolWaits)
	// per instance
	inst     int32
	tracelet int32
	clientEP trace.Sym
	// results of run
	parallelism float64
	span        int64
}

const (
	ephLo = 32768
	ephHi = 60999
)

// Generate instantiates the configuration. It validates c first.
func Generate(c *Config, opt Options) (*Output, error) {
	p, err := compile(c)
	if err != nil {
		return nil, err
	}
	if opt.MaxMessages <= 0 {
		opt.MaxMessages = DefaultMaxMessages
	}
	s := &state{
		p:      p,
		rng:    rand.New(rand.NewPCG(c.Seed, 0x9e3779b97f4a7c15)),
		arrRNG: rand.New(rand.NewPCG(c.Seed, 0xa77a1a1e5eed0001)),
		t:      &trace.Trace{},
		limit:  opt.MaxMessages,
	}
	for _, n := range p.nodes {
		name := n.name
		if p.namesAddr {
			name = n.addr.String()
		}
		s.nodeSym = append(s.nodeSym, s.t.Intern(name))
		s.nodeEP = append(s.nodeEP, s.t.Intern(netip.AddrPortFrom(n.addr, uint16(n.port)).String()))
		s.nodeEph = append(s.nodeEph, uint16(ephLo+s.rng.IntN(ephHi-ephLo)))
	}
	b4 := p.clientNet.Addr().As4()
	base := uint32(b4[0])<<24 | uint32(b4[1])<<16 | uint32(b4[2])<<8 | uint32(b4[3])
	for i := 0; i < p.clients; i++ {
		v := base + uint32(i) + 1
		a := netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
		s.clAddr = append(s.clAddr, a)
		s.clSym = append(s.clSym, s.t.Intern(a.String()))
		s.clEph = append(s.clEph, uint16(ephLo+s.rng.IntN(ephHi-ephLo)))
	}
	s.spreadClocks()
	s.initResources(c.Seed)
	if err := s.run(); err != nil {
		return nil, err
	}
	return s.finish(), nil
}

// initResources sets up the nodes' thread pools, the connection pools and
// the evidence stream.
func (s *state) initResources(seed uint64) {
	for i, n := range s.p.nodes {
		if n.threads == 0 && !n.traced && !n.eventLoop {
			continue
		}
		if s.threads == nil {
			s.threads = make([]*threadPool, len(s.p.nodes))
		}
		s.threads[i] = &threadPool{max: n.threads, loop: n.eventLoop}
	}
	s.pools = make(map[[2]int]*connPool)
	s.connSeq = [][2]uint32{{}} // connection 0 is "unknown"
	s.ev.rng = rand.New(rand.NewPCG(seed, 0xe71de9ce5eed0003))
}

// spreadClocks draws the ClockSpread offsets of every node and client,
// from a stream of their own so that the paths do not depend on them.
func (s *state) spreadClocks() {
	if s.p.spread == 0 {
		return
	}
	r := rand.New(rand.NewPCG(s.p.cfg.Seed, 0xc10cc5a7e5eed002))
	draw := func() int64 { return int64((r.Float64()*2 - 1) * float64(s.p.spread)) }
	s.nodeOff = make([]int64, len(s.p.nodes))
	for i := range s.nodeOff {
		s.nodeOff[i] = draw()
	}
	s.clOff = make([]int64, len(s.clAddr))
	for i := range s.clOff {
		s.clOff[i] = draw()
	}
}

// eph allocates the next ephemeral endpoint of pt (a new connection).
func (s *state) eph(pt party) trace.Sym {
	if pt.node < 0 {
		port := s.clEph[pt.client]
		s.clEph[pt.client] = nextEph(port)
		return s.t.Intern(netip.AddrPortFrom(s.clAddr[pt.client], port).String())
	}
	port := s.nodeEph[pt.node]
	s.nodeEph[pt.node] = nextEph(port)
	return s.t.Intern(netip.AddrPortFrom(s.p.nodes[pt.node].addr, port).String())
}

func nextEph(p uint16) uint16 {
	if p >= ephHi {
		return ephLo
	}
	return p + 1
}

func (s *state) name(pt party) trace.Sym {
	if pt.node < 0 {
		return s.clSym[pt.client]
	}
	return s.nodeSym[pt.node]
}

// sample draws from g with its SD scaled: the normal part truncated at
// zero, plus the exponential tail.
func (s *state) sample(g Gauss) int64 {
	v := s.normal(g)
	if g.Exp > 0 {
		v += int64(math.Min(s.rng.ExpFloat64()*float64(g.Exp), math.MaxInt64/4))
	}
	return v
}

// normal draws the normal part of g.
func (s *state) normal(g Gauss) int64 {
	mean, sd := float64(g.Mean), float64(g.SD)*s.p.scale
	if sd == 0 {
		return int64(mean)
	}
	for range 16 {
		if v := mean + sd*s.rng.NormFloat64(); v >= 0 {
			return int64(math.Min(v, math.MaxInt64/4))
		}
	}
	return 0
}

// pick picks a node of ch for a message from node caller (-1: a client):
// an alternative by weight, then one of its replicas other than caller.
func (s *state) pick(ch choice, caller int) int {
	i := 0
	if len(ch.nodes) > 1 {
		r := s.rng.Float64() * ch.cum[len(ch.cum)-1]
		i = sort.SearchFloat64s(ch.cum, r)
		if i >= len(ch.nodes) {
			i = len(ch.nodes) - 1
		}
		if ch.cum[i] == r && i+1 < len(ch.nodes) {
			i++
		}
	}
	first := ch.nodes[i]
	if ch.n == nil || ch.n[i] <= 1 {
		return first
	}
	n := ch.n[i]
	if caller >= first && caller < first+n {
		k := first + s.rng.IntN(n-1)
		if k >= caller {
			k++
		}
		return k
	}
	return first + s.rng.IntN(n)
}

func (s *state) emit(m gmsg) (int32, error) {
	if len(s.msgs) >= s.limit {
		return 0, fmt.Errorf("%w: the config %s %d; lower duration, instances or clients", ErrConfig, errTooBig, s.limit)
	}
	m.inst = s.inst
	m.tracelet = s.tracelet
	s.msgs = append(s.msgs, m)
	return int32(len(s.msgs) - 1), nil
}

type clientEvent struct {
	at     int64
	client int
	pool   int
}

// eventHeap orders the clients' next starts by time, then client.
type eventHeap []clientEvent

func (h eventHeap) less(i, j int) bool {
	return h[i].at < h[j].at || h[i].at == h[j].at && h[i].client < h[j].client
}

func (h *eventHeap) push(e clientEvent) {
	*h = append(*h, e)
	q := *h
	for i := len(q) - 1; i > 0; {
		par := (i - 1) / 2
		if !q.less(i, par) {
			break
		}
		q[i], q[par] = q[par], q[i]
		i = par
	}
}

func (h *eventHeap) pop() clientEvent {
	q := *h
	top := q[0]
	last := len(q) - 1
	q[0] = q[last]
	q = q[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(q) && q.less(l, m) {
			m = l
		}
		if r < len(q) && q.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
	*h = q
	return top
}

// startClients schedules every client's first instance: a closed-loop
// client within its pool's longest think time, an open-loop pool's first
// arrival (its client field is then the pool's first client).
func (s *state) startClients() eventHeap {
	var h eventHeap
	client := 0
	for pi, pl := range s.p.pools {
		if pl.open {
			h.push(clientEvent{at: s.p.start + s.arrival(), client: client, pool: pi})
			client += pl.clients
			continue
		}
		spread := int64(pl.think.Max)
		if spread <= 0 {
			spread = 1e6
		}
		for range pl.clients {
			h.push(clientEvent{at: s.p.start + s.rng.Int64N(spread), client: client, pool: pi})
			client++
		}
	}
	return h
}

// arrival draws the time to the next open-loop arrival.
func (s *state) arrival() int64 {
	return int64(s.arrRNG.ExpFloat64() / s.p.rate * 1e9 / s.p.compress)
}

// done reports whether the instance or message limit is reached.
func (s *state) done() bool {
	return s.p.instances > 0 && int(s.inst) >= s.p.instances || s.p.messages > 0 && len(s.msgs) >= s.p.messages
}

// pickTracelet picks the tracelet of a pool's next instance by weight.
func (s *state) pickTracelet(pl *pool) int {
	ti := pl.tracelets[0]
	if len(pl.tracelets) > 1 {
		r := s.rng.Float64() * pl.cum[len(pl.cum)-1]
		k := min(sort.SearchFloat64s(pl.cum, r), len(pl.tracelets)-1)
		ti = pl.tracelets[k]
	}
	return ti
}

// run schedules the clients: each runs an instance, thinks, runs the next;
// an open-loop pool starts instances at its arrivals.
func (s *state) run() error {
	p := s.p
	h := s.startClients()
	var busy int64
	minStart, maxEnd := int64(math.MaxInt64), int64(math.MinInt64)
	for len(h) > 0 && !s.done() {
		e := h.pop()
		if p.end > 0 && e.at >= p.end {
			continue // this client is done
		}
		pl := &p.pools[e.pool]
		client := e.client
		if pl.open {
			client += s.arrRNG.IntN(pl.clients)
		}
		ti := s.pickTracelet(pl)
		s.tracelet = int32(ti)
		end, err := s.instance(p.tracelets[ti], client, e.at)
		if err != nil {
			return err
		}
		s.inst++
		busy += end - e.at
		minStart = min(minStart, e.at)
		maxEnd = max(maxEnd, end)
		next := e
		if pl.open {
			next.at = e.at + s.arrival()
		} else {
			next.at = max(end+int64(pl.think.Min)+s.rng.Int64N(int64(pl.think.Max-pl.think.Min)+1), e.at+1000)
		}
		h.push(next)
	}
	if maxEnd > minStart {
		s.parallelism = float64(busy) / float64(maxEnd-minStart)
		s.span = maxEnd - minStart
	}
	return nil
}

// instance generates one instance of tl for client cl starting at t0 and
// returns the time its last message arrives.
func (s *state) instance(tl *ctracelet, cl int, t0 int64) (int64, error) {
	s.beginInstance()
	client := party{node: -1, client: cl}
	if tl.rpc != nil && tl.from >= 0 {
		s.stats.Background++
		r, err := s.call(tl.rpc, callCtx{caller: party{node: tl.from}, th: bgThread, toks: s.ev.toks}, -1, t0, true)
		return r.end, err
	}
	s.clientEP = s.eph(client)
	if tl.rpc != nil {
		r, err := s.call(tl.rpc, callCtx{caller: client, th: -1, toks: s.ev.toks}, -1, t0, true)
		return r.end, err
	}
	return s.messages(tl, client, t0)
}

// messages generates one instance of a messages tracelet.
func (s *state) messages(tl *ctracelet, client party, t0 int64) (int64, error) {
	n := len(tl.msgs)
	recv := make([]party, n)
	arrive := make([]int64, n)
	idx := make([]int32, n)
	end := t0
	for i, m := range tl.msgs {
		var from party
		at, cause := t0, int32(-1)
		if m.after < 0 {
			from = client
			if !m.fromClient {
				from = party{node: m.from}
			}
		} else {
			from, at, cause = recv[m.after], arrive[m.after], idx[m.after]
		}
		to := client
		if n := s.pick(m.to, from.node); n >= 0 {
			to = party{node: n}
		}
		send := at
		if m.after >= 0 {
			send += s.sample(m.delay)
		}
		net := s.sample(m.net)
		var src, dst trace.Sym
		proto := trace.ProtoTCP
		switch {
		case to.node >= 0:
			dst = s.nodeEP[to.node]
			proto = s.p.nodes[to.node].proto
		default:
			dst = s.clientEP
			if from.node >= 0 {
				proto = s.p.nodes[from.node].proto
			}
		}
		switch {
		case from.node < 0:
			src = s.clientEP
		case proto == trace.ProtoUDP || to.node < 0:
			src = s.nodeEP[from.node]
		default:
			src = s.eph(from)
		}
		var ev trace.Evidence
		if id := s.newConnID(); id != 0 {
			ev.Conn, ev.Seq = id, s.seq(id, 0)
		}
		k, err := s.emit(gmsg{
			send: send, recv: send + net,
			src: src, dst: dst, srcNode: s.name(from), dstNode: s.name(to),
			bytes: int32(m.bytes), kind: m.kind, proto: proto, parent: cause, ev: ev,
		})
		if err != nil {
			return 0, err
		}
		recv[i], arrive[i], idx[i] = to, send+net, k
		end = max(end, send+net)
	}
	return end, nil
}

// bgThread is the thread a node makes its background calls on.
const bgThread = -2

// callCtx is where a call is made: by which caller, on which of its
// threads (-1 none, bgThread its background thread), for a call carrying
// which tokens.
type callCtx struct {
	caller party
	th     int
	toks   []tokenID
}

// callResult is a generated call: its RETURN, when the RETURN arrives,
// and whether the call failed.
type callResult struct {
	ret    int32
	end    int64
	failed bool
}

// call generates one RPC of c made in cx, caused by message cause
// arriving at time at (root: the instance's root call, sent at at).
func (s *state) call(c *ccall, cx callCtx, cause int32, at int64, root bool) (callResult, error) {
	caller := cx.caller
	callee := party{node: s.pick(c.to, caller.node)}
	send := at
	if !root {
		d := c.delay
		if g, ok := c.delayBy[caller.node]; ok {
			d = g
		}
		send += s.sample(d)
	}
	cn := s.openConn(caller, callee, send, root)
	send = cn.send
	dst := s.nodeEP[callee.node]
	callID := s.callID(cn)
	proto := s.p.nodes[callee.node].proto
	net := s.sample(c.net)
	arr := send + net
	th, start := s.acquireThread(callee.node, arr)
	label := s.callLabel(c, callee.node)
	var tok [2]uint32
	if c.derive {
		tok = s.derive(cx.toks)
	} else {
		tok = s.inherit(cx.toks)
	}
	ev, err := s.evidence(cn.id, 0, caller.node, cx.th, callee.node, th, label, tok)
	if err != nil {
		return callResult{}, err
	}
	if s.p.ev.any {
		ev.ReqID = s.reqIDSym(callee.node)
	}
	ci, err := s.emit(gmsg{
		send: send, recv: arr,
		src: cn.src, dst: dst, srcNode: s.name(caller), dstNode: s.name(callee),
		callID: callID, bytes: int32(s.size(c.callBytes, trace.KindCall, callee.node, label, ev.ReqID, tok)), kind: trace.KindCall, proto: proto, parent: cause,
		ev: ev, tok: tok,
	})
	if err != nil {
		return callResult{}, err
	}
	failed := c.fail > 0 && s.rng.Float64() < c.fail
	last, lastT := ci, start
	if !failed {
		if last, lastT, failed, err = s.children(c, callCtx{caller: callee, th: th, toks: s.tokens(tok)}, ci, start); err != nil {
			return callResult{}, err
		}
	}
	if failed {
		s.stats.Failed++
	}
	rsend := lastT + s.sample(c.reply)
	rnet := s.sample(c.net)
	rlabel := s.returnLabel(label, callee.node, failed)
	rtok := s.inherit(s.tokens(tok))
	rev, err := s.evidence(cn.id, 1, callee.node, th, caller.node, cx.th, rlabel, rtok)
	if err != nil {
		return callResult{}, err
	}
	ri, err := s.emit(gmsg{
		send: rsend, recv: rsend + rnet,
		src: dst, dst: cn.src, srcNode: s.name(callee), dstNode: s.name(caller),
		callID: callID, bytes: int32(s.size(c.replyBytes, trace.KindReturn, callee.node, rlabel, 0, rtok)), kind: trace.KindReturn, proto: proto, parent: last,
		ev: rev, tok: rtok,
	})
	s.releaseThread(callee.node, th, rsend)
	cn.closeConn(rsend + rnet)
	return callResult{ret: ri, end: rsend + rnet, failed: failed}, err
}

// children generates the calls callee makes for the CALL ci it started
// serving at start, in cx; it returns the message that completes them
// (the last RETURN to arrive) and when it arrives, and whether one failed:
// serial calls stop at a failure, parallel ones were all made already.
func (s *state) children(c *ccall, cx callCtx, ci int32, start int64) (int32, int64, bool, error) {
	last, lastT := ci, start
	failed, issued := false, false
	for _, sub := range c.calls {
		if sub.prob < 1 && s.rng.Float64() >= sub.prob {
			s.stats.Skipped++
			continue
		}
		if c.parallel {
			r, err := s.call(sub, cx, ci, start, false)
			if err != nil {
				return 0, 0, false, err
			}
			if !issued || r.end > lastT {
				last, lastT = r.ret, r.end
			}
			issued = true
			failed = failed || r.failed
			continue
		}
		r, err := s.call(sub, cx, last, lastT, false)
		if err != nil {
			return 0, 0, false, err
		}
		last, lastT = r.ret, r.end
		if r.failed {
			return last, lastT, true, nil
		}
	}
	return last, lastT, failed, nil
}

// evidence returns the evidence of a message on connection id in
// direction dir from thread sth of node from to thread rth of node to,
// with a label and tokens.
func (s *state) evidence(id uint32, dir, from, sth, to, rth int, label string, tok [2]uint32) (trace.Evidence, error) {
	if !s.p.ev.any {
		return trace.Evidence{}, nil
	}
	ev := trace.Evidence{Sender: s.task(from, sth), Receiver: s.task(to, rth)}
	if id != 0 {
		ev.Conn, ev.Seq = id, s.seq(id, dir)
	}
	if label != "" {
		ev.Label = s.t.Intern(label)
	}
	var err error
	ev.Tokens, err = s.tokenRef(tok)
	return ev, err
}

// finish orders the messages, builds the truth, applies the skewer and the
// sniffer's losses, and builds the observed trace.
func (s *state) finish() *Output {
	tr, toks := s.truth()
	st := s.stats
	st.Instances, st.Messages, st.Parallelism, st.CallParallelism, st.SpanNS = int(s.inst), len(tr.Parent), s.parallelism, callParallelism(tr), s.span
	kept := s.sniff(tr, &st)
	obs := s.observe(tr, kept)
	st.Observed = len(kept)
	obs.Meta.Source = "gen:" + s.p.cfg.Name
	obs.Meta.Accounting = []trace.Count{
		{Stage: "gen", Name: "messages_generated", Value: int64(st.Messages)},
		{Stage: "gen", Name: "lost_sniffer_queue", Value: int64(st.LostQueue)},
		{Stage: "gen", Name: "lost_random", Value: int64(st.LostRandom)},
		{Stage: "gen", Name: "messages", Value: int64(st.Observed)},
	}
	s.t.Meta.Source = "gen-truth:" + s.p.cfg.Name
	tr.Meta = s.truthMeta(st)
	return &Output{Trace: obs, Truth: tr, Stats: st, tokens: toks}
}

// truth sorts the generated messages by true send time into s.t and
// returns the truth over them (Observed still to be filled) and, when
// messages carry tokens, each one's.
func (s *state) truth() (*Truth, [][]tokenID) {
	n := len(s.msgs)
	order := make([]int32, n)
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int { return cmpI64(s.msgs[a].send, s.msgs[b].send) })
	pos := make([]int32, n)
	for i, g := range order {
		pos[g] = int32(i)
	}
	tr := &Truth{
		Trace:    s.t,
		Instance: make([]int32, n),
		Parent:   make([]int32, n),
		Observed: make([]int32, n),
		Tracelet: make([]int32, n),
	}
	s.t.Messages = make([]trace.Message, n)
	for i, g := range order {
		m := &s.msgs[g]
		s.t.Messages[i] = trace.Message{
			SendTS: trace.Timestamp(m.send), RecvTS: trace.Timestamp(m.recv), Bytes: int64(m.bytes),
			Src: m.src, Dst: m.dst, SrcNode: m.srcNode, DstNode: m.dstNode,
			CallID: m.callID, Kind: m.kind, Proto: m.proto, Evidence: m.ev,
		}
		tr.Instance[i] = m.inst
		tr.Tracelet[i] = m.tracelet
		tr.Parent[i] = -1
		if m.parent >= 0 {
			tr.Parent[i] = pos[m.parent]
		}
	}
	var toks [][]tokenID
	if s.p.ev.tokens != nil {
		toks = make([][]tokenID, n)
		for i, g := range order {
			toks[i] = s.tokens(s.msgs[g].tok)
		}
	}
	s.msgs = nil
	return tr, toks
}

// sniff applies the loss models in wire order (true send time) and returns
// the truth indices of the messages the sniffer kept, marking the others
// unobserved. The losses have their own random stream, so that the paths
// do not change when only the loss settings do.
func (s *state) sniff(tr *Truth, st *Stats) []int32 {
	p := s.p
	lossRNG := rand.New(rand.NewPCG(p.cfg.Seed, 0x51ed27f1a3c4b5d6))
	var queue []int64 // departure times of queued messages, ascending
	head := 0
	svc := int64(0)
	if p.drop.Rate > 0 {
		svc = int64(math.Max(1, 1e9/p.drop.Rate))
	}
	lastEnd := int64(math.MinInt64)
	kept := make([]int32, 0, len(s.t.Messages))
	for i := range s.t.Messages {
		tr.Observed[i] = -1
		if p.drop.Random > 0 && lossRNG.Float64() < p.drop.Random {
			st.LostRandom++
			continue
		}
		if svc > 0 {
			t := int64(s.t.Messages[i].SendTS)
			for head < len(queue) && queue[head] <= t {
				head++
			}
			if head > 4096 && head*2 > len(queue) {
				queue = append(queue[:0], queue[head:]...)
				head = 0
			}
			if len(queue)-head >= p.drop.Queue {
				st.LostQueue++
				continue
			}
			lastEnd = max(lastEnd, t) + svc
			queue = append(queue, lastEnd)
		}
		kept = append(kept, int32(i))
	}
	return kept
}

// skewBySym returns each node symbol's clock shift.
func (s *state) skewBySym() []int64 {
	skew := make([]int64, s.t.Syms.Len())
	for i, sym := range s.nodeSym {
		skew[sym] = s.p.skew[i]
		if s.nodeOff != nil {
			skew[sym] += s.nodeOff[i]
		}
	}
	for i, sym := range s.clSym {
		skew[sym] = s.p.clientSkew
		if s.clOff != nil {
			skew[sym] += s.clOff[i]
		}
	}
	return skew
}

// untracedBySym returns which node symbols took no timestamps, or nil
// when every node did.
func (s *state) untracedBySym() []bool {
	if !s.p.clUntraced && !slices.Contains(s.p.untraced, true) {
		return nil
	}
	u := make([]bool, s.t.Syms.Len())
	for i, sym := range s.nodeSym {
		u[sym] = s.p.untraced[i]
	}
	for _, sym := range s.clSym {
		u[sym] = s.p.clUntraced
	}
	return u
}

// quantize truncates a known timestamp to the configured resolution.
func (s *state) quantize(ts trace.Timestamp) trace.Timestamp {
	r := trace.Timestamp(s.p.resolution)
	if r <= 1 || !ts.Known() {
		return ts
	}
	q := ts - ts%r
	if ts < 0 && ts%r != 0 {
		q -= r
	}
	return q
}

// observe builds the observed trace of the kept messages: skewed
// timestamps (one or two per message), sorted by Message.Time, and records
// each kept message's index in tr.Observed.
func (s *state) observe(tr *Truth, kept []int32) *trace.Trace {
	skew := s.skewBySym()
	untraced := s.untracedBySym()
	obs := &trace.Trace{}
	for i := 1; i < s.t.Syms.Len(); i++ {
		obs.Intern(s.t.Syms.String(trace.Sym(i)))
	}
	// The token sets, in order, so that every TokenRef keeps its meaning.
	for r := 1; r <= s.t.Syms.TokenSets(); r++ {
		obs.Syms.AddTokens(s.t.Syms.Tokens(trace.TokenRef(r)))
	}
	msgs := make([]trace.Message, len(kept))
	obs.Meta.SingleClock = s.p.single
	for k, i := range kept {
		m := s.t.Messages[i]
		if s.p.single {
			ts := m.SendTS + trace.Timestamp(skew[m.SrcNode])
			m.SendTS, m.RecvTS = ts, ts
		} else {
			m.SendTS += trace.Timestamp(skew[m.SrcNode])
			m.RecvTS += trace.Timestamp(skew[m.DstNode])
		}
		if untraced != nil && untraced[m.SrcNode] {
			m.SendTS = trace.NoTime
		}
		if untraced != nil && untraced[m.DstNode] {
			m.RecvTS = trace.NoTime
		}
		m.SendTS, m.RecvTS = s.quantize(m.SendTS), s.quantize(m.RecvTS)
		msgs[k] = m
	}
	perm := make([]int32, len(kept))
	for i := range perm {
		perm[i] = int32(i)
	}
	slices.SortStableFunc(perm, func(a, b int32) int {
		return cmpI64(int64(msgs[a].Time()), int64(msgs[b].Time()))
	})
	obs.Messages = make([]trace.Message, len(kept))
	for k, j := range perm {
		obs.Messages[k] = msgs[j]
		tr.Observed[kept[j]] = int32(k)
	}
	return obs
}

// truthMeta describes the run for the truth file.
func (s *state) truthMeta(st Stats) TruthMeta {
	p := s.p
	m := TruthMeta{
		Version:    1,
		Config:     p.cfg.Name,
		Seed:       p.cfg.Seed,
		Timestamps: "both",
		Names:      "name",
		Instances:  st.Instances,
		Observed:   st.Observed,
		Stats:      st,
		Drop:       p.drop,
		DelayScale: p.scale,
		Sniffers:   p.cfg.Sniffers,
	}
	for _, t := range p.tracelets {
		m.Tracelets = append(m.Tracelets, t.name)
		if t.background() {
			m.Background = append(m.Background, t.name)
		}
	}
	if p.single {
		m.Timestamps = "single"
	}
	if p.namesAddr {
		m.Names = "addr"
	}
	for i := range p.nodes {
		if p.skew[i] != 0 {
			if m.SkewNS == nil {
				m.SkewNS = make(map[string]int64)
			}
			m.SkewNS[s.t.Str(s.nodeSym[i])] = p.skew[i]
		}
	}
	if p.clientSkew != 0 {
		if m.SkewNS == nil {
			m.SkewNS = make(map[string]int64)
		}
		m.SkewNS["CLIENT"] = p.clientSkew
	}
	s.meta2(&m)
	m.Version = m.version()
	return m
}

// meta2 adds what version 2 of the truth format describes.
func (s *state) meta2(m *TruthMeta) {
	p := s.p
	m.ClockSpreadNS, m.ResolutionNS = p.spread, p.resolution
	if p.rate > 0 {
		m.Rate = p.rate
		if p.compress != 1 {
			m.Compress = p.compress
		}
	}
	m.Untraced = slices.Clone(p.cfg.Untraced)
	if p.spread == 0 {
		return
	}
	if m.SkewNS == nil {
		m.SkewNS = make(map[string]int64)
	}
	for i, sym := range s.nodeSym {
		m.SkewNS[s.t.Str(sym)] = p.skew[i] + s.nodeOff[i]
	}
	for i, sym := range s.clSym {
		m.SkewNS[s.t.Str(sym)] = p.clientSkew + s.clOff[i]
	}
}

func cmpI64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// callParallelism computes Stats.CallParallelism from the truth, whose
// messages are in order of true send time.
func callParallelism(tr *Truth) float64 {
	open := make([]int, tr.Trace.Syms.Len())
	sum, n := 0, 0
	for i := range tr.Trace.Messages {
		m := &tr.Trace.Messages[i]
		switch m.Kind {
		case trace.KindCall:
			if tr.Parent[i] >= 0 {
				sum += open[m.SrcNode]
				n++
			}
			open[m.DstNode]++
		case trace.KindReturn:
			if open[m.SrcNode] > 0 {
				open[m.SrcNode]--
			}
		}
	}
	if n == 0 {
		return 0
	}
	return float64(sum) / float64(n)
}
