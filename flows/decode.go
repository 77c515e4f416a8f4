package flows

import (
	"math"

	farm "github.com/dgryski/go-farm"

	"github.com/wirepath/wirepath/flows/internal/seqnum"
	"github.com/wirepath/wirepath/proto"
	"github.com/wirepath/wirepath/proto/http2"
	"github.com/wirepath/wirepath/proto/kafka"
	"github.com/wirepath/wirepath/proto/memcache"
	"github.com/wirepath/wirepath/proto/mysql"
	"github.com/wirepath/wirepath/proto/pgwire"
	presp "github.com/wirepath/wirepath/proto/resp"
	ptls "github.com/wirepath/wirepath/proto/tls"
	"github.com/wirepath/wirepath/trace"
)

// detState is where a TCP connection's protocol detection is.
type detState uint8

const (
	detPending detState = iota // no byte delivered yet
	detHolding                 // the server spoke first: its bytes wait for the client's
	detMid                     // seen from its middle: its bytes wait for a message boundary (detectMid)
	detDone                    // decided
)

// Bounds of detection and pairing.
const (
	// maxHeldBytes and maxHeldChunks bound what a server that speaks
	// first may send before the client's first bytes decide the
	// protocol; beyond them the connection is cut at direction changes.
	maxHeldBytes  = 64 << 10
	maxHeldChunks = 64
	// maxPendingKeys bounds the Keys of one connection waiting for their
	// other half (requests for responses, or responses that came first).
	maxPendingKeys = 16384
	// keyRespFirst marks a pending Key whose response came first.
	keyRespFirst = 1 << 32
	// midStreamOffset is where the offsets of a connection seen from its
	// middle begin, so that a decoder knows it did not see the start.
	midStreamOffset = 1 << 40
)

// heldChunk is a chunk held while detecting, with pooled copies of its
// bytes and sightings, and its stream offset.
type heldChunk struct {
	d   int
	off int64
	ch  chunk
}

// connProto is a TCP connection's application protocol: detection, and
// the decoder that frames it (none for connections flows cuts itself).
type connProto struct {
	app      App      // the connection's protocol; AppNone, AppHTTP and AppDNS are cut by flows
	det      detState // detection
	prior    bool     // decided by the port (prior knowledge)
	rejected bool     // the decoder rejected the connection: flows cuts the rest
	dec      proto.Decoder
	client   int // the half of the connection's client
	closed   bool
	// innerApp is the protocol decoded inside a decrypted TLS connection.
	innerApp App
	inner    proto.Decoder
	// lastEnd is, per half, the End of its latest Unit: for decoders
	// without a Low method, no later Unit starts before it.
	lastEnd [2]int64
	// pend maps a Key to its call index (with keyRespFirst when the
	// response came first).
	pend pendTable
	held []heldChunk
	// first holds the client's first bytes while they do not decide,
	// greeting the server's when it spoke first and may be greeting
	// (greets).
	first, greeting []byte
	greets          bool
	// mid is the search of a connection seen from its middle.
	mid midState
}

// reset prepares p for a new connection, keeping its memory.
func (p *connProto) reset() {
	pend, held, first, greeting := p.pend, p.held[:0], p.first[:0], p.greeting[:0]
	pend.clear()
	*p = connProto{pend: pend, held: held, first: first, greeting: greeting}
}

// halfOf returns the half of the connection that sends dir's bytes.
func (p *connProto) halfOf(dir proto.Dir) int {
	if dir == proto.FromClient {
		return p.client
	}
	return 1 - p.client
}

// dirOf returns the proto direction of half d.
func (p *connProto) dirOf(d int) proto.Dir {
	if d == p.client {
		return proto.FromClient
	}
	return proto.FromServer
}

