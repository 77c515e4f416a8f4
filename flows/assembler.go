package flows

import (
	"net/netip"

	"github.com/wirepath/wirepath/internal/ring"
	"github.com/wirepath/wirepath/pcapio"
	"github.com/wirepath/wirepath/proto"
	"github.com/wirepath/wirepath/trace"
)

// msg is a message being built or waiting to be emitted.
type msg struct {
	Message
	c        *conn
	dir      int
	prefix   *[MaxFingerprintLen]byte // its first bytes, until it is queued (then back to the pool)
	prefixN  int
	sincePSH int64
	cutAt    int64
	ev       *evBox // the storage of Evidence, nil when it has none

	// Messages made from a protocol decoder's Units.
	uStart, uEnd int64  // stream offsets of its first byte and one past its last
	endSeq       uint32 // the sequence number one past its last byte, once cut
	lastTS       int64  // data: when its latest record was first seen

	dns        dnsHeader
	dnsOK      bool     // UDP: a DNS header was parsed
	protoStart bool     // the message began at an application message boundary
	hkind      httpKind // what its HTTP headers said
	prefixDone bool
	hashed     bool // Fingerprint taken (from the chunk being decoded), not from prefix
	decoded    bool // made from Units: their bytes are the decoder's, not flows'
	unit       bool // timed from the log by its offsets [uStart, uEnd)
	data       bool // made of data Units (opaque records) between direction changes

	// sight holds the first sighting, which most messages have alone,
	// without an allocation: Sightings starts as sight[:0].
	sight [1]Sighting
}

// evBox is a message's Evidence with room for the few ids and tokens most
// messages have, so that it costs one allocation, and only for messages
// that have evidence; boxes are recycled when their message is emitted.
type evBox struct {
	proto.Evidence
	ids  [1]proto.ID
	toks [6]uint64
}

// Assembler is the flows stage in push form: Add packets in corrected time
// order, call Next until it returns false after each Add, and Flush at the
// end of input (then drain Next). Reader wraps it in pull form. An
// Assembler is not safe for concurrent use.
type Assembler struct {
	cfg      Config
	settle   int64
	st       Stats
	now      int64
	started  bool
	flushing bool
	// The capture point of the packets so far, and whether there was
	// more than one (early release, release.go).
	point      Point
	havePoint  bool
	multiPoint bool
	// unitScratch is the Unit decoders' Next fill (drainUnits), one
	// drain at a time (unitBusy).
	unitScratch proto.Unit
	unitBusy    bool

	conns     map[connKey]*conn
	activeTCP connList
	activeUDP connList
	// answeredUDP are the UDP flows answered one for one so far, which
	// end after Config.UDPAnsweredTimeout (placeUDP).
	answeredUDP connList
	closed      connList
	holey       []*conn
	freeConns   []*conn
	freeMsgs    []*msg
	msgSlab     []msg                      // messages allocated and not yet used
	prefixes    []*[MaxFingerprintLen]byte // free prefix buffers of messages
	evBoxes     []*evBox                   // free evidence of messages
	queue       ring.Ring[*msg]            // cut messages waiting for the settle time
	pool        bufPool
	frag        defragmenter
	nextID      uint64
	openBytes   int64
	openMsgs    int64

	obs       []segObs // scratch: the packet's sightings
	newObs    []segObs // scratch: those new to their capture point (delivered part)
	restObs   []segObs // scratch: those new to their capture point (the rest)
	lastSweep int64
	sweepTick int
	cs        ConnStats // scratch for OnConn
	pk        pkt       // scratch: the packet being processed

	pst           [numApps]ProtoStats      // per protocol
	decPool       [numApps][]proto.Decoder // decoders to reuse (Reset)
	ev            *evTaker                 // labels and evidence of what flows frames itself
	outEv         proto.Evidence           // the Evidence of the message Next filled
	closingReason EndReason                // why the decoder being closed is
	cur           curChunk                 // the chunk being decoded
	// The mid-stream search's scratch decoders, held bytes by half and
	// Unit (midstream.go).
	midDec  [numApps]proto.Resumer
	midBuf  [2][]byte
	midUnit proto.Unit
}

