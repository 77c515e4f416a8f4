// Package kafka decodes the Apache Kafka protocol of one connection into
// proto Units: every size-prefixed frame the client sends is a request,
// every frame the broker sends the response with the same correlation id,
// paired exactly by that id whatever their order (Key = 1<<32 | the id as
// uint32, so that id 0 pairs too). A Produce request with acks = 0 gets
// no response and is one-way. After a version-0 SaslHandshake, the raw
// SASL tokens that follow without Kafka headers are control.
//
// Labels: "kafka <ApiName>", with the first topic for Produce, Fetch (up
// to version 12: later ones name topics by id), ListOffsets and Metadata
// ("kafka Produce orders"); "kafka api<N>" for an API this package does
// not name. Tokens: those topic names. Request headers of flexible
// versions (tagged fields, compact strings) are read by each API's first
// flexible version.
//
// Memory per connection: a 1 KiB prefix of one frame per direction and
// the correlation ids waiting for responses (Config.MaxPending; beyond it
// the waiting ids are dropped and counted unanswered). Frames may be up to
// Config.MaxFrame (100 MiB, the broker's default socket.request.max.bytes).
//
// Gaps: a gap inside a frame keeps the framing; one across a size loses
// it. Requests resynchronise at a plausible header (a size of 8 bytes or
// more, a known API key with a version up to 20, a client id length from
// -1 to 1024); responses at a size followed by a correlation id that a
// request is waiting with. Pairing needs no resynchronisation: ids pair
// exactly.
package kafka

import (
	"encoding/binary"

	"github.com/wirepath/wirepath/proto"
	"github.com/wirepath/wirepath/proto/evidence"
	"github.com/wirepath/wirepath/proto/internal/dec"
)

// Limits of the decoder.
const (
	maxKeep         = 1024
	defaultMaxFrame = 100 << 20
	maxTopic        = 249 // Kafka's longest topic name
)

// Config configures a Decoder. The zero Config takes evidence with the
// default caps.
type Config struct {
	NoEvidence bool            // take no evidence
	Evidence   evidence.Config // caps of the evidence taken
	MaxPending int             // correlation ids waiting for responses (default 16384)
	MaxFrame   int64           // largest frame (default 100 MiB)
}

// Stats counts what a Decoder saw.
type Stats struct {
	dec.Stats
	Frames    [2]int64 // frames by direction
	SASL      int64    // raw SASL frames (after a version-0 SaslHandshake)
	Reordered int64    // responses that answered a request other than the oldest waiting
	Malformed int64    // framing errors that lost sync
}

// Parser states of one direction.
const (
	stSize = iota
	stBody
	stLost
)

type side struct {
	st     uint8
	size   [4]byte
	sn     int
	remain int64
	body   []byte
	broken bool
	start  int64
	rs     dec.Resync
}

// pending is a request waiting for its response.
type pending struct {
	api, version int16
	seq          uint64 // order of the request on the connection
}

// Decoder decodes one Kafka connection. It implements proto.Decoder.
type Decoder struct {
	dec.Base
	cfg     Config
	s       [2]side
	st      Stats
	waiting map[int32]pending
	seq     uint64 // requests sent
	oldest  uint64 // the order of the oldest waiting request, when known
	saslRaw int    // raw SASL frames expected from the client (1) and server (2)
	scratch []byte
}

var _ proto.Decoder = (*Decoder)(nil)

// NewDecoder returns a Decoder for a new connection.
func NewDecoder(cfg Config) *Decoder {
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = dec.DefaultMaxPending
	}
	if cfg.MaxFrame <= 0 {
		cfg.MaxFrame = defaultMaxFrame
	}
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
	w := d.waiting
	clear(w)
	if w == nil {
		w = make(map[int32]pending)
	}
	*d = Decoder{Base: d.Base, cfg: d.cfg, s: keep, waiting: w, scratch: d.scratch}
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