// detect decides a TCP connection's protocol at its first bytes: by
// port (Config.Ports), by a server's greeting (MySQL), or by the client's
// first bytes (sniffClient). Until those decide, the connection's chunks
// are held (bounded: past maxHeldBytes or maxHeldChunks, a gap or the
// end, it is decided with what came). It reports whether ch was held.
func (a *Assembler) detect(c *conn, d int, ch *chunk, off int64) bool {
	pr := &c.pr
	if pr.det == detPending && !a.detectStart(c, d) {
		return false
	}
	if pr.det == detMid {
		return a.detectMid(c, d, ch, off)
	}
	if d != int(c.caller) && pr.greets && len(pr.first) == 0 && !ch.gap {
		// A server that speaks first: a MySQL greeting?
		k := min(8-len(pr.greeting), len(ch.data))
		pr.greeting = append(pr.greeting, ch.data[:k]...)
		switch mysqlGreeting(pr.greeting) {
		case vYes:
			a.decideHeld(c, AppMySQL)
			return false
		case vNo:
			pr.greets = false
		}
	}
	if d == int(c.caller) {
		if ch.gap || len(ch.data) == 0 {
			a.decideHeld(c, AppNone)
			return false
		}
		k := min(sniffLen-len(pr.first), len(ch.data))
		pr.first = append(pr.first, ch.data[:k]...)
		if app, final := sniffClient(pr.first); final || len(ch.data) < int(ch.n) {
			a.decideHeld(c, app)
			return false
		}
	}
	if len(pr.held) < maxHeldChunks && heldBytes(pr.held)+int64(ch.n) <= maxHeldBytes {
		a.hold(c, d, ch, off)
		return true
	}
	app, _ := sniffClient(pr.first)
	a.decideHeld(c, app)
	return false
}

// detectStart starts the detection of c's protocol at its first chunk,
// of half d: decided at once by port (or, without framing, a caller or a
// start, as none), or held while detecting (detHolding), or, seen from
// its middle, while searching for a message boundary (detMid). It
// reports whether detection goes on.
func (a *Assembler) detectStart(c *conn, d int) bool {
	pr := &c.pr
	mid := a.cfg.Framing && c.midStream
	if app, ok := a.portApp(c); ok && !(mid && midResumable(app)) {
		a.decide(c, app, true)
		return false
	}
	switch {
	case mid:
		pr.det = detMid
	case !a.cfg.Framing || c.midStream || c.caller < 0:
		a.decide(c, AppNone, false)
		return false
	default:
		pr.det = detHolding
		pr.greets = d != int(c.caller)
	}
	return true
}

// decideHeld decides c's protocol and frames the chunks held until then.
func (a *Assembler) decideHeld(c *conn, app App) {
	a.decide(c, app, false)
	a.releaseHeld(c)
}

// heldBytes sums the stream bytes of held chunks.
func heldBytes(h []heldChunk) int64 {
	var n int64
	for i := range h {
		n += int64(h[i].ch.n)
	}
	return n
}

// portApp returns the protocol Config.Ports names for c, if any: the
// server's port's, or when the caller is unknown either port's (whose
// side is then taken for the server).
func (a *Assembler) portApp(c *conn) (App, bool) {
	if len(a.cfg.Ports) == 0 {
		return 0, false
	}
	if c.caller >= 0 {
		app, ok := a.cfg.Ports[c.ep[1-c.caller].Port()]
		return app, ok
	}
	for s := range 2 {
		if app, ok := a.cfg.Ports[c.ep[s].Port()]; ok {
			c.setCaller(1-s, callerPorts)
			return app, true
		}
	}
	return 0, false
}

// decide sets c's protocol: a decoder for the decoded ones (when the
// client side is known), flows' own framing otherwise.
func (a *Assembler) decide(c *conn, app App, prior bool) {
	pr := &c.pr
	pr.det, pr.prior = detDone, prior
	if app.decoded() && (c.caller < 0 || app == AppTLS && c.midStream) {
		app = AppNone
	}
	pr.app = app
	switch {
	case app == AppNone && prior:
		for d := range c.half {
			c.half[d].fr.init(false, false)
		}
		return
	case app == AppDNS:
		for d := range c.half {
			c.half[d].fr.init(true, true)
		}
		return
	case !app.decoded():
		return
	}
	pr.client = int(c.caller)
	pr.lastEnd = [2]int64{math.MinInt64, math.MinInt64}
	for d := range c.half {
		c.half[d].fr.init(false, false)
	}
	pr.dec = a.newDecoder(c, app, prior)
	ps := &a.pst[app]
	ps.Conns++
	ps.Open++
}