// pkt is the transport view of a packet (or reassembled datagram).
type pkt struct {
	src, dst     netip.Addr
	sport, dport uint16
	proto        uint8
	seq, ack     uint32
	flags        uint8
	win          uint16
	opts         pcapio.TCPOptions
	payload      []byte // captured payload
	n            int    // payload length on the wire
	obs          []segObs
	ts           int64
}

// NewAssembler returns an Assembler with the given configuration.
func NewAssembler(cfg Config) (*Assembler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := &Assembler{cfg: cfg, settle: int64(cfg.Settle), conns: make(map[connKey]*conn)}
	a.ev = newEvTaker(&a.cfg)
	a.frag.init(&a.cfg)
	return a, nil
}

// Config returns the Assembler's configuration.
func (a *Assembler) Config() Config { return a.cfg }

// Add processes one packet. Packets must come in corrected time order
// (pcapio's merge order); a packet that goes back in time is processed at
// the current stage time. p may be reused by the caller after Add returns.
func (a *Assembler) Add(p *pcapio.Packet) {
	a.st.Packets++
	if p.Status != pcapio.StatusOK || len(p.Obs) == 0 {
		a.st.NotIP++
		return
	}
	ts := p.Obs[0].Corrected
	if !a.started || ts > a.now {
		a.now, a.started = ts, true
	}
	a.obs = a.obs[:0]
	for _, o := range p.Obs {
		pt := Point{o.Sniffer, o.Interface}
		a.notePoint(pt)
		if hasPoint(a.obs, pt) {
			// pcapio grouped a copy with identical bytes seen again by the
			// same capture point (a retransmission) into this packet: the
			// first sighting is the one that counts.
			a.st.RepeatObservations++
			continue
		}
		a.obs = append(a.obs, segObs{pt: pt, ttl: o.TTL, view: p.Orig, first: o.Corrected, last: o.Corrected})
	}
	if p.IsFragment() {
		a.st.Fragments++
		if pk := a.frag.add(p, a.obs, a.now, &a.st, &a.pk); pk != nil {
			a.transport(pk)
			a.frag.release()
		}
	} else {
		switch p.Proto {
		case pcapio.ProtoTCP, pcapio.ProtoUDP:
			pk := &a.pk
			*pk = pkt{src: p.Src, dst: p.Dst, sport: p.SrcPort, dport: p.DstPort, proto: p.Proto,
				seq: p.Seq, ack: p.Ack, flags: p.TCPFlags, win: p.Window, opts: p.TCPOpts, payload: p.Payload, n: p.PayloadLen, obs: a.obs, ts: ts}
			if pk.n < len(pk.payload) {
				pk.n = len(pk.payload)
			}
			if len(pk.payload) > pk.n {
				pk.payload = pk.payload[:pk.n]
			}
			if p.Proto == pcapio.ProtoTCP {
				a.st.TCPPackets++
			} else {
				a.st.UDPPackets++
			}
			a.transport(pk)
		default:
			a.st.OtherProto++
		}
	}
	a.sweepTick++
	if a.sweepTick >= 256 || a.now-a.lastSweep >= int64(100e6) {
		a.sweep()
	}
}

// transport dispatches a TCP segment or UDP datagram.
func (a *Assembler) transport(pk *pkt) {
	switch pk.proto {
	case pcapio.ProtoTCP:
		a.tcp(pk)
	case pcapio.ProtoUDP:
		a.udp(pk)
	}
}

// Flush ends the input: every connection ends (EndEOF), every hole becomes
// a gap, incomplete fragments are dropped, and every message becomes ready
// for Next without waiting for the settle time.
func (a *Assembler) Flush() {
	for _, l := range []*connList{&a.activeTCP, &a.activeUDP, &a.answeredUDP, &a.closed} {
		for l.tail != nil {
			a.removeConn(l.tail, EndEOF)
		}
	}
	a.frag.flush(&a.st)
	a.flushing = true
}

// Next fills m with the next message that is ready, reusing m's
// Sightings, and reports whether there was one. Messages come out in the
// order they ended, each Config.Settle after it ended (at once after
// Flush; a whole decoded message on a single-point capture as soon as its
// receiver acknowledged it, see release.go).
func (a *Assembler) Next(m *Message) bool {
	if a.queue.Len() == 0 {
		return false
	}
	head := *a.queue.Front()
	if !a.flushing && head.cutAt+a.settle > a.now && !a.releasable(head) {
		return false
	}
	a.queue.Pop()
	a.seal(head, m)
	return true
}

