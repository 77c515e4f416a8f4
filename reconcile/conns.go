package reconcile

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"

	"github.com/wirepath/wirepath/preload"
	"github.com/wirepath/wirepath/trace"
)

// epRef is a connection endpoint: an IP endpoint, or a named one (a UNIX
// socket path as the syscall trace writes it).
type epRef struct {
	ap   netip.AddrPort
	name string
}

func (e epRef) String() string {
	if e.name != "" {
		return e.name
	}
	if !e.ap.IsValid() {
		return ""
	}
	return e.ap.String()
}

// pref points at one data call of a traced connection.
type pref struct {
	c *preload.Conn
	i int32
}

func (p pref) ok() bool          { return p.c != nil }
func (p pref) msg() *preload.Msg { return &p.c.Msgs[p.i] }
func (p pref) ts() int64         { return p.msg().TS }
func (p pref) end() int64        { return p.msg().End }

// rconn is one connection, or one direction of datagrams between two
// endpoints, with what the sniffers and the syscall traces at either end
// say about it. Direction d goes from ep[d] to ep[1-d]; for datagram
// groups only direction 0 is used.
type rconn struct {
	id    int32
	proto trace.Proto
	dgram bool
	ep    [2]epRef
	epi   [2]int32 // the endpoints' ids (state.eps)
	// fmsgs are the sniffed messages of each direction, in stream order.
	fmsgs [2][]int32
	info  *connInfo
	// pc are the traced processes' views of a stream at each end.
	pc [2]*preload.Conn
	// sends and recvs are a datagram group's traced calls: sent by the
	// process at ep[0], received by the one at ep[1], in order.
	sends, recvs []pref
	start        int64 // first sighting (corrected), 0 if not sniffed
	sniffed      bool
	// caller is the end that opened the connection, -1 if unknown.
	caller int8
}

// pairKey identifies a connection by its two endpoints, unordered. host is
// set for connections on a traced host's loopback, which only processes of
// that host share.
type pairKey struct {
	a, b  netip.AddrPort
	proto trace.Proto
	host  string
}

func makePairKey(x, y netip.AddrPort, proto trace.Proto) pairKey {
	if x.Compare(y) > 0 {
		x, y = y, x
	}
	return pairKey{a: x, b: y, proto: proto}
}

// dirKey identifies datagrams from one endpoint to another.
type dirKey struct {
	src, dst epRef
	proto    trace.Proto
	host     string
}