// newDecoder returns a decoder of app for c, reusing a pooled one where
// the decoder can be reset.
func (a *Assembler) newDecoder(c *conn, app App, prior bool) proto.Decoder {
	if fl := a.decPool[app]; len(fl) > 0 {
		d := fl[len(fl)-1]
		a.decPool[app] = fl[:len(fl)-1]
		d.(interface{ Reset() }).Reset()
		return d
	}
	ev, noEv := a.cfg.decoderEvidence(), !a.cfg.Evidence
	switch app {
	case AppH2:
		return a.newH2(prior)
	case AppTLS:
		pr := &c.pr
		return ptls.New(ptls.Config{KeyLog: a.cfg.KeyLog, NewInner: func(alpn string) ptls.Inner {
			if alpn == "h2" {
				pr.innerApp, pr.inner = AppH2, a.newH2(true)
			} else {
				pr.innerApp, pr.inner = AppHTTP, newHTTP1Dec(a.ev)
			}
			return pr.inner
		}})
	case AppPostgres:
		return pgwire.NewDecoder(pgwire.Config{NoEvidence: noEv, Evidence: ev})
	case AppMySQL:
		return mysql.NewDecoder(mysql.Config{NoEvidence: noEv, Evidence: ev})
	case AppRedis:
		return presp.NewDecoder(presp.Config{NoEvidence: noEv, Evidence: ev})
	case AppMemcache:
		return memcache.NewDecoder(memcache.Config{NoEvidence: noEv, Evidence: ev})
	default:
		return kafka.NewDecoder(kafka.Config{NoEvidence: noEv, Evidence: ev})
	}
}

// newH2 returns an HTTP/2 decoder: detecting the preface, or decoding
// from the first byte (prior knowledge: a port, or ALPN h2).
func (a *Assembler) newH2(prior bool) *http2.Decoder {
	cfg := http2.DefaultConfig()
	cfg.Evidence = a.cfg.Evidence
	cfg.MaxTokens = max(a.cfg.MaxTokens, 1)
	if prior {
		cfg.Mode = http2.PriorKnowledge
	}
	return http2.New(cfg)
}

// hold keeps a copy of a chunk of a server that spoke first.
func (a *Assembler) hold(c *conn, d int, ch *chunk, off int64) {
	h := heldChunk{d: d, off: off, ch: *ch}
	h.ch.data = a.pool.copyBytes(ch.data)
	h.ch.obs = a.pool.copyObs(ch.obs)
	c.pr.held = append(c.pr.held, h)
	if !ch.gap {
		a.st.HeldBytes += int64(ch.n)
	}
}

// releaseHeld frames the chunks held while detecting, now that the
// protocol is decided.
func (a *Assembler) releaseHeld(c *conn) {
	pr := &c.pr
	for i := range pr.held {
		h := &pr.held[i]
		if !h.ch.gap {
			a.st.HeldBytes -= int64(h.ch.n)
		}
		a.route(c, h.d, &h.ch, h.off)
		a.pool.freeBytes(h.ch.data)
		a.pool.freeObs(h.ch.obs)
		*h = heldChunk{}
	}
	pr.held = pr.held[:0]
}

// lateHeld adds the sightings of points seeing held bytes for the first
// time.
func (c *conn) lateHeld(d int, lo, hi int64, newObs []segObs) {
	for i := range c.pr.held {
		h := &c.pr.held[i]
		if h.d != d || h.off >= hi || h.off+int64(h.ch.n) <= lo {
			continue
		}
		for _, o := range newObs {
			if !hasPoint(h.ch.obs, o.pt) {
				h.ch.obs = append(h.ch.obs, o)
			}
		}
	}
}

