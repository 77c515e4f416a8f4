package tls

import (
	"encoding/binary"
	"sort"

	"github.com/wirepath/wirepath/proto"
)

// Inner is a decoder of the decrypted application data: proto/http2's
// Decoder, or any other that takes the plaintext of each direction with
// its offsets. If it also has a method Low(proto.Dir) int64 (see
// proto/http2), the Decoder forgets the record offsets it will not need.
type Inner interface {
	Feed(dir proto.Dir, off int64, b []byte)
	Gap(dir proto.Dir, off, n int64)
	Close()
	Next(u *proto.Unit) bool
}

// lowInner is an Inner that says below which offset it needs nothing.
type lowInner interface {
	Low(dir proto.Dir) int64
}

// Config configures a Decoder.
type Config struct {
	// KeyLog holds the secrets to decrypt with; nil decrypts nothing.
	KeyLog *KeyLog
	// NewInner returns the decoder of a decrypted connection's
	// application data, given the protocol ALPN chose ("h2",
	// "http/1.1", or "" if none); nil, or a nil result, reports the
	// decrypted records as KindData Units.
	NewInner func(alpn string) Inner
}

// State is what a Decoder has decided about its connection.
type State uint8

// The states of a Decoder.
const (
	Detecting State = iota // waiting for the client's first bytes
	Active                 // TLS
	NotTLS                 // not TLS: the Decoder ignores the connection
)

// String returns the state's name.
func (s State) String() string {
	switch s {
	case Detecting:
		return "detecting"
	case Active:
		return "active"
	}
	return "not-tls"
}

// Decrypt says whether and why not a connection's application data is
// decrypted.
type Decrypt uint8

// The decryption outcomes.
const (
	NoKeyLog    Decrypt = iota // no key log was given, or no ServerHello seen yet
	Decrypting                 // the application data is decrypted
	NoSecrets                  // the key log has no secrets for this connection
	BadSecrets                 // the secrets do not decrypt it (a key log of other sessions)
	Unsupported                // a version or cipher suite the decoder does not decrypt
	LostSync                   // a capture loss cost the keys' sequence
)

var decryptNames = [...]string{"no-key-log", "decrypting", "no-secrets", "bad-secrets", "unsupported", "lost-sync"}

// String returns the outcome's name.
func (d Decrypt) String() string {
	if int(d) < len(decryptNames) {
		return decryptNames[d]
	}
	return "unknown"
}

// Info is what a Decoder learnt of its connection.
type Info struct {
	SNI         string // server name from the ClientHello
	ALPN        string // protocol from the ServerHello
	Version     uint16 // negotiated version: 0x0304 for TLS 1.3, 0x0303 for TLS 1.2
	CipherSuite uint16
	Decrypt     Decrypt
	Resumed     bool // the ServerHello echoed the client's session id (TLS 1.2)
}

// Record layer constants (RFC 8446 section 5.1).
const (
	recHeaderLen = 5
	maxRecord    = 16384 + 2048 // the largest TLS 1.2 ciphertext; TLS 1.3's is smaller
	resyncWindow = 64 << 10
	holdMax      = 64 << 10

	ctChangeCipherSpec = 20
	ctAlert            = 21
	ctHandshake        = 22
	ctApplicationData  = 23
	ctHeartbeat        = 24
)

// recHeader is a decoded record header.
type recHeader struct {
	typ     byte
	version uint16
	length  int
}

func parseRecHeader(b []byte) recHeader {
	return recHeader{typ: b[0], version: binary.BigEndian.Uint16(b[1:]), length: int(binary.BigEndian.Uint16(b[3:]))}
}

// plausibleRecord reports whether b starts with a record header a peer
// could send: a known content type, a TLS version (version, if not 0),
// and a length from 1 to maxRecord.
func plausibleRecord(b []byte, version uint16) bool {
	if len(b) < recHeaderLen {
		return false
	}
	h := parseRecHeader(b)
	return h.typ >= ctChangeCipherSpec && h.typ <= ctHeartbeat && h.length > 0 && h.length <= maxRecord &&
		h.version>>8 == 3 && h.version&0xff <= 4 && (version == 0 || h.version == version)
}

// mode is where a direction's byte stream is.
type mode uint8

const (
	mRecords mode = iota
	mResync
)

// mapEntry says where one decrypted record's plaintext is: its first
// plaintext byte's offset in the inner stream, and the record's offsets
// in the outer one.
type mapEntry struct {
	inner, start, end int64
}

