package reconcile

import (
	"net/netip"

	"github.com/wirepath/wirepath/flows"
	"github.com/wirepath/wirepath/trace"
)

// Reconciler collects the sniffed messages of a run (and the connections
// flows reports) and, in Finish, reconciles them with the syscall traces
// into one trace. Add copies what it needs, so the caller may reuse the
// message. A Reconciler is not safe for concurrent use.
//
// Memory is about 80 bytes per message plus 32 per sighting (Finish adds
// about 200 per message while it works): it needs
// every message, because the choice of each host's home capture point, the
// fixed ports and the clock offsets all depend on the whole run.
type Reconciler struct {
	opts Options

	msgs   []smsg
	sights []sight
	eps    []netip.AddrPort
	epIdx  map[netip.AddrPort]uint32
	conns  map[uint64]*connInfo
	points []flows.Point
	ptIdx  map[flows.Point]uint16
	// lastEp and lastPt remember the endpoints and the capture point of
	// the last messages added (a connection's messages come in runs).
	lastEp [2]epMemo
	lastPt struct {
		ok bool
		p  flows.Point
		i  uint16
	}
	// texts are the last labels interned (text), replaced in turn
	// (textNext): a connection's few labels alternate.
	texts [8]struct {
		s   string
		sym trace.Sym
	}
	textNext uint8
	// pools and hostHalves are the connections' passive figures, for
	// the trace's Links (links.go).
	pools      map[poolKey]*linkPool
	hostHalves map[hostHalfKey]int64

	// The evidence the protocol decoders gave the sniffed messages
	// (smsg.ev), with the labels and request ids interned in syms, which
	// become the trace's, and the token hashes in toks.
	evs   []sev
	toks  []uint64
	syms  trace.Symbols
	idBuf []byte
	ev    evCounts

	in       inCounts
	finished bool
}

// smsg is one sniffed message, compactly.
type smsg struct {
	conn       uint64
	index      uint32
	src, dst   uint32 // endpoint ids
	seq        uint32
	bytes      int64
	gapBytes   int64
	call       flows.CallID
	sight      uint32 // first sighting in Reconciler.sights
	ev         uint32 // 1 + index in Reconciler.evs, 0 if none
	nsight     uint16
	kind       trace.Kind
	proto      trace.Proto
	incomplete bool
}

// sight is one capture point's sighting of a message.
type sight struct {
	first, last int64
	point       uint16 // index into Reconciler.points
	ttl         uint8
	full        bool // the point saw every captured byte of the message
}

// connInfo is what flows said about one connection when it ended.
type connInfo struct {
	client, server netip.AddrPort
	callerKnown    bool
	midStream      bool
	start, end     int64
}

// epMemo is an endpoint and its id.
type epMemo struct {
	ok bool
	ap netip.AddrPort
	i  uint32
}

// inCounts count the input.
type inCounts struct {
	messages, bytes, conns int64
}

// New returns a Reconciler with the given options.
func New(opts Options) (*Reconciler, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.MinPeers == 0 {
		opts.MinPeers = 3
	}
	if opts.MaxWarnings == 0 {
		opts.MaxWarnings = 20
	}
	return &Reconciler{
		opts:  opts,
		epIdx: make(map[netip.AddrPort]uint32),
		conns: make(map[uint64]*connInfo),
		ptIdx: make(map[flows.Point]uint16),
		pools: make(map[poolKey]*linkPool), hostHalves: make(map[hostHalfKey]int64),
	}, nil
}

// endpoint returns the id of ap, looked up first among the two remembered
// (the last message's ends); a new one replaces side k's (0 source, 1
// destination).
func (r *Reconciler) endpoint(ap netip.AddrPort, k int) uint32 {
	for j := range r.lastEp {
		if m := &r.lastEp[j]; m.ok && m.ap == ap {
			return m.i
		}
	}
	i := r.endpointID(ap)
	r.lastEp[k] = epMemo{ok: true, ap: ap, i: i}
	return i
}

func (r *Reconciler) endpointID(ap netip.AddrPort) uint32 {
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	if i, ok := r.epIdx[ap]; ok {
		return i
	}
	i := uint32(len(r.eps))
	r.eps = append(r.eps, ap)
	r.epIdx[ap] = i
	return i
}

func (r *Reconciler) point(p flows.Point) uint16 {
	if r.lastPt.ok && r.lastPt.p == p {
		return r.lastPt.i
	}
	i, ok := r.ptIdx[p]
	if !ok {
		i = uint16(len(r.points))
		r.points = append(r.points, p)
		r.ptIdx[p] = i
	}
	r.lastPt.ok, r.lastPt.p, r.lastPt.i = true, p, i
	return i
}

// AddMessage adds one sniffed message (flows.Reader.Next's, in any order).
func (r *Reconciler) AddMessage(m *flows.Message) {
	r.in.messages++
	r.in.bytes += m.Bytes
	s := smsg{
		conn: m.Conn, index: m.Index,
		src: r.endpoint(m.Src, 0), dst: r.endpoint(m.Dst, 1),
		seq: m.Seq, bytes: m.Bytes, gapBytes: m.GapBytes,
		call: m.Call, kind: m.Kind, proto: m.Proto, incomplete: m.Incomplete,
		sight: uint32(len(r.sights)),
		ev:    r.addEvidence(m),
	}
	captured := m.CapturedBytes()
	for i := range m.Sightings {
		if i == 1<<16-1 {
			break
		}
		g := &m.Sightings[i]
		r.sights = append(r.sights, sight{
			first: g.First, last: g.Last, point: r.point(g.Point), ttl: g.TTL,
			full: g.Bytes >= captured,
		})
		s.nsight++
	}
	r.msgs = append(r.msgs, s)
}

// AddConn adds what flows says about a connection when it ends
// (flows.Config.OnConn): which side opened it, and its passive round
// trips, windows and rates, which Finish pools per pair of nodes into the
// trace's Meta.Links. It is optional; without it the fixed ports come from
// the messages' kinds, the peers and the syscall traces, and the trace
// has no links.
func (r *Reconciler) AddConn(cs *flows.ConnStats) {
	r.in.conns++
	r.poolConn(cs)
	r.conns[cs.Conn] = &connInfo{
		client: cs.Client, server: cs.Server,
		callerKnown: cs.Caller != "unknown" && cs.Caller != "",
		midStream:   cs.MidStream,
		start:       cs.StartNS, end: cs.EndNS,
	}
}

// sightsOf returns the sightings of m.
func (r *Reconciler) sightsOf(m *smsg) []sight {
	return r.sights[m.sight : m.sight+uint32(m.nsight)]
}