// decode hands a chunk of half d, at stream offset off, to c's decoder
// and turns the Units it completes into messages.
func (a *Assembler) decode(c *conn, d int, ch *chunk, off int64) {
	pr := &c.pr
	h := &c.half[d]
	ps := &a.pst[pr.app]
	h.log.add(off, ch)
	dir := pr.dirOf(d)
	n := int64(ch.n)
	if ch.gap {
		pr.dec.Gap(dir, off, n)
		ps.GapBytes += n
		a.st.DecodedGapBytes += n
	} else {
		data := ch.data[:min(int64(len(ch.data)), n)]
		if len(data) > 0 {
			pr.dec.Feed(dir, off, data)
		}
		if k := int64(len(data)); k < n {
			pr.dec.Gap(dir, off+k, n-k)
			ps.TruncBytes += n - k
		}
		ps.Bytes += int64(len(data))
		a.st.DecodedBytes += n
		a.cur = curChunk{c: c, d: d, off: off, data: data}
	}
	a.drainUnits(c, false)
	a.cur = curChunk{}
	if a.rejected(c) {
		return
	}
	a.trimLogs(c)
}

// drainUnits turns the Units the decoder completed into messages.
func (a *Assembler) drainUnits(c *conn, closing bool) {
	pr := &c.pr
	if h2, ok := pr.dec.(*http2.Decoder); ok && !a.unitBusy {
		// HTTP/2's Units are read in place (NextUnit), without their
		// copies: a.unit feeds no decoder.
		a.unitBusy = true
		for u := h2.NextUnit(); u != nil; u = h2.NextUnit() {
			a.unit(c, u, closing)
		}
		a.unitBusy = false
		return
	}
	u := &a.unitScratch
	if a.unitBusy {
		u = new(proto.Unit) // a drain under way (never seen): a Unit of its own
	} else {
		a.unitBusy = true
		defer func() { a.unitBusy = false }()
	}
	for pr.dec.Next(u) {
		a.unit(c, u, closing)
	}
}

// rejected reports whether c's decoder decided the connection is not its
// protocol after all; the connection is then cut at direction changes
// from here on, and the decoder's bytes so far stay unframed.
func (a *Assembler) rejected(c *conn) bool {
	pr := &c.pr
	switch d := pr.dec.(type) {
	case *http2.Decoder:
		if d.State() != http2.NotHTTP2 {
			return false
		}
	case *ptls.Decoder:
		if d.State() != ptls.NotTLS {
			return false
		}
	default:
		return false
	}
	a.pst[pr.app].Rejected++
	a.st.DetectRejected++
	pr.rejected = true
	a.closeDecoder(c, EndProtocol)
	for d := range c.half {
		c.half[d].fr.init(false, false)
	}
	return true
}

// minTrim is how many records a direction's log holds before it is
// trimmed (asking an HTTP/2 decoder where its oldest open stream starts
// walks its streams).
const minTrim = 32

// trimLogs forgets the packet records no Unit can need any more.
func (a *Assembler) trimLogs(c *conn) {
	pr := &c.pr
	for d := range c.half {
		if c.half[d].log.len() < minTrim {
			continue
		}
		low := pr.lastEnd[d]
		if l, ok := pr.dec.(interface{ Low(proto.Dir) int64 }); ok {
			low = l.Low(pr.dirOf(d))
		}
		if m := c.open; m != nil && m.dir == d {
			low = min(low, m.uStart)
		}
		c.half[d].log.trim(low)
	}
}

