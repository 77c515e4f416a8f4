package flows

import (
	"slices"
	"unsafe"

	farm "github.com/dgryski/go-farm"

	"github.com/wirepath/wirepath/flows/internal/seqnum"
	"github.com/wirepath/wirepath/proto/dns"
	"github.com/wirepath/wirepath/trace"
)

// deliver cuts the in-order bytes of direction d into messages: a message
// ends when the other direction sends data, when the sender pauses longer
// than SplitPause, and at application message boundaries.
func (a *Assembler) deliver(c *conn, d int, ch *chunk) {
	h := &c.half[d]
	if ch.gap {
		a.st.GapBytes += int64(ch.n)
	} else {
		a.st.StreamBytes += int64(ch.n)
		h.bytes += int64(ch.n)
	}
	off := h.off
	h.off += int64(ch.n)
	if c.pr.det != detDone && a.detect(c, d, ch, off) {
		return
	}
	a.route(c, d, ch, off)
}

// route frames a chunk of half d at stream offset off: by the
// connection's protocol decoder, or by flows' own cutting.
func (a *Assembler) route(c *conn, d int, ch *chunk, off int64) {
	if c.pr.dec != nil {
		a.decode(c, d, ch, off)
		return
	}
	a.cutChunk(c, d, ch)
}

// cutChunk cuts the bytes of a chunk into messages at direction changes,
// pauses and HTTP/1.x and DNS boundaries.
func (a *Assembler) cutChunk(c *conn, d int, ch *chunk) {
	h := &c.half[d]
	if m := c.open; m != nil {
		switch {
		case m.dir != d:
			a.cut(c, EndDirection)
		case !ch.gap && a.cfg.SplitPause > 0 && h.hasData && ch.ts-h.lastData > int64(a.cfg.SplitPause) &&
			!(h.fr.mode != fmNone && h.fr.expectsMore()):
			// A pause inside an application message the framing knows is
			// not the end of it.
			a.cut(c, EndPause)
		}
	}
	n := int(ch.n)
	for off := 0; off < n; {
		if c.open == nil {
			a.openMsg(c, d, ch.seq.Add(seqnum.Size(off)))
		}
		m := c.open
		var part []byte
		if !ch.gap {
			part = sub(ch.data, off, n-off)
		}
		lost := h.fr.lost
		used, boundary, kind := h.fr.feed(part, n-off, d, &c.http)
		if used <= 0 || used > n-off {
			used, boundary = n-off, false
		}
		if kind != httpNone && m.hkind == httpNone && m.protoStart {
			m.hkind = kind
			ev := a.newEv()
			var ok bool
			m.Label, m.Status, ok = a.ev.http(kind, h.fr.evHead, h.fr.evBody, &ev.Evidence)
			a.keepEv(m, ev, ok)
		}
		if h.fr.lost != lost && !h.fr.dns {
			a.httpLoss(c, m)
		}
		a.addBytes(m, ch, off, used)
		off += used
		if boundary {
			a.cut(c, EndProtocol)
		}
	}
	if !ch.gap {
		h.lastData, h.hasData = ch.ts, true
	}
}

// openMsg starts a message of direction d at seq.
func (a *Assembler) openMsg(c *conn, d int, seq seqnum.Value) {
	h := &c.half[d]
	h.fr.resync()
	m := a.newMsg(c, d)
	m.Seq = uint32(seq)
	m.Proto = trace.ProtoTCP
	m.protoStart = h.fr.atStart()
	c.open = m
}

// msgSlabLen is how many messages are allocated at once when the pool is
// empty: as many as fit in 32 KiB, the largest small-object size, so that
// a message costs neither an allocation of its own nor its size class's
// rounding. Messages are never given back to the garbage collector (they
// return to the pool when emitted), so a slab is never kept alive for one
// message alone.
const msgSlabLen = 32 << 10 / int(unsafe.Sizeof(msg{}))

// newMsg takes a message from the pool and attaches it to c, with a
// buffer for its first bytes.
func (a *Assembler) newMsg(c *conn, d int) *msg {
	m := a.newUnitMsg(c, d)
	if n := len(a.prefixes); n > 0 {
		m.prefix = a.prefixes[n-1]
		a.prefixes = a.prefixes[:n-1]
	} else {
		m.prefix = new([MaxFingerprintLen]byte)
	}
	return m
}

