package flows

import (
	"net/netip"

	"github.com/wirepath/wirepath/flows/internal/seqnum"
	"github.com/wirepath/wirepath/internal/connkey"
	"github.com/wirepath/wirepath/pcapio"
)

// connKey names a connection or UDP flow by its canonical endpoints, so
// that both directions share the key: a packed comparable value.
type connKey = connkey.Key

// keyOf returns the key of a packet and its direction: 0 when it travels
// from the key's first endpoint to its second, 1 otherwise.
func keyOf(src, dst netip.Addr, sport, dport uint16, proto uint8) (connKey, int) {
	return connkey.Of(src, dst, sport, dport, proto)
}

// callerSource says how the caller (client) side of a connection was found.
type callerSource uint8

const (
	callerUnknown callerSource = iota
	callerSYN                  // it sent the SYN
	callerSYNACK               // it received the SYN-ACK (the SYN was not seen)
	callerHTTP                 // it sent HTTP requests
	callerDNS                  // it sent DNS queries
	callerPorts                // the other side uses the lower, well-known port
	callerPayload              // its bytes read as a protocol's requests (mid-stream pickup)
	callerFirst                // it sent the first datagram of a UDP flow the ports do not explain
)

var callerNames = [...]string{"unknown", "syn", "synack", "http", "dns", "ports", "payload", "first"}

func (s callerSource) String() string { return callerNames[s] }

// half is one direction of a connection: data from ep[d] to ep[1-d].
type half struct {
	st   stream
	cov  coverage
	fr   framer
	sink halfSink

	synSeen, finSeen, finDone bool
	isn, finSeq               seqnum.Value
	// acked is the highest acknowledgement the peer sent for this
	// direction's bytes (ackSeen: one was seen), for early release.
	acked    seqnum.Value
	ackSeen  bool
	hasData  bool
	lastData int64 // time of the last data delivered, for pause splitting
	packets  int64
	bytes    int64 // stream bytes delivered
	msgs     int64
	// off is the stream offset of the next byte delivered (gaps
	// included), from 0 at the stream's start (midStreamOffset when the
	// connection was seen from its middle): the offsets protocol decoders
	// and the log know bytes by.
	off int64
	// log maps a decoded direction's offsets to its packets' sightings.
	log segLog
	// nextOrd is the Ordinal of the direction's next message.
	nextOrd uint32
	// units are the direction's decoded messages cut and not yet
	// emitted, in the order they ended; starts the minimum of their
	// first offsets.
	units  msgList
	starts startMin
}

// halfSink passes a stream's output to the message cutter.
type halfSink struct {
	a *Assembler
	c *conn
	d int
}

func (s *halfSink) deliver(ch *chunk) { s.a.deliver(s.c, s.d, ch) }
func (s *halfSink) late(seq seqnum.Value, n uint32, obs, newObs []segObs) {
	s.a.late(s.c, s.d, seq, n, obs, newObs)
}

// hsPoint is what one capture point saw of a TCP handshake.
type hsPoint struct {
	pt               Point
	syn, synack, ack int64
	// The TTLs (0 unknown) and NAT views (segObs.view) of the first SYN
	// and SYN-ACK seen here.
	synTTL, synackTTL   uint8
	synView, synackView uint64
	synRetx, ackRetx    bool
}

// callRec remembers an emitted CALL until its RETURN, for round trips.
type callRec struct {
	idx   uint32
	valid bool
	n     int
	pts   [4]Point
	ttl   [4]uint8
	last  [4]int64
}