// closeDecoder ends c's decoder: the Units it still had are made
// messages (incomplete, ended by reason), its counters are added to its
// protocol's, and it is recycled.
func (a *Assembler) closeDecoder(c *conn, reason EndReason) {
	pr := &c.pr
	if pr.dec == nil || pr.closed {
		return
	}
	pr.closed = true
	pr.dec.Close()
	a.closingReason = reason
	a.drainUnits(c, true)
	if c.open != nil {
		a.cutData(c, reason)
	}
	ps := &a.pst[pr.app]
	ps.Open--
	pr.pend.each(func(v uint64) {
		if v&keyRespFirst != 0 {
			ps.Unpaired++ // a response whose request never ended
		} else {
			ps.Unanswered++
		}
	})
	pr.pend.clear()
	if s, ok := pr.dec.(interface{ Summary() proto.Summary }); ok {
		ps.addSummary(s.Summary())
	}
	switch d := pr.dec.(type) {
	case *http2.Decoder:
		a.h2Counts(ps, d)
	case *ptls.Decoder:
		a.tlsCounts(ps, d, pr.inner)
	default:
		if _, ok := d.(interface{ Reset() }); ok && len(a.decPool[pr.app]) < 64 {
			a.decPool[pr.app] = append(a.decPool[pr.app], d)
		}
	}
	for d := range c.half {
		h := &c.half[d]
		a.st.LogRecordsDropped += h.log.dropped
		a.st.LogObsDropped += h.log.obsDropped
		h.log.reset()
	}
	pr.dec, pr.inner = nil, nil
}

// h2Counts adds an HTTP/2 decoder's own figures.
func (a *Assembler) h2Counts(ps *ProtoStats, d *http2.Decoder) {
	st := d.Stats()
	ps.Streams += st.Streams
	ps.Resets += st.Resets
	ps.GoAways += st.GoAways
	ps.Stalls += st.ConnStalls + st.StreamStalls
	ps.HPACKPoisoned += st.HPACKPoisoned
	ps.StreamsLost += st.StreamsLost + st.StreamsEvicted
}

// tlsCounts adds a TLS decoder's outcome, and its inner decoder's.
func (a *Assembler) tlsCounts(ps *ProtoStats, d *ptls.Decoder, inner proto.Decoder) {
	info := d.Info()
	if info.SNI != "" {
		ps.WithSNI++
	}
	switch info.Decrypt {
	case ptls.Decrypting:
		ps.Decrypted++
	case ptls.NoKeyLog:
		ps.NoKeyLog++
	case ptls.NoSecrets:
		ps.NoSecrets++
	case ptls.BadSecrets:
		ps.BadSecrets++
	case ptls.Unsupported:
		ps.Unsupported++
	case ptls.LostSync:
		ps.LostSync++
	}
	switch in := inner.(type) {
	case *http2.Decoder:
		ps.InnerH2++
		a.h2Counts(ps, in)
	case *http1Dec:
		ps.InnerHTTP++
	}
}