// newUnitMsg is newMsg without the buffer of first bytes: the message of
// a decoder's request, response or one-way Unit, whose fingerprint
// hashUnit takes from the chunk's bytes, and which is queued at once.
func (a *Assembler) newUnitMsg(c *conn, d int) *msg {
	var m *msg
	if n := len(a.freeMsgs); n > 0 {
		m = a.freeMsgs[n-1]
		a.freeMsgs = a.freeMsgs[:n-1]
		sightings := m.Sightings[:0]
		*m = msg{}
		m.Sightings = sightings
	} else {
		if len(a.msgSlab) == 0 {
			a.msgSlab = make([]msg, msgSlabLen)
		}
		m = &a.msgSlab[0]
		a.msgSlab = a.msgSlab[1:]
		m.Sightings = m.sight[:0]
	}
	m.c, m.dir = c, d
	m.Conn, m.Index = c.id, c.nextIndex
	c.nextIndex++
	c.half[d].nextOrd++
	m.Ordinal = c.half[d].nextOrd
	m.Src, m.Dst = c.ep[d], c.ep[1-d]
	c.unsealed.push(m)
	a.openMsgs++
	return m
}

// addBytes adds bytes [off, off+k) of ch to m.
func (a *Assembler) addBytes(m *msg, ch *chunk, off, k int) {
	m.Bytes += int64(k)
	if ch.gap {
		m.GapBytes += int64(k)
		m.Gaps++
		m.prefixDone = true
		m.sincePSH += int64(k)
		return
	}
	part := sub(ch.data, off, k)
	if len(part) < k {
		m.TruncBytes += int64(k - len(part))
	}
	if !m.prefixDone {
		take := min(a.cfg.FingerprintLen-m.prefixN, len(part))
		m.prefixN += copy(m.prefix[m.prefixN:], part[:take])
		if m.prefixN >= a.cfg.FingerprintLen || len(part) < k {
			m.prefixDone = true
		}
	}
	m.Segments++
	if ch.psh && off+k == int(ch.n) {
		m.Writes++
		m.sincePSH = 0
	} else {
		m.sincePSH += int64(k)
	}
	if m.Proto == trace.ProtoTCP {
		a.openBytes += int64(k)
	}
	for _, o := range ch.obs {
		s := m.sighting(o)
		if s.Segments == 0 {
			s.FirstBytes = int64(k)
		}
		s.Bytes += int64(k)
		s.Segments++
	}
}

// sighting returns m's sighting at o's point, creating it, and widens its
// times to include o.
func (m *msg) sighting(o segObs) *Sighting {
	for i := range m.Sightings {
		s := &m.Sightings[i]
		if s.Point == o.pt {
			if o.first < s.First {
				s.First = o.first
			}
			if o.last > s.Last {
				s.Last = o.last
			}
			return s
		}
	}
	m.Sightings = append(m.Sightings, Sighting{Point: o.pt, TTL: o.ttl, First: o.first, Last: o.last})
	return &m.Sightings[len(m.Sightings)-1]
}

// late attributes a copy of already-delivered bytes [seq, seq+n) of
// direction d to the messages that hold them and are not yet emitted.
func (a *Assembler) late(c *conn, d int, seq seqnum.Value, n uint32, obs, newObs []segObs) {
	h := &c.half[d]
	lo := h.off - int64(seq.Size(h.st.next))
	hi := lo + int64(n)
	if c.pr.dec != nil {
		h.log.late(lo, hi, newObs)
	}
	if len(c.pr.held) > 0 {
		c.lateHeld(d, lo, hi, newObs)
	}
	msgs := c.unsealed.all()
	if c.pr.dec != nil {
		// Decoded messages end in offset order: those that may hold
		// [lo, hi) ended after lo (the open one takes its sightings from
		// the log when it is cut).
		units := h.units.all()
		i := len(units)
		for i > 0 && units[i-1].uEnd > lo {
			i--
		}
		msgs = units[i:]
	}
	for _, m := range msgs {
		if m.dir != d || m.Bytes == 0 || m == c.open && m.unit {
			continue
		}
		var on int64
		if m.unit {
			on = min(hi, m.uEnd) - max(lo, m.uStart)
		} else {
			_, k := seqnum.Overlap(seq, seqnum.Size(n), seqnum.Value(m.Seq), seqnum.Size(m.Bytes))
			on = int64(k)
		}
		if on <= 0 {
			continue
		}
		for _, o := range newObs {
			s := m.sighting(o)
			if s.Segments == 0 {
				s.FirstBytes = min(on, m.Bytes)
			}
			s.Bytes = min(s.Bytes+on, m.Bytes)
			s.Segments++
			a.st.LateSightings++
		}
		for _, o := range obs {
			if hasPoint(newObs, o.pt) {
				continue
			}
			for i := range m.Sightings {
				if m.Sightings[i].Point == o.pt {
					m.Sightings[i].Repeats++
				}
			}
		}
	}
}

