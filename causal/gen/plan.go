package gen

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/wirepath/wirepath/trace"
)

// DefaultStart is the time of the first instance when a config sets none.
const DefaultStart = "2024-01-01T00:00:00Z"

// Built-in defaults for templates that set no delay or size.
var (
	defaultNet        = Gauss{Mean: 100 * time.Microsecond, SD: 10 * time.Microsecond}
	defaultCallBytes  = 200
	defaultReplyBytes = 1000
)

// plan is a validated, compiled Config.
type plan struct {
	cfg        *Config
	start      int64
	end        int64 // no instance starts at or after end (0: no limit)
	instances  int   // stop after this many instances (0: no limit)
	messages   int   // stop after this many messages (0: no limit)
	nodes      []nodeInfo
	groups     map[string]span // node (or replica group) name -> its nodes
	tracelets  []*ctracelet
	pools      []pool
	clients    int
	clientNet  netip.Prefix
	skew       []int64 // by node index
	clientSkew int64
	spread     int64  // ClockSpread
	resolution int64  // Resolution (0: none)
	untraced   []bool // by node index
	clUntraced bool
	scale      float64
	single     bool
	callIDs    bool
	namesAddr  bool
	drop       Drop
	rate       float64 // open-loop arrivals per second (0: closed loop)
	compress   float64
	ev         evidencePlan
}

// evidencePlan is the compiled evidence the trace carries.
type evidencePlan struct {
	conns, labels bool
	tokens        *TokenSpec // with defaults; nil: no tokens
	// deriveLine is the line of the first call with Derive (0: none)
	deriveLine int
	// payloads makes --pcap payloads protocol messages carrying the
	// evidence (an evidence block, or a node with ids or a protocol).
	payloads bool
	// any says some message carries evidence (payloads, or a traced node).
	any bool
}

type nodeInfo struct {
	name  string
	group string // the configured name (of the replica group)
	addr  netip.Addr
	port  int
	proto trace.Proto
	// threads bounds the calls served at once (0: none); traced records
	// thread ids; pool is the connection pool size callers use (0: a
	// connection per call); ids the propagated identifier; protocol what
	// the node speaks.
	threads   int
	traced    bool
	eventLoop bool // every call served at once on thread 0
	pool      int
	ids       string
	protocol  string
}

// span is a run of nodes: one node, or the replicas of a group.
type span struct {
	first, n int
}

type pool struct {
	clients   int
	think     Range
	tracelets []int
	cum       []float64 // cumulative weights
	open      bool      // open-loop Poisson arrivals at plan.rate
}

type ctracelet struct {
	name string
	rpc  *ccall
	from int // node making the root call, -1: a client
	msgs []cmsg
}

// background reports whether the tracelet's instances are caused by no
// request: their root comes from a node.
func (t *ctracelet) background() bool {
	if t.rpc != nil {
		return t.from >= 0
	}
	return len(t.msgs) > 0 && !t.msgs[0].fromClient
}

// choice is a compiled Choice: each alternative is a node, or a group of
// replicas one of which is picked, or -1 for the instance's client.
type choice struct {
	nodes []int // the alternative's first node
	n     []int // its replicas (nil: one each)
	cum   []float64
}

type ccall struct {
	to                    choice
	delay, reply, net     Gauss
	delayBy               map[int]Gauss
	callBytes, replyBytes int
	parallel              bool
	prob, fail            float64 // prob 1: always made
	label                 string
	derive                bool // carries a key derived from its parent's value token
	calls                 []*ccall
}

type cmsg struct {
	after      int // index of the causing message, -1 for the root
	fromClient bool
	from       int // fixed sender for the root when not a client
	to         choice
	delay, net Gauss
	bytes      int
	kind       trace.Kind
}

// Validate checks c completely: every field, every name and reference.
func (c *Config) Validate() error {
	_, err := compile(c)
	return err
}

func cfgErr(line int, format string, args ...any) error {
	return &ConfigError{Line: line, Err: fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))}
}

