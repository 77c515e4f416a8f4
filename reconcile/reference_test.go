package reconcile_test

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/wirepath/wirepath/flows"
	"github.com/wirepath/wirepath/preload"
	"github.com/wirepath/wirepath/proto"
	"github.com/wirepath/wirepath/reconcile"
	"github.com/wirepath/wirepath/trace"
)

// refReconcile is a slow, readable restatement of what a Reconciler
// produces (the package doc and docs/reconcile.md): it follows each rule
// with plain maps and linear scans, keeps no endpoint or host ids, and
// formats each trace message as one line (refLine).
//
// It supports what sniffers and syscall traces of an ordinary run give:
// sniffed TCP connections and UDP datagrams from any number of capture
// points, traced TCP and UNIX stream connections opened while traced
// (connect, accept, socketpair) and, when sniffed, sniffed from their
// first byte. It returns errRefUnsupported for what it leaves to the unit
// tests: traced datagram sockets, traced connections that reuse a sniffed
// 4-tuple or that are found only across NAT (Options.Canonical), and byte
// counts that need lining up (a capture or a trace that missed a
// connection's start).
func refReconcile(in refInput) ([]string, *reconcile.Report, error) {
	w := &refWorld{
		in:     in,
		byAddr: map[netip.Addr]*refHost{},
		byName: map[string]*refHost{},
		status: map[*preload.Conn][]string{},
	}
	w.minPeers = in.opts.MinPeers
	if w.minPeers == 0 {
		w.minPeers = 3
	}
	w.maxWarnings = in.opts.MaxWarnings
	if w.maxWarnings == 0 {
		w.maxWarnings = 20
	}
	w.info = map[uint64]*flows.ConnStats{}
	for i := range in.conns {
		w.info[in.conns[i].Conn] = &in.conns[i]
	}
	w.hostsAndHomes()
	if err := w.connections(); err != nil {
		return nil, nil, err
	}
	if err := w.logicalMessages(); err != nil {
		return nil, nil, err
	}
	w.ends()
	w.fixedPorts()
	w.clocks()
	lines := w.messages()
	w.inputEvidence()
	w.accounting()
	return lines, w.rep, nil
}

var errRefUnsupported = errors.New("input beyond the reference implementation")

// refInput is what a Reconciler is given.
type refInput struct {
	opts  reconcile.Options
	msgs  []*flows.Message
	conns []flows.ConnStats
}

// refLine formats one trace message for comparison.
func refLine(tr *trace.Trace, m *trace.Message) string {
	call := "-"
	if m.CallID != 0 {
		call = tr.Str(m.CallID)
	}
	return fmt.Sprintf("send %s recv %s %s->%s %s->%s %dB %v %v %s",
		fmtTS(m.SendTS), fmtTS(m.RecvTS), tr.Str(m.Src), tr.Str(m.Dst), tr.Str(m.SrcNode), tr.Str(m.DstNode), m.Bytes, m.Kind, m.Proto, call) +
		refEvText(m.Conn, refEv{m.Seq, m.Stream, m.Sender, m.Receiver, tr.Str(m.ReqID), tr.Str(m.Label), tr.Syms.Tokens(m.Tokens)})
}

// refEv is a message's evidence besides its connection, with its strings.
type refEv struct {
	seq              uint32
	stream           uint64
	sender, receiver trace.Task
	reqID, label     string
	tokens           []uint64
}

// refEvText formats a message's evidence for comparison.
func refEvText(conn uint32, e refEv) string {
	return fmt.Sprintf(" conn %d seq %d stream %d tasks %v>%v id %q label %q tokens %x", conn, e.seq, e.stream, e.sender, e.receiver, e.reqID, e.label, e.tokens)
}

// refIDOrder are the sources of request ids by priority (docs/reconcile.md).
var refIDOrder = []string{"traceparent", "traceresponse", "b3", "x-b3-traceid", "uber-trace-id", "sw8", "x-amzn-trace-id",
	"x-cloud-trace-context", "grpc-trace-bin", "x-request-id", "request-id", "x-correlation-id", "correlation-id",
	"x-amzn-requestid", "x-amz-request-id"}

func refIDRank(src string) int {
	if i := slices.Index(refIDOrder, src); i >= 0 {
		return i
	}
	return len(refIDOrder) // "header:NAME" and any other source
}

// refLabelOK says whether a label can be in the trace, and if not whether
// because it is too long.
func refLabelOK(s string) (ok, long bool) {
	if len(s) > trace.MaxLabel {
		return false, true
	}
	for _, c := range s {
		if c == utf8.RuneError || c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) {
			return false, false
		}
	}
	return true, false
}

// refIDOK says whether an id can be a ReqID, and if not whether because
// it is too long.
func refIDOK(id proto.ID) (ok, long bool) {
	if len(id.Source)+1+len(id.Value) > trace.MaxReqID {
		return false, true
	}
	if id.Source == "" || id.Value == "" {
		return false, false
	}
	for _, c := range []byte(id.Source + id.Value) {
		if c <= ' ' || c >= 0x7f {
			return false, false
		}
	}
	return true, false
}

// refTokenCap is the cap on tokens per message the options ask for.
func (w *refWorld) refTokenCap() int {
	switch n := w.in.opts.MaxTokens; {
	case n < 0:
		return 0
	case n == 0:
		return 32
	default:
		return n
	}
}

// evidence is logical message lm's evidence: the threads of the calls
// that wrote its first byte and read its last; of the sniffed messages
// that start in it, the ordinal, stream and label of the first that has
// one of them, the id of highest priority (the first on a tie), and the
// union of their tokens (each message's cut to the cap, then the union).
func (w *refWorld) evidence(lm *refMsg) refEv {
	var e refEv
	if lm.sa.c != nil {
		e.sender = trace.Task{PID: int32(lm.sa.c.PID), TID: int32(lm.sa.c.Msgs[lm.sa.i].TID)}
	}
	if lm.rb.c != nil {
		e.receiver = trace.Task{PID: int32(lm.rb.c.PID), TID: int32(lm.rb.c.Msgs[lm.rb.i].TID)}
	}
	bestRank := math.MaxInt
	cp := w.refTokenCap()
	set := map[uint64]bool{}
	for _, f := range lm.starts {
		m := w.in.msgs[f]
		label := m.Label
		if ok, _ := refLabelOK(label); !ok {
			label = ""
		}
		if e.seq == 0 && e.stream == 0 && e.label == "" {
			e.seq, e.stream, e.label = m.Ordinal, m.Stream, label
		}
		if m.Evidence == nil {
			continue
		}
		for _, id := range m.Evidence.IDs {
			if ok, _ := refIDOK(id); ok && refIDRank(id.Source) < bestRank {
				e.reqID, bestRank = id.Source+":"+id.Value, refIDRank(id.Source)
			}
		}
		for _, h := range m.Evidence.Tokens[:min(len(m.Evidence.Tokens), cp)] {
			set[h] = true
		}
	}
	for h := range set {
		e.tokens = append(e.tokens, h)
	}
	slices.Sort(e.tokens)
	if len(e.tokens) > cp {
		w.rep.TokensCut += int64(len(e.tokens) - cp)
		e.tokens = e.tokens[:cp]
	}
	return e
}