// cut ends c's open message and queues it.
func (a *Assembler) cut(c *conn, reason EndReason) {
	m := c.open
	c.open = nil
	m.End = reason
	h := &c.half[m.dir]
	if m.sincePSH > 0 {
		m.Writes++
	}
	switch {
	case m.protoStart && m.hkind != httpNone:
		m.App = AppHTTP
	case m.protoStart && h.fr.dns:
		m.App = AppDNS
		if m.prefixN > 2 {
			a.dnsLabel(m, m.prefix[2:m.prefixN])
		}
	}
	if reason >= EndFIN && h.fr.expectsMore() {
		m.Incomplete = true
	}
	a.assignKind(c, m)
	a.queueMsg(m)
}

// queueMsg fingerprints a finished message and queues it for emission.
func (a *Assembler) queueMsg(m *msg) {
	if !m.hashed {
		m.Fingerprint = farm.Fingerprint64(m.prefix[:m.prefixN])
		m.FingerprintLen = m.prefixN
	}
	// The first bytes are not needed once the message is cut: only the
	// open messages hold a buffer.
	if m.prefix != nil {
		if len(a.prefixes) < maxPooled {
			a.prefixes = append(a.prefixes, m.prefix)
		}
		m.prefix = nil
	}
	if m.GapBytes > 0 || m.TruncBytes > 0 {
		m.Incomplete = true
	}
	m.cutAt = a.now
	if m.unit {
		h := &m.c.half[m.dir]
		m.endSeq = uint32(m.c.seqAt(m.dir, m.uEnd))
		h.units.push(m)
		h.starts.push(m.uStart, m.Index)
	}
	m.c.pendingMsgs++
	a.queue.Push(m)
}

// inferCaller decides which side of a connection whose handshake was not
// seen is the caller, from its first message: HTTP or DNS content, else
// the ports (a well-known or registered port against an ephemeral one).
func (a *Assembler) inferCaller(c *conn, m *msg) {
	c.callerDone = true
	switch {
	case m.hkind == httpRequest:
		c.setCaller(m.dir, callerHTTP)
	case m.hkind == httpResponse || m.hkind == httpInterim:
		c.setCaller(1-m.dir, callerHTTP)
	case m.App == AppDNS:
		if hd, ok := a.dnsHeaderOf(m); ok {
			if hd.response {
				c.setCaller(1-m.dir, callerDNS)
			} else {
				c.setCaller(m.dir, callerDNS)
			}
		}
	}
	if c.caller >= 0 {
		return
	}
	if s := serverSide(c.key.Port(0), c.key.Port(1)); s >= 0 {
		c.setCaller(1-s, callerPorts)
	}
}

// serverSide says which of two ports is the server's: 0 for pa, 1 for pb,
// -1 when the ports do not tell.
func serverSide(pa, pb uint16) int {
	switch {
	case pa < 1024 && pb >= 1024:
		return 0
	case pb < 1024 && pa >= 1024:
		return 1
	case pa < 32768 && pb >= 32768:
		return 0
	case pb < 32768 && pa >= 32768:
		return 1
	}
	return -1
}

// dnsHeaderOf parses the DNS header at the start of m.
func (a *Assembler) dnsHeaderOf(m *msg) (dnsHeader, bool) {
	if m.Proto == trace.ProtoUDP {
		return m.dns, m.dnsOK
	}
	if m.prefixN < 2 {
		return dnsHeader{}, false
	}
	return parseDNSHeader(m.prefix[2:m.prefixN])
}

