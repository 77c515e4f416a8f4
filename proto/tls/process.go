package tls

import (
	"sort"
	"strings"

	"github.com/wirepath/wirepath/proto"
)

// Control Unit labels.
var ctLabels = [...]string{
	ctChangeCipherSpec: "tls change_cipher_spec",
	ctAlert:            "tls alert",
	ctHandshake:        "tls handshake",
	ctApplicationData:  "tls application_data",
	ctHeartbeat:        "tls heartbeat",
}

// recordDone handles the record whose last byte was just read.
func (d *Decoder) recordDone(s *dirState, payload []byte) {
	s.inRec = false
	rh := s.rh
	start, end := s.rstart, s.rstart+recHeaderLen+int64(rh.length)
	d.stats.Records[rh.typ-ctChangeCipherSpec]++
	if s.dir == proto.FromServer && d.recVersion == 0 {
		d.recVersion = rh.version
	}
	d.flushAlert(s, false)
	if s.damaged {
		d.stats.Damaged += s.fed
		d.stats.RecordsLost++
		d.lostRecord(s, start, end)
		return
	}
	d.stats.Framed += s.fed
	if s.cur != nil && (s.encrypted || rh.typ == ctApplicationData) && rh.typ != ctChangeCipherSpec {
		if d.decrypted(s, payload, start, end) {
			return
		}
	}
	switch rh.typ {
	case ctApplicationData:
		d.opaque(s, start, end)
	case ctHandshake:
		if !s.encrypted {
			s.hs.feed(payload, func(typ byte, body []byte) { d.handshake(s, typ, body) })
		}
		d.control(s, start, end, ctHandshake)
	case ctChangeCipherSpec:
		d.changeCipherSpec(s)
		d.control(s, start, end, ctChangeCipherSpec)
	default:
		d.control(s, start, end, rh.typ)
	}
}

// control reports a record, or a decrypted record, as a control Unit.
func (d *Decoder) control(s *dirState, start, end int64, typ byte) {
	d.emit(proto.Unit{Dir: s.dir, Kind: proto.KindControl, Start: start, End: end, Bytes: end - start,
		Label: ctLabels[typ]})
}

// data reports an application-data record as a KindData Unit.
func (d *Decoder) data(s *dirState, start, end int64) {
	d.emit(proto.Unit{Dir: s.dir, Kind: proto.KindData, Start: start, End: end, Bytes: end - start,
		Label: d.connLabel()})
}

// connLabel returns "tls sni=NAME alpn=PROTO", made once the hellos are
// known. The protocol is the server's choice where it can be read (the
// TLS 1.2 ServerHello, TLS 1.3's EncryptedExtensions once decrypted),
// else the client's offer ("h2,http/1.1").
func (d *Decoder) connLabel() string {
	if d.label != "" {
		return d.label
	}
	l := "tls"
	if d.info.SNI != "" {
		l += " sni=" + d.info.SNI
	}
	switch {
	case d.info.ALPN != "":
		l += " alpn=" + d.info.ALPN
	case d.client != nil && len(d.client.alpn) > 0:
		l += " alpn=" + strings.Join(d.client.alpn, ",")
	}
	if d.server != nil {
		d.label = l
	}
	return l
}

// opaque reports an application-data record that is not decrypted. In
// TLS 1.3 some are the handshake's: the server's before the client's
// first encrypted record, and that record (the client's Finished); a
// 19-byte record is held back, as it is an encrypted alert if nothing
// follows it.
func (d *Decoder) opaque(s *dirState, start, end int64) {
	if d.info.Version != 0x0304 || d.server == nil {
		d.data(s, start, end)
		return
	}
	c := &d.dirs[proto.FromClient]
	switch {
	case s.dir == proto.FromServer && !c.sentEncrypted:
		d.control(s, start, end, ctHandshake)
	case s.dir == proto.FromClient && !s.sentEncrypted:
		s.sentEncrypted = true
		d.control(s, start, end, ctHandshake)
	case end-start == recHeaderLen+2+1+16:
		s.pendAlert = proto.Unit{Dir: s.dir, Kind: proto.KindControl, Start: start, End: end, Bytes: end - start}
		s.havePend = true
	default:
		d.data(s, start, end)
	}
}

// flushAlert reports a held-back 19-byte record: as data when another
// record followed it, as an alert at the end of the connection.
func (d *Decoder) flushAlert(s *dirState, atEnd bool) {
	if !s.havePend {
		return
	}
	s.havePend = false
	u := s.pendAlert
	if atEnd {
		u.Label = ctLabels[ctAlert]
		d.emit(u)
		return
	}
	d.data(s, u.Start, u.End)
}