// Stats returns the accounting so far. After Flush and draining Next, the
// open and buffered counts are zero and Stats().Check() holds.
func (a *Assembler) Stats() *Stats {
	a.st.BufferedBytes = a.pool.buffered
	a.st.OpenBytes = a.openBytes
	a.st.OpenMessages = a.openMsgs
	a.st.FragPending = a.frag.pendingFrags
	a.st.ConnsOpen = int64(a.activeTCP.n + a.activeUDP.n + a.answeredUDP.n)
	a.st.Protocols = make(map[string]*ProtoStats)
	for app := range numApps {
		if p := a.pst[app]; p != (ProtoStats{}) {
			a.st.Protocols[app.String()] = &p
		}
	}
	return &a.st
}

// cutApp is the protocol of a connection flows cut itself: DNS on its
// port, HTTP when HTTP/1.x framing applied to one of its directions.
func (c *conn) cutApp() App {
	app := AppNone
	for d := range c.half {
		f := &c.half[d].fr
		switch {
		case f.dns:
			return AppDNS
		case f.mode == fmLost || f.mode == fmHTTP && !f.first:
			app = AppHTTP
		}
	}
	return app
}

// newConn starts tracking a connection, evicting the least recently active
// one when the table is full.
func (a *Assembler) newConn(key connKey, proto uint8) *conn {
	for len(a.conns) >= a.cfg.MaxConns {
		a.evictOne()
	}
	var c *conn
	if n := len(a.freeConns); n > 0 {
		c = a.freeConns[n-1]
		a.freeConns = a.freeConns[:n-1]
	} else {
		c = new(conn)
	}
	a.nextID++
	c.init(a, a.nextID, key, proto, a.now)
	a.conns[key] = c
	if n := int64(len(a.conns)); n > a.st.PeakConns {
		a.st.PeakConns = n
	}
	a.st.Conns++
	if proto == pcapio.ProtoTCP {
		a.st.TCPConns++
		a.activeTCP.pushFront(c)
	} else {
		a.st.UDPFlows++
		a.activeUDP.pushFront(c)
	}
	return c
}

// evictOne removes the least recently active connection: a closed one if
// any, else the older of the TCP and UDP tails.
func (a *Assembler) evictOne() {
	if a.closed.tail != nil {
		a.removeConn(a.closed.tail, EndEvicted)
		return
	}
	victim := a.activeTCP.tail
	for _, u := range []*conn{a.activeUDP.tail, a.answeredUDP.tail} {
		if victim == nil || (u != nil && u.last < victim.last) {
			victim = u
		}
	}
	if victim != nil {
		a.removeConn(victim, EndEvicted)
	}
}

// udpAnswered is how long an answered UDP flow lives silent, in ns.
func (a *Assembler) udpAnswered() int64 {
	if a.cfg.UDPAnsweredTimeout > 0 {
		return int64(min(a.cfg.UDPAnsweredTimeout, a.cfg.UDPTimeout))
	}
	return int64(a.cfg.UDPTimeout)
}

// placeUDP puts an open UDP flow on the list of its timeout, at the
// front: answeredUDP while its datagrams were answered one for one (as
// many each way), else activeUDP.
func (a *Assembler) placeUDP(c *conn) {
	if c.closed || c.list == nil {
		return
	}
	want := &a.activeUDP
	if n := c.half[0].packets; n > 0 && n == c.half[1].packets {
		want = &a.answeredUDP
	}
	if c.list != want {
		c.list.remove(c)
		want.pushFront(c)
	}
}

// touch marks c active now.
func (a *Assembler) touch(c *conn) {
	c.last = a.now
	if !c.closed && c.list != nil {
		c.list.moveToFront(c)
	}
}