// assignKind makes m a CALL, a RETURN or unknown, with a call id.
func (a *Assembler) assignKind(c *conn, m *msg) {
	if !c.callerDone {
		a.inferCaller(c, m)
	}
	switch {
	case m.App == AppHTTP:
		a.assignHTTP(c, m)
	case m.App == AppDNS:
		hd, ok := a.dnsHeaderOf(m)
		if !ok {
			return
		}
		if !hd.response {
			idx := c.nextCall
			c.nextCall++
			if len(c.dnsPending) >= maxDNSPending {
				c.dnsPending = append(c.dnsPending[:0], c.dnsPending[1:]...)
			}
			c.dnsPending = append(c.dnsPending, dnsCall{id: hd.id, idx: idx, dir: int8(m.dir)})
			m.Kind, m.Call = trace.KindCall, CallID{c.id, idx}
			return
		}
		// The latest query with this id from the other side.
		for i := len(c.dnsPending) - 1; i >= 0; i-- {
			q := c.dnsPending[i]
			if q.id == hd.id && int(q.dir) != m.dir {
				c.dnsPending = append(c.dnsPending[:i], c.dnsPending[i+1:]...)
				m.Kind, m.Call = trace.KindReturn, CallID{c.id, q.idx}
				return
			}
		}
		a.orphan(c, m)
	case m.Proto == trace.ProtoUDP:
		a.assignDatagram(c, m)
	case m.Proto != trace.ProtoTCP || c.caller < 0:
	case c.half[m.dir].fr.mode != fmNone && !c.half[m.dir].fr.first:
		// A framed direction, but the message did not begin with headers
		// the framer read: a continuation cut by a direction change or a
		// pause, an interim response, or framing lost. Neither a new call
		// nor a return.
	case int(c.caller) == m.dir:
		idx := c.nextCall
		c.nextCall++
		c.lastCall, c.lastCallOK = idx, true
		m.Kind, m.Call = trace.KindCall, CallID{c.id, idx}
	case c.httpN > 0:
		// An unframed answer to framed requests (the responses are not
		// HTTP): the oldest unanswered request.
		m.Kind, m.Call = trace.KindReturn, CallID{c.id, c.popHTTPCall()}
	case c.lastCallOK:
		c.lastCallOK = false
		m.Kind, m.Call = trace.KindReturn, CallID{c.id, c.lastCall}
	}
}

// assignHTTP makes an HTTP/1.x message a CALL (a request, queued) or the
// RETURN of the oldest unanswered request (a final response).
func (a *Assembler) assignHTTP(c *conn, m *msg) {
	switch m.hkind {
	case httpRequest:
		idx := c.nextCall
		c.nextCall++
		if c.httpN > 0 {
			c.httpPipelined = true
		}
		if c.httpN == len(c.httpCalls) {
			c.httpHead = (c.httpHead + 1) % len(c.httpCalls)
			c.httpN--
		}
		c.httpCalls[(c.httpHead+c.httpN)%len(c.httpCalls)] = idx
		c.httpN++
		c.lastCall, c.lastCallOK = idx, true
		m.Kind, m.Call = trace.KindCall, CallID{c.id, idx}
	case httpResponse:
		if c.httpUnpaired {
			a.st.UnpairedReturns++
			return
		}
		if c.httpN == 0 {
			if c.lastCallOK && int(c.caller) == 1-m.dir {
				// The request direction is not framed (its headers were
				// not captured): answer its latest call.
				c.lastCallOK = false
				m.Kind, m.Call = trace.KindReturn, CallID{c.id, c.lastCall}
				return
			}
			a.orphan(c, m)
			return
		}
		m.Kind, m.Call = trace.KindReturn, CallID{c.id, c.popHTTPCall()}
	}
}

// orphan makes m the RETURN of a call the capture did not see: a response
// with no request waiting (the request was lost, or sent before the
// capture began). Its call id is one no CALL has, so the engines know its
// CALL is missing instead of guessing one (UnpairedReturns).
func (a *Assembler) orphan(c *conn, m *msg) {
	a.st.UnpairedReturns++
	idx := c.nextCall
	c.nextCall++
	m.Kind, m.Call = trace.KindReturn, CallID{c.id, idx}
}