// dirState is one direction of the connection.
type dirState struct {
	dir  proto.Dir
	next int64
	mode mode
	det  int // bytes of the first record header checked (client, detecting)

	hdr     [recHeaderLen]byte
	nhdr    int
	inRec   bool
	rh      recHeader
	rstart  int64
	remain  int
	fed     int64
	skip    bool
	damaged bool
	buf     []byte

	hs hsReader

	// Decryption.
	cur, nxt   *keys  // current keys, and the next ones (TLS 1.3: application or updated keys)
	pend       *keys  // TLS 1.2: the keys ChangeCipherSpec switches on
	secret     []byte // TLS 1.3: the current application traffic secret
	appKeys    bool   // TLS 1.3: cur are application keys
	seq        uint64
	lostSeq    bool // a loss hid how many records went by
	opened     int  // records decrypted
	switchNext bool // a Finished or KeyUpdate ends the current keys after this record
	encrypted  bool // records from this direction are encrypted
	plain      []byte
	nonce      [12]byte
	aad        [13]byte

	innerOff int64
	rmap     []mapEntry
	sinceLow int

	sentEncrypted bool       // TLS 1.3 without keys: the first encrypted record went by
	pendAlert     proto.Unit // TLS 1.3 without keys: a 19-byte record that may be close_notify
	havePend      bool

	hold    []byte
	scan    []byte
	scanPos int
	rbuf    []byte
	replay  []byte
}

// Decoder decodes one TLS connection. Make one with New.
type Decoder struct {
	cfg   Config
	state State
	dirs  [2]dirState

	info       Info
	label      string
	client     *hello
	server     *hello
	suite      *suite
	recVersion uint16 // the record version the server uses
	inner      Inner
	innerLow   lowInner
	innerMade  bool

	out     []proto.Unit
	head    int
	scratch proto.Unit
	// evs holds copies of the inner Units' Evidence, valid as long as
	// the Units in out (the inner decoder reuses its own storage as soon
	// as its Units were taken, before the caller took them from out).
	evs  []*proto.Evidence
	nevs int

	stats Stats
}

// New returns a Decoder for one connection.
func New(cfg Config) *Decoder {
	d := &Decoder{cfg: cfg}
	for i := range d.dirs {
		d.dirs[i].dir = proto.Dir(i)
	}
	return d
}

// State reports what the Decoder has decided about the connection.
func (d *Decoder) State() State { return d.state }

// Info returns what the Decoder learnt of the connection so far.
func (d *Decoder) Info() Info { return d.info }

// Stats returns the Decoder's counters so far.
func (d *Decoder) Stats() Stats {
	st := d.stats
	for i := range d.dirs {
		s := &d.dirs[i]
		st.Pending += int64(len(s.hold) + len(s.scan) + len(s.replay))
		if s.inRec || s.nhdr > 0 {
			st.Pending += s.fed
		}
	}
	return st
}

// Next copies the next decoded Unit into u and reports whether there was
// one.
func (d *Decoder) Next(u *proto.Unit) bool {
	if d.head == len(d.out) {
		return false
	}
	*u = d.out[d.head]
	d.out[d.head] = proto.Unit{}
	d.head++
	if d.head == len(d.out) {
		d.head, d.out = 0, d.out[:0]
	}
	return true
}

func (d *Decoder) emit(u proto.Unit) {
	d.out = append(d.out, u)
	switch u.Kind {
	case proto.KindControl:
		d.stats.ControlUnits++
	case proto.KindData:
		d.stats.DataUnits++
	default:
		d.stats.InnerUnits++
	}
}

// Feed gives the Decoder the bytes of dir's stream from offset off. Bytes
// already fed are ignored; a jump past them is a gap. b is not kept.
func (d *Decoder) Feed(dir proto.Dir, off int64, b []byte) {
	if dir > proto.FromServer || len(b) == 0 {
		return
	}
	d.begin()
	s := &d.dirs[dir]
	if off < s.next {
		if off+int64(len(b)) <= s.next {
			d.stats.Overlap += int64(len(b))
			return
		}
		d.stats.Overlap += s.next - off
		b = b[s.next-off:]
		off = s.next
	}
	if off > s.next {
		d.Gap(dir, s.next, off-s.next)
	}
	d.stats.In += int64(len(b))
	switch {
	case d.state == NotTLS:
		d.stats.Skipped += int64(len(b))
		s.next += int64(len(b))
	case d.state == Detecting:
		// Both sides' bytes wait for the client's first six.
		s.next += int64(len(b))
		if len(s.hold)+len(b) > holdMax {
			d.reject()
			d.stats.Skipped += int64(len(b))
			return
		}
		s.hold = append(s.hold, b...)
		if dir == proto.FromClient {
			d.detect(s, b)
		}
	default:
		d.feed(s, b)
	}
}

// detect checks the first bytes of the client's stream: a handshake
// record of a TLS version starting a ClientHello.
func (d *Decoder) detect(s *dirState, b []byte) {
	for i := 0; i < len(b) && d.state == Detecting; i++ {
		c := b[i]
		var ok bool
		switch s.det {
		case 0:
			ok = c == ctHandshake
		case 1:
			ok = c == 3
		case 2:
			ok = c <= 4
		case 3, 4:
			ok = true
		case 5:
			ok = c == hsClientHello
		}
		s.det++
		if !ok {
			d.reject()
		} else if s.det == 6 {
			d.accept()
		}
	}
}

