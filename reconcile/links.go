package reconcile

import (
	"cmp"
	"maps"
	"net/netip"
	"slices"

	"github.com/wirepath/wirepath/flows"
	"github.com/wirepath/wirepath/trace"
)

// Links: flows measures passive round trips per connection and capture
// point (each end's half: flows.PointRTT); reconcile pools them per pair
// of nodes, the trace's Meta.Links, which the what-if model reads. While
// connections end (AddConn) their figures are pooled by client address
// and server endpoint, which is all flows knows; Finish names the nodes
// of each pool from the trace's messages and merges the pools of one pair
// of nodes.

// maxPooled bounds the samples kept per half and rate of a pool (counts
// and minimums go on; later samples replace earlier ones in turn, so the
// kept ones span the run).
const maxPooled = 256

// samplePool pools duration or rate samples.
type samplePool[T cmp.Ordered] struct {
	n       int64
	min     T
	samples []T
}

func (p *samplePool[T]) add(v T) {
	if p.n == 0 || v < p.min {
		p.min = v
	}
	if len(p.samples) < maxPooled {
		p.samples = append(p.samples, v)
	} else {
		p.samples[p.n%maxPooled] = v
	}
	p.n++
}

func (p *samplePool[T]) merge(o *samplePool[T]) {
	if o.n == 0 {
		return
	}
	empty := p.n == 0
	for _, v := range o.samples {
		p.add(v)
	}
	// Samples beyond those o kept count, and its minimum holds.
	p.n += o.n - int64(len(o.samples))
	if empty || o.min < p.min {
		p.min = o.min
	}
}

// quantile returns the q-quantile of the kept samples (the zero value for
// none); it sorts them.
func (p *samplePool[T]) quantile(q float64) T {
	var zero T
	if len(p.samples) == 0 {
		return zero
	}
	slices.Sort(p.samples)
	return p.samples[min(len(p.samples)-1, int(q*float64(len(p.samples))))]
}

// halfPool pools one half's round trips.
type halfPool struct {
	samplePool[int64]
	syn, acks, echoes int64
}

func (h *halfPool) addHalf(s *flows.HalfRTT) {
	if s.N == 0 {
		return
	}
	h.merge(&samplePool[int64]{n: s.N, min: s.MinNS, samples: s.Samples})
	h.syn += s.Handshake
	h.acks += s.Acks
	h.echoes += s.Echoes
}

func (h *halfPool) mergeHalf(o *halfPool) {
	h.merge(&o.samplePool)
	h.syn += o.syn
	h.acks += o.acks
	h.echoes += o.echoes
}

func (h *halfPool) dist() trace.HalfDist {
	return trace.HalfDist{N: h.n, Handshake: h.syn, Acks: h.acks, Echoes: h.echoes,
		MinNS: h.min, P50NS: h.quantile(0.5), P90NS: h.quantile(0.9)}
}

// poolKey identifies the connections from a client address to a server
// endpoint.
type poolKey struct {
	client netip.Addr
	server netip.AddrPort
	proto  trace.Proto
}

// linkPool pools the figures of the connections of one poolKey. Index 0
// of each pair is the client's (its half, its data), 1 the server's.
type linkPool struct {
	conns, opened int64
	points        map[uint16]*[2]halfPool // by capture point: the halves toward client, server
	window        [2]int64                // largest advertised, -1 unknown
	mss           int
	pairs         [2]samplePool[float64] // packet pairs of the client's, the server's data
	tput          [2]rateSum             // MSHN throughput of the client's, the server's messages
}

// rateSum adds up connections' aggregate rates, to average them.
type rateSum struct {
	sum         float64
	conns, msgs int64
}

func (s *rateSum) add(o rateSum) {
	s.sum, s.conns, s.msgs = s.sum+o.sum, s.conns+o.conns, s.msgs+o.msgs
}

func newLinkPool() *linkPool {
	return &linkPool{points: map[uint16]*[2]halfPool{}, window: [2]int64{-1, -1}}
}

// hostHalfKey is a capture point and a host address: the round trip from
// the point to the host and back is the same on every connection.
type hostHalfKey struct {
	point uint16
	addr  netip.Addr
}