// endConn ends a connection that is still open: every hole becomes a gap,
// the open message is cut, and the connection moves to the closed list.
func (a *Assembler) endConn(c *conn, reason EndReason) {
	if c.closed {
		return
	}
	for d := range c.half {
		h := &c.half[d]
		if g, gb := h.st.skipAll(a.now, &h.sink); g > 0 {
			a.st.GapsEnd += int64(g)
			c.acc.gaps += int64(g)
			c.acc.gapBytes += gb
		}
	}
	switch c.pr.det {
	case detHolding:
		app, _ := sniffClient(c.pr.first)
		a.decideHeld(c, app)
	case detMid:
		a.midEnd(c)
	}
	a.closeDecoder(c, reason)
	if c.open != nil {
		a.cut(c, reason)
	}
	c.closed, c.end, c.closedAt = true, reason, a.now
	switch reason {
	case EndFIN:
		a.st.ConnsFIN++
	case EndRST:
		a.st.ConnsRST++
	case EndIdle:
		a.st.ConnsIdle++
	case EndEvicted:
		a.st.ConnsEvicted++
	case EndReused:
		a.st.ConnsReused++
	default:
		a.st.ConnsEOF++
	}
	if c.list != nil {
		c.list.remove(c)
		a.closed.pushFront(c)
	}
}

// removeConn ends c if needed and forgets it; it is recycled once all its
// messages have been emitted.
func (a *Assembler) removeConn(c *conn, reason EndReason) {
	a.endConn(c, reason)
	if a.conns[c.key] == c {
		delete(a.conns, c.key)
	}
	if c.list != nil {
		c.list.remove(c)
	}
	c.removed = true
	for d := range c.half {
		c.half[d].st.release()
	}
	if c.holey {
		for i, h := range a.holey {
			if h == c {
				a.holey = append(a.holey[:i], a.holey[i+1:]...)
				break
			}
		}
		c.holey = false
	}
	if c.pendingMsgs == 0 && c.unsealed.len() == 0 {
		a.finishConn(c)
	}
}

// finishConn reports c's figures and recycles it.
func (a *Assembler) finishConn(c *conn) {
	for d := range c.half {
		a.st.FramingLost += c.half[d].fr.lost
		a.st.CoverageMerges += c.half[d].cov.merges
	}
	if c.callerFrom == callerUnknown {
		a.st.CallerUnknown++
	}
	if c.proto == pcapio.ProtoTCP && !c.pr.app.decoded() {
		a.pst[c.cutApp()].Conns++
	}
	if a.cfg.OnConn != nil {
		a.connStats(c, &a.cs)
		a.cfg.OnConn(&a.cs)
	}
	c.removed = false
	c.holey = false
	c.trim()
	a.freeConns = append(a.freeConns, c)
}

// sweep ends idle connections, forgets closed ones after the linger time,
// gives up holes older than the reorder timeout and drops stale fragments.
func (a *Assembler) sweep() {
	a.sweepTick = 0
	a.lastSweep = a.now
	for c := a.activeTCP.tail; c != nil && a.now-c.last > int64(a.cfg.IdleTimeout); c = a.activeTCP.tail {
		a.removeConn(c, EndIdle)
	}
	for c := a.activeUDP.tail; c != nil && a.now-c.last > int64(a.cfg.UDPTimeout); c = a.activeUDP.tail {
		a.removeConn(c, EndIdle)
	}
	for c := a.answeredUDP.tail; c != nil && a.now-c.last > a.udpAnswered(); c = a.answeredUDP.tail {
		a.removeConn(c, EndIdle)
	}
	for c := a.closed.tail; c != nil && a.now-c.closedAt > int64(a.cfg.CloseLinger); c = a.closed.tail {
		a.removeConn(c, c.end)
	}
	if len(a.holey) > 0 {
		keep := a.holey[:0]
		for _, c := range a.holey {
			a.reorderTimeout(c)
			if !c.removed && !c.closed && (len(c.half[0].st.buf) > 0 || len(c.half[1].st.buf) > 0) {
				keep = append(keep, c)
			} else {
				c.holey = false
			}
		}
		clear(a.holey[len(keep):])
		a.holey = keep
	}
	a.frag.expire(a.now, &a.st)
}

// trace.Proto of a transport protocol number.
func traceProto(p uint8) trace.Proto {
	switch p {
	case pcapio.ProtoTCP:
		return trace.ProtoTCP
	case pcapio.ProtoUDP:
		return trace.ProtoUDP
	}
	return trace.ProtoOther
}