// changeCipherSpec switches on a TLS 1.2 direction's pending keys.
func (d *Decoder) changeCipherSpec(s *dirState) {
	if d.info.Version == 0x0304 {
		return // a compatibility record only
	}
	s.encrypted = true
	if s.pend != nil {
		s.cur, s.pend, s.seq = s.pend, nil, 0
	}
}

// handshake acts on one handshake message.
func (d *Decoder) handshake(s *dirState, typ byte, body []byte) {
	switch {
	case typ == hsClientHello && s.dir == proto.FromClient:
		d.stats.ClientHellos++
		if d.server != nil {
			d.renegotiation()
			return
		}
		if h, ok := parseClientHello(body); ok {
			d.client = h
			d.info.SNI = h.sni
		} else {
			d.stats.MalformedHellos++
		}
	case typ == hsServerHello && s.dir == proto.FromServer:
		d.stats.ServerHellos++
		h, ok := parseServerHello(body)
		if !ok {
			d.stats.MalformedHellos++
			return
		}
		if h.random == helloRetryRandom {
			d.stats.HelloRetries++
			return
		}
		if d.server != nil {
			d.renegotiation()
			return
		}
		d.serverHello(h)
	case typ == hsEncryptedExts && s.dir == proto.FromServer:
		if h, ok := parseEncryptedExtensions(body); ok && len(h.alpn) > 0 {
			d.info.ALPN = h.alpn[0]
			d.label = ""
		}
	case typ == hsHelloRequest && s.dir == proto.FromServer && d.info.Version != 0x0304:
		d.renegotiation()
	case typ == hsFinished && d.info.Version == 0x0304 && !s.appKeys:
		s.switchNext = true
	case typ == hsKeyUpdate && d.info.Version == 0x0304 && s.appKeys:
		d.stats.KeyUpdates++
		s.switchNext = true
	case typ == hsNewSessionTicket:
		d.stats.SessionTickets++
	}
}

// renegotiation gives up decrypting: the keys change in ways the key log
// does not say.
func (d *Decoder) renegotiation() {
	d.stats.Renegotiations++
	if d.info.Decrypt == Decrypting {
		d.fallback(Unsupported)
	}
}

// serverHello learns the connection's version, suite and protocol, and
// sets up decryption if the key log has its secrets.
func (d *Decoder) serverHello(h *hello) {
	d.server = h
	d.info.Version, d.info.CipherSuite = h.version, h.suite
	if len(h.alpn) > 0 {
		d.info.ALPN = h.alpn[0]
	}
	switch {
	case h.version == 0x0304:
		d.stats.TLS13++
	case h.version == 0x0303:
		d.stats.TLS12++
	default:
		d.stats.OtherVersions++
	}
	if d.client != nil && len(h.session) > 0 && string(h.session) == string(d.client.session) && h.version != 0x0304 {
		d.info.Resumed = true
	}
	if d.cfg.KeyLog == nil {
		d.stats.NoKeyLog++
		return
	}
	if d.client == nil {
		d.fallback(NoSecrets) // the ClientHello, and so the random, was lost
		return
	}
	d.suite = suites[h.suite]
	if d.suite == nil || d.suite.tls13 != (h.version == 0x0304) || h.version < 0x0303 {
		d.fallback(Unsupported)
		return
	}
	sec := d.cfg.KeyLog.Lookup(d.client.random)
	if d.suite.tls13 {
		d.setup13(sec)
	} else {
		d.setup12(sec)
	}
}

// setup13 installs TLS 1.3's handshake keys and the application keys
// that follow them.
func (d *Decoder) setup13(sec *Secrets) {
	if sec == nil || sec.ClientHandshake == nil || sec.ServerHandshake == nil || sec.ClientTraffic == nil || sec.ServerTraffic == nil {
		d.fallback(NoSecrets)
		return
	}
	hs := [2][]byte{sec.ClientHandshake, sec.ServerHandshake}
	app := [2][]byte{sec.ClientTraffic, sec.ServerTraffic}
	for i := range d.dirs {
		s := &d.dirs[i]
		var err, err2 error
		s.cur, err = keys13(d.suite, hs[i])
		s.nxt, err2 = keys13(d.suite, app[i])
		if err != nil || err2 != nil {
			d.fallback(BadSecrets)
			return
		}
		s.secret = app[i]
		s.encrypted = true
		s.seq = 0
	}
	d.startDecrypting()
}