// poolConn adds a connection's passive figures to its pool and to the
// host halves.
func (r *Reconciler) poolConn(cs *flows.ConnStats) {
	proto := trace.ProtoTCP
	if cs.Proto == "udp" {
		proto = trace.ProtoUDP
	}
	k := poolKey{client: cs.Client.Addr().Unmap(), server: unmapAP(cs.Server), proto: proto}
	lp := r.pools[k]
	if lp == nil {
		lp = newLinkPool()
		r.pools[k] = lp
	}
	lp.conns++
	if cs.Caller == "syn" {
		lp.opened++
	}
	addrs := [2]netip.Addr{k.client, k.server.Addr()}
	for i := range cs.Points {
		p := &cs.Points[i]
		pt := r.point(p.At)
		hp := lp.points[pt]
		if hp == nil {
			hp = new([2]halfPool)
			lp.points[pt] = hp
		}
		for e, h := range []*flows.HalfRTT{&p.ToClient, &p.ToServer} {
			hp[e].addHalf(h)
			if h.N > 0 {
				hk := hostHalfKey{pt, addrs[e]}
				if old, ok := r.hostHalves[hk]; !ok || h.MinNS < old {
					r.hostHalves[hk] = h.MinNS
				}
			}
		}
		for e, rt := range []*flows.Rate{&p.ClientPairs, &p.ServerPairs} {
			if rt.N > 0 {
				lp.pairs[e].add(rt.P50)
			}
		}
	}
	for e, w := range []flows.Window{cs.ClientWindow, cs.ServerWindow} {
		if w.Scaled {
			// A raw window seen from the middle of a connection may be
			// scaled by a factor the capture does not know.
			lp.window[e] = max(lp.window[e], w.MaxBytes)
		}
		if w.MSS > 0 && (lp.mss == 0 || w.MSS < lp.mss) {
			lp.mss = w.MSS
		}
	}
	for e, t := range []flows.Rate{cs.ClientThroughput, cs.ServerThroughput} {
		if t.N > 0 && t.Aggregate > 0 {
			lp.tput[e].add(rateSum{sum: t.Aggregate, conns: 1, msgs: t.N})
		}
	}
}

// nodePair is a link's nodes, a the client side.
type nodePair struct{ a, b trace.Sym }

// links builds the trace's Meta.Links from the pools and the messages.
func (r *Reconciler) links(st *state) {
	tr := st.tr
	names := r.poolNodes(tr)
	type acc struct {
		a, b    trace.Sym
		pools   []*linkPool
		swapped []bool
		keys    []poolKey
		calls   int64
		protos  uint8
	}
	byPair := map[[2]trace.Sym]*acc{}
	var order [][2]trace.Sym
	sides := linkSides(tr, names, r.pools)
	for _, k := range slices.SortedFunc(maps.Keys(names), comparePoolKeys) {
		np := names[k]
		u := [2]trace.Sym{min(np.a, np.b), max(np.a, np.b)}
		ac := byPair[u]
		if ac == nil {
			ac = &acc{a: sides[u].a, b: sides[u].b}
			byPair[u] = ac
			order = append(order, u)
		}
		ac.pools = append(ac.pools, r.pools[k])
		ac.swapped = append(ac.swapped, np.a != ac.a)
		ac.keys = append(ac.keys, k)
		ac.protos |= 1 << k.proto
	}
	for i := range tr.Messages {
		m := &tr.Messages[i]
		if m.Kind != trace.KindCall {
			continue
		}
		u := [2]trace.Sym{min(m.SrcNode, m.DstNode), max(m.SrcNode, m.DstNode)}
		if ac := byPair[u]; ac != nil && m.SrcNode == ac.a {
			ac.calls++
		}
	}
	var out []trace.Link
	for _, u := range order {
		ac := byPair[u]
		l := r.mergeLink(st, ac.pools, ac.swapped, ac.keys)
		l.A, l.B, l.Calls = tr.Str(ac.a), tr.Str(ac.b), ac.calls
		l.Proto = protoNames(ac.protos)
		l.SameHost = l.SameHost || ac.a == ac.b
		out = append(out, l)
	}
	slices.SortFunc(out, func(x, y trace.Link) int { return cmp.Or(cmp.Compare(x.A, y.A), cmp.Compare(x.B, y.B)) })
	tr.Meta.Links = out
}

// comparePoolKeys orders pool keys by client, server and protocol.
func comparePoolKeys(x, y poolKey) int {
	return cmp.Or(x.client.Compare(y.client), x.server.Compare(y.server), cmp.Compare(x.proto, y.proto))
}

// linkSides orients every link between two nodes of names: A is the
// side that opened most of the link's connections (the clients of its
// pools), the lower name on a tie, whatever order the pools come in.
func linkSides(tr *trace.Trace, names map[poolKey]nodePair, pools map[poolKey]*linkPool) map[[2]trace.Sym]nodePair {
	votes := map[[2]trace.Sym]int{}
	for k, np := range names {
		u := [2]trace.Sym{min(np.a, np.b), max(np.a, np.b)}
		if np.a == u[0] {
			votes[u] += int(pools[k].conns)
		} else {
			votes[u] -= int(pools[k].conns)
		}
	}
	out := make(map[[2]trace.Sym]nodePair, len(votes))
	for u, v := range votes {
		a, b := u[0], u[1]
		if v < 0 || v == 0 && tr.Str(b) < tr.Str(a) {
			a, b = b, a
		}
		out[u] = nodePair{a, b}
	}
	return out
}

