// Package dns reads DNS messages for labels and evidence, over UDP (Parse
// on one datagram) and over TCP (Decoder, a proto.Decoder).
//
// flows already frames DNS over TCP by its 2-byte length prefix; what it
// lacked is what a message says: its id and whether it is a query, the
// question's type and name, the response code. Parse gives those for a
// datagram or a framed message; Label gives "dns A example.com" for a
// query and the response code's name ("NOERROR", "NXDOMAIN") for a
// response; AddEvidence adds the question's name, lowercased and without
// its final dot, as a token.
//
// The Decoder frames DNS over TCP itself and pairs a response with the
// query of the same id, exactly, whatever their order (RFC 7766 lets a
// server answer pipelined queries out of order): Key = 1<<16 | id, so
// that id 0 pairs too. A zone transfer (AXFR, IXFR) is answered by
// several messages: the first is the response, the others one-way ("dns
// transfer continuation"). A query whose id is reused while it waits is not
// paired. Memory per connection: a 512-byte prefix of one message per
// direction and the waiting ids (at most 65536). A gap inside a message
// keeps the framing; one across a length loses it, and the direction
// resynchronises at a length followed by a plausible header (for
// responses, one whose id a query is waiting with).
package dns

import (
	"encoding/binary"
	"strconv"

	"github.com/wirepath/wirepath/proto"
	"github.com/wirepath/wirepath/proto/evidence"
	"github.com/wirepath/wirepath/proto/internal/dec"
)

// Message is what Parse reads of a DNS message.
type Message struct {
	ID       uint16
	Response bool
	Opcode   uint8
	Rcode    uint8
	QType    uint16 // the first question's type; 0 when there is none
	// Name is the first question's name, lowercased, without its final
	// dot ("." for the root); it aliases the buffer given to Parse.
	Name []byte
}

// Parse reads a DNS message's header and first question (RFC 1035 section
// 4.1), appending the question's name to name's storage. It reports false
// for a message too short or implausible to be DNS: fewer than 12 bytes,
// an unassigned opcode, more than 8 questions, a name that is too long,
// loops or is cut.
func Parse(b, name []byte) (Message, bool) {
	if len(b) < 12 {
		return Message{}, false
	}
	flags := binary.BigEndian.Uint16(b[2:])
	m := Message{ID: binary.BigEndian.Uint16(b), Response: flags&0x8000 != 0, Opcode: uint8(flags>>11) & 0xf, Rcode: uint8(flags & 0xf)}
	qd := binary.BigEndian.Uint16(b[4:])
	if m.Opcode > 6 || m.Opcode == 3 || qd > 8 {
		return Message{}, false
	}
	if qd == 0 {
		return m, true
	}
	n, end, ok := readName(b, 12, name[:0])
	if !ok || end+4 > len(b) {
		return Message{}, false
	}
	m.Name = n
	m.QType = binary.BigEndian.Uint16(b[end:])
	return m, true
}

// readName reads a (possibly compressed) name at off: its lowercased text
// and the offset after it in b.
func readName(b []byte, off int, dst []byte) ([]byte, int, bool) {
	end := -1
	for jumps := 0; ; {
		if off >= len(b) {
			return nil, 0, false
		}
		l := int(b[off])
		switch {
		case l == 0:
			if end < 0 {
				end = off + 1
			}
			if len(dst) == 0 {
				dst = append(dst, '.')
			}
			return dst, end, true
		case l&0xc0 == 0xc0:
			if off+1 >= len(b) || jumps > 16 {
				return nil, 0, false
			}
			if end < 0 {
				end = off + 2
			}
			off = int(binary.BigEndian.Uint16(b[off:]) & 0x3fff)
			jumps++
			continue
		case l&0xc0 != 0 || off+1+l > len(b) || len(dst)+l+1 > 255:
			return nil, 0, false
		}
		if len(dst) > 0 {
			dst = append(dst, '.')
		}
		for _, c := range b[off+1 : off+1+l] {
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			dst = append(dst, c)
		}
		off += 1 + l
	}
}

// typeNames are the names of common record types.
var typeNames = map[uint16]string{1: "A", 2: "NS", 5: "CNAME", 6: "SOA", 12: "PTR", 15: "MX", 16: "TXT",
	28: "AAAA", 33: "SRV", 35: "NAPTR", 41: "OPT", 43: "DS", 46: "RRSIG", 48: "DNSKEY", 64: "SVCB",
	65: "HTTPS", 251: "IXFR", 252: "AXFR", 255: "ANY", 257: "CAA"}

// rcodeNames are the names of the response codes.
var rcodeNames = [16]string{"NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED", "YXDOMAIN",
	"YXRRSET", "NXRRSET", "NOTAUTH", "NOTZONE", "DSOTYPENI", "RCODE12", "RCODE13", "RCODE14", "RCODE15"}

// TypeName returns a record type's name ("AAAA"), or "TYPE<n>".
func TypeName(t uint16) string {
	if n, ok := typeNames[t]; ok {
		return n
	}
	return "TYPE" + strconv.Itoa(int(t))
}