// httpLoss is called when a direction of an HTTP/1.x connection lost its
// framing: a hole the framing could not keep count through, or bytes that
// are not HTTP. The hole may have held the responses of the requests
// waiting, or requests of its own, so pairing the waiting requests with
// the responses that follow would shift every later pair of the
// connection by one. The waiting requests are given up instead (their
// RETURNs count as unseen) and pairing starts afresh with the next
// request: without pipelining a client sends it only once the response
// before it came, so the next response answers it. On a connection seen
// to pipeline, responses to requests sent before the loss may still
// come, so its responses stay unpaired until it ends rather than being
// paired by a guess. A loss inside m, a response whose head was framed,
// leaves m the oldest request's RETURN: the hole came after the head. A
// loss while no other request waits changes nothing: a response that
// follows it answers nothing seen.
func (a *Assembler) httpLoss(c *conn, m *msg) {
	keep := 0
	if m.hkind == httpResponse && c.httpN > 0 {
		keep = 1
	}
	if c.httpN == keep {
		return
	}
	a.st.PairingResyncs++
	a.st.UnansweredAtLoss += int64(c.httpN - keep)
	c.httpN = keep
	c.lastCallOK = false // the latest request was among those given up
	c.http.head, c.http.n = 0, 0
	if c.httpPipelined {
		c.httpUnpaired = true
	}
}

// seal emits m into out: it leaves its connection's unsealed list, feeds
// the connection's figures and returns to the pool.
func (a *Assembler) seal(m *msg, out *Message) {
	c := m.c
	c.unsealed.remove(m)
	if m.unit {
		h := &c.half[m.dir]
		h.units.remove(m)
		h.starts.pop(m.Index)
	}
	c.pendingMsgs--
	a.openMsgs--
	if len(m.Sightings) > 1 {
		sortSightings(m.Sightings)
	}
	a.st.Messages++
	if m.Proto == trace.ProtoTCP {
		a.st.TCPMessages++
		if m.decoded {
			a.st.DecodedMessages++
		} else {
			a.st.TCPMessageBytes += m.CapturedBytes()
			a.openBytes -= m.CapturedBytes()
		}
		c.half[m.dir].cov.trim(a.coverBase(c, m))
	} else {
		a.st.UDPMessages++
	}
	if m.Incomplete {
		a.st.Incomplete++
	}
	switch m.Kind {
	case trace.KindCall:
		a.st.Calls++
	case trace.KindReturn:
		a.st.Returns++
	}
	switch m.App {
	case AppHTTP:
		a.st.HTTPMessages++
	case AppDNS:
		a.st.DNSMessages++
	}
	c.half[m.dir].msgs++
	a.accountMessage(c, m)
	a.accountProto(c, m)

	sightings := append(out.Sightings[:0], m.Sightings...)
	*out = m.Message
	out.Sightings = sightings
	out.Evidence = nil
	if m.ev != nil {
		a.outEv.IDs = append(a.outEv.IDs[:0], m.ev.IDs...)
		a.outEv.Tokens = append(a.outEv.Tokens[:0], m.ev.Tokens...)
		out.Evidence = &a.outEv
		a.freeEv(m.ev)
		m.ev = nil
	}

	m.c = nil
	a.freeMsgs = append(a.freeMsgs, m)
	if c.removed && c.pendingMsgs == 0 && c.unsealed.len() == 0 {
		a.finishConn(c)
	}
}

// sortSightings orders a message's sightings by First, then sniffer.
// A message has a few sightings (one per capture point), usually already
// in order: up to 12 are sorted here by insertion, which is what
// slices.SortFunc does for so few but without its calls through the
// comparison closure and its copies of the 56-byte elements (about 2 %
// of `wirepath messages` on the mix of scripts/bench-commands.sh). An
// insertion sort is stable, as SortFunc is for so few, so the order is
// the same; more fall back to SortFunc.
func sortSightings(s []Sighting) {
	if len(s) > maxInsertionSort {
		slices.SortFunc(s, cmpSighting)
		return
	}
	for i := 1; i < len(s); i++ {
		if !sightingLess(&s[i], &s[i-1]) {
			continue
		}
		x := s[i]
		j := i
		for ; j > 0 && sightingLess(&x, &s[j-1]); j-- {
			s[j] = s[j-1]
		}
		s[j] = x
	}
}

// maxInsertionSort is the most sightings sortSightings sorts by insertion
// (slices.SortFunc's own threshold for insertion sort).
const maxInsertionSort = 12

// sightingLess orders sightings by First, then sniffer.
func sightingLess(x, y *Sighting) bool {
	return x.First < y.First || x.First == y.First && x.Point.Sniffer < y.Point.Sniffer
}

// cmpSighting is sightingLess as a three-way comparison.
func cmpSighting(x, y Sighting) int {
	switch {
	case x.First < y.First:
		return -1
	case x.First > y.First:
		return 1
	}
	return int(x.Point.Sniffer) - int(y.Point.Sniffer)
}