func protoNames(p uint8) string {
	switch {
	case p&(1<<trace.ProtoTCP) != 0 && p&(1<<trace.ProtoUDP) != 0:
		return "tcp+udp"
	case p&(1<<trace.ProtoUDP) != 0:
		return "udp"
	}
	return "tcp"
}

// poolNodes names the nodes of each pool from the messages of its
// connections: the pair of node names most of them carry (a pool may hold
// several processes' connections of one host).
func (r *Reconciler) poolNodes(tr *trace.Trace) map[poolKey]nodePair {
	votes := map[poolKey]map[nodePair]int{}
	eps := map[trace.Sym]netip.AddrPort{}
	ep := func(s trace.Sym) (netip.AddrPort, bool) {
		if ap, ok := eps[s]; ok {
			return ap, ap.IsValid()
		}
		ap, err := netip.ParseAddrPort(tr.Str(s))
		if err != nil {
			ap = netip.AddrPort{}
		}
		ap = unmapAP(ap)
		eps[s] = ap
		return ap, ap.IsValid()
	}
	// The messages are counted by their ends first (one small key each),
	// then each distinct one is voted with its count.
	type ends struct {
		src, dst, srcNode, dstNode trace.Sym
		proto                      trace.Proto
	}
	counts := map[ends]int{}
	// A connection's messages come in runs with the same ends: a run is
	// counted at once.
	var run ends
	n := 0
	for i := range tr.Messages {
		m := &tr.Messages[i]
		e := ends{m.Src, m.Dst, m.SrcNode, m.DstNode, m.Proto}
		if n > 0 && e != run {
			counts[run] += n
			n = 0
		}
		run = e
		n++
	}
	if n > 0 {
		counts[run] += n
	}
	for e, n := range counts {
		src, ok1 := ep(e.src)
		dst, ok2 := ep(e.dst)
		if !ok1 || !ok2 {
			continue
		}
		var k poolKey
		var np nodePair
		switch {
		case r.pools[poolKey{src.Addr(), dst, e.proto}] != nil:
			k, np = poolKey{src.Addr(), dst, e.proto}, nodePair{e.srcNode, e.dstNode}
		case r.pools[poolKey{dst.Addr(), src, e.proto}] != nil:
			k, np = poolKey{dst.Addr(), src, e.proto}, nodePair{e.dstNode, e.srcNode}
		default:
			continue
		}
		v := votes[k]
		if v == nil {
			v = map[nodePair]int{}
			votes[k] = v
		}
		v[np] += n
	}
	out := make(map[poolKey]nodePair, len(votes))
	for k, v := range votes {
		best, bn := nodePair{}, -1
		for np, n := range v {
			if n > bn || n == bn && (np.a < best.a || np.a == best.a && np.b < best.b) {
				best, bn = np, n
			}
		}
		out[k] = best
	}
	return out
}

// mergeLink merges the pools of one pair of nodes into a Link (without its
// names and calls). swapped[i] says pool i's client is the link's B.
func (r *Reconciler) mergeLink(st *state, pools []*linkPool, swapped []bool, keys []poolKey) trace.Link {
	l := trace.Link{WindowA: -1, WindowB: -1}
	pts := map[uint16]*[2]halfPool{}
	var pairs [2]samplePool[float64]
	var tput [2]rateSum
	var addrs [2][]netip.Addr // the link's addresses at A, at B
	for i, lp := range pools {
		ea, eb := 0, 1 // pool index of the link's A and B
		if swapped[i] {
			ea, eb = 1, 0
		}
		addrs[ea] = append(addrs[ea], keys[i].client)
		addrs[eb] = append(addrs[eb], keys[i].server.Addr())
		l.Conns += lp.conns
		l.Opened += lp.opened
		for pt, hp := range lp.points {
			m := pts[pt]
			if m == nil {
				m = new([2]halfPool)
				pts[pt] = m
			}
			m[0].mergeHalf(&hp[ea])
			m[1].mergeHalf(&hp[eb])
		}
		l.WindowA, l.WindowB = max(l.WindowA, lp.window[ea]), max(l.WindowB, lp.window[eb])
		if lp.mss > 0 && (l.MSS == 0 || lp.mss < l.MSS) {
			l.MSS = lp.mss
		}
		pairs[0].merge(&lp.pairs[ea])
		pairs[1].merge(&lp.pairs[eb])
		tput[0].add(lp.tput[ea])
		tput[1].add(lp.tput[eb])
		if st.ht.ofAddr(keys[i].client) == st.ht.ofAddr(keys[i].server.Addr()) || keys[i].client.IsLoopback() {
			l.SameHost = true
		}
	}
	l.PairsAB, l.PairsBA = rateOf(&pairs[0]), rateOf(&pairs[1])
	for e, t := range []*trace.LinkRate{&l.ThroughputAB, &l.ThroughputBA} {
		if s := tput[e]; s.conns > 0 {
			// The mean of the connections' aggregate rates.
			*t = trace.LinkRate{N: s.msgs, P50: s.sum / float64(s.conns)}
		}
	}
	l.Points = r.linkPoints(pts)
	l.RTT = r.linkRTT(pts, addrs)
	return l
}

