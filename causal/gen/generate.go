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
}

// party is a sender or receiver: a node (node >= 0) or a client.
type party struct {
	node   int
	client int
}

type state struct {
	p       *plan
	rng     *rand.Rand
	t       *trace.Trace
	msgs    []gmsg
	limit   int
	nodeEP  []trace.Sym
	nodeSym []trace.Sym
	nodeEph []uint16
	clAddr  []netip.Addr
	clSym   []trace.Sym
	clEph   []uint16
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
		p:     p,
		rng:   rand.New(rand.NewPCG(c.Seed, 0x9e3779b97f4a7c15)),
		t:     &trace.Trace{},
		limit: opt.MaxMessages,
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
	if err := s.run(); err != nil {
		return nil, err
	}
	return s.finish(), nil
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

// sample draws from g with its SD scaled, truncated at zero.
func (s *state) sample(g Gauss) int64 {
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

func (s *state) pick(ch choice) int {
	if len(ch.nodes) == 1 {
		return ch.nodes[0]
	}
	r := s.rng.Float64() * ch.cum[len(ch.cum)-1]
	i := sort.SearchFloat64s(ch.cum, r)
	if i >= len(ch.nodes) {
		i = len(ch.nodes) - 1
	}
	if ch.cum[i] == r && i+1 < len(ch.nodes) {
		i++
	}
	return ch.nodes[i]
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

// run schedules the clients: each runs an instance, thinks, runs the next.
func (s *state) run() error {
	p := s.p
	var h []clientEvent
	less := func(a, b clientEvent) bool { return a.at < b.at || a.at == b.at && a.client < b.client }
	push := func(e clientEvent) {
		h = append(h, e)
		for i := len(h) - 1; i > 0; {
			par := (i - 1) / 2
			if !less(h[i], h[par]) {
				break
			}
			h[i], h[par] = h[par], h[i]
			i = par
		}
	}
	pop := func() clientEvent {
		top := h[0]
		last := len(h) - 1
		h[0] = h[last]
		h = h[:last]
		for i := 0; ; {
			l, r, m := 2*i+1, 2*i+2, i
			if l < len(h) && less(h[l], h[m]) {
				m = l
			}
			if r < len(h) && less(h[r], h[m]) {
				m = r
			}
			if m == i {
				break
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
		return top
	}
	client := 0
	for pi, pl := range p.pools {
		spread := int64(pl.think.Max)
		if spread <= 0 {
			spread = 1e6
		}
		for range pl.clients {
			push(clientEvent{at: p.start + s.rng.Int64N(spread), client: client, pool: pi})
			client++
		}
	}
	var busy int64
	minStart, maxEnd := int64(math.MaxInt64), int64(math.MinInt64)
	for len(h) > 0 {
		if p.instances > 0 && int(s.inst) >= p.instances {
			break
		}
		e := pop()
		if p.end > 0 && e.at >= p.end {
			continue // this client is done
		}
		pl := &p.pools[e.pool]
		ti := pl.tracelets[0]
		if len(pl.tracelets) > 1 {
			r := s.rng.Float64() * pl.cum[len(pl.cum)-1]
			k := min(sort.SearchFloat64s(pl.cum, r), len(pl.tracelets)-1)
			ti = pl.tracelets[k]
		}
		s.tracelet = int32(ti)
		end, err := s.instance(p.tracelets[ti], e.client, e.at)
		if err != nil {
			return err
		}
		s.inst++
		busy += end - e.at
		minStart = min(minStart, e.at)
		maxEnd = max(maxEnd, end)
		next := max(end+int64(pl.think.Min)+s.rng.Int64N(int64(pl.think.Max-pl.think.Min)+1), e.at+1000)
		push(clientEvent{at: next, client: e.client, pool: e.pool})
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
	client := party{node: -1, client: cl}
	s.clientEP = s.eph(client)
	if tl.rpc != nil {
		_, end, err := s.call(tl.rpc, client, -1, t0, true)
		return end, err
	}
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
		if n := s.pick(m.to); n >= 0 {
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
		k, err := s.emit(gmsg{
			send: send, recv: send + net,
			src: src, dst: dst, srcNode: s.name(from), dstNode: s.name(to),
			bytes: int32(m.bytes), kind: m.kind, proto: proto, parent: cause,
		})
		if err != nil {
			return 0, err
		}
		recv[i], arrive[i], idx[i] = to, send+net, k
		end = max(end, send+net)
	}
	return end, nil
}

// call generates one RPC of c made by caller, caused by message cause
// arriving at time at; it returns the RETURN and its arrival time.
func (s *state) call(c *ccall, caller party, cause int32, at int64, root bool) (int32, int64, error) {
	callee := party{node: s.pick(c.to)}
	send := at
	src := s.clientEP
	if !root {
		d := c.delay
		if g, ok := c.delayBy[caller.node]; ok {
			d = g
		}
		send += s.sample(d)
		src = s.eph(caller)
	}
	dst := s.nodeEP[callee.node]
	var callID trace.Sym
	if s.p.callIDs {
		callID = src
	}
	proto := s.p.nodes[callee.node].proto
	net := s.sample(c.net)
	ci, err := s.emit(gmsg{
		send: send, recv: send + net,
		src: src, dst: dst, srcNode: s.name(caller), dstNode: s.name(callee),
		callID: callID, bytes: int32(c.callBytes), kind: trace.KindCall, proto: proto, parent: cause,
	})
	if err != nil {
		return 0, 0, err
	}
	arr := send + net
	last, lastT := ci, arr
	for i, sub := range c.calls {
		if c.parallel {
			r, rt, err := s.call(sub, callee, ci, arr, false)
			if err != nil {
				return 0, 0, err
			}
			if i == 0 || rt > lastT {
				last, lastT = r, rt
			}
			continue
		}
		last, lastT, err = s.call(sub, callee, last, lastT, false)
		if err != nil {
			return 0, 0, err
		}
	}
	rsend := lastT + s.sample(c.reply)
	rnet := s.sample(c.net)
	ri, err := s.emit(gmsg{
		send: rsend, recv: rsend + rnet,
		src: dst, dst: src, srcNode: s.name(callee), dstNode: s.name(caller),
		callID: callID, bytes: int32(c.replyBytes), kind: trace.KindReturn, proto: proto, parent: last,
	})
	return ri, rsend + rnet, err
}

// finish orders the messages, builds the truth, applies the skewer and the
// sniffer's losses, and builds the observed trace.
func (s *state) finish() *Output {
	tr := s.truth()
	st := Stats{Instances: int(s.inst), Messages: len(tr.Parent), Parallelism: s.parallelism, CallParallelism: callParallelism(tr), SpanNS: s.span}
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
	return &Output{Trace: obs, Truth: tr, Stats: st}
}

// truth sorts the generated messages by true send time into s.t and
// returns the truth over them (Observed still to be filled).
func (s *state) truth() *Truth {
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
			CallID: m.callID, Kind: m.kind, Proto: m.proto,
		}
		tr.Instance[i] = m.inst
		tr.Tracelet[i] = m.tracelet
		tr.Parent[i] = -1
		if m.parent >= 0 {
			tr.Parent[i] = pos[m.parent]
		}
	}
	s.msgs = nil
	return tr
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
	}
	for _, sym := range s.clSym {
		skew[sym] = s.p.clientSkew
	}
	return skew
}

// observe builds the observed trace of the kept messages: skewed
// timestamps (one or two per message), sorted by Message.Time, and records
// each kept message's index in tr.Observed.
func (s *state) observe(tr *Truth, kept []int32) *trace.Trace {
	skew := s.skewBySym()
	obs := &trace.Trace{}
	for i := 1; i < s.t.Syms.Len(); i++ {
		obs.Intern(s.t.Syms.String(trace.Sym(i)))
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
		Version:    TruthVersion,
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
	return m
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