// conn is one TCP connection or UDP flow.
type conn struct {
	id    uint64
	key   connKey
	ep    [2]netip.AddrPort
	first int64
	last  int64

	closedAt  int64
	closed    bool
	removed   bool
	midStream bool
	proto     uint8
	end       EndReason

	caller     int8 // direction of the caller, -1 unknown
	callerFrom callerSource
	callerDone bool // inference ran (or the handshake said)

	half [2]half
	http httpShared
	pr   connProto

	open        *msg    // the message being filled (TCP)
	unsealed    msgList // messages not yet emitted, oldest first (including open)
	pendingMsgs int     // of which cut and waiting in the emit queue
	nextIndex   uint32  // the next message index
	nextCall    uint32
	httpCalls   [maxPendingReqs]uint32
	httpHead    int
	httpN       int
	lastCall    uint32
	lastCallOK  bool

	// httpPipelined: a request was sent while another waited;
	// httpUnpaired: after a loss on such a connection, responses are
	// paired no more (httpLoss).
	httpPipelined, httpUnpaired bool
	holey                       bool // on the list of connections with out-of-order data

	dnsPending []dnsCall
	// notExchange: a UDP flow of no decoded protocol stopped alternating
	// (the callee sent twice in a row), so its datagrams get no kinds
	// (assignDatagram).
	notExchange bool
	dgramDir    int8 // the direction of the flow's latest datagram
	dgramSeen   bool

	hs   []hsPoint
	acc  connAcc
	figs *connFigs // made with the first call or throughput sample (fig)
	ps   passiveState

	// list links (LRU of active connections, or the closed list)
	prev, next *conn
	list       *connList
}

// dnsCall is a DNS query waiting for its response.
type dnsCall struct {
	id  uint16
	idx uint32
	dir int8
}

// maxDNSPending bounds the unanswered DNS queries kept per flow.
const maxDNSPending = 64

// init prepares a recycled conn for a new connection.
func (c *conn) init(a *Assembler, id uint64, key connKey, proto uint8, now int64) {
	unsealed, dnsP, hs := c.unsealed, c.dnsPending[:0], c.hs[:0]
	unsealed.reset()
	figs := c.figs
	if figs != nil {
		figs.reset()
	}
	halves := c.half
	ps, pr := c.ps, c.pr
	ps.reset()
	pr.reset()
	*c = conn{pr: pr, figs: figs}
	c.unsealed, c.dnsPending, c.hs = unsealed, dnsP, hs
	c.ps = ps
	c.id, c.key, c.proto, c.first, c.last = id, key, proto, now, now
	c.ep[0], c.ep[1] = key.Endpoint(0), key.Endpoint(1)
	c.caller = -1
	c.http.reset()
	dns := proto == pcapio.ProtoTCP && (key.Port(0) == 53 || key.Port(1) == 53)
	for d := range c.half {
		h := &c.half[d]
		h.st, h.cov, h.fr, h.log = halves[d].st, halves[d].cov, halves[d].fr, halves[d].log
		h.units, h.starts = halves[d].units, halves[d].starts
		h.units.reset()
		h.starts.reset()
		h.log.reset()
		h.st.reset()
		h.st.pool = &a.pool
		h.cov.reset()
		h.fr.init(a.cfg.Framing && proto == pcapio.ProtoTCP, dns)
		h.sink = halfSink{a: a, c: c, d: d}
	}
}

// setCaller records that direction d is the caller's.
func (c *conn) setCaller(d int, from callerSource) {
	c.caller, c.callerFrom, c.callerDone = int8(d), from, true
}

// hsAt returns the handshake record of point pt, creating it.
func (c *conn) hsAt(pt Point) *hsPoint {
	for i := range c.hs {
		if c.hs[i].pt == pt {
			return &c.hs[i]
		}
	}
	c.hs = append(c.hs, hsPoint{pt: pt})
	return &c.hs[len(c.hs)-1]
}

// connList is a doubly linked list of connections, most recent at head.
type connList struct {
	head, tail *conn
	n          int
}

func (l *connList) pushFront(c *conn) {
	c.list, c.prev, c.next = l, nil, l.head
	if l.head != nil {
		l.head.prev = c
	} else {
		l.tail = c
	}
	l.head = c
	l.n++
}

func (l *connList) remove(c *conn) {
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		l.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		l.tail = c.prev
	}
	c.prev, c.next, c.list = nil, nil, nil
	l.n--
}

func (l *connList) moveToFront(c *conn) {
	if l.head == c {
		return
	}
	l.remove(c)
	l.pushFront(c)
}