func rateOf(p *samplePool[float64]) trace.LinkRate {
	if p.n == 0 {
		return trace.LinkRate{}
	}
	return trace.LinkRate{N: p.n, P50: p.quantile(0.5), Max: p.quantile(1)}
}

// linkPoints summarises the halves each point measured, the point with
// the most samples of both halves first.
func (r *Reconciler) linkPoints(pts map[uint16]*[2]halfPool) []trace.LinkPoint {
	var out []trace.LinkPoint
	ids := make([]uint16, 0, len(pts))
	for pt := range pts {
		ids = append(ids, pt)
	}
	score := func(pt uint16) int64 {
		h := pts[pt]
		if h[0].n == 0 || h[1].n == 0 {
			return 0
		}
		return h[0].n + h[1].n
	}
	slices.SortFunc(ids, func(x, y uint16) int { return cmp.Or(cmp.Compare(score(y), score(x)), cmp.Compare(x, y)) })
	for _, pt := range ids {
		h := pts[pt]
		if h[0].n == 0 && h[1].n == 0 {
			continue
		}
		lp := trace.LinkPoint{Point: r.pointName(int32(pt)), ToA: h[0].dist(), ToB: h[1].dist()}
		if h[0].n > 0 && h[1].n > 0 {
			lp.Position = position(h[0].min, h[1].min)
		}
		out = append(out, lp)
	}
	return out
}

// position says which end a point whose halves are a and b is near.
func position(a, b int64) string {
	switch {
	case a+b <= 0:
		return "between"
	case 5*a < a+b:
		return "A"
	case 5*b < a+b:
		return "B"
	}
	return "between"
}

// linkRTT is the link's end-to-end round trip, at the capture point
// with the most samples of the link's own connections among those that
// measured both halves: each half the smaller of the link's own minimum
// and the point's host half toward any of that end's addresses (measured
// on any connection: a long-lived connection whose data is always
// acknowledged by an answer never shows the network's half, another
// connection of the same host may). The median and 90th percentile add
// the link's own halves' (when it has both).
func (r *Reconciler) linkRTT(pts map[uint16]*[2]halfPool, addrs [2][]netip.Addr) trace.LinkRTT {
	best, bestN := -1, int64(-1)
	var bestHalves [2]int64
	var own bool
	for pt := range r.points {
		h := pts[uint16(pt)]
		var halves [2]int64
		known, fromLink := true, true
		for e := range 2 {
			v, ok := r.hostHalf(uint16(pt), addrs[e])
			if h != nil && h[e].n > 0 && (!ok || h[e].min <= v) {
				v, ok = h[e].min, true
			} else {
				fromLink = false
			}
			halves[e] = v
			known = known && ok
		}
		n := int64(0)
		if h != nil {
			n = h[0].n + h[1].n
		}
		if known && n > bestN {
			best, bestN, bestHalves, own = pt, n, halves, fromLink
		}
	}
	if best < 0 {
		reason := "no capture point measured a round trip on it (no handshake, no acknowledged data: UDP, or one direction only) nor both hosts' halves on other connections"
		if len(pts) > 0 {
			reason = "no capture point measured both halves (only one side's data was acknowledged, no handshake seen) nor both hosts' halves on other connections"
		}
		return trace.LinkRTT{Reason: reason}
	}
	rtt := trace.LinkRTT{Known: true, MinNS: bestHalves[0] + bestHalves[1], Samples: bestN,
		Point: r.pointName(int32(best)), Method: "hosts"}
	if own {
		rtt.Method = "link"
	}
	if h := pts[uint16(best)]; h != nil && h[0].n > 0 && h[1].n > 0 {
		rtt.P50NS = h[0].quantile(0.5) + h[1].quantile(0.5)
		rtt.P90NS = h[0].quantile(0.9) + h[1].quantile(0.9)
	}
	return rtt
}

// hostHalf is the smallest round trip point pt measured to any of addrs.
func (r *Reconciler) hostHalf(pt uint16, addrs []netip.Addr) (int64, bool) {
	var v int64
	ok := false
	for _, a := range addrs {
		if h, found := r.hostHalves[hostHalfKey{pt, a}]; found && (!ok || h < v) {
			v, ok = h, true
		}
	}
	return v, ok
}