// inputEvidence counts the evidence of the sniffed messages that cannot
// be kept: labels and ids too long or not printable, tokens beyond the
// cap.
func (w *refWorld) inputEvidence() {
	r := w.rep
	for _, m := range w.in.msgs {
		if m.Label != "" {
			if ok, long := refLabelOK(m.Label); !ok && long {
				r.SkippedLong++
			} else if !ok {
				r.SkippedBinary++
			}
		}
		if m.Evidence == nil {
			continue
		}
		for _, id := range m.Evidence.IDs {
			if ok, long := refIDOK(id); !ok && long {
				r.SkippedLong++
			} else if !ok {
				r.SkippedBinary++
			}
		}
		r.TokensCut += int64(max(0, len(m.Evidence.Tokens)-w.refTokenCap()))
	}
}

func fmtTS(t trace.Timestamp) string {
	if !t.Known() {
		return "-"
	}
	return strconv.FormatInt(int64(t), 10)
}

// refHost is one machine: an address, or a traced host and the addresses
// its traced sockets used.
type refHost struct {
	traced     string
	addrs      []netip.Addr
	use        map[netip.Addr]int64
	home       flows.Point
	hasHome    bool
	near, seen int64
	msgs       int64
	remote     bool
}

// refConn is one connection (or one direction of datagrams).
type refConn struct {
	id      int // creation order
	udp     bool
	unix    bool
	ep      [2]string // endpoint names; direction d goes from ep[d]
	addr    [2]netip.AddrPort
	caller  int
	sniffed bool
	info    *flows.ConnStats
	fmsgs   [2][]int // sniffed messages by direction, in stream order
	pc      [2]*preload.Conn
}

// refCall is one traced data call.
type refCall struct {
	c *preload.Conn
	i int
}

// refMsg is one logical message.
type refMsg struct {
	c              *refConn
	dir            int
	off            int64 // stream position (datagram number) for ordering
	bytes          int64
	fa, fb         int // sniffed messages with the first and last byte, -1 none
	faStart, fbEnd bool
	covered        []int // sniffed messages overlapping it
	starts         []int // sniffed messages starting in it
	sa, rb         refCall
	kind           trace.Kind
	call           flows.CallID
	pcall          bool
	lost           bool // its first byte's sniffed message has no captured byte
	order          int64
	hs, hr         *refHost
	spc, rpc       *preload.Conn
	sNode, rNode   string
}

type refWorld struct {
	in          refInput
	info        map[uint64]*flows.ConnStats
	minPeers    int
	maxWarnings int
	warns       []string

	hosts  []*refHost
	byAddr map[netip.Addr]*refHost
	byName map[string]*refHost

	pairTTL map[[2]*refHost][2]uint8

	conns  []*refConn
	out    []*refMsg
	status map[*preload.Conn][]string // what became of each call

	fixed map[string]bool
	roles map[*refHost][]string

	doms     []string // clock domains: sniffers, then traced hosts
	nSniff   int
	ref      int
	est      []refEst
	nodeDom  map[string]int
	nodeUse  map[string]int64
	server   map[string]bool
	usedFlow map[int]int // sniffed message -> 1 used, 2 dropped

	rep *reconcile.Report
}

func (w *refWorld) tab() *preload.Table { return w.in.opts.Preload }

// --- Hosts and their home capture points.

func refOwnable(a netip.Addr) bool {
	return a.IsValid() && !a.IsLoopback() && !a.IsUnspecified() && !a.IsMulticast()
}

func (w *refWorld) hostOfAddr(a netip.Addr) *refHost {
	a = a.Unmap()
	if h := w.byAddr[a]; h != nil {
		return h
	}
	h := &refHost{addrs: []netip.Addr{a}, use: map[netip.Addr]int64{}}
	w.hosts = append(w.hosts, h)
	w.byAddr[a] = h
	return h
}

func (w *refWorld) hostOfName(name string) *refHost {
	if h := w.byName[name]; h != nil {
		return h
	}
	h := &refHost{traced: name, use: map[netip.Addr]int64{}}
	w.hosts = append(w.hosts, h)
	w.byName[name] = h
	return h
}

func refEndpoint(s string) (netip.AddrPort, bool) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return ap, false
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), true
}