// Label returns a message's label: "dns A example.com" for a query (the
// name dropped when it is not visible ASCII), the response code's name
// for a response. scratch is reused to build it.
func Label(m Message, scratch []byte) string {
	if m.Response {
		return rcodeNames[m.Rcode&0xf]
	}
	if m.QType == 0 {
		return "dns"
	}
	b := append(scratch[:0], "dns "...)
	if n, ok := typeNames[m.QType]; ok {
		b = append(b, n...)
	} else {
		b = append(b, "TYPE"...)
		b = strconv.AppendUint(b, uint64(m.QType), 10)
	}
	if visible(m.Name) {
		b = append(b, ' ')
		b = append(b, m.Name...)
	}
	return evidence.Intern(b)
}

func visible(b []byte) bool {
	for _, c := range b {
		if c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return len(b) > 0
}

// AddEvidence adds the question's name as a token.
func AddEvidence(b *evidence.Builder, m Message) {
	if len(m.Name) > 0 && string(m.Name) != "." {
		b.Token(m.Name)
	}
}

// Limits of the TCP decoder.
const maxKeep = 512

// Config configures a Decoder. The zero Config takes evidence with the
// default caps.
type Config struct {
	NoEvidence bool            // take no evidence
	Evidence   evidence.Config // caps of the evidence taken
}

// Stats counts what a Decoder saw.
type Stats struct {
	dec.Stats
	Messages  [2]int64 // framed messages by direction
	NotDNS    int64    // framed messages Parse rejected (reported as control)
	Reordered int64    // responses that answered a query other than the oldest waiting
	Malformed int64    // framing errors that lost sync
}

const (
	stLen = iota
	stBody
	stLost
)

type side struct {
	st     uint8
	lb     [2]byte
	ln     int
	remain int
	body   []byte
	broken bool
	start  int64
	rs     dec.Resync
}

// Decoder decodes DNS over one TCP connection. It implements
// proto.Decoder.
type Decoder struct {
	dec.Base
	cfg      Config
	s        [2]side
	st       Stats
	waiting  map[uint16]uint64 // id -> order of the query
	transfer map[uint16]bool   // ids of zone transfers already answered once
	seq      uint64
	name     []byte
	scratch  []byte
}

var _ proto.Decoder = (*Decoder)(nil)

// NewDecoder returns a Decoder for a new connection.
func NewDecoder(cfg Config) *Decoder {
	d := &Decoder{cfg: cfg}
	d.InitBase(!cfg.NoEvidence, cfg.Evidence)
	d.Reset()
	return d
}

// Reset prepares d for a new connection, keeping its buffers.
func (d *Decoder) Reset() {
	d.ResetBase()
	var keep [2]side
	for i := range d.s {
		keep[i] = side{body: d.s[i].body[:0], rs: d.s[i].rs}
		keep[i].rs.Drop()
	}
	w, tr := d.waiting, d.transfer
	clear(w)
	clear(tr)
	if w == nil {
		w, tr = map[uint16]uint64{}, map[uint16]bool{}
	}
	*d = Decoder{Base: d.Base, cfg: d.cfg, s: keep, waiting: w, transfer: tr, name: d.name, scratch: d.scratch}
}

// Stats returns the decoder's counters.
func (d *Decoder) Stats() Stats {
	s := d.st
	s.Stats = d.Base.Stats
	return s
}

// Feed decodes the next bytes of dir, which start at stream offset off;
// the Units it completes are taken with Next.
func (d *Decoder) Feed(dir proto.Dir, off int64, data []byte) {
	d.Begin()
	gap, data := d.Align(dir, off, data)
	if gap > 0 {
		d.gap(dir, gap)
	}
	d.consume(dir, d.Offset(dir)-int64(len(data)), data)
	d.End()
}

// Gap reports that n bytes of dir from off were not captured.
func (d *Decoder) Gap(dir proto.Dir, off, n int64) {
	d.Begin()
	if g := d.AlignGap(dir, off, n); g > 0 {
		d.gap(dir, g)
	}
	d.End()
}

// Close ends the connection.
func (d *Decoder) Close() {
	d.Begin()
	for dir := range proto.Dir(2) {
		s := &d.s[dir]
		switch {
		case s.st == stLost:
			d.Skip(dir, int64(s.rs.Drop()))
		case s.ln > 0 || s.st == stBody:
			d.Base.Stats.Truncated++
			d.Emit(proto.Unit{Dir: dir, Kind: proto.KindControl, Start: s.start, End: d.Offset(dir)})
		}
	}
	d.Base.Stats.Unanswered += int64(len(d.waiting))
	clear(d.waiting)
	d.End()
}

func (d *Decoder) gap(dir proto.Dir, n int64) {
	s := &d.s[dir]
	switch {
	case s.st == stLost:
		d.Skip(dir, int64(s.rs.Drop())+n)
	case s.st == stBody && n < int64(s.remain):
		s.remain -= int(n)
		s.broken = true
	case s.st == stBody && n == int64(s.remain):
		s.remain, s.broken, s.st = 0, true, stLen
		d.message(dir, d.Offset(dir))
	default:
		if s.ln > 0 || s.st == stBody {
			d.Skip(dir, d.Offset(dir)-n-s.start)
		}
		d.Lost(dir)
		d.st.Malformed++
		rs, body := s.rs, s.body[:0]
		*s = side{rs: rs, body: body, st: stLost}
		d.Skip(dir, n)
	}
}

func (d *Decoder) consume(dir proto.Dir, off int64, data []byte) {
	for len(data) > 0 {
		s := &d.s[dir]
		var n int
		switch s.st {
		case stLost:
			d.resync(dir, off, data)
			return
		case stLen:
			if s.ln == 0 {
				s.start = off
			}
			n = copy(s.lb[s.ln:], data)
			s.ln += n
			if s.ln == 2 {
				s.ln = 0
				s.remain = int(binary.BigEndian.Uint16(s.lb[:]))
				s.body, s.broken, s.st = s.body[:0], false, stBody
				if s.remain == 0 {
					s.st = stLen
					d.message(dir, off+int64(n))
				}
			}
		case stBody:
			n = min(s.remain, len(data))
			if !s.broken && len(s.body) < maxKeep {
				s.body = append(s.body, data[:min(n, maxKeep-len(s.body))]...)
			}
			s.remain -= n
			if s.remain == 0 {
				s.st = stLen
				d.message(dir, off+int64(n))
			}
		}
		data, off = data[n:], off+int64(n)
	}
}

func (d *Decoder) resync(dir proto.Dir, off int64, data []byte) {
	s := &d.s[dir]
	pend := int64(s.rs.Pending())
	test := func(b []byte) dec.Verdict { return d.start(dir, b) }
	skipped, replay, rest, found := s.rs.Find(data, 14, test)
	d.Skip(dir, int64(skipped))
	if !found {
		return
	}
	d.Found(dir)
	s.st = stLen
	start := off - pend + int64(skipped)
	d.consume(dir, start, replay)
	d.consume(dir, off+int64(len(data)-len(rest)), rest)
}

// start tests for a length followed by a plausible header (a response's
// id waiting).
func (d *Decoder) start(dir proto.Dir, b []byte) dec.Verdict {
	if len(b) < 14 {
		return dec.More
	}
	n := int(binary.BigEndian.Uint16(b))
	flags := binary.BigEndian.Uint16(b[4:])
	qd := binary.BigEndian.Uint16(b[6:])
	op := (flags >> 11) & 0xf
	resp := flags&0x8000 != 0
	if n < 12 || op > 6 || op == 3 || qd == 0 || qd > 8 || resp != (dir == proto.FromServer) {
		return dec.No
	}
	if _, ok := d.waiting[binary.BigEndian.Uint16(b[2:])]; resp && !ok {
		return dec.No
	}
	return dec.Yes
}

// message handles a framed message of dir.
func (d *Decoder) message(dir proto.Dir, end int64) {
	s := &d.s[dir]
	d.st.Messages[dir]++
	d.BeginMsg(dir)
	u := proto.Unit{Dir: dir, Kind: proto.KindControl, Start: s.start, End: end}
	m, ok := Parse(s.body, d.name)
	if ok {
		d.name = m.Name[:0]
	}
	if !ok || m.Response != (dir == proto.FromServer) {
		d.st.NotDNS++
		d.Emit(u)
		return
	}
	u.Label = Label(m, d.scratch)
	if ev := d.Ev[dir]; ev != nil {
		AddEvidence(ev, m)
	}
	if dir == proto.FromClient {
		d.query(&u, m)
	} else {
		d.response(&u, m)
	}
	d.Emit(u)
}

func (d *Decoder) query(u *proto.Unit, m Message) {
	u.Kind = proto.KindRequest
	if _, dup := d.waiting[m.ID]; dup {
		d.Base.Stats.Unpaired++
		return
	}
	d.seq++
	d.waiting[m.ID] = d.seq
	delete(d.transfer, m.ID)
	if m.QType == 252 || m.QType == 251 {
		d.transfer[m.ID] = false
	}
	u.Key = 1<<16 | uint64(m.ID)
}

func (d *Decoder) response(u *proto.Unit, m Message) {
	u.Kind = proto.KindResponse
	u.Status = int(m.Rcode)
	seq, ok := d.waiting[m.ID]
	if !ok {
		if _, xfr := d.transfer[m.ID]; xfr {
			u.Kind, u.Label, u.Status = proto.KindOneWay, "dns transfer continuation", 0
			return
		}
		d.Base.Stats.Unpaired++
		return
	}
	for _, s := range d.waiting {
		if s < seq {
			d.st.Reordered++
			break
		}
	}
	delete(d.waiting, m.ID)
	u.Key = 1<<16 | uint64(m.ID)
}

// Summary returns the counters every decoder shares (see proto.Summary).
func (d *Decoder) Summary() proto.Summary {
	st := d.Stats()
	return st.Stats.Summary(st.Malformed)
}