// setup12 makes TLS 1.2's keys, switched on by each direction's
// ChangeCipherSpec.
func (d *Decoder) setup12(sec *Secrets) {
	if sec == nil || sec.Master == nil {
		d.fallback(NoSecrets)
		return
	}
	c, s, err := keys12(d.suite, sec.Master, d.client.random, d.server.random)
	if err != nil {
		d.fallback(BadSecrets)
		return
	}
	d.dirs[proto.FromClient].pend, d.dirs[proto.FromServer].pend = c, s
	d.startDecrypting()
}

func (d *Decoder) startDecrypting() {
	d.info.Decrypt = Decrypting
	d.stats.DecryptedConns++
}

// makeInner makes the inner decoder at the first application data, when
// ALPN is known in TLS 1.3 too.
func (d *Decoder) makeInner() {
	d.innerMade = true
	if d.cfg.NewInner != nil {
		d.inner = d.cfg.NewInner(d.info.ALPN)
		d.innerLow, _ = d.inner.(lowInner)
	}
}

// fallback gives up decrypting the connection: its records are reported
// as records from now on.
func (d *Decoder) fallback(why Decrypt) {
	if d.info.Decrypt == Decrypting {
		d.stats.Fallbacks++
	}
	d.info.Decrypt = why
	d.stats.Undecrypted[why]++
	for i := range d.dirs {
		s := &d.dirs[i]
		s.cur, s.nxt, s.pend = nil, nil, nil
	}
}

// toInner hands one record's plaintext to the inner decoder, or reports
// the record as data if there is none.
func (d *Decoder) toInner(s *dirState, plain []byte, start, end int64) {
	d.stats.PlainBytes += int64(len(plain))
	if !d.innerMade {
		d.makeInner()
	}
	if d.inner == nil {
		d.data(s, start, end)
		return
	}
	if len(plain) == 0 {
		return
	}
	d.remember(s, start, end)
	d.inner.Feed(s.dir, s.innerOff, plain)
	s.innerOff += int64(len(plain))
	d.drainInner()
}

// innerGap tells the inner decoder that n bytes of s's plaintext are
// lost, as far as the record layer can tell.
func (d *Decoder) innerGap(s *dirState, n int64, start, end int64) {
	if d.inner == nil || n <= 0 {
		return
	}
	d.remember(s, start, end)
	d.inner.Gap(s.dir, s.innerOff, n)
	s.innerOff += n
	d.drainInner()
}

// maxMap bounds the record map of a direction whose inner decoder does
// not say what it still needs.
const maxMap = 64 << 10

// remember maps the plaintext from s.innerOff on to the record [start,
// end), and forgets what the inner decoder will not ask for.
func (d *Decoder) remember(s *dirState, start, end int64) {
	s.rmap = append(s.rmap, mapEntry{s.innerOff, start, end})
	s.sinceLow++
	if s.sinceLow < 64 {
		return
	}
	s.sinceLow = 0
	drop := 0
	if d.innerLow != nil {
		low := d.innerLow.Low(s.dir)
		drop = sort.Search(len(s.rmap), func(i int) bool { return s.rmap[i].inner > low }) - 1
	} else if len(s.rmap) > maxMap {
		drop = len(s.rmap) / 2
		d.stats.MapTrimmed++
	}
	if drop > 0 {
		s.rmap = s.rmap[:copy(s.rmap, s.rmap[drop:])]
	}
}

// outer returns the record offsets of plaintext offset x of dir: the
// start and end of the record that holds it.
func (d *Decoder) outer(dir proto.Dir, x int64) (int64, int64) {
	m := d.dirs[dir].rmap
	i := sort.Search(len(m), func(i int) bool { return m[i].inner > x }) - 1
	if i < 0 {
		if len(m) == 0 {
			return 0, 0
		}
		d.stats.MapClamped++
		i = 0
	}
	return m[i].start, m[i].end
}

// drainInner moves the inner decoder's Units out, in record offsets.
func (d *Decoder) drainInner() {
	u := &d.scratch // a local would escape through the interface call
	for d.inner.Next(u) {
		inStart, inEnd := u.Start, u.End
		u.Start, _ = d.outer(u.Dir, inStart)
		_, u.End = d.outer(u.Dir, inEnd-1)
		if u.End <= u.Start {
			u.End = u.Start + 1
		}
		if u.Bytes > u.End-u.Start {
			u.Bytes = u.End - u.Start
		}
		u.Evidence = d.keepEvidence(u.Evidence)
		d.emit(*u)
	}
}