func unmapped(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

func (w *refWorld) full(m *flows.Message, s *flows.Sighting) bool {
	return s.Bytes >= m.CapturedBytes()
}

// hostsAndHomes ties traced hosts to the addresses their sockets used,
// counts each address's use, and picks each host's home capture point:
// most messages seen whole on the host's side of every router, then most
// seen, then the lowest sniffer and interface.
func (w *refWorld) hostsAndHomes() {
	if tab := w.tab(); tab != nil {
		for _, c := range tab.Conns {
			if c.Sock != preload.SockTCP && c.Sock != preload.SockUDP {
				continue
			}
			h := w.hostOfName(c.Host)
			ap, ok := refEndpoint(c.Local)
			if !ok || !refOwnable(ap.Addr()) {
				continue
			}
			if o := w.byAddr[ap.Addr()]; o != nil {
				if o != h && o.traced != "" {
					w.warns = append(w.warns, fmt.Sprintf("address %s is used by traced hosts %q and %q; it stays with %q", ap.Addr(), o.traced, c.Host, o.traced))
				}
				continue
			}
			w.byAddr[ap.Addr()] = h
			h.addrs = append(h.addrs, ap.Addr())
		}
	}
	for _, m := range w.in.msgs {
		w.hostOfAddr(m.Src.Addr()).use[m.Src.Addr().Unmap()]++
		w.hostOfAddr(m.Dst.Addr()).use[m.Dst.Addr().Unmap()]++
	}
	type count struct {
		near, seen int64
		sentTTL    uint8
	}
	counts := map[*refHost]map[flows.Point]*count{}
	get := func(h *refHost, p flows.Point) *count {
		if counts[h] == nil {
			counts[h] = map[flows.Point]*count{}
		}
		if counts[h][p] == nil {
			counts[h][p] = &count{}
		}
		return counts[h][p]
	}
	w.pairTTL = map[[2]*refHost][2]uint8{}
	for _, m := range w.in.msgs {
		if len(m.Sightings) == 0 {
			continue
		}
		var hi, lo uint8 = 0, 255
		for _, s := range m.Sightings {
			hi, lo = max(hi, s.TTL), min(lo, s.TTL)
		}
		sh, dh := w.hostOfAddr(m.Src.Addr()), w.hostOfAddr(m.Dst.Addr())
		sh.msgs++
		dh.msgs++
		k := [2]*refHost{sh, dh}
		v, ok := w.pairTTL[k]
		if !ok {
			v = [2]uint8{0, 255}
		}
		w.pairTTL[k] = [2]uint8{max(v[0], hi), min(v[1], lo)}
		for i := range m.Sightings {
			s := &m.Sightings[i]
			c := get(sh, s.Point)
			c.seen++
			c.sentTTL = max(c.sentTTL, s.TTL)
			if w.full(m, s) && s.TTL == hi {
				c.near++
			}
			c = get(dh, s.Point)
			c.seen++
			if w.full(m, s) && s.TTL == lo {
				c.near++
			}
		}
	}
	for h, byPoint := range counts {
		var best *count
		for p, c := range byPoint {
			better := best == nil || c.near > best.near ||
				c.near == best.near && (c.seen > best.seen ||
					c.seen == best.seen && (p.Sniffer < h.home.Sniffer ||
						p.Sniffer == h.home.Sniffer && p.Interface < h.home.Interface))
			if better {
				best, h.home = c, p
			}
		}
		h.hasHome = true
		h.near, h.seen = best.near, best.seen
		initial := best.sentTTL == 64 || best.sentTTL == 128 || best.sentTTL == 255 || best.sentTTL == 32
		h.remote = best.sentTTL > 0 && !initial
	}
}

// primary is the address most sniffed message ends used (the first such).
func (h *refHost) primary() netip.Addr {
	var best netip.Addr
	for _, a := range h.addrs {
		if !best.IsValid() || h.use[a] > h.use[best] {
			best = a
		}
	}
	return best
}

// --- Connections.

func refStreamSock(s preload.SockType) bool {
	return s == preload.SockUnixStream || s == preload.SockUnixSeqpacket
}

// connections groups the sniffed messages into connections and datagram
// directions, gives traced TCP sockets their sniffed connection (same
// endpoints), pairs the two traced ends of connections no sniffer saw,
// and pairs UNIX stream sockets.
func (w *refWorld) connections() error {
	byConn := map[uint64]*refConn{}
	byDir := map[[2]netip.AddrPort]*refConn{}
	newConn := func() *refConn {
		c := &refConn{id: len(w.conns), caller: -1}
		w.conns = append(w.conns, c)
		return c
	}
	for i, m := range w.in.msgs {
		src, dst := unmapped(m.Src), unmapped(m.Dst)
		if m.Proto == trace.ProtoUDP {
			c := byDir[[2]netip.AddrPort{src, dst}]
			if c == nil {
				c = newConn()
				c.udp, c.sniffed = true, true
				c.addr = [2]netip.AddrPort{src, dst}
				byDir[[2]netip.AddrPort{src, dst}] = c
			}
			c.fmsgs[0] = append(c.fmsgs[0], i)
			continue
		}
		c := byConn[m.Conn]
		if c == nil {
			c = newConn()
			c.sniffed = true
			c.info = w.info[m.Conn]
			byConn[m.Conn] = c
		}
		c.fmsgs[0] = append(c.fmsgs[0], i)
	}
	byIndex := func(a, b int) int { return cmp.Compare(w.in.msgs[a].Index, w.in.msgs[b].Index) }
	for _, c := range w.conns {
		slices.SortFunc(c.fmsgs[0], byIndex)
		if c.udp {
			continue
		}
		all := c.fmsgs[0]
		// ep[0] opened the connection: flows says who, or the first call
		// or return says it; else the first message's sender.
		first := w.in.msgs[all[0]]
		c.addr = [2]netip.AddrPort{unmapped(first.Src), unmapped(first.Dst)}
		if c.info != nil && c.info.Caller != "unknown" && c.info.Caller != "" {
			c.addr = [2]netip.AddrPort{unmapped(c.info.Client), unmapped(c.info.Server)}
			c.caller = 0
		} else {
			for _, i := range all {
				m := w.in.msgs[i]
				if m.Kind == trace.KindCall {
					c.addr, c.caller = [2]netip.AddrPort{unmapped(m.Src), unmapped(m.Dst)}, 0
					break
				}
				if m.Kind == trace.KindReturn {
					c.addr, c.caller = [2]netip.AddrPort{unmapped(m.Dst), unmapped(m.Src)}, 0
					break
				}
			}
		}
		c.fmsgs = [2][]int{}
		for _, i := range all {
			d := 0
			if unmapped(w.in.msgs[i].Src) != c.addr[0] {
				d = 1
			}
			c.fmsgs[d] = append(c.fmsgs[d], i)
		}
	}
	for _, c := range w.conns {
		c.ep = [2]string{c.addr[0].String(), c.addr[1].String()}
	}
	tab := w.tab()
	if tab == nil {
		return nil
	}
	if w.in.opts.Canonical != nil {
		return errRefUnsupported
	}
	var tcp, unix []*preload.Conn
	for _, c := range tab.Conns {
		switch {
		case len(c.Msgs) == 0:
		case c.Sock == preload.SockTCP:
			tcp = append(tcp, c)
		case refStreamSock(c.Sock):
			unix = append(unix, c)
		case c.Sock == preload.SockUDP || c.Sock == preload.SockUnixDgram:
			return errRefUnsupported
		default:
			w.setAll(c, "dropped_socket_kind")
		}
	}
	byOpened := func(a, b *preload.Conn) int { return cmp.Compare(a.Opened, b.Opened) }
	slices.SortStableFunc(tcp, byOpened)
	type end struct {
		c        *preload.Conn
		loc, rem netip.AddrPort
	}
	var unpaired []end
	for _, c := range tcp {
		loc, ok1 := refEndpoint(c.Local)
		rem, ok2 := refEndpoint(c.Remote)
		if !ok1 || !ok2 {
			w.setAll(c, "dropped_no_endpoints")
			continue
		}
		var cands []*refConn
		for _, rc := range w.conns {
			if rc.sniffed && !rc.udp && (rc.addr == [2]netip.AddrPort{loc, rem} || rc.addr == [2]netip.AddrPort{rem, loc}) {
				cands = append(cands, rc)
			}
		}
		switch {
		case len(cands) == 0:
			unpaired = append(unpaired, end{c, loc, rem})
		case len(cands) > 1:
			return errRefUnsupported // chosen by time
		default:
			e := 0
			if cands[0].addr[1] == loc {
				e = 1
			}
			if cands[0].pc[e] != nil {
				return errRefUnsupported
			}
			cands[0].pc[e] = c
		}
	}
	// Connections no sniffer saw: the two traced ends of one have each
	// other's endpoints.
	var open []*refConn
	for _, e := range unpaired {
		paired := false
		for j, rc := range open {
			sameHost := !(e.loc.Addr().IsLoopback() || e.rem.Addr().IsLoopback()) || rc.pc[0].Host == e.c.Host
			if sameHost && rc.addr == [2]netip.AddrPort{e.rem, e.loc} && rc.pc[1] == nil {
				rc.pc[1] = e.c
				open = slices.Delete(open, j, j+1)
				paired = true
				break
			}
		}
		if paired {
			continue
		}
		rc := newConn()
		rc.addr = [2]netip.AddrPort{e.loc, e.rem}
		rc.ep = [2]string{e.loc.String(), e.rem.String()}
		rc.pc[0] = e.c
		rc.caller = refCallerOf(e.c, 0)
		open = append(open, rc)
	}
	// UNIX stream sockets: each with its nearest (in time) possible peer.
	slices.SortStableFunc(unix, byOpened)
	used := map[*preload.Conn]bool{}
	for _, c := range unix {
		if used[c] {
			continue
		}
		var peer *preload.Conn
		for _, o := range unix {
			if o == c || used[o] || o.Host != c.Host || !refUnixPeers(c, o) {
				continue
			}
			if peer == nil || refAbs(o.Opened-c.Opened) < refAbs(peer.Opened-c.Opened) {
				peer = o
			}
		}
		used[c] = true
		rc := newConn()
		rc.unix = true
		rc.ep = [2]string{refUnixName(c.Local), refUnixName(c.Remote)}
		rc.pc[0] = c
		rc.caller = refCallerOf(c, 0)
		if peer != nil {
			used[peer] = true
			rc.pc[1] = peer
			if rc.caller < 0 {
				rc.caller = refCallerOf(peer, 1)
			}
			if rc.ep[1] == "unix:" {
				rc.ep[1] = refUnixName(peer.Local)
			}
		}
	}
	for _, rc := range w.conns {
		if !rc.sniffed && rc.caller < 0 {
			for e := range 2 {
				if rc.pc[e] != nil {
					if k := refCallerOf(rc.pc[e], e); k >= 0 {
						rc.caller = k
					}
				}
			}
		}
	}
	return nil
}

func refCallerOf(c *preload.Conn, e int) int {
	switch c.Origin {
	case preload.OriginConnect:
		return e
	case preload.OriginAccept:
		return 1 - e
	}
	return -1
}

func refUnixName(s string) string {
	if s == "" {
		return "unix:"
	}
	return s
}

func refUnixPeers(a, b *preload.Conn) bool {
	named := func(s string) bool { return strings.HasPrefix(s, "unix:") && len(s) > len("unix:") }
	switch {
	case a.PeerPID != 0 && a.PeerPID != b.PID, b.PeerPID != 0 && b.PeerPID != a.PID:
		return false
	case a.Origin == preload.OriginSocketpair || b.Origin == preload.OriginSocketpair:
		return a.Origin == b.Origin && a.PID == b.PID && a.Opened == b.Opened
	case named(a.Remote) && a.Remote == b.Local:
		return a.Origin != preload.OriginAccept
	case named(b.Remote) && b.Remote == a.Local:
		return b.Origin != preload.OriginAccept
	}
	return false
}

func refAbs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func (w *refWorld) set(c *preload.Conn, i int, s string) {
	if w.status[c] == nil {
		w.status[c] = make([]string, len(c.Msgs))
	}
	w.status[c][i] = s
}

func (w *refWorld) setAll(c *preload.Conn, s string) {
	for i := range c.Msgs {
		w.set(c, i, s)
	}
}

// --- Logical messages.

// refSpan is bytes [a, b) of a direction's stream: sniffed message or
// call i.
type refSpan struct {
	a, b int64
	i    int
}

func spanAt(ss []refSpan, x int64) int {
	for j, s := range ss {
		if s.a <= x && x < s.b {
			return j
		}
	}
	return -1
}

func strictlyInside(ss []refSpan, p int64) bool {
	for _, s := range ss {
		if s.a < p && p < s.b {
			return true
		}
	}
	return false
}

func endingAt(ss []refSpan, p int64) int {
	for j, s := range ss {
		if s.b == p {
			return j
		}
	}
	return -1
}

func startingAt(ss []refSpan, p int64) bool {
	for _, s := range ss {
		if s.a == p {
			return true
		}
	}
	return false
}

func refFromStart(c *preload.Conn) bool {
	return c.Origin == preload.OriginConnect || c.Origin == preload.OriginAccept || c.Origin == preload.OriginSocket
}

// callSpans returns the calls of c in direction dir, each with whether
// the process turned to the other direction after it.
func callSpans(c *preload.Conn, dir preload.Dir) ([]refSpan, []bool) {
	if c == nil {
		return nil, nil
	}
	var ss []refSpan
	var turn []bool
	for i, m := range c.Msgs {
		if m.Dir != dir || m.Bytes <= 0 {
			continue
		}
		ss = append(ss, refSpan{m.Offset, m.Offset + m.Bytes, i})
		t := true
		for _, n := range c.Msgs[i+1:] {
			if n.Bytes > 0 {
				t = n.Dir != dir
				break
			}
		}
		turn = append(turn, t)
	}
	return ss, turn
}

// logicalMessages cuts every direction of every connection into logical
// messages and labels those of traced connections no sniffer saw.
func (w *refWorld) logicalMessages() error {
	for _, c := range w.conns {
		if c.udp {
			for j, i := range c.fmsgs[0] {
				m := w.in.msgs[i]
				w.out = append(w.out, &refMsg{c: c, off: int64(j), bytes: m.Bytes, fa: i, fb: i, faStart: true, fbEnd: true,
					covered: []int{i}, starts: []int{i}, kind: m.Kind, call: m.Call, order: -1})
			}
			continue
		}
		for d := range 2 {
			if err := w.cutDirection(c, d); err != nil {
				return err
			}
		}
	}
	w.labelUnsniffed()
	return nil
}

func (w *refWorld) cutDirection(c *refConn, d int) error {
	var fs []refSpan
	var off int64
	for j, i := range c.fmsgs[d] {
		m := w.in.msgs[i]
		if j > 0 {
			prev := w.in.msgs[c.fmsgs[d][j-1]]
			off = max(off+int64(m.Seq-prev.Seq), fs[j-1].b)
		}
		fs = append(fs, refSpan{off, off + m.Bytes, i})
	}
	sender, receiver := c.pc[d], c.pc[1-d]
	ss, sTurn := callSpans(sender, preload.DirSend)
	rs, rTurn := callSpans(receiver, preload.DirRecv)
	fromStart := c.info == nil || !c.info.MidStream
	switch {
	case len(fs) > 0 && len(ss) > 0 && !(refFromStart(sender) && fromStart),
		len(fs) > 0 && len(rs) > 0 && !(refFromStart(receiver) && fromStart),
		len(fs) == 0 && len(ss) > 0 && len(rs) > 0 && !(refFromStart(sender) && refFromStart(receiver)):
		return errRefUnsupported // byte counts to line up
	}
	// What became of each call: its bytes were sniffed or not (and why).
	reason := "only_unsniffed"
	switch {
	case c.unix:
		reason = "only_unix"
	case c.sniffed:
		reason = "only_outside_capture"
	case c.addr[0].Addr().IsLoopback():
		reason = "only_loopback"
	}
	for _, calls := range []struct {
		c  *preload.Conn
		ss []refSpan
	}{{sender, ss}, {receiver, rs}} {
		for _, s := range calls.ss {
			st := reason
			for _, f := range fs {
				if f.a < s.b && s.a < f.b {
					st = "matched"
				}
			}
			w.set(calls.c, s.i, st)
		}
	}
	// A message ends where a rule says so, or where the covered bytes do.
	writes := w.in.opts.Boundaries == reconcile.BoundWrites
	cut := func(p int64) bool {
		if writes {
			switch {
			case strictlyInside(ss, p):
				return false
			case endingAt(ss, p) >= 0 || startingAt(ss, p):
				return true
			case strictlyInside(fs, p):
				return false
			case endingAt(fs, p) >= 0 || startingAt(fs, p):
				return true
			}
		} else {
			switch {
			case strictlyInside(fs, p) || strictlyInside(ss, p):
				return false
			case endingAt(fs, p) >= 0 || startingAt(fs, p):
				return true
			case endingAt(ss, p) >= 0:
				return !startingAt(ss, p) || sTurn[endingAt(ss, p)]
			case startingAt(ss, p):
				return true
			}
		}
		switch {
		case strictlyInside(rs, p):
			return false
		case endingAt(rs, p) >= 0 && startingAt(rs, p):
			return rTurn[endingAt(rs, p)]
		}
		return true
	}
	var all []refSpan
	all = append(append(append(all, fs...), ss...), rs...)
	covered := func(x int64) bool { return spanAt(all, x) >= 0 }
	var pts []int64
	for _, s := range all {
		pts = append(pts, s.a, s.b)
	}
	slices.Sort(pts)
	pts = slices.Compact(pts)
	start := int64(-1)
	for _, p := range pts {
		switch {
		case start < 0 && covered(p):
			start = p
		case start >= 0 && (!covered(p) || cut(p)):
			w.emit(c, d, start, p, fs, ss, rs)
			start = -1
			if covered(p) {
				start = p
			}
		}
	}
	return nil
}

func (w *refWorld) emit(c *refConn, d int, a, b int64, fs, ss, rs []refSpan) {
	lm := &refMsg{c: c, dir: d, off: a, bytes: b - a, fa: -1, fb: -1, order: -1}
	if j := spanAt(fs, a); j >= 0 {
		lm.fa, lm.faStart = fs[j].i, fs[j].a == a
	}
	if j := spanAt(fs, b-1); j >= 0 {
		lm.fb, lm.fbEnd = fs[j].i, fs[j].b == b
	}
	for _, f := range fs {
		if f.a < b && a < f.b {
			lm.covered = append(lm.covered, f.i)
		}
		if a <= f.a && f.a < b {
			lm.starts = append(lm.starts, f.i)
		}
	}
	if j := spanAt(ss, a); j >= 0 {
		lm.sa = refCall{c.pc[d], ss[j].i}
	}
	if j := spanAt(rs, b-1); j >= 0 {
		lm.rb = refCall{c.pc[1-d], rs[j].i}
	}
	if lm.faStart {
		if m := w.in.msgs[lm.fa]; m.GapBytes >= m.Bytes {
			lm.lost = true
		} else {
			lm.kind, lm.call = m.Kind, m.Call
		}
	}
	w.out = append(w.out, lm)
}

// labelUnsniffed labels the messages of a stream with bytes no sniffer
// saw, in the order of the traced caller's calls (or the callee's): the
// caller's are CALLs with new ids, the callee's next one the RETURN.
func (w *refWorld) labelUnsniffed() {
	for _, c := range w.conns {
		if c.udp || c.caller < 0 {
			continue
		}
		var ms []*refMsg
		unsniffed := false
		for _, lm := range w.out {
			if lm.c == c {
				ms = append(ms, lm)
				unsniffed = unsniffed || lm.fa < 0 || lm.lost
			}
		}
		view := c.pc[c.caller]
		if view == nil {
			view = c.pc[1-c.caller]
		}
		if !unsniffed || view == nil {
			continue
		}
		ordered := true
		for _, lm := range ms {
			switch {
			case lm.sa.c != nil && lm.sa.c == view:
				lm.order = int64(lm.sa.i)
			case lm.rb.c != nil && lm.rb.c == view:
				lm.order = int64(lm.rb.i)
			default:
				ordered = false
			}
		}
		if !ordered {
			continue
		}
		slices.SortStableFunc(ms, func(a, b *refMsg) int { return cmp.Compare(a.order, b.order) })
		// A sniffed RETURN of no sniffed CALL (its CALL was lost) answers
		// the unsniffed CALL pending before it, which takes its id.
		sniffedCall := func(id flows.CallID) bool {
			for _, o := range ms {
				if o.fa >= 0 && !o.lost && o.kind == trace.KindCall && !o.pcall && o.call == id {
					return true
				}
			}
			return false
		}
		var pending flows.CallID
		pendingP := false
		var pendingMsg *refMsg
		n := uint32(0)
		for _, lm := range ms {
			sniffed := lm.fa >= 0 && !lm.lost
			switch {
			case sniffed && lm.kind == trace.KindCall:
				pending, pendingP, pendingMsg = lm.call, lm.pcall, nil
			case sniffed && lm.kind == trace.KindReturn:
				if pendingMsg != nil && !lm.pcall && !sniffedCall(lm.call) {
					pendingMsg.call, pendingMsg.pcall = lm.call, false
				}
				pending, pendingP, pendingMsg = flows.CallID{}, false, nil
			case sniffed:
			case lm.dir == c.caller:
				lm.kind, lm.call, lm.pcall = trace.KindCall, flows.CallID{Conn: uint64(c.id), Index: n}, true
				n++
				pending, pendingP, pendingMsg = lm.call, true, lm
			case !pending.IsZero() || pendingP:
				lm.kind, lm.call, lm.pcall = trace.KindReturn, pending, pendingP
				pending, pendingP, pendingMsg = flows.CallID{}, false, nil
			}
		}
	}
}

// --- Ends, ports and names.

// endHost is the host at end e of c whose traced process there is pc.
func (w *refWorld) endHost(c *refConn, e int, pc *preload.Conn) *refHost {
	named := c.unix
	a := c.addr[e].Addr()
	if !named && refOwnable(a) {
		return w.hostOfAddr(a)
	}
	switch {
	case pc != nil:
		return w.hostOfName(pc.Host)
	case c.pc[e] != nil:
		return w.hostOfName(c.pc[e].Host)
	case c.pc[1-e] != nil && (named || a.IsLoopback()):
		return w.hostOfName(c.pc[1-e].Host)
	case !named && c.addr[e].IsValid():
		return w.hostOfAddr(a)
	}
	return nil
}

func (w *refWorld) ends() {
	for _, lm := range w.out {
		c := lm.c
		s, d := lm.dir, 1-lm.dir
		lm.spc, lm.rpc = c.pc[s], c.pc[d]
		if lm.sa.c != nil {
			lm.spc = lm.sa.c
		}
		if lm.rb.c != nil {
			lm.rpc = lm.rb.c
		}
		lm.hs = w.endHost(c, s, lm.spc)
		lm.hr = w.endHost(c, d, lm.rpc)
	}
}

// fixedPorts marks the fixed endpoints (opened to, listening, called,
// returning; or, for a port that opened no connection, sent no call and
// received no return, talking to many peers, well-known) and lists each
// host's roles.
func (w *refWorld) fixedPorts() {
	w.fixed = map[string]bool{}
	opener := map[string]bool{}
	peers := map[string]map[string]bool{}
	for _, c := range w.conns {
		if !slices.ContainsFunc(w.out, func(lm *refMsg) bool { return lm.c == c }) {
			continue
		}
		for e := range 2 {
			if peers[c.ep[e]] == nil {
				peers[c.ep[e]] = map[string]bool{}
			}
			peers[c.ep[e]][c.ep[1-e]] = true
		}
		if c.caller >= 0 && !c.udp {
			w.fixed[c.ep[1-c.caller]] = true
			opener[c.ep[c.caller]] = true
		}
		for e := range 2 {
			if c.pc[e] != nil && c.pc[e].Listening {
				w.fixed[c.ep[e]] = true
			}
		}
	}
	for _, lm := range w.out {
		switch lm.kind {
		case trace.KindCall:
			w.fixed[lm.c.ep[1-lm.dir]] = true
			opener[lm.c.ep[lm.dir]] = true
		case trace.KindReturn:
			w.fixed[lm.c.ep[lm.dir]] = true
			opener[lm.c.ep[1-lm.dir]] = true
		}
	}
	for _, c := range w.conns {
		for e := range 2 {
			ep := c.ep[e]
			if opener[ep] {
				continue
			}
			if len(peers[ep]) >= w.minPeers {
				w.fixed[ep] = true
			}
			if p := c.addr[e].Port(); !c.unix && !w.in.opts.NoWellKnown && p > 0 && p < 1024 {
				w.fixed[ep] = true
			}
		}
	}
	w.roles = map[*refHost][]string{}
	for _, lm := range w.out {
		for _, e := range []struct {
			h *refHost
			e int
		}{{lm.hs, lm.dir}, {lm.hr, 1 - lm.dir}} {
			if e.h == nil || !w.fixed[lm.c.ep[e.e]] || lm.c.unix {
				continue
			}
			if n := w.roleName(lm.c, e.e, e.h); !slices.Contains(w.roles[e.h], n) {
				w.roles[e.h] = append(w.roles[e.h], n)
			}
		}
	}
}

// hostName: the roles map's name for the primary address or another,
// else the primary address, else the traced host name.
func (w *refWorld) hostName(h *refHost) string {
	if h == nil {
		return ""
	}
	roles := w.in.opts.Roles
	p := h.primary()
	if n, ok := roles.Host(p); ok && p.IsValid() {
		return n
	}
	for _, a := range h.addrs {
		if n, ok := roles.Host(a); ok {
			return n
		}
	}
	if p.IsValid() {
		return p.String()
	}
	return h.traced
}

// roleName names fixed endpoint e of c, on host h.
func (w *refWorld) roleName(c *refConn, e int, h *refHost) string {
	if c.unix {
		return w.hostName(h) + ":" + strings.TrimPrefix(c.ep[e], "unix:")
	}
	roles := w.in.opts.Roles
	ap := c.addr[e]
	if n, ok := roles.Endpoint(ap); ok {
		return n
	}
	host := ""
	if n, ok := roles.Host(ap.Addr()); ok {
		host = n
	} else if !refOwnable(ap.Addr()) && h != nil {
		host = w.hostName(h)
	}
	port := strconv.Itoa(int(ap.Port()))
	if host != "" {
		return host + ":" + port
	}
	return trace.JoinEndpoint(ap.Addr().String(), port)
}

// nodeName names end e of message lm: its process, its host, its role.
func (w *refWorld) nodeName(lm *refMsg, e int, h *refHost, pc *preload.Conn) string {
	naming := w.in.opts.Naming
	name := ""
	switch {
	case naming == reconcile.NameProcess && pc != nil:
		proc := pc.Process
		if proc == "" {
			if p := w.tab().Process(preload.ProcKey{Host: pc.Host, PID: pc.PID}); p != nil {
				proc = p.Name
			}
		}
		if proc == "" {
			proc = "?"
		}
		name = fmt.Sprintf("%s[%d]@%s", proc, pc.PID, pc.Host)
	case naming == reconcile.NameHost:
		name = w.hostName(h)
	case w.fixed[lm.c.ep[e]]:
		name = w.roleName(lm.c, e, h)
	case h != nil && len(w.roles[h]) == 1:
		name = w.roles[h][0]
	default:
		name = w.hostName(h)
	}
	if name == "" {
		name = lm.c.ep[e]
	}
	return name
}

// --- Clocks.

type refEst struct {
	known       bool
	offset, unc int64
	samples     int
	hops        int
}

type refCand struct {
	ts  int64
	dom int // -1: none
}

// Candidate slots, best first.
const (
	refHome     = iota // the end's home point saw the whole message
	refTraced          // the traced call
	refSide            // another point on the end's side saw it whole
	refHomePart        // the home point saw part of it
	refSidePart        // another point on the end's side saw part of it
)

func (w *refWorld) domOf(host string) int {
	for i := w.nSniff; i < len(w.doms); i++ {
		if w.doms[i] == host {
			return i
		}
	}
	w.doms = append(w.doms, host)
	return len(w.doms) - 1
}

// stamps returns the candidate times of lm's send and receive, best
// first. Unless raw, a traced call takes the first place when lm is part
// of a sniffed message, or when its host's home point is across a router.
func (w *refWorld) stamps(lm *refMsg, raw bool) (send, recv [5]refCand) {
	for i := range send {
		send[i].dom, recv[i].dom = -1, -1
	}
	if lm.sa.c != nil {
		send[refTraced] = refCand{lm.sa.c.Msgs[lm.sa.i].TS, w.domOf(lm.sa.c.Host)}
	}
	if lm.rb.c != nil {
		recv[refTraced] = refCand{lm.rb.c.Msgs[lm.rb.i].End, w.domOf(lm.rb.c.Host)}
	}
	partial := lm.fa >= 0 && !lm.faStart || lm.fb >= 0 && !lm.fbEnd
	if !raw && (partial || lm.hs != nil && lm.hs.remote) {
		send[refHome], send[refTraced] = send[refTraced], refCand{dom: -1}
	}
	if !raw && (partial || lm.hr != nil && lm.hr.remote) {
		recv[refHome], recv[refTraced] = recv[refTraced], refCand{dom: -1}
	}
	ttl, seen := w.pairTTL[[2]*refHost{lm.hs, lm.hr}]
	if lm.faStart {
		w.sniffed(&send, w.in.msgs[lm.fa], lm.hs, seen, ttl[0], true)
	}
	if lm.fbEnd {
		w.sniffed(&recv, w.in.msgs[lm.fb], lm.hr, seen, ttl[1], false)
	}
	return send, recv
}

func (w *refWorld) sniffed(cs *[5]refCand, m *flows.Message, h *refHost, seenPair bool, sideTTL uint8, first bool) {
	for i := range m.Sightings {
		s := &m.Sightings[i]
		c := refCand{s.Last, int(s.Point.Sniffer)}
		if first {
			c.ts = s.First
		}
		full := w.full(m, s)
		switch {
		case h != nil && h.hasHome && s.Point == h.home:
			if full && cs[refHome].dom < 0 {
				cs[refHome] = c
			} else if !full {
				cs[refHomePart] = c
			}
		case seenPair && s.TTL == sideTTL:
			slot := refSide
			if !full {
				slot = refSidePart
			}
			if cs[slot].dom < 0 || first && c.ts < cs[slot].ts || !first && c.ts > cs[slot].ts {
				cs[slot] = c
			}
		}
	}
}

func refBest(cs [5]refCand) refCand {
	for _, c := range cs {
		if c.dom >= 0 {
			return c
		}
	}
	return refCand{dom: -1}
}

// clocks estimates every clock domain's offset against the reference:
// from every pair of events on two clocks (a message's send and receive,
// a traced call and the sniffer sighting of its bytes), the smallest
// difference each way, chained along the least summed uncertainty. Each
// node then keeps the clock most of its ends' times come from.
func (w *refWorld) clocks() {
	opts := w.in.opts
	w.nSniff = len(opts.Sniffers)
	for _, m := range w.in.msgs {
		for _, s := range m.Sightings {
			w.nSniff = max(w.nSniff, int(s.Point.Sniffer)+1)
		}
	}
	for i := range w.nSniff {
		w.doms = append(w.doms, w.snifferName(i))
	}
	if tab := w.tab(); tab != nil {
		for _, p := range tab.Processes() {
			w.domOf(p.Host)
		}
	}
	type event struct {
		x  int
		tx int64
		y  int
		ty int64
	}
	var events []event
	stampsOn := map[int]int64{}
	for _, lm := range w.out {
		send, recv := w.stamps(lm, false)
		bs, br := refBest(send), refBest(recv)
		if bs.dom >= 0 {
			stampsOn[bs.dom]++
		}
		if br.dom >= 0 {
			stampsOn[br.dom]++
		}
		if bs.dom >= 0 && br.dom >= 0 {
			events = append(events, event{x: bs.dom, tx: bs.ts, y: br.dom, ty: br.ts})
		}
		send, recv = w.stamps(lm, true)
		if t := send[refTraced]; t.dom >= 0 {
			if s := firstOf(send, refHome, refSide); s.dom >= 0 {
				events = append(events, event{x: t.dom, tx: t.ts, y: s.dom, ty: s.ts})
			}
		}
		if t := recv[refTraced]; t.dom >= 0 {
			if s := firstOf(recv, refHome, refSide); s.dom >= 0 {
				events = append(events, event{x: s.dom, tx: s.ts, y: t.dom, ty: t.ts})
			}
		}
	}
	// The pairwise estimates, lower domain first.
	type edge struct {
		a, b        int
		offset, unc int64
		samples     int
	}
	var edges []edge
	for a := range w.doms {
		for b := a + 1; b < len(w.doms); b++ {
			dAB, dBA := int64(math.MaxInt64), int64(math.MaxInt64)
			n := 0
			for _, e := range events {
				switch {
				case e.x == a && e.y == b:
					dAB = min(dAB, e.ty-e.tx)
					n++
				case e.x == b && e.y == a:
					dBA = min(dBA, e.ty-e.tx)
					n++
				}
			}
			if dAB == math.MaxInt64 || dBA == math.MaxInt64 {
				continue
			}
			// Half the round trip, rounded up; a negative one contradicts
			// itself and is warned about.
			rt := dAB + dBA
			off, unc := time.Duration(refFloorHalf(dAB-dBA)), time.Duration(refCeilHalf(max(rt, -rt)))
			switch {
			case unc > 10*time.Millisecond:
				w.warns = append(w.warns, fmt.Sprintf("clocks %q and %q: the delays each way contradict each other (a clock that stepped, or events paired wrongly), or leave the offset very uncertain: their offset %v ± %v is unreliable",
					w.doms[a], w.doms[b], off, unc))
			case rt < 0:
				w.warns = append(w.warns, fmt.Sprintf("clocks %q and %q: the delays each way contradict each other by up to %v (timestamps taken at different points of the network stacks, or a clock that stepped); their offset %v ± %v is used, with that as its uncertainty",
					w.doms[a], w.doms[b], 2*unc, off, unc))
			}
			rt = max(rt, -rt)
			edges = append(edges, edge{a, b, refFloorHalf(dAB - dBA), refCeilHalf(rt), n})
		}
	}
	w.ref = -1
	for i, sn := range opts.Sniffers {
		if sn.Reference {
			w.ref = i
		}
	}
	for i, sn := range opts.Sniffers {
		if sn.Known && !sn.Reference && w.ref >= 0 {
			edges = append(edges, edge{a: w.ref, b: i, unc: sn.UncertaintyNS, samples: sn.Samples})
		}
	}
	if w.ref < 0 && w.nSniff > 0 {
		w.ref = 0
	}
	if w.ref < 0 {
		var most int64
		for d := range w.doms {
			if stampsOn[d] > most {
				w.ref, most = d, stampsOn[d]
			}
		}
	}
	// Least summed uncertainty (then fewest hops) from the reference, by
	// relaxing every edge until nothing improves.
	w.est = make([]refEst, len(w.doms))
	if w.ref >= 0 {
		w.est[w.ref] = refEst{known: true, samples: math.MaxInt}
		for range w.doms {
			for _, e := range edges {
				for _, way := range [][2]int{{e.a, e.b}, {e.b, e.a}} {
					from, to := w.est[way[0]], way[1]
					if !from.known || to == w.ref {
						continue
					}
					off := e.offset
					if way[0] == e.b {
						off = -off
					}
					u := from.unc + e.unc
					cur := w.est[to]
					if !cur.known || u < cur.unc || u == cur.unc && from.hops+1 < cur.hops {
						w.est[to] = refEst{known: true, offset: from.offset + off, unc: u, samples: min(from.samples, e.samples), hops: from.hops + 1}
					}
				}
			}
		}
	}
	for i := range w.est {
		if w.est[i].samples == math.MaxInt || i == w.ref {
			w.est[i].samples = 0
		}
	}
	// Each node's clock.
	endDom := func(h *refHost) int {
		if h == nil {
			return -1
		}
		sn, hd := -1, -1
		if h.hasHome {
			sn = int(h.home.Sniffer)
		}
		if h.traced != "" {
			if i := slices.Index(w.doms[w.nSniff:], h.traced); i >= 0 {
				hd = w.nSniff + i
			}
		}
		switch {
		case sn >= 0 && hd >= 0 && !w.est[sn].known && w.est[hd].known:
			return hd
		case sn >= 0:
			return sn
		}
		return hd
	}
	uses := map[string]map[int]int64{}
	w.server = map[string]bool{}
	for _, lm := range w.out {
		lm.sNode = w.nodeName(lm, lm.dir, lm.hs, lm.spc)
		lm.rNode = w.nodeName(lm, 1-lm.dir, lm.hr, lm.rpc)
		w.server[lm.sNode] = w.server[lm.sNode] || w.fixed[lm.c.ep[lm.dir]]
		w.server[lm.rNode] = w.server[lm.rNode] || w.fixed[lm.c.ep[1-lm.dir]]
		for _, e := range []struct {
			n string
			h *refHost
		}{{lm.sNode, lm.hs}, {lm.rNode, lm.hr}} {
			if uses[e.n] == nil {
				uses[e.n] = map[int]int64{}
			}
			uses[e.n][endDom(e.h)]++
		}
	}
	w.nodeDom, w.nodeUse = map[string]int{}, map[string]int64{}
	for n, m := range uses {
		d := -1
		for x := range w.doms {
			if m[x] > 0 && (d < 0 || m[x] > m[d]) {
				d = x
			}
		}
		w.nodeDom[n] = d
		for _, k := range m {
			w.nodeUse[n] += k
		}
	}
}

func firstOf(cs [5]refCand, slots ...int) refCand {
	for _, s := range slots {
		if cs[s].dom >= 0 {
			return cs[s]
		}
	}
	return refCand{dom: -1}
}

func refFloorHalf(x int64) int64 {
	if x < 0 {
		return -((-x + 1) / 2)
	}
	return x / 2
}

func refCeilHalf(x int64) int64 {
	if x < 0 {
		return -(-x / 2)
	}
	return (x + 1) / 2
}

func (w *refWorld) snifferName(i int) string {
	if i < len(w.in.opts.Sniffers) && w.in.opts.Sniffers[i].Name != "" {
		return w.in.opts.Sniffers[i].Name
	}
	return "sniffer " + strconv.Itoa(i)
}

// --- The trace.

// messages puts each end's time on its node's clock (converting it from
// the clock it was taken on where both are tied to the reference), drops
// messages with neither, and orders them by corrected time.
func (w *refWorld) messages() []string {
	w.rep = &reconcile.Report{Naming: w.in.opts.Naming.String(), Boundaries: []string{"fat", "writes"}[w.in.opts.Boundaries], Calls: map[string]int64{}}
	pick := func(cs [5]refCand, d int) trace.Timestamp {
		for _, c := range cs {
			switch {
			case c.dom < 0 || d < 0:
			case c.dom == d:
				return trace.Timestamp(c.ts)
			case w.est[c.dom].known && w.est[d].known:
				w.rep.Converted++
				return trace.Timestamp(c.ts - w.est[c.dom].offset + w.est[d].offset)
			}
		}
		return trace.NoTime
	}
	type kept struct {
		lm   *refMsg
		line string
		t    int64
		ev   refEv
	}
	var ks []kept
	w.usedFlow = map[int]int{}
	for _, lm := range w.out {
		send, recv := w.stamps(lm, false)
		ds, dr := w.nodeDom[lm.sNode], w.nodeDom[lm.rNode]
		st, rt := pick(send, ds), pick(recv, dr)
		mark := 1
		if !st.Known() && !rt.Known() {
			w.rep.DroppedNoTime++
			mark = 2
		}
		for _, f := range lm.covered {
			if w.usedFlow[f] != 1 {
				w.usedFlow[f] = mark
			}
		}
		if mark == 2 {
			continue
		}
		t, d := int64(st), ds
		if !st.Known() {
			t, d = int64(rt), dr
		}
		if d >= 0 && w.est[d].known {
			t -= w.est[d].offset
		}
		// Call ids: flows' (c<conn>.<n>), or p<connection>.<n> for one
		// given here (just "p" on connection 0, whose ids are zero).
		call := "-"
		if lm.pcall || !lm.call.IsZero() {
			call = lm.call.String()
			if lm.pcall {
				call = "p" + call[1:]
			}
		}
		proto := trace.ProtoTCP
		switch {
		case lm.c.udp:
			proto = trace.ProtoUDP
		case lm.c.unix:
			proto = trace.ProtoUnix
		}
		line := fmt.Sprintf("send %s recv %s %s->%s %s->%s %dB %v %v %s",
			fmtTS(st), fmtTS(rt), lm.c.ep[lm.dir], lm.c.ep[1-lm.dir], lm.sNode, lm.rNode, lm.bytes, lm.kind, proto, call)
		ev := w.evidence(lm)
		ks = append(ks, kept{lm, line, t, ev})
		w.count(st, rt, lm)
		w.countEvidence(ev)
	}
	slices.SortStableFunc(ks, func(a, b kept) int {
		return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.lm.c.id, b.lm.c.id), cmp.Compare(a.lm.dir, b.lm.dir), cmp.Compare(a.lm.off, b.lm.off))
	})
	// Connections are numbered in the order of their first message; the
	// two directions of datagrams between two endpoints are one.
	conns := map[string]uint32{}
	lines := make([]string, len(ks))
	for i, k := range ks {
		key := fmt.Sprint("conn ", k.lm.c.id)
		if k.lm.c.udp {
			eps := []string{k.lm.c.ep[0], k.lm.c.ep[1]}
			slices.Sort(eps)
			key = "udp " + eps[0] + " " + eps[1]
		}
		if conns[key] == 0 {
			conns[key] = uint32(len(conns) + 1)
		}
		lines[i] = k.line + refEvText(conns[key], k.ev)
	}
	return lines
}