// newEv returns an empty evidence box.
func (a *Assembler) newEv() *evBox {
	if n := len(a.evBoxes); n > 0 {
		ev := a.evBoxes[n-1]
		a.evBoxes = a.evBoxes[:n-1]
		ev.IDs, ev.Tokens = ev.IDs[:0], ev.Tokens[:0]
		return ev
	}
	ev := &evBox{}
	ev.IDs, ev.Tokens = ev.ids[:0], ev.toks[:0]
	return ev
}

// keepEv makes ev m's evidence if it holds any (ok), else returns it to
// the pool.
func (a *Assembler) keepEv(m *msg, ev *evBox, ok bool) {
	if !ok {
		a.freeEv(ev)
		return
	}
	if m.ev != nil {
		a.freeEv(m.ev)
	}
	m.ev = ev
}

// freeEv returns an evidence box to the pool.
func (a *Assembler) freeEv(ev *evBox) {
	if len(a.evBoxes) < maxPooled {
		clear(ev.IDs) // drop the strings
		a.evBoxes = append(a.evBoxes, ev)
	}
}

// popHTTPCall takes the oldest unanswered HTTP request's call index.
func (c *conn) popHTTPCall() uint32 {
	idx := c.httpCalls[c.httpHead]
	c.httpHead = (c.httpHead + 1) % len(c.httpCalls)
	c.httpN--
	if c.lastCallOK && c.lastCall == idx {
		c.lastCallOK = false
	}
	return idx
}

// coverBase returns the sequence number below which direction m.dir of c
// needs no record of which capture point saw which bytes once m is
// emitted: late copies of bytes still in an unsealed message, in the
// decoder's packet log or not yet delivered must still be told from
// retransmissions.
func (a *Assembler) coverBase(c *conn, m *msg) seqnum.Value {
	h := &c.half[m.dir]
	base := seqnum.Value(m.Seq).Add(seqnum.Size(m.Bytes))
	if m.unit {
		base = c.seqAt(m.dir, m.uEnd)
	}
	if h.st.started {
		base = seqnum.Min(base, h.st.next)
	}
	if off, ok := h.log.first(); ok {
		base = seqnum.Min(base, c.seqAt(m.dir, off))
	}
	if off, ok := h.starts.min(); ok {
		base = seqnum.Min(base, c.seqAt(m.dir, off))
	}
	if o := c.open; o != nil && o.unit && o.dir == m.dir {
		base = seqnum.Min(base, c.seqAt(m.dir, o.uStart))
	}
	if c.pr.app.decoded() && !c.pr.rejected {
		return base // all its messages are decoded ones
	}
	for _, o := range c.unsealed.all() {
		if o.dir == m.dir && !o.unit {
			base = seqnum.Min(base, seqnum.Value(o.Seq))
			break
		}
	}
	return base
}

// accountProto counts an emitted message under its protocol: its
// connection's decoded protocol, or for messages flows cut itself the
// protocol whose framing cut it.
func (a *Assembler) accountProto(c *conn, m *msg) {
	row := m.App
	if m.decoded {
		row = c.pr.app
	}
	ps := &a.pst[row]
	ps.Messages++
	ps.MessageBytes += m.Bytes
	if !m.decoded {
		ps.Bytes += m.CapturedBytes()
		ps.GapBytes += m.GapBytes
	}
	if m.data {
		ps.DataMessages++
	}
	switch m.Kind {
	case trace.KindCall:
		ps.Calls++
	case trace.KindReturn:
		ps.Returns++
	}
	if m.Label != "" {
		a.st.Labelled++
	}
	if m.ev != nil {
		a.st.EvidenceMessages++
		a.st.EvidenceIDs += int64(len(m.ev.IDs))
		a.st.EvidenceTokens += int64(len(m.ev.Tokens))
	}
}

// dnsLabel takes a DNS message's label, status (a response's code) and
// evidence (its question's name) from b, its captured start.
func (a *Assembler) dnsLabel(m *msg, b []byte) {
	dm, ok := dns.Parse(b, a.ev.dnsName[:0])
	if !ok {
		return
	}
	a.ev.dnsName = dm.Name[:0]
	m.Label = dns.Label(dm, a.ev.scratch[:0])
	if dm.Response {
		m.Status = int(dm.Rcode)
	}
	a.ev.b.Reset()
	dns.AddEvidence(a.ev.b, dm)
	ev := a.newEv()
	a.keepEv(m, ev, a.ev.fill(&ev.Evidence))
}