// unit turns one Unit of c's decoder into a message, or counts it.
func (a *Assembler) unit(c *conn, u *proto.Unit, closing bool) {
	pr := &c.pr
	ps := &a.pst[pr.app]
	d := pr.halfOf(u.Dir)
	pr.lastEnd[d] = max(pr.lastEnd[d], u.End)
	if u.Bytes <= 0 {
		u.Bytes = u.End - u.Start
	}
	switch u.Kind {
	case proto.KindControl:
		ps.ControlUnits++
		ps.ControlBytes += u.Bytes
		a.st.ControlUnits++
		a.st.ControlBytes += u.Bytes
		return
	case proto.KindData:
		ps.DataUnits++
		ps.DataBytes += u.Bytes
		a.dataUnit(c, d, u)
		return
	case proto.KindRequest:
		ps.Requests++
	case proto.KindResponse:
		ps.Responses++
	default:
		ps.OneWay++
	}
	if m := c.open; m != nil && m.dir != d {
		a.cutData(c, EndDirection)
	}
	m := a.newUnitMsg(c, d)
	m.Proto, m.App, m.decoded, m.unit = trace.ProtoTCP, pr.app, true, true
	if pr.app == AppTLS {
		m.App = pr.innerApp
	}
	m.uStart, m.uEnd = u.Start, u.End
	m.Bytes = u.Bytes
	m.Seq = uint32(c.seqAt(d, u.Start))
	m.Label, m.Status = u.Label, u.Status
	if u.Evidence != nil && a.cfg.Evidence {
		ev := a.newEv()
		a.keepEv(m, ev, copyEvidence(&ev.Evidence, u.Evidence, &a.cfg))
	}
	m.Stream = streamOf(m.App, u.Key)
	m.End = EndProtocol
	if closing {
		m.End, m.Incomplete = a.closingReason, true
	}
	a.fillUnit(c, m)
	if u.Bytes < u.End-u.Start {
		// Other Units' bytes interleave with this one's: the gaps
		// between its first and last byte need not be its own, the
		// decoder says what it lost.
		m.GapBytes = min(u.Lost, m.Bytes)
		m.Gaps = 0
		if m.GapBytes > 0 {
			m.Gaps = 1
		}
		m.TruncBytes = min(m.TruncBytes, m.Bytes-m.GapBytes)
	}
	if u.Incomplete || u.Lost > 0 {
		m.Incomplete = true
	}
	a.hashUnit(c, m, u)
	a.pair(c, m, u)
	a.queueMsg(m)
}

// hashUnit takes the fingerprint of a Unit's message, which is queued at
// once, from the first bytes of the chunk being decoded when it holds
// them (of nothing otherwise): what queueMsg takes of the bytes
// fingerprint would copy, without their copy.
func (a *Assembler) hashUnit(c *conn, m *msg, u *proto.Unit) {
	var b []byte
	// rel is the Unit's first byte in the chunk; one unsigned test tells
	// both that it is not before the chunk and not past it.
	if cur := &a.cur; cur.c == c && cur.d == m.dir {
		if rel := uint64(u.Start - cur.off); rel < uint64(len(cur.data)) {
			b = cur.data[rel:]
			b = b[:min(uint64(len(b)), uint64(u.End-u.Start), uint64(a.cfg.FingerprintLen))]
		}
	}
	m.Fingerprint, m.FingerprintLen, m.hashed = farm.Fingerprint64(b), len(b), true
}

// curChunk is the chunk being decoded, whose bytes the messages it
// completes may start in.
type curChunk struct {
	c    *conn
	d    int
	off  int64
	data []byte
}

// fingerprint takes the first bytes of a Unit's message for its
// fingerprint when the chunk being decoded holds them.
func (a *Assembler) fingerprint(c *conn, m *msg, u *proto.Unit) {
	cur := &a.cur
	if cur.c != c || cur.d != m.dir || u.Start < cur.off || u.Start >= cur.off+int64(len(cur.data)) {
		return
	}
	b := cur.data[u.Start-cur.off:]
	b = b[:min(int64(len(b)), u.End-u.Start, int64(a.cfg.FingerprintLen))]
	m.prefixN = copy(m.prefix[:], b)
}

// streamOf returns a Unit's multiplexing key as Message.Stream: the
// HTTP/2 stream id, the Kafka correlation id; 0 for serial protocols.
func streamOf(app App, key uint64) uint64 {
	switch app {
	case AppH2:
		return key
	case AppKafka:
		return key & math.MaxUint32
	}
	return 0
}

// fillUnit times a decoded message by the packets of its bytes [uStart,
// uEnd) and takes their gaps, truncation, segments and writes.
func (a *Assembler) fillUnit(c *conn, m *msg) {
	var sp span
	c.half[m.dir].log.fill(m, m.uStart, m.uEnd, m.Bytes, &sp)
	if sp.clamped {
		a.st.UnitsClamped++
		a.pst[c.pr.app].UnitsClamped++
	}
	m.Segments = sp.segments
	m.Writes = max(sp.writes, min(sp.segments, 1))
	m.GapBytes = min(sp.gapBytes, m.Bytes)
	if sp.gapBytes > 0 {
		m.Gaps = 1
	}
	m.TruncBytes = min(sp.trunc, m.Bytes-m.GapBytes)
}