func (w *refWorld) countEvidence(e refEv) {
	r := w.rep
	if e.reqID != "" {
		r.WithReqID++
	}
	if len(e.tokens) > 0 {
		r.WithTokens++
	}
	if e.label != "" {
		r.WithLabel++
	}
	if e.sender.Known() || e.receiver.Known() {
		r.WithTask++
	}
}

func (w *refWorld) count(st, rt trace.Timestamp, lm *refMsg) {
	r := w.rep
	r.Messages++
	switch {
	case st.Known() && rt.Known():
		r.BothEnds++
	case st.Known():
		r.SendOnly++
	default:
		r.RecvOnly++
	}
	traced := lm.spc != nil || lm.rpc != nil
	switch {
	case lm.fa < 0:
		r.PreloadOnly++
	case traced:
		r.Merged++
	default:
		r.SniffedOnly++
	}
	if traced {
		r.ProcessEnds++
	}
	if lm.spc != nil && lm.rpc != nil {
		r.ProcessBoth++
	}
}

// accounting fills the rest of the report: the sniffed messages and the
// traced calls by what became of them, the clocks, the node offsets and
// the hosts.
func (w *refWorld) accounting() {
	r := w.rep
	r.FlowsIn = int64(len(w.in.msgs))
	for i := range w.in.msgs {
		switch w.usedFlow[i] {
		case 1:
			r.FlowsUsed++
		case 2:
			r.FlowsDropped++
		default:
			r.FlowsUnplaced++
		}
	}
	if tab := w.tab(); tab != nil {
		for _, c := range tab.Conns {
			if len(c.Msgs) == 0 {
				continue
			}
			r.PreloadConns++
			for i := range c.Msgs {
				s := "unaccounted"
				if w.status[c] != nil && w.status[c][i] != "" {
					s = w.status[c][i]
				}
				r.PreloadCalls++
				r.Calls[s]++
			}
		}
		for _, c := range w.conns {
			if c.sniffed && !c.udp {
				for e := range 2 {
					if c.pc[e] != nil {
						r.SniffedConns++
					}
				}
			}
		}
	}
	w.clockReport()
	for _, h := range w.hosts {
		if h.msgs == 0 && h.traced == "" {
			continue
		}
		home := "-"
		if h.hasHome {
			home = w.snifferName(int(h.home.Sniffer))
			if h.home.Interface != 0 {
				home += "/" + strconv.Itoa(int(h.home.Interface))
			}
		}
		r.Hosts = append(r.Hosts, reconcile.HostReport{Host: w.hostName(h), Traced: h.traced, Home: home, Near: h.near, Seen: h.seen, Messages: h.msgs})
	}
	slices.SortFunc(r.Hosts, func(a, b reconcile.HostReport) int {
		return cmp.Or(cmp.Compare(a.Host, b.Host), cmp.Compare(a.Traced, b.Traced))
	})
	r.Nodes = len(w.nodeDom)
	for _, v := range w.server {
		if v {
			r.Servers++
		}
	}
	if n := len(w.warns); n > w.maxWarnings {
		w.warns = append(w.warns[:w.maxWarnings], fmt.Sprintf("... and %d more warnings", n-w.maxWarnings))
	}
	r.Warnings = w.warns
}