// buildSniffed groups the sniffed messages into connections (TCP) and
// datagram groups (UDP, per direction).
func (r *Reconciler) buildSniffed(st *state) {
	byConn := map[uint64]int32{}
	for i := range r.msgs {
		m := &r.msgs[i]
		if m.proto == trace.ProtoUDP {
			src, dst := r.eps[m.src], r.eps[m.dst]
			k := dirKey{src: epRef{ap: src}, dst: epRef{ap: dst}, proto: trace.ProtoUDP}
			if _, ok := st.dgrams[k]; !ok {
				hk := halfKey{src.Port(), dst}
				st.udpFrom[hk] = append(st.udpFrom[hk], src.Addr())
				hk = halfKey{dst.Port(), src}
				st.udpTo[hk] = append(st.udpTo[hk], dst.Addr())
			}
			rc := st.dgram(k)
			rc.sniffed = true
			rc.fmsgs[0] = append(rc.fmsgs[0], int32(i))
			continue
		}
		id, ok := byConn[m.conn]
		if !ok {
			id = st.newConn(trace.ProtoTCP, false)
			byConn[m.conn] = id
			rc := st.conns[id]
			rc.sniffed = true
			rc.info = r.conns[m.conn]
			rc.caller = -1
		}
		rc := st.conns[id]
		rc.fmsgs[0] = append(rc.fmsgs[0], int32(i)) // sorted into directions below
	}
	for _, rc := range st.conns {
		if !rc.sniffed {
			continue
		}
		all := rc.fmsgs[0]
		slices.SortFunc(all, func(a, b int32) int { return cmp.Compare(r.msgs[a].index, r.msgs[b].index) })
		if rc.dgram {
			continue
		}
		// ep[0] is the side that opened the connection when known.
		first := &r.msgs[all[0]]
		rc.ep = [2]epRef{{ap: r.eps[first.src]}, {ap: r.eps[first.dst]}}
		switch {
		case rc.info != nil && rc.info.callerKnown:
			rc.ep = [2]epRef{{ap: unmapAP(rc.info.client)}, {ap: unmapAP(rc.info.server)}}
			rc.caller = 0
		default:
			for _, i := range all {
				m := &r.msgs[i]
				if m.kind == trace.KindCall {
					rc.ep = [2]epRef{{ap: r.eps[m.src]}, {ap: r.eps[m.dst]}}
					rc.caller = 0
					break
				}
				if m.kind == trace.KindReturn {
					rc.ep = [2]epRef{{ap: r.eps[m.dst]}, {ap: r.eps[m.src]}}
					rc.caller = 0
					break
				}
			}
		}
		var dirs [2][]int32
		for _, i := range all {
			d := 0
			if r.eps[r.msgs[i].src] != rc.ep[0].ap {
				d = 1
			}
			dirs[d] = append(dirs[d], i)
		}
		rc.fmsgs = dirs
		rc.start = r.msgStart(all[0])
		st.byPair[makePairKey(rc.ep[0].ap, rc.ep[1].ap, trace.ProtoTCP)] = append(st.byPair[makePairKey(rc.ep[0].ap, rc.ep[1].ap, trace.ProtoTCP)], rc.id)
	}
	for _, rc := range st.conns {
		if rc.dgram && rc.sniffed {
			rc.start = r.msgStart(rc.fmsgs[0][0])
		}
	}
	for k, ids := range st.byPair {
		slices.SortFunc(ids, func(a, b int32) int {
			return cmp.Or(cmp.Compare(st.conns[a].start, st.conns[b].start), cmp.Compare(a, b))
		})
		st.byPair[k] = ids
	}
}