// reject decides the connection is not TLS.
func (d *Decoder) reject() {
	d.state = NotTLS
	for i := range d.dirs {
		s := &d.dirs[i]
		d.stats.Skipped += int64(len(s.hold) + len(s.scan))
		if s.inRec || s.nhdr > 0 {
			d.stats.Skipped += s.fed
		}
		s.hold, s.scan, s.inRec, s.nhdr, s.fed = nil, nil, false, 0, 0
	}
}

// accept decides the connection is TLS and decodes the bytes held.
func (d *Decoder) accept() {
	d.state = Active
	for i := range d.dirs {
		s := &d.dirs[i]
		if len(s.hold) > 0 {
			held := s.hold
			s.hold = nil
			s.next -= int64(len(held))
			d.feed(s, held)
		}
	}
}

// feed decodes b, the next bytes of s's stream (after a resync, the
// window's bytes from the record header found first).
func (d *Decoder) feed(s *dirState, b []byte) {
	for d.state != NotTLS {
		in := &b
		if len(s.replay) > 0 {
			in = &s.replay
		}
		if len(*in) == 0 {
			return
		}
		if s.mode == mResync {
			n, found := d.resync(s, *in)
			*in = (*in)[n:]
			if found != nil {
				s.replay = found
			}
			continue
		}
		*in = (*in)[d.records(s, *in):]
	}
	rest := int64(len(b) + len(s.replay))
	d.stats.Skipped += rest
	s.next += rest
	s.replay = nil
}

// records reads records from b and returns how many bytes it used.
func (d *Decoder) records(s *dirState, b []byte) int {
	used := 0
	for len(b) > 0 && s.mode == mRecords && d.state != NotTLS {
		if !s.inRec {
			n := d.readHeader(s, b)
			used += n
			b = b[n:]
			continue
		}
		take := min(s.remain, len(b))
		switch {
		case s.skip:
		case len(s.buf) == 0 && take == s.remain:
			s.next += int64(take)
			s.fed += int64(take)
			s.remain = 0
			d.recordDone(s, b[:take])
			used += take
			b = b[take:]
			continue
		default:
			s.buf = append(s.buf, b[:take]...)
		}
		s.next += int64(take)
		s.fed += int64(take)
		s.remain -= take
		used += take
		b = b[take:]
		if s.remain == 0 {
			d.recordDone(s, s.buf)
			s.buf = s.buf[:0]
		}
	}
	return used
}

// readHeader reads (part of) a record header.
func (d *Decoder) readHeader(s *dirState, b []byte) int {
	if s.nhdr == 0 {
		s.rstart = s.next
		s.fed = 0
	}
	n := copy(s.hdr[s.nhdr:], b)
	s.nhdr += n
	s.next += int64(n)
	s.fed += int64(n)
	if s.nhdr < recHeaderLen {
		return n
	}
	s.nhdr = 0
	if !plausibleRecord(s.hdr[:], 0) {
		d.stats.MalformedRecords++
		d.stats.Skipped += s.fed
		s.fed = 0
		d.loseFraming(s, 0)
		return n
	}
	s.rh = parseRecHeader(s.hdr[:])
	s.inRec = true
	s.damaged = false
	s.remain = s.rh.length
	s.skip = s.rh.typ == ctApplicationData && s.cur == nil
	return n
}

// Low returns an offset of dir's stream below which no Unit will start
// that was not reported yet: the start of the record being read, of a
// record held back (a possible close_notify), of the bytes held while
// detecting or resynchronising, or of the record that carried the oldest
// plaintext byte at which the inner decoder (if it has a Low method, as
// proto/http2's has) may still start a Unit. A caller that keeps
// per-offset state (flows' packet times) forgets what lies before it.
func (d *Decoder) Low(dir proto.Dir) int64 {
	if dir > proto.FromServer {
		return 0
	}
	s := &d.dirs[dir]
	low := s.next - int64(len(s.hold)+len(s.scan)+len(s.replay))
	if s.inRec || s.nhdr > 0 {
		low = min(low, s.rstart)
	}
	if s.havePend {
		low = min(low, s.pendAlert.Start)
	}
	if d.inner != nil && len(s.rmap) > 0 {
		x := s.rmap[0].inner
		if d.innerLow != nil {
			x = d.innerLow.Low(dir)
		}
		if x < s.innerOff {
			m := s.rmap
			i := max(sort.Search(len(m), func(i int) bool { return m[i].inner > x })-1, 0)
			low = min(low, m[i].start)
		}
	}
	return low
}

// begin starts a call that may queue Units: once the caller took every
// Unit, the copies of their Evidence are reused.
func (d *Decoder) begin() {
	if d.head == len(d.out) {
		d.nevs = 0
	}
}

// keepEvidence returns a copy of ev that stays valid as long as the Unit
// queued with it.
func (d *Decoder) keepEvidence(ev *proto.Evidence) *proto.Evidence {
	if ev == nil {
		return nil
	}
	if d.nevs == len(d.evs) {
		d.evs = append(d.evs, &proto.Evidence{})
	}
	c := d.evs[d.nevs]
	d.nevs++
	c.IDs = append(c.IDs[:0], ev.IDs...)
	c.Tokens = append(c.Tokens[:0], ev.Tokens...)
	return c
}