// pair makes a request a CALL and its response, whatever came first, the
// RETURN of the same call, by the Units' Key.
func (a *Assembler) pair(c *conn, m *msg, u *proto.Unit) {
	pr := &c.pr
	switch u.Kind {
	case proto.KindRequest:
		idx, ok := pr.takeKey(u.Key, true)
		if !ok {
			idx = c.nextCall
			c.nextCall++
			if u.Key != 0 {
				a.putKey(c, u.Key, uint64(idx))
			}
		}
		m.Kind, m.Call = trace.KindCall, CallID{c.id, idx}
	case proto.KindResponse:
		if u.Key == 0 {
			// The decoder could not pair it: the RETURN of a call the
			// capture did not see (as flows' own framing does).
			a.pst[pr.app].Unpaired++
			a.orphan(c, m)
			return
		}
		idx, ok := pr.takeKey(u.Key, false)
		if !ok {
			// The response ended before its request (an HTTP/2 server
			// answering before the client's END_STREAM): the request
			// takes this call when it ends.
			idx = c.nextCall
			c.nextCall++
			a.putKey(c, u.Key, uint64(idx)|keyRespFirst)
		}
		m.Kind, m.Call = trace.KindReturn, CallID{c.id, idx}
	}
}

// takeKey takes the call index waiting under key: for a request, one a
// response reserved; for a response, its request's.
func (p *connProto) takeKey(key uint64, request bool) (uint32, bool) {
	if key == 0 {
		return 0, false
	}
	i := p.pend.slot(key)
	if i < 0 {
		return 0, false
	}
	v := p.pend.slots[i].val
	if (v&keyRespFirst != 0) != request {
		return 0, false
	}
	p.pend.delAt(i)
	return uint32(v), true
}

// putKey records a call index waiting under key.
func (a *Assembler) putKey(c *conn, key, v uint64) {
	pr := &c.pr
	if pr.pend.len() >= maxPendingKeys {
		a.st.PairingDropped += int64(pr.pend.len())
		pr.pend.clear()
	}
	pr.pend.put(key, v)
}

// dataUnit adds a KindData Unit (an undecrypted TLS record) to the opaque
// message of its direction, which other data cut at direction changes
// and pauses, never inside a record.
func (a *Assembler) dataUnit(c *conn, d int, u *proto.Unit) {
	m := c.open
	if m != nil && m.dir != d {
		a.cutData(c, EndDirection)
		m = nil
	}
	log := &c.half[d].log
	if m != nil && a.cfg.SplitPause > 0 {
		if t, ok := log.timeAt(u.Start); ok && t-m.lastTS > int64(a.cfg.SplitPause) {
			a.cutData(c, EndPause)
			m = nil
		}
	}
	if m == nil {
		m = a.newMsg(c, d)
		m.Proto, m.App, m.decoded, m.unit = trace.ProtoTCP, c.pr.app, true, true
		m.uStart = u.Start
		m.Seq = uint32(c.seqAt(d, u.Start))
		m.Label = u.Label
		m.data = true
		a.fingerprint(c, m, u)
		c.open = m
	}
	m.uEnd = u.End
	m.Bytes += u.Bytes
	if t, ok := log.timeAt(u.End - 1); ok {
		m.lastTS = t
	}
}

// cutData ends c's open opaque message of data Units.
func (a *Assembler) cutData(c *conn, reason EndReason) {
	m := c.open
	c.open = nil
	m.End = reason
	a.fillUnit(c, m)
	a.assignKind(c, m)
	a.queueMsg(m)
}

// seqAt returns the TCP sequence number of stream offset off of half d.
func (c *conn) seqAt(d int, off int64) seqnum.Value {
	h := &c.half[d]
	return h.st.next - seqnum.Value(uint32(h.off-off))
}