func (w *refWorld) clockReport() {
	r := w.rep
	refName := ""
	if w.ref >= 0 {
		refName = w.doms[w.ref]
	}
	for i, name := range w.doms {
		c := trace.Clock{Name: name, Kind: "sniffer", Reference: refName, Method: "unknown"}
		if i >= w.nSniff {
			c.Kind = "host"
		}
		e := w.est[i]
		switch {
		case i < len(w.in.opts.Sniffers) && w.in.opts.Sniffers[i].Known:
			sn := w.in.opts.Sniffers[i]
			c.Known, c.OffsetNS, c.UncertaintyNS, c.Samples, c.Method = true, sn.OffsetNS, sn.UncertaintyNS, sn.Samples, sn.Method
		case e.known:
			c.Known, c.OffsetNS, c.UncertaintyNS, c.Samples, c.Method = true, e.offset, e.unc, e.samples, "messages"
			if i >= w.nSniff && i == w.ref {
				c.Method = "reference"
			}
		}
		r.Clocks = append(r.Clocks, c)
	}
	// The reference node: the busiest on the reference clock, else the
	// busiest on a clock tied to it; ties by name.
	names := make([]string, 0, len(w.nodeDom))
	for n := range w.nodeDom {
		names = append(names, n)
	}
	slices.Sort(names)
	refNode := ""
	for _, onRef := range []bool{true, false} {
		for _, n := range names {
			d := w.nodeDom[n]
			if d < 0 || !w.est[d].known || onRef && d != w.ref {
				continue
			}
			if refNode == "" || w.nodeUse[n] > w.nodeUse[refNode] {
				refNode = n
			}
		}
		if refNode != "" {
			break
		}
	}
	if refNode == "" {
		return
	}
	r.Reference = refNode
	rd := w.est[w.nodeDom[refNode]]
	for _, n := range names {
		d := w.nodeDom[n]
		o := trace.Offset{Node: n, Reference: refNode}
		if d >= 0 && w.est[d].known {
			o.Known, o.OffsetNS = true, w.est[d].offset-rd.offset
			if d != w.nodeDom[refNode] {
				o.UncertaintyNS = w.est[d].unc + rd.unc
				o.Samples = w.est[d].samples
				if rd.samples > 0 {
					o.Samples = min(o.Samples, rd.samples)
				}
			}
		}
		r.Offsets = append(r.Offsets, o)
	}
}