func unmapAP(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// msgStart returns the earliest sighting of sniffed message i.
func (r *Reconciler) msgStart(i int32) int64 {
	var t int64
	for j, s := range r.sightsOf(&r.msgs[i]) {
		if j == 0 || s.first < t {
			t = s.first
		}
	}
	return t
}

func dgramSock(s preload.SockType) bool {
	return s == preload.SockUDP || s == preload.SockUnixDgram
}

// attachPreload gives each traced stream connection its sniffed
// connection (by endpoints, across NAT, in time order), pairs the rest
// with the traced other end, and groups traced datagrams by direction.
func (r *Reconciler) attachPreload(st *state) {
	tab := r.opts.Preload
	if tab == nil {
		return
	}
	tcp, unix, dgrams := st.tracedBySocket(tab)
	rest := r.attachDirect(st, tcp)
	st.roughOffsets()
	for _, c := range dgrams {
		r.groupDatagrams(st, c)
	}
	st.pairTraced(r.attachAcrossNAT(st, rest))
	r.pairUnix(st, unix)
	st.tracedCallers()
}

// tcpEnd is one traced TCP socket and its endpoints.
type tcpEnd struct {
	c        *preload.Conn
	loc, rem netip.AddrPort
}

// tracedBySocket sorts the traced sockets with data by kind: TCP (in the
// order they were opened), UNIX streams and datagram sockets. Other kinds
// are dropped.
func (st *state) tracedBySocket(tab *preload.Table) (tcp, unix, dgrams []*preload.Conn) {
	for _, c := range tab.Conns {
		switch {
		case len(c.Msgs) == 0:
			continue
		case c.Sock == preload.SockTCP:
			tcp = append(tcp, c)
		case c.Sock == preload.SockUnixStream || c.Sock == preload.SockUnixSeqpacket:
			unix = append(unix, c)
		case dgramSock(c.Sock):
			dgrams = append(dgrams, c)
		default:
			st.dropConn(c, reasonSocket)
		}
	}
	slices.SortStableFunc(tcp, func(a, b *preload.Conn) int { return cmp.Compare(a.Opened, b.Opened) })
	return tcp, unix, dgrams
}

// attachDirect attaches the traced TCP sockets whose endpoints the
// sniffers saw as they are, on one connection only; it returns the rest.
func (r *Reconciler) attachDirect(st *state, tcp []*preload.Conn) []tcpEnd {
	var rest []tcpEnd
	for _, c := range tcp {
		loc, err1 := parseAddrPort(c.Local)
		rem, err2 := parseAddrPort(c.Remote)
		if err1 != nil || err2 != nil {
			st.dropConn(c, reasonNoEndpoints)
			continue
		}
		ids := st.byPair[makePairKey(loc, rem, trace.ProtoTCP)]
		if len(ids) == 1 && r.tryAttach(st, st.conns[ids[0]], c, loc) {
			continue
		}
		rest = append(rest, tcpEnd{c, loc, rem})
	}
	return rest
}

// attachAcrossNAT attaches the rest by their canonical endpoints (NAT
// undone), among several connections the one that started nearest the
// traced one (on the sniffers' clock, by the host's rough offset). It
// returns the ends left, with their canonical endpoints.
func (r *Reconciler) attachAcrossNAT(st *state, rest []tcpEnd) []tcpEnd {
	var unpaired []tcpEnd
	for _, e := range rest {
		ts := e.c.Opened
		if ts == 0 && len(e.c.Msgs) > 0 {
			ts = e.c.Msgs[0].TS
		}
		rough, known := st.rough[e.c.Host]
		if known {
			ts += rough
		}
		loc, rem := r.canonical(trace.IPProtoTCP, e.loc, e.rem, ts)
		if id := st.nearestFree(loc, rem, ts, known); id >= 0 && r.tryAttach(st, st.conns[id], e.c, loc) {
			continue
		}
		unpaired = append(unpaired, tcpEnd{e.c, loc, rem})
	}
	return unpaired
}

// canonical renames a traced socket's endpoints across NAT (whichever way
// the translation ran), unless they are on the loopback.
func (r *Reconciler) canonical(proto uint8, loc, rem netip.AddrPort, ts int64) (netip.AddrPort, netip.AddrPort) {
	if r.opts.Canonical == nil || loc.Addr().IsLoopback() {
		return loc, rem
	}
	if cl, cr, ok := r.opts.Canonical(proto, loc, rem, ts); ok {
		return unmapAP(cl), unmapAP(cr)
	}
	if cr, cl, ok := r.opts.Canonical(proto, rem, loc, ts); ok {
		return unmapAP(cl), unmapAP(cr)
	}
	return loc, rem
}

// nearestFree returns the sniffed connection between loc and rem whose
// end loc has no traced process yet: the first, or with the rough offset
// known, the one that started nearest ts; -1 if none.
func (st *state) nearestFree(loc, rem netip.AddrPort, ts int64, known bool) int32 {
	best := int32(-1)
	var bestD int64
	for _, id := range st.byPair[makePairKey(loc, rem, trace.ProtoTCP)] {
		rc := st.conns[id]
		if e := rc.endOf(loc); e < 0 || rc.pc[e] != nil {
			continue
		}
		if !known {
			return id
		}
		if d := abs64(rc.start - ts); best < 0 || d < bestD {
			best, bestD = id, d
		}
	}
	return best
}

// pairTraced makes connections of the traced TCP sockets no sniffer saw:
// the two ends of one have each other's endpoints (on one host, for the
// loopback).
func (st *state) pairTraced(ends []tcpEnd) {
	open := map[pairKey][]int32{}
	for _, e := range ends {
		k := makePairKey(e.loc, e.rem, trace.ProtoTCP)
		if e.loc.Addr().IsLoopback() || e.rem.Addr().IsLoopback() {
			k.host = e.c.Host
		}
		if j := st.openEnd(open[k], e); j >= 0 {
			open[k] = slices.Delete(open[k], j, j+1)
			continue
		}
		id := st.newConn(trace.ProtoTCP, false)
		rc := st.conns[id]
		rc.ep = [2]epRef{{ap: e.loc}, {ap: e.rem}}
		rc.pc[0] = e.c
		rc.caller = callerOf(e.c, 0)
		open[k] = append(open[k], id)
	}
}

// openEnd makes e the other end of the first of the connections open
// that it fits, and returns its index in open (-1 if none).
func (st *state) openEnd(open []int32, e tcpEnd) int {
	for j, id := range open {
		rc := st.conns[id]
		end := rc.endOf(e.loc)
		if end >= 0 && rc.pc[end] == nil && rc.ep[1-end].ap == e.rem {
			rc.pc[end] = e.c
			return j
		}
	}
	return -1
}

// tracedCallers says which end opened each connection no sniffer saw,
// from its traced processes.
func (st *state) tracedCallers() {
	for _, rc := range st.conns {
		if rc.sniffed || rc.dgram || rc.caller >= 0 {
			continue
		}
		for e := range 2 {
			if rc.pc[e] != nil {
				if c := callerOf(rc.pc[e], int8(e)); c >= 0 {
					rc.caller = c
				}
			}
		}
	}
}

// callerOf says which end opened a connection, from the traced process at
// end e: e itself if it connected, the other end if it accepted.
func callerOf(c *preload.Conn, e int8) int8 {
	switch c.Origin {
	case preload.OriginConnect:
		return e
	case preload.OriginAccept:
		return 1 - e
	}
	return -1
}

// endOf returns which end of rc has endpoint ap, or -1.
func (rc *rconn) endOf(ap netip.AddrPort) int {
	switch ap {
	case rc.ep[0].ap:
		return 0
	case rc.ep[1].ap:
		return 1
	}
	return -1
}

// tryAttach makes c the traced process at the end of rc whose endpoint is
// loc, if that end is free.
func (r *Reconciler) tryAttach(st *state, rc *rconn, c *preload.Conn, loc netip.AddrPort) bool {
	e := rc.endOf(loc)
	if e < 0 || rc.pc[e] != nil {
		return false
	}
	rc.pc[e] = c
	if c.Origin == preload.OriginConnect || c.Origin == preload.OriginAccept {
		st.roughSamples[c.Host] = append(st.roughSamples[c.Host], rc.start-c.Opened)
	}
	return true
}

// pairUnix pairs the two ends of each UNIX-domain stream connection on one
// host: the connecting end names the listening path as remote, the
// accepting end as local, and each names the other's pid; among several
// candidates the one opened nearest in time (one host, one clock) wins.
// Socketpairs are paired within one process by the call that made them.
func (r *Reconciler) pairUnix(st *state, conns []*preload.Conn) {
	used := map[*preload.Conn]bool{}
	slices.SortStableFunc(conns, func(a, b *preload.Conn) int { return cmp.Compare(a.Opened, b.Opened) })
	for _, c := range conns {
		if used[c] {
			continue
		}
		var best *preload.Conn
		var bestD int64
		for _, o := range conns {
			if o == c || used[o] || o.Host != c.Host || !unixPeers(c, o) {
				continue
			}
			d := abs64(o.Opened - c.Opened)
			if best == nil || d < bestD {
				best, bestD = o, d
			}
		}
		used[c] = true
		id := st.newConn(trace.ProtoUnix, false)
		rc := st.conns[id]
		rc.pc[0] = c
		rc.ep = [2]epRef{{name: unixName(c.Local)}, {name: unixName(c.Remote)}}
		rc.caller = callerOf(c, 0)
		if best != nil {
			used[best] = true
			rc.pc[1] = best
			if rc.caller < 0 {
				rc.caller = callerOf(best, 1)
			}
			if rc.ep[1].name == "unix:" {
				rc.ep[1].name = unixName(best.Local)
			}
		}
	}
}

func unixName(s string) string {
	if s == "" {
		return "unix:"
	}
	return s
}

// unixPeers reports whether two traced UNIX stream sockets can be the two
// ends of one connection.
func unixPeers(a, b *preload.Conn) bool {
	if a.PeerPID != 0 && a.PeerPID != b.PID {
		return false
	}
	if b.PeerPID != 0 && b.PeerPID != a.PID {
		return false
	}
	named := func(s string) bool { return strings.HasPrefix(s, "unix:") && len(s) > len("unix:") }
	switch {
	case a.Origin == preload.OriginSocketpair || b.Origin == preload.OriginSocketpair:
		return a.Origin == b.Origin && a.PID == b.PID && a.Opened == b.Opened && a != b
	case named(a.Remote) && a.Remote == b.Local:
		return a.Origin != preload.OriginAccept
	case named(b.Remote) && b.Remote == a.Local:
		return b.Origin != preload.OriginAccept
	}
	return false
}

// groupDatagrams files the datagrams of a traced datagram socket under
// their direction (sender, receiver endpoints).
func (r *Reconciler) groupDatagrams(st *state, c *preload.Conn) {
	proto := trace.ProtoUDP
	if c.Sock == preload.SockUnixDgram {
		proto = trace.ProtoUnix
	}
	for i := range c.Msgs {
		m := &c.Msgs[i]
		peer := m.Peer
		if peer == "" {
			peer = c.Remote
		}
		var local, remote epRef
		host := ""
		if proto == trace.ProtoUnix {
			local, remote = epRef{name: unixName(c.Local)}, epRef{name: unixName(peer)}
			host = c.Host
		} else {
			l, err1 := parseAddrPort(c.Local)
			p, err2 := parseAddrPort(peer)
			if err1 != nil || err2 != nil {
				st.dropCall(c, int32(i), reasonNoEndpoints)
				continue
			}
			if l.Addr().IsUnspecified() {
				l = st.localAddr(c.Host, l.Port(), p, m.Dir == preload.DirSend)
			}
			l, p = r.canonical(trace.IPProtoUDP, l, p, m.TS+st.rough[c.Host])
			if l.Addr().IsLoopback() {
				host = c.Host
			}
			local, remote = epRef{ap: l}, epRef{ap: p}
		}
		if m.Dir == preload.DirSend {
			rc := st.dgram(dirKey{src: local, dst: remote, proto: proto, host: host})
			rc.sends = append(rc.sends, pref{c, int32(i)})
		} else {
			rc := st.dgram(dirKey{src: remote, dst: local, proto: proto, host: host})
			rc.recvs = append(rc.recvs, pref{c, int32(i)})
		}
	}
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// halfKey is one end of sniffed datagrams: a port and the peer endpoint.
type halfKey struct {
	port uint16
	peer netip.AddrPort
}

// localAddr finds the address a traced datagram socket bound to the
// unspecified address used with peer: the one sniffed datagrams from
// (send) or to that port show, if only one does; else the traced host's
// primary address, or the loopback address toward a loopback peer.
func (st *state) localAddr(host string, port uint16, peer netip.AddrPort, send bool) netip.AddrPort {
	k := halfKey{port, peer}
	addrs := st.udpTo[k]
	if send {
		addrs = st.udpFrom[k]
	}
	if len(addrs) == 1 {
		return netip.AddrPortFrom(addrs[0], port)
	}
	if peer.Addr().IsLoopback() {
		return netip.AddrPortFrom(peer.Addr(), port)
	}
	if a := st.ht.primary(st.ht.ofName(host)); a.IsValid() && a.Is4() == peer.Addr().Is4() {
		return netip.AddrPortFrom(a, port)
	}
	return netip.AddrPortFrom(netip.IPv4Unspecified(), port)
}