// Close ends the connection: a frame cut short is reported as far as it
// came (Truncated), waiting requests are counted unanswered.
func (d *Decoder) Close() {
	d.Begin()
	for dir := range proto.Dir(2) {
		s := &d.s[dir]
		switch {
		case s.st == stLost:
			d.Skip(dir, int64(s.rs.Drop()))
		case s.sn > 0 || s.st == stBody:
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
	case s.st == stBody && n < s.remain:
		s.remain -= n
		s.broken = true
	case s.st == stBody && n == s.remain:
		s.remain, s.broken, s.st = 0, true, stSize
		d.frame(dir, d.Offset(dir))
	default:
		d.lose(dir, d.Offset(dir)-n)
		d.Skip(dir, n)
	}
}

func (d *Decoder) lose(dir proto.Dir, at int64) {
	s := &d.s[dir]
	if s.sn > 0 || s.st == stBody {
		d.Skip(dir, at-s.start)
	}
	d.Lost(dir)
	d.st.Malformed++
	rs, body := s.rs, s.body[:0]
	*s = side{rs: rs, body: body, st: stLost}
}

func (d *Decoder) consume(dir proto.Dir, off int64, data []byte) {
	for len(data) > 0 {
		s := &d.s[dir]
		var n int
		switch s.st {
		case stLost:
			d.resync(dir, off, data)
			return
		case stSize:
			n = d.readSize(dir, off, data)
		case stBody:
			n = d.readBody(dir, off, data)
		}
		data, off = data[n:], off+int64(n)
	}
}

func (d *Decoder) resync(dir proto.Dir, off int64, data []byte) {
	s := &d.s[dir]
	test := d.requestStart
	if dir == proto.FromServer {
		test = d.responseStart
	}
	pend := int64(s.rs.Pending())
	skipped, replay, rest, found := s.rs.Find(data, 16, test)
	d.Skip(dir, int64(skipped))
	if !found {
		return
	}
	d.Found(dir)
	s.st = stSize
	start := off - pend + int64(skipped)
	d.consume(dir, start, replay)
	d.consume(dir, off+int64(len(data)-len(rest)), rest)
}

func (d *Decoder) readSize(dir proto.Dir, off int64, data []byte) int {
	s := &d.s[dir]
	if s.sn == 0 {
		s.start = off
	}
	n := copy(s.size[s.sn:], data)
	s.sn += n
	if s.sn < 4 {
		return n
	}
	size := int64(int32(binary.BigEndian.Uint32(s.size[:])))
	if size < 0 || size > d.cfg.MaxFrame {
		d.lose(dir, off+int64(n))
		return n
	}
	s.sn = 0
	s.remain, s.body, s.broken, s.st = size, s.body[:0], false, stBody
	if size == 0 { // an empty SASL token
		s.st = stSize
		d.frame(dir, off+int64(n))
	}
	return n
}

func (d *Decoder) readBody(dir proto.Dir, off int64, data []byte) int {
	s := &d.s[dir]
	k := int(min(s.remain, int64(len(data))))
	if !s.broken && len(s.body) < maxKeep {
		s.body = append(s.body, data[:min(k, maxKeep-len(s.body))]...)
	}
	s.remain -= int64(k)
	if s.remain == 0 {
		s.st = stSize
		d.frame(dir, off+int64(k))
	}
	return k
}

// frame handles a complete frame of dir.
func (d *Decoder) frame(dir proto.Dir, end int64) {
	s := &d.s[dir]
	d.st.Frames[dir]++
	d.BeginMsg(dir)
	u := proto.Unit{Dir: dir, Kind: proto.KindControl, Start: s.start, End: end}
	switch {
	case dir == proto.FromClient && d.saslRaw == 1, dir == proto.FromServer && d.saslRaw == 2:
		d.st.SASL++
		d.saslRaw = (d.saslRaw + 1) % 3
	case dir == proto.FromClient:
		d.request(&u, s.body)
	default:
		d.response(&u, s.body)
	}
	d.Emit(u)
}

// request reads a request header (and the first topic of a few APIs).
func (d *Decoder) request(u *proto.Unit, b []byte) {
	if len(b) < 8 {
		return // too short to be a request, or its header was lost: control
	}
	api := int16(binary.BigEndian.Uint16(b))
	version := int16(binary.BigEndian.Uint16(b[2:]))
	corr := int32(binary.BigEndian.Uint32(b[4:]))
	u.Kind = proto.KindRequest
	r := reader{b: b[8:]}
	r.nullableString() // client id
	flexible := version >= firstFlexible(api)
	if flexible {
		r.taggedFields()
	}
	topic, acks := d.body(api, version, flexible, &r)
	u.Label = d.label(api, topic)
	if api == apiProduce && acks == 0 {
		u.Kind = proto.KindOneWay
		return
	}
	if len(d.waiting) >= d.cfg.MaxPending {
		d.Base.Stats.Unanswered += int64(len(d.waiting))
		clear(d.waiting)
	}
	if _, dup := d.waiting[corr]; dup {
		// An id reused while its first request waits: the response
		// that comes will be the first's, and this one cannot be paired.
		d.Base.Stats.Unpaired++
		return
	}
	d.seq++
	if len(d.waiting) == 0 {
		d.oldest = d.seq
	}
	d.waiting[corr] = pending{api: api, version: version, seq: d.seq}
	u.Key = key(corr)
	if api == apiSaslHandshake && version == 0 {
		d.saslRaw = -1 // raw tokens follow once the broker answers
	}
}

// response pairs a response frame by its correlation id.
func (d *Decoder) response(u *proto.Unit, b []byte) {
	u.Kind = proto.KindResponse
	if len(b) < 4 {
		d.Base.Stats.Unpaired++
		return
	}
	corr := int32(binary.BigEndian.Uint32(b))
	p, ok := d.waiting[corr]
	if !ok {
		d.Base.Stats.Unpaired++
		return
	}
	delete(d.waiting, corr)
	if p.seq != d.oldest {
		d.st.Reordered++
	}
	d.oldest = d.seq + 1
	for _, w := range d.waiting {
		d.oldest = min(d.oldest, w.seq)
	}
	u.Key = key(corr)
	u.Label = d.label(p.api, nil)
	if p.api == apiSaslHandshake && p.version == 0 && d.saslRaw == -1 {
		d.saslRaw = 1
	}
}

func key(corr int32) uint64 { return 1<<32 | uint64(uint32(corr)) }

// body reads the first topic of Produce, Fetch, ListOffsets and Metadata
// requests, and Produce's acks (-2 when not read).
func (d *Decoder) body(api, version int16, flexible bool, r *reader) ([]byte, int16) {
	acks := int16(-2)
	switch api {
	case apiProduce:
		if version >= 3 {
			r.str(flexible) // transactional id
		}
		if a := r.int16(); !r.bad {
			acks = a
		}
		r.skip(4) // timeout
	case apiFetch:
		if version >= 13 {
			return nil, acks // topics by id
		}
		if version < 15 {
			r.skip(4) // replica id
		}
		r.skip(8) // max wait, min bytes
		if version >= 3 {
			r.skip(4)
		}
		if version >= 4 {
			r.skip(1)
		}
		if version >= 7 {
			r.skip(8)
		}
	case apiListOffsets:
		r.skip(4)
		if version >= 2 {
			r.skip(1)
		}
	case apiMetadata:
		if version >= 10 {
			return nil, acks // topics by id and name: not read
		}
	default:
		return nil, acks
	}
	if n := r.arrayLen(flexible); n <= 0 {
		return nil, acks
	}
	topic := r.str(flexible)
	if r.bad || len(topic) == 0 || len(topic) > maxTopic {
		return nil, acks
	}
	if ev := d.Ev[proto.FromClient]; ev != nil {
		ev.Token(topic)
	}
	return topic, acks
}

// label returns "kafka <ApiName>[ <topic>]".
func (d *Decoder) label(api int16, topic []byte) string {
	d.scratch = append(d.scratch[:0], "kafka "...)
	if api >= 0 && int(api) < len(apiNames) && apiNames[api] != "" {
		d.scratch = append(d.scratch, apiNames[api]...)
	} else {
		d.scratch = append(d.scratch, "api"...)
		d.scratch = appendInt(d.scratch, int(api))
	}
	if len(topic) > 0 && printable(topic) {
		d.scratch = append(d.scratch, ' ')
		d.scratch = append(d.scratch, topic...)
	}
	return evidence.Intern(d.scratch)
}

func printable(b []byte) bool {
	for _, c := range b {
		if c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

func appendInt(b []byte, v int) []byte {
	if v < 0 {
		b = append(b, '-')
		v = -v
	}
	var t [8]byte
	i := len(t)
	for {
		i--
		t[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return append(b, t[i:]...)
}

// requestStart tests for a plausible request header.
func (d *Decoder) requestStart(b []byte) dec.Verdict {
	if len(b) < 14 {
		return dec.More
	}
	size := int64(int32(binary.BigEndian.Uint32(b)))
	api := int16(binary.BigEndian.Uint16(b[4:]))
	version := int16(binary.BigEndian.Uint16(b[6:]))
	cid := int16(binary.BigEndian.Uint16(b[12:]))
	if size < 10 || size > d.cfg.MaxFrame || api < 0 || int(api) >= len(apiNames) || apiNames[api] == "" ||
		version < 0 || version > 20 || cid < -1 || cid > 1024 || int64(cid)+10 > size {
		return dec.No
	}
	return dec.Yes
}

// responseStart tests for a size followed by a waiting correlation id.
func (d *Decoder) responseStart(b []byte) dec.Verdict {
	if len(b) < 8 {
		return dec.More
	}
	size := int64(int32(binary.BigEndian.Uint32(b)))
	if size < 4 || size > d.cfg.MaxFrame {
		return dec.No
	}
	if _, ok := d.waiting[int32(binary.BigEndian.Uint32(b[4:]))]; ok {
		return dec.Yes
	}
	return dec.No
}

// reader reads the fields of a frame prefix; a read past its end sets
// bad and returns zero values.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) take(n int) []byte {
	if r.bad || n < 0 || len(r.b) < n {
		r.bad = true
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) skip(n int) { r.take(n) }

func (r *reader) int16() int16 {
	if v := r.take(2); v != nil {
		return int16(binary.BigEndian.Uint16(v))
	}
	return 0
}

// uvarint reads an unsigned varint (flexible versions).
func (r *reader) uvarint() uint64 {
	if r.bad {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

// nullableString reads a classic (int16-length) nullable string.
func (r *reader) nullableString() []byte {
	n := r.int16()
	if n < 0 {
		return nil
	}
	return r.take(int(n))
}

// str reads a string, compact (uvarint length + 1) in flexible versions.
func (r *reader) str(flexible bool) []byte {
	if !flexible {
		return r.nullableString()
	}
	n := r.uvarint()
	if n == 0 || n > 1<<20 {
		return nil
	}
	return r.take(int(n - 1))
}

// arrayLen reads an array length, compact (uvarint + 1) in flexible
// versions; -1 for a null array.
func (r *reader) arrayLen(flexible bool) int64 {
	if flexible {
		return int64(min(r.uvarint(), 1<<31)) - 1
	}
	if v := r.take(4); v != nil {
		return int64(int32(binary.BigEndian.Uint32(v)))
	}
	return -1
}

// taggedFields skips a tagged field section.
func (r *reader) taggedFields() {
	n := r.uvarint()
	for i := uint64(0); i < n && !r.bad; i++ {
		r.uvarint()
		r.skip(int(min(r.uvarint(), 1<<30)))
	}
}

// Summary returns the counters every decoder shares (see proto.Summary).
func (d *Decoder) Summary() proto.Summary {
	st := d.Stats()
	return st.Stats.Summary(st.Malformed)
}