// compile checks c and compiles it into a plan, phase by phase: the run's
// bounds and observation settings, the nodes, the tracelets and their
// client pools, then the clocks and the sniffers.
func compile(c *Config) (*plan, error) {
	p := &plan{cfg: c, groups: make(map[string]span)}
	for _, phase := range []func(*Config) error{p.compileRun, p.compileObservation, p.compileNodes, p.compileTracelets, p.compileClocks, p.compileEvidence} {
		if err := phase(c); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// compileRun reads when instances start and stop.
func (p *plan) compileRun(c *Config) error {
	start := c.Start
	if start == "" {
		start = DefaultStart
	}
	st, err := time.Parse(time.RFC3339Nano, start)
	if err != nil {
		return cfgErr(0, "start: %v", err)
	}
	p.start = st.UnixNano()
	if c.Duration < 0 || c.Instances < 0 || c.Messages < 0 {
		return cfgErr(0, "duration, instances and messages must not be negative")
	}
	if c.Duration == 0 && c.Instances == 0 && c.Messages == 0 {
		return cfgErr(0, "set duration or instances (or both, or messages)")
	}
	if c.Duration > 0 {
		p.end = p.start + int64(c.Duration)
	}
	p.instances, p.messages = c.Instances, c.Messages
	p.rate, p.compress = c.Rate, c.Compress
	if !(p.rate >= 0) || p.rate > 1e9 {
		return cfgErr(0, "rate must be between 0 and 1e9 instances per second")
	}
	if p.compress == 0 {
		p.compress = 1
	}
	if !(p.compress > 0) || p.compress > 1e6 {
		return cfgErr(0, "compress must be between 0 and 1e6")
	}
	if c.Compress != 0 && p.rate == 0 {
		return cfgErr(0, "compress needs open-loop arrivals (rate)")
	}
	return nil
}

// compileObservation reads how the trace is observed and named: the
// timestamps, node names, call ids, delay scale and client addresses.
func (p *plan) compileObservation(c *Config) error {
	switch c.Timestamps {
	case "", "both":
	case "single":
		p.single = true
	default:
		return cfgErr(0, "timestamps must be both or single, not %q", c.Timestamps)
	}
	switch c.Names {
	case "", "name":
	case "addr":
		p.namesAddr = true
	default:
		return cfgErr(0, "names must be name or addr, not %q", c.Names)
	}
	p.callIDs = c.CallIDs == nil || *c.CallIDs
	p.scale = 1
	if c.DelayScale != nil {
		p.scale = *c.DelayScale
	}
	if !(p.scale >= 0) || p.scale > 1e6 {
		return cfgErr(0, "delay_scale must be between 0 and 1e6")
	}
	cn := c.ClientNet
	if cn == "" {
		cn = "10.9.0.0/16"
	}
	var err error
	if p.clientNet, err = netip.ParsePrefix(cn); err != nil || !p.clientNet.Addr().Is4() {
		return cfgErr(0, "client_net %q: want an IPv4 prefix such as 10.9.0.0/16", cn)
	}
	p.clientNet = p.clientNet.Masked()
	p.spread, p.resolution = int64(c.ClockSpread), int64(c.Resolution)
	if p.spread < 0 || p.resolution < 0 {
		return cfgErr(0, "clock_spread and resolution must not be negative")
	}
	if p.single && len(c.Untraced) > 0 {
		return cfgErr(0, "untraced nodes need two timestamps per message (timestamps: both)")
	}
	return nil
}

// compileNodes compiles the nodes in name order, so that automatic
// addresses are stable.
func (p *plan) compileNodes(c *Config) error {
	if len(c.Nodes) == 0 {
		return cfgErr(0, "no nodes")
	}
	if len(c.Nodes) > MaxNodes {
		return cfgErr(0, "more than %d nodes", MaxNodes)
	}
	names := make([]string, 0, len(c.Nodes))
	for n := range c.Nodes {
		names = append(names, n)
	}
	slices.Sort(names)
	eps := make(map[string]string)
	taken := make(map[string]bool)
	for _, n := range names {
		spec := c.Nodes[n]
		if spec.Replicas < 0 || spec.Replicas > MaxNodes {
			return cfgErr(0, "node %s: replicas out of range", n)
		}
		g := span{first: len(p.nodes), n: max(1, spec.Replicas)}
		for r := range g.n {
			name := n
			if spec.Replicas > 1 {
				name = fmt.Sprintf("%s-%d", n, r+1)
			}
			if taken[name] {
				return cfgErr(0, "nodes: %s named twice (a replica of %s)", name, n)
			}
			taken[name] = true
			if len(p.nodes) >= MaxNodes {
				return cfgErr(0, "more than %d nodes", MaxNodes)
			}
			ni, err := p.compileNode(len(p.nodes), name, spec, r)
			if err != nil {
				return err
			}
			ep := netip.AddrPortFrom(ni.addr, uint16(ni.port)).String()
			if other, dup := eps[ep]; dup {
				return cfgErr(0, "nodes %s and %s share the endpoint %s", other, name, ep)
			}
			eps[ep] = name
			p.nodes = append(p.nodes, ni)
		}
		p.groups[n] = g
		for k := g.first; k < g.first+g.n; k++ {
			p.nodes[k].group = n
		}
	}
	return nil
}

// checkNodeSpec checks a node's threads, pool, identifiers and protocol.
func checkNodeSpec(n string, spec NodeSpec) error {
	if spec.Threads < 0 || spec.Threads > MaxClients || spec.Pool < 0 || spec.Pool > 1<<16 {
		return cfgErr(0, "node %s: threads and pool must be between 0 and %d and %d", n, MaxClients, 1<<16)
	}
	if spec.EventLoop && spec.Threads > 0 {
		return cfgErr(0, "node %s: an event loop has one thread: threads must not be set", n)
	}
	switch spec.IDs {
	case "", "x-request-id", "traceparent":
	default:
		return cfgErr(0, "node %s: ids must be x-request-id or traceparent, not %q", n, spec.IDs)
	}
	switch spec.Protocol {
	case "", "http", "redis", "memcached":
	default:
		return cfgErr(0, "node %s: protocol must be http, redis or memcached, not %q", n, spec.Protocol)
	}
	return nil
}

// lookup returns the nodes a name in the configuration stands for.
func (p *plan) lookup(name string) (span, bool) {
	g, ok := p.groups[name]
	return g, ok
}

// compileNode checks node n, the i-th node, replica r of its spec.
func (p *plan) compileNode(i int, n string, spec NodeSpec, r int) (nodeInfo, error) {
	if err := checkName(n); err != nil {
		return nodeInfo{}, cfgErr(0, "nodes: %v", err)
	}
	if n == "CLIENT" {
		return nodeInfo{}, cfgErr(0, "nodes: CLIENT is reserved for the clients")
	}
	ni := nodeInfo{name: n, port: spec.Port, proto: trace.ProtoTCP, threads: spec.Threads, traced: spec.Traced, eventLoop: spec.EventLoop, pool: spec.Pool, ids: spec.IDs, protocol: spec.Protocol}
	if err := checkNodeSpec(n, spec); err != nil {
		return ni, err
	}
	if spec.Addr == "" {
		ni.addr = netip.AddrFrom4([4]byte{10, 0, byte((i + 1) >> 8), byte(i + 1)})
	} else {
		var err error
		if ni.addr, err = netip.ParseAddr(spec.Addr); err != nil {
			return ni, cfgErr(0, "node %s: bad addr %q", n, spec.Addr)
		}
		for range r {
			if ni.addr = ni.addr.Next(); !ni.addr.IsValid() {
				return ni, cfgErr(0, "node %s: no address left for its replicas", n)
			}
		}
	}
	if p.clientNet.Contains(ni.addr) {
		return ni, cfgErr(0, "node %s: address %s is inside client_net %s", n, ni.addr, p.clientNet)
	}
	if ni.port == 0 {
		ni.port = 80
	}
	if ni.port < 1 || ni.port > 65535 {
		return ni, cfgErr(0, "node %s: port %d out of range", n, spec.Port)
	}
	switch strings.ToLower(spec.Proto) {
	case "", "tcp":
	case "udp":
		ni.proto = trace.ProtoUDP
	default:
		return ni, cfgErr(0, "node %s: proto must be tcp or udp", n)
	}
	return ni, nil
}

// gdef returns the first of a template's delay, the config's default and
// the built-in one that is set.
func gdef(g, d *Gauss, builtin Gauss) Gauss {
	if g != nil {
		return *g
	}
	if d != nil {
		return *d
	}
	return builtin
}

// idef returns the first of a template's size, the config's default and
// the built-in one that is positive.
func idef(v, d, builtin int) int {
	if v > 0 {
		return v
	}
	if d > 0 {
		return d
	}
	return builtin
}

// compileTracelets compiles every tracelet and groups them into client
// pools: the config's shared clients, then each tracelet with clients of
// its own.
func (p *plan) compileTracelets(c *Config) error {
	if len(c.Tracelets) == 0 {
		return cfgErr(0, "no tracelets")
	}
	if c.Defaults.CallBytes < 0 || c.Defaults.ReplyBytes < 0 {
		return cfgErr(0, "defaults: sizes must not be negative")
	}
	tc := &traceletCompiler{p: p, def: c.Defaults}
	seen := make(map[string]bool)
	global := pool{think: c.Think, clients: c.Clients, open: c.Rate > 0}
	for ti, t := range c.Tracelets {
		if t == nil {
			return cfgErr(0, "tracelet %d is empty", ti+1)
		}
		if t.Name == "" {
			return cfgErr(t.line, "tracelet %d has no name", ti+1)
		}
		if seen[t.Name] {
			return cfgErr(t.line, "tracelet %q defined twice", t.Name)
		}
		seen[t.Name] = true
		ct, err := tc.tracelet(t)
		if err != nil {
			return err
		}
		p.tracelets = append(p.tracelets, ct)
		if err := p.addToPool(c, t, len(p.tracelets)-1, &global); err != nil {
			return err
		}
	}
	if len(global.tracelets) > 0 {
		if global.clients == 0 {
			global.clients = 1
		}
		p.pools = append([]pool{global}, p.pools...)
	}
	return p.countClients(c)
}

// weight returns the tracelet's weight (default 1).
func (t *Tracelet) weight() (float64, error) {
	w := t.Weight
	if w == 0 {
		w = 1
	}
	if !(w > 0) || w > 1e12 {
		return 0, cfgErr(t.line, "tracelet %q: weight must be positive", t.Name)
	}
	return w, nil
}

// addToPool gives tracelet t (compiled as tracelet ti) a client pool of
// its own when it asks for clients, or adds it to the shared pool global.
func (p *plan) addToPool(c *Config, t *Tracelet, ti int, global *pool) error {
	w, err := t.weight()
	if err != nil {
		return err
	}
	if t.Clients < 0 || t.Clients > MaxClients {
		return cfgErr(t.line, "tracelet %q: clients out of range", t.Name)
	}
	if t.Clients > 0 {
		pl := pool{clients: t.Clients, think: c.Think, tracelets: []int{ti}, cum: []float64{w}}
		if t.Think != nil {
			pl.think = *t.Think
		}
		p.pools = append(p.pools, pl)
		return nil
	}
	if t.Think != nil {
		return cfgErr(t.line, "tracelet %q: think needs clients of its own", t.Name)
	}
	prev := 0.0
	if n := len(global.cum); n > 0 {
		prev = global.cum[n-1]
	}
	global.tracelets = append(global.tracelets, ti)
	global.cum = append(global.cum, prev+w)
	return nil
}

// countClients totals the pools' clients and checks that client_net has
// an address for each.
func (p *plan) countClients(c *Config) error {
	if c.Clients < 0 || c.Clients > MaxClients {
		return cfgErr(0, "clients out of range")
	}
	for _, pl := range p.pools {
		p.clients += pl.clients
	}
	if p.clients > MaxClients {
		return cfgErr(0, "more than %d clients", MaxClients)
	}
	if room := 1<<(32-p.clientNet.Bits()) - 2; p.clients > room {
		return cfgErr(0, "client_net %s has room for %d clients, not %d", p.clientNet, room, p.clients)
	}
	return nil
}

// traceletCompiler compiles the templates of one configuration, counting
// their messages against MaxTemplateHops.
type traceletCompiler struct {
	p    *plan
	def  Defaults
	t    *Tracelet // the tracelet being compiled
	hops int
}

// tracelet compiles t: its call tree or its message list.
func (tc *traceletCompiler) tracelet(t *Tracelet) (*ctracelet, error) {
	tc.t = t
	if (t.RPC == nil) == (len(t.Messages) == 0) {
		return nil, cfgErr(t.line, "tracelet %q: give exactly one of rpc and messages", t.Name)
	}
	if _, err := t.weight(); err != nil {
		return nil, err
	}
	ct := &ctracelet{name: t.Name, from: -1}
	if t.RPC != nil {
		rpc, err := tc.call(t.RPC, 0)
		if err != nil {
			return nil, err
		}
		ct.rpc = rpc
		if t.From != "" {
			sp, ok := tc.p.lookup(t.From)
			if !ok || sp.n > 1 {
				return nil, cfgErr(t.line, "tracelet %q: from %q must name a node without replicas", t.Name, t.From)
			}
			ct.from = sp.first
		}
		return ct, nil
	}
	if t.From != "" {
		return nil, cfgErr(t.line, "tracelet %q: from is for rpc tracelets (a message list names its first sender)", t.Name)
	}
	ids := make(map[string]int)
	for mi, m := range t.Messages {
		cm, err := tc.message(mi, m, ids)
		if err != nil {
			return nil, err
		}
		ct.msgs = append(ct.msgs, cm)
	}
	return ct, nil
}

// call compiles one call of an rpc tracelet and, depth first, its calls.
func (tc *traceletCompiler) call(cl *Call, depth int) (*ccall, error) {
	t, p, def := tc.t, tc.p, tc.def
	if cl == nil {
		return nil, cfgErr(t.line, "tracelet %q: empty call", t.Name)
	}
	tc.hops += 2
	if depth > MaxDepth || tc.hops > MaxTemplateHops {
		return nil, cfgErr(cl.line, "tracelet %q: calls nest deeper than %d or the templates have more than %d messages", t.Name, MaxDepth, MaxTemplateHops)
	}
	ch, err := p.choice(cl.To, cl.line, t.Name, false)
	if err != nil {
		return nil, err
	}
	if cl.CallBytes < 0 || cl.ReplyBytes < 0 {
		return nil, cfgErr(cl.line, "tracelet %q: sizes must not be negative", t.Name)
	}
	cc := &ccall{
		to:         ch,
		delay:      gdef(cl.Delay, def.Delay, Gauss{}),
		reply:      gdef(cl.Reply, def.Reply, Gauss{}),
		net:        gdef(cl.Net, def.Net, defaultNet),
		callBytes:  idef(cl.CallBytes, def.CallBytes, defaultCallBytes),
		replyBytes: idef(cl.ReplyBytes, def.ReplyBytes, defaultReplyBytes),
		parallel:   cl.Parallel,
		prob:       cl.Prob,
		fail:       cl.Fail,
		label:      cl.Label,
		derive:     cl.Derive,
	}
	if cl.Derive && p.ev.deriveLine == 0 {
		p.ev.deriveLine = max(cl.line, 1)
	}
	if cc.prob == 0 {
		cc.prob = 1
	}
	if !(cc.prob > 0 && cc.prob <= 1) || !(cc.fail >= 0 && cc.fail < 1) {
		return nil, cfgErr(cl.line, "tracelet %q: want 0 < prob <= 1 and 0 <= fail < 1", t.Name)
	}
	if len(cc.label) > 128 || strings.ContainsAny(cc.label, "\t\r\n") {
		return nil, cfgErr(cl.line, "tracelet %q: a label is one line of at most 128 bytes", t.Name)
	}
	for n, g := range cl.DelayBy {
		sp, ok := p.lookup(n)
		if !ok {
			return nil, cfgErr(cl.line, "tracelet %q: delay_by: unknown node %q", t.Name, n)
		}
		if cc.delayBy == nil {
			cc.delayBy = make(map[int]Gauss)
		}
		for i := sp.first; i < sp.first+sp.n; i++ {
			cc.delayBy[i] = g
		}
	}
	for _, sub := range cl.Calls {
		s, err := tc.call(sub, depth+1)
		if err != nil {
			return nil, err
		}
		cc.calls = append(cc.calls, s)
	}
	return cc, nil
}

// message compiles message mi of a messages tracelet; ids maps the
// message ids seen so far to their index.
func (tc *traceletCompiler) message(mi int, m *MsgSpec, ids map[string]int) (cmsg, error) {
	t, p, def := tc.t, tc.p, tc.def
	if m == nil {
		return cmsg{}, cfgErr(t.line, "tracelet %q: message %d is empty", t.Name, mi+1)
	}
	tc.hops++
	if tc.hops > MaxTemplateHops {
		return cmsg{}, cfgErr(m.line, "the templates have more than %d messages", MaxTemplateHops)
	}
	ch, err := p.choice(m.To, m.line, t.Name, true)
	if err != nil {
		return cmsg{}, err
	}
	if m.Bytes < 0 {
		return cmsg{}, cfgErr(m.line, "tracelet %q: bytes must not be negative", t.Name)
	}
	cm := cmsg{
		after: -1, from: -1, to: ch,
		delay: gdef(m.Delay, def.Delay, Gauss{}),
		net:   gdef(m.Net, def.Net, defaultNet),
		bytes: idef(m.Bytes, def.CallBytes, defaultCallBytes),
	}
	if cm.kind, err = trace.ParseKind(m.Kind); err != nil {
		return cmsg{}, cfgErr(m.line, "tracelet %q: %v", t.Name, err)
	}
	if m.ID != "" {
		if _, dup := ids[m.ID]; dup {
			return cmsg{}, cfgErr(m.line, "tracelet %q: message id %q used twice", t.Name, m.ID)
		}
		ids[m.ID] = mi
	}
	if mi == 0 {
		err = tc.firstMessage(m, &cm)
	} else {
		err = tc.laterMessage(mi, m, &cm, ids)
	}
	return cm, err
}

// firstMessage checks the sender of a messages tracelet's first message.
func (tc *traceletCompiler) firstMessage(m *MsgSpec, cm *cmsg) error {
	t := tc.t
	if (m.From == "" || m.From == "CLIENT") && cm.to.nodes[0] < 0 {
		return cfgErr(m.line, "tracelet %q: the first message goes from CLIENT to a node", t.Name)
	}
	if m.After != "" {
		return cfgErr(m.line, "tracelet %q: the first message has no after", t.Name)
	}
	switch m.From {
	case "", "CLIENT":
		cm.fromClient = true
	default:
		sp, ok := tc.p.lookup(m.From)
		if !ok {
			return cfgErr(m.line, "tracelet %q: unknown node %q", t.Name, m.From)
		}
		if sp.n > 1 {
			return cfgErr(m.line, "tracelet %q: the first message's sender %s has replicas; name one node", t.Name, m.From)
		}
		cm.from = sp.first
	}
	return nil
}

// laterMessage checks the cause of a messages tracelet's later message
// and, when named, its sender.
func (tc *traceletCompiler) laterMessage(mi int, m *MsgSpec, cm *cmsg, ids map[string]int) error {
	t := tc.t
	a, ok := ids[m.After]
	if m.After == "" || !ok {
		return cfgErr(m.line, "tracelet %q: message %d must name an earlier message id in after (got %q)", t.Name, mi+1, m.After)
	}
	cm.after = a
	if m.From != "" {
		prev := t.Messages[a].To
		if len(prev) != 1 || prev[0].Name != m.From {
			return cfgErr(m.line, "tracelet %q: from %q must be the receiver of %q (%s)", t.Name, m.From, m.After, prev)
		}
	}
	return nil
}

// compileClocks reads the skewer's clock shifts, the sniffers and the
// loss model.
func (p *plan) compileClocks(c *Config) error {
	p.skew = make([]int64, len(p.nodes))
	for n, d := range c.Skew {
		if n == "CLIENT" {
			p.clientSkew = int64(d)
			continue
		}
		sp, ok := p.lookup(n)
		if !ok {
			return cfgErr(0, "skew: unknown node %q", n)
		}
		for i := sp.first; i < sp.first+sp.n; i++ {
			p.skew[i] = int64(d)
		}
	}
	p.untraced = make([]bool, len(p.nodes))
	for _, n := range c.Untraced {
		if n == "CLIENT" {
			p.clUntraced = true
			continue
		}
		sp, ok := p.lookup(n)
		if !ok {
			return cfgErr(0, "untraced: unknown node %q", n)
		}
		for i := sp.first; i < sp.first+sp.n; i++ {
			p.untraced[i] = true
		}
	}
	seenSniffer := make(map[string]bool)
	for _, sn := range c.Sniffers {
		if _, err := p.coverage(sn); err != nil {
			return cfgErr(0, "%v", errors.Unwrap(err))
		}
		if seenSniffer[sn.Name] {
			return cfgErr(0, "sniffer %s defined twice", sn.Name)
		}
		if !(math.Abs(sn.DriftPPM) <= 1e4) || !(sn.Loss >= 0 && sn.Loss < 1) {
			return cfgErr(0, "sniffer %s: want |drift_ppm| <= 10000 and 0 <= loss < 1", sn.Name)
		}
		seenSniffer[sn.Name] = true
	}
	p.drop = c.Drop
	if !(p.drop.Rate >= 0) || p.drop.Queue < 0 || !(p.drop.Random >= 0 && p.drop.Random < 1) {
		return cfgErr(0, "drop: want rate >= 0, queue >= 0 and 0 <= random < 1")
	}
	if p.drop.Rate > 0 && p.drop.Queue == 0 {
		p.drop.Queue = 64
	}
	return nil
}

// compileEvidence reads the evidence block and the nodes' evidence
// settings.
func (p *plan) compileEvidence(c *Config) error {
	for _, n := range p.nodes {
		if n.traced {
			p.ev.any = true
		}
		if n.ids != "" || n.protocol != "" {
			p.ev.payloads = true
		}
	}
	if e := c.Evidence; e != nil {
		p.ev.payloads = true
		p.ev.conns, p.ev.labels = e.Conns, e.Labels
		if e.Tokens != nil {
			tk := *e.Tokens
			if tk.PerRequest < 0 || tk.Noise < 0 || tk.Vocabulary < 0 || tk.NoiseVocabulary < 0 || !(tk.Share >= 0 && tk.Share <= 1) ||
				tk.PerRequest > trace.MaxTokens || tk.Noise > trace.MaxTokens {
				return cfgErr(0, "evidence: tokens: want counts between 0 and %d and 0 <= share <= 1", trace.MaxTokens)
			}
			if tk.Values < 0 || tk.Values > maxVocabulary || tk.Vocabulary > maxVocabulary || tk.Values > 0 && tk.PerRequest >= trace.MaxTokens {
				return cfgErr(0, "evidence: tokens: want vocabulary and values between 0 and %d, and room for the value among a request's %d tokens", maxVocabulary, trace.MaxTokens)
			}
			if tk.PerRequest == 0 && tk.Noise == 0 {
				tk.PerRequest = 3
			}
			if tk.Share == 0 {
				tk.Share = 0.9
			}
			if tk.Vocabulary == 0 {
				tk.Vocabulary = 1 << 20
			}
			if tk.NoiseVocabulary == 0 {
				tk.NoiseVocabulary = 64
			}
			p.ev.tokens = &tk
		}
	}
	if p.ev.deriveLine > 0 && (p.ev.tokens == nil || p.ev.tokens.Values == 0) {
		return cfgErr(p.ev.deriveLine, "derive: a call carries a key derived from its request's value: want evidence tokens with values")
	}
	p.ev.any = p.ev.any || p.ev.payloads
	return nil
}

// choice compiles c. With allowClient, c may be exactly "CLIENT" (node
// index -1): the client of the instance.
func (p *plan) choice(c Choice, line int, tracelet string, allowClient bool) (choice, error) {
	if len(c) == 0 {
		return choice{}, cfgErr(line, "tracelet %q: missing to", tracelet)
	}
	if allowClient && len(c) == 1 && c[0].Name == "CLIENT" {
		return choice{nodes: []int{-1}, cum: []float64{1}}, nil
	}
	var ch choice
	sum := 0.0
	for k, a := range c {
		sp, ok := p.lookup(a.Name)
		if !ok {
			if a.Name == "CLIENT" {
				return choice{}, cfgErr(line, "tracelet %q: CLIENT cannot be called, nor be one of several alternatives", tracelet)
			}
			return choice{}, cfgErr(line, "tracelet %q: unknown node %q", tracelet, a.Name)
		}
		sum += a.Weight
		ch.nodes = append(ch.nodes, sp.first)
		ch.cum = append(ch.cum, sum)
		if sp.n > 1 && ch.n == nil {
			ch.n = make([]int, len(c))
			for j := range k {
				ch.n[j] = 1
			}
		}
		if ch.n != nil {
			ch.n[k] = sp.n
		}
	}
	return ch, nil
}

// errTooBig is returned when a configuration would generate more messages
// than allowed.
var errTooBig = errors.New("generates more messages than the limit")
