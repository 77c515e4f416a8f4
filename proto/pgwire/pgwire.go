// Package pgwire decodes the PostgreSQL frontend/backend protocol (version
// 3) of one connection into proto Units.
//
// Start-up is control: the SSLRequest or GSSENCRequest and the server's
// one-byte answer (an 'S' or 'G' means encryption follows: the connection
// is not framed any further, Stats.Encrypted), the StartupMessage, the
// authentication exchange, and the server's messages up to its first
// ReadyForQuery (grouped, a unit ending at each authentication request),
// as is a CancelRequest and Terminate.
//
// Requests: a simple Query message; or the extended protocol's messages
// (Parse, Bind, Describe, Execute, Close, Flush) up to and including Sync,
// or a FunctionCall. Flush does not end a request: the server marks no
// end of what it flushes, and the call is not over before Sync. The
// response is the server's messages up to and including ReadyForQuery,
// paired in order (Key = ordinal), however many requests the client
// pipelines. Notifications (NotificationResponse) that arrive while no
// request waits are one-way, notices and parameter statuses then are
// control. CopyData sent by the client after CopyInResponse is one-way
// ("COPY data"); CopyBothResponse (replication) ends framing.
//
// Labels: requests by their SQL ("SELECT users"), a Bind to a named
// statement by the Parse that prepared it (the last 256 names are kept);
// responses by the first CommandComplete's verb ("SELECT", "INSERT"), or
// "ERROR <SQLSTATE>" with Status the SQLSTATE class as a number when its
// two characters are digits (23 for 23505) and 1 for other classes.
// Tokens: the SQL's literals, Bind's parameters (text as sent; binary
// 2-, 4- and 8-byte values as big-endian integers, 16-byte values as
// UUIDs), and a response's DataRow values, within the first
// Evidence.MaxBytes of the unit.
//
// Memory per connection: the kept prefix of one message per direction (at
// most 4 KiB), the statement names, the pending requests
// (Config.MaxPending) and a few bytes held by a resynchronisation.
//
// Gaps: a gap inside a message's body keeps the framing (its content is
// not read); a gap across a header loses it. A direction resynchronises at
// the next plausible message: a type byte of that direction followed by a
// length from 4 to 1 GiB (exactly 4 or 5 for the fixed-size messages, with
// a valid status for ReadyForQuery). Pairing is then suspended as
// dec.Serial documents.
package pgwire

import (
	"encoding/binary"

	"github.com/wirepath/wirepath/proto"
	"github.com/wirepath/wirepath/proto/evidence"
	"github.com/wirepath/wirepath/proto/internal/dec"
)

// Limits of the decoder.
const (
	maxMessage    = 1 << 30 // bytes of one message
	maxStartup    = 10000   // bytes of a start-up packet
	maxKeep       = 4096    // bytes of a message's body kept for labels and tokens
	maxStatements = 256     // named prepared statements remembered
)

// Protocol codes of the untyped start-up packets.
const (
	codeSSL    = 80877103
	codeGSS    = 80877104
	codeCancel = 80877102
)

// Config configures a Decoder. The zero Config takes evidence with the
// default caps.
type Config struct {
	NoEvidence bool            // take no evidence
	Evidence   evidence.Config // caps of the evidence taken
	MaxPending int             // requests waiting for responses (default 16384)
}

// Stats counts what a Decoder saw.
type Stats struct {
	dec.Stats
	Messages    [2]int64 // protocol messages by direction
	Encrypted   int64    // connections that turned to TLS or GSSAPI encryption
	Replication int64    // connections that entered CopyBoth (replication)
	Malformed   int64    // framing errors that lost sync
}

// Parser states of one direction.
const (
	stHead = iota // reading a message header
	stBody        // reading a body
	stLost        // framing lost
	stOff         // not framed any more
)

// side is the parser of one direction.
type side struct {
	st       uint8
	typed    bool // messages have a type byte (after start-up)
	hdr      [8]byte
	hn       int
	typ      byte
	remain   int64
	body     []byte
	keep     int
	broken   bool
	msgStart int64
	rs       dec.Resync
	// The unit being built from messages.
	open      bool
	unitStart int64
	kind      proto.Kind
	label     string
	status    int
	copying   bool // client: a CopyData group is open
}

// Decoder decodes one PostgreSQL connection. It implements proto.Decoder.
type Decoder struct {
	dec.Base
	cfg        Config
	s          [2]side
	pair       dec.Serial[struct{}]
	st         Stats
	ready      bool // the first ReadyForQuery was seen: start-up is over
	sslPending bool // the server's next byte answers an SSLRequest or GSSENCRequest
	stmts      map[string]string
	unnamed    string // label of the unnamed statement
	scratch    []byte
	lb         *evidence.Builder // labels SQL when no evidence is taken
}

var _ proto.Resumer = (*Decoder)(nil)

// NewDecoder returns a Decoder for a new connection.
func NewDecoder(cfg Config) *Decoder {
	d := &Decoder{cfg: cfg}
	d.InitBase(!cfg.NoEvidence, cfg.Evidence)
	d.Reset()
	if cfg.NoEvidence {
		d.lb = evidence.NewBuilder(evidence.Config{MaxTokens: 1, MaxBytes: 1})
	}
	return d
}

// Reset prepares d for a new connection, keeping its buffers.
func (d *Decoder) Reset() {
	d.ResetBase()
	b := [2][]byte{d.s[0].body[:0], d.s[1].body[:0]}
	rs := [2]dec.Resync{d.s[0].rs, d.s[1].rs}
	stmts := d.stmts
	clear(stmts)
	*d = Decoder{Base: d.Base, cfg: d.cfg, stmts: stmts, scratch: d.scratch, lb: d.lb}
	for i := range d.s {
		d.s[i].body, d.s[i].rs = b[i], rs[i]
		d.s[i].rs.Drop()
	}
	d.s[proto.FromServer].typed = true
	d.pair.Init(&d.Base.Stats, d.cfg.MaxPending)
}

// Resume prepares d, not yet fed, for a connection seen from its middle
// (proto.Resumer): start-up is taken as over (both directions typed), a
// direction not in sync searches for a message header as after a loss,
// and pairing starts suspended unless paired.
func (d *Decoder) Resume(sync [2]bool, paired bool) {
	d.ready = true
	for dir := range d.s {
		s := &d.s[dir]
		s.typed = true
		if !sync[dir] {
			s.st = stLost
		}
	}
	if !paired {
		d.pair.Suspend()
	}
}

// Starts says whether a message of dir plausibly starts at b[0]
// (proto.Resumer): a type byte of that direction and a length that fits
// it.
func (d *Decoder) Starts(dir proto.Dir, b []byte) proto.Verdict {
	if len(b) == 0 {
		return dec.More
	}
	return start(dir, b)
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

// Close ends the connection: a unit cut short is reported as far as it
// came (Truncated); waiting requests are counted unanswered.
func (d *Decoder) Close() {
	d.Begin()
	for dir := range proto.Dir(2) {
		s := &d.s[dir]
		switch {
		case s.st == stLost:
			d.Skip(dir, int64(s.rs.Drop()))
		case s.open || s.st == stBody || s.hn > 0:
			if !s.open {
				s.unitStart, s.kind = s.msgStart, proto.KindControl
			}
			d.Base.Stats.Truncated++
			d.emit(dir, d.Offset(dir))
		}
	}
	d.pair.Close()
	d.End()
}

func (d *Decoder) gap(dir proto.Dir, n int64) {
	s := &d.s[dir]
	switch {
	case s.st == stOff:
		d.Skip(dir, n)
	case s.st == stLost:
		d.Skip(dir, int64(s.rs.Drop())+n)
	case s.st == stBody && n < s.remain:
		s.remain -= n
		s.broken = true
	case s.st == stBody && n == s.remain:
		s.remain, s.broken, s.st = 0, true, stHead
		d.message(dir, d.Offset(dir))
	default:
		d.lose(dir, d.Offset(dir)-n)
		d.Skip(dir, n)
	}
}

// lose gives up framing in dir at offset at; the unit in progress is
// skipped.
func (d *Decoder) lose(dir proto.Dir, at int64) {
	s := &d.s[dir]
	switch {
	case s.open:
		d.Skip(dir, at-s.unitStart)
	case s.st == stBody || s.hn > 0:
		d.Skip(dir, at-s.msgStart)
	}
	d.Lost(dir)
	d.st.Malformed++
	d.pair.Lose()
	typed := s.typed
	rs, body := s.rs, s.body[:0]
	*s = side{rs: rs, body: body, typed: typed, st: stLost}
}

// stop ends framing in both directions (encryption or replication
// follows): bytes of a message or unit still open are skipped.
func (d *Decoder) stop() {
	for dir := range proto.Dir(2) {
		s := &d.s[dir]
		switch {
		case s.st == stLost:
			d.Skip(dir, int64(s.rs.Drop()))
		case s.open:
			d.Skip(dir, d.Offset(dir)-s.unitStart)
		case s.hn > 0 || s.st == stBody:
			d.Skip(dir, d.Offset(dir)-s.msgStart)
		}
		rs, body := s.rs, s.body[:0]
		*s = side{rs: rs, body: body, st: stOff}
	}
}

func (d *Decoder) consume(dir proto.Dir, off int64, data []byte) {
	for len(data) > 0 {
		s := &d.s[dir]
		var n int
		switch s.st {
		case stOff:
			d.Skip(dir, int64(len(data)))
			return
		case stLost:
			d.resync(dir, off, data)
			return
		case stHead:
			n = d.head(dir, off, data)
		case stBody:
			n = d.readBody(dir, off, data)
		}
		data, off = data[n:], off+int64(n)
	}
}

func (d *Decoder) resync(dir proto.Dir, off int64, data []byte) {
	s := &d.s[dir]
	test := serverStart
	if dir == proto.FromClient {
		test = clientStart
	}
	pend := int64(s.rs.Pending())
	skipped, replay, rest, found := s.rs.Find(data, 6, test)
	d.Skip(dir, int64(skipped))
	if !found {
		return
	}
	d.Found(dir)
	s.st, s.typed = stHead, true
	start := off - pend + int64(skipped)
	d.consume(dir, start, replay)
	d.consume(dir, off+int64(len(data)-len(rest)), rest)
}

// head reads a message header: a type byte (once typed) and a length.
func (d *Decoder) head(dir proto.Dir, off int64, data []byte) int {
	s := &d.s[dir]
	if s.hn == 0 {
		s.msgStart = off
		if dir == proto.FromServer && d.sslPending {
			return d.sslAnswer(off, data[0])
		}
	}
	want := 4
	if s.typed {
		want = 5
	}
	n := copy(s.hdr[s.hn:want], data)
	s.hn += n
	if s.hn < want {
		return n
	}
	length := int64(binary.BigEndian.Uint32(s.hdr[want-4 : want]))
	s.typ = 0
	if s.typed {
		s.typ = s.hdr[0]
	}
	if length < 4 || length > maxMessage || (!s.typed && (length < 8 || length > maxStartup)) || !knownType(dir, s.typ, s.typed) {
		d.lose(dir, off+int64(n))
		return n
	}
	s.hn = 0
	s.remain = length - 4
	s.keep = d.keepFor(dir, s.typ, s.typed)
	s.body, s.broken = s.body[:0], false
	s.st = stBody
	if s.remain == 0 {
		s.st = stHead
		d.message(dir, off+int64(n))
	}
	return n
}

// sslAnswer reads the server's one-byte answer to an SSLRequest or
// GSSENCRequest: 'N', or 'S' or 'G' when encryption follows. Anything else
// (an ErrorResponse from a server that knows neither) is read as a
// message.
func (d *Decoder) sslAnswer(off int64, c byte) int {
	d.sslPending = false
	if c != 'N' && c != 'S' && c != 'G' {
		return 0
	}
	d.Emit(proto.Unit{Dir: proto.FromServer, Kind: proto.KindControl, Start: off, End: off + 1})
	if c != 'N' {
		d.st.Encrypted++
		d.stop()
	}
	return 1
}

// keepFor returns how much of a message's body is kept: what labels and
// tokens need.
func (d *Decoder) keepFor(dir proto.Dir, typ byte, typed bool) int {
	if !typed {
		return 8
	}
	if dir == proto.FromClient {
		switch typ {
		case 'Q', 'P':
			return maxKeep
		case 'B':
			return 1024
		}
		return 0
	}
	switch typ {
	case 'R':
		return 4
	case 'Z':
		return 1
	case 'E', 'C':
		return 256
	case 'D':
		return 512
	}
	return 0
}

func (d *Decoder) readBody(dir proto.Dir, off int64, data []byte) int {
	s := &d.s[dir]
	k := int(min(s.remain, int64(len(data))))
	if !s.broken && len(s.body) < s.keep {
		s.body = append(s.body, data[:min(k, s.keep-len(s.body))]...)
	}
	s.remain -= int64(k)
	if s.remain == 0 {
		s.st = stHead
		d.message(dir, off+int64(k))
	}
	return k
}

// message handles a complete message of dir that ended at end.
func (d *Decoder) message(dir proto.Dir, end int64) {
	d.st.Messages[dir]++
	if dir == proto.FromClient {
		d.clientMessage(end)
	} else {
		d.serverMessage(end)
	}
}

// open starts a unit at the current message unless one is open.
func (d *Decoder) open(dir proto.Dir, kind proto.Kind) {
	s := &d.s[dir]
	if s.open {
		return
	}
	s.open, s.unitStart, s.kind, s.label, s.status = true, s.msgStart, kind, "", 0
	d.BeginMsg(dir)
}

// emit reports the open unit of dir, ending at end.
func (d *Decoder) emit(dir proto.Dir, end int64) {
	s := &d.s[dir]
	u := proto.Unit{Dir: dir, Kind: s.kind, Start: s.unitStart, End: end, Label: s.label, Status: s.status}
	switch {
	case s.kind == proto.KindRequest && dir == proto.FromClient:
		sv := &d.s[proto.FromServer]
		u.Key = d.pair.Request(struct{}{}, !sv.open && sv.st == stHead && sv.hn == 0)
	case s.kind == proto.KindResponse:
		u.Key, _, _ = d.pair.Response()
	}
	s.open, s.copying = false, false
	d.Emit(u)
}

// clientMessage handles a complete client message.
func (d *Decoder) clientMessage(end int64) {
	s := &d.s[proto.FromClient]
	body := s.body
	if !s.typed {
		d.startup(end, body)
		return
	}
	switch s.typ {
	case 'Q':
		d.open(proto.FromClient, proto.KindRequest)
		s.label = d.sql(body) // as far as it was captured: body is a prefix
		d.emit(proto.FromClient, end)
	case 'F':
		d.open(proto.FromClient, proto.KindRequest)
		s.label = "FUNCTION CALL"
		d.emit(proto.FromClient, end)
	case 'P', 'B', 'D', 'E', 'C', 'H':
		d.open(proto.FromClient, proto.KindRequest)
		d.extended(s, body)
	case 'S':
		d.open(proto.FromClient, proto.KindRequest)
		d.emit(proto.FromClient, end)
	case 'd', 'c', 'f':
		d.open(proto.FromClient, proto.KindOneWay)
		s.copying, s.label = true, "COPY data"
		if s.typ != 'd' {
			d.emit(proto.FromClient, end)
		}
	case 'p', 'X':
		d.open(proto.FromClient, proto.KindControl)
		d.emit(proto.FromClient, end)
	}
}

// startup handles an untyped start-up packet.
func (d *Decoder) startup(end int64, body []byte) {
	s := &d.s[proto.FromClient]
	d.open(proto.FromClient, proto.KindControl)
	d.emit(proto.FromClient, end)
	code := uint32(0)
	if len(body) >= 4 {
		code = binary.BigEndian.Uint32(body)
	}
	switch code {
	case codeSSL, codeGSS:
		d.sslPending = true
	case codeCancel:
		s.st = stOff
	default:
		s.typed = true
	}
}

// extended reads a Parse or Bind of an extended-protocol request.
func (d *Decoder) extended(s *side, body []byte) {
	if s.broken {
		return
	}
	switch s.typ {
	case 'P':
		name, rest := cstring(body)
		query, _ := cstring(rest)
		label := d.sql(query)
		if s.label == "" {
			s.label = label
		}
		d.remember(name, label)
	case 'B':
		_, rest := cstring(body)
		stmt, rest := cstring(rest)
		if s.label == "" {
			if len(stmt) == 0 {
				s.label = d.unnamed
			} else {
				s.label = d.stmts[string(stmt)]
			}
		}
		d.bindParams(rest)
	}
}

// remember keeps the label of a prepared statement.
func (d *Decoder) remember(name []byte, label string) {
	if len(name) == 0 {
		d.unnamed = label
		return
	}
	if d.stmts == nil {
		d.stmts = make(map[string]string)
	}
	if _, ok := d.stmts[string(name)]; !ok && len(d.stmts) >= maxStatements {
		clear(d.stmts)
	}
	d.stmts[string(name)] = label
}

// sql returns a query's label and adds its literals as tokens.
func (d *Decoder) sql(q []byte) string {
	if i := indexByte(q, 0); i >= 0 {
		q = q[:i]
	}
	ev := d.Ev[proto.FromClient]
	if ev == nil {
		ev = d.lb // labels only: its tokens are never read
		ev.Reset()
	}
	return ev.SQL(q, evidence.Postgres)
}

// bindParams adds Bind's parameter values as tokens.
func (d *Decoder) bindParams(b []byte) {
	ev := d.Ev[proto.FromClient]
	if ev == nil || len(b) < 2 {
		return
	}
	nf := int(binary.BigEndian.Uint16(b))
	b = b[2:]
	if len(b) < 2*nf+2 {
		return
	}
	formats := b[:2*nf]
	b = b[2*nf:]
	np := int(binary.BigEndian.Uint16(b))
	b = b[2:]
	for i := 0; i < np && len(b) >= 4; i++ {
		n := int32(binary.BigEndian.Uint32(b))
		b = b[4:]
		if n < 0 {
			continue
		}
		if int(n) > len(b) {
			return // cut by the kept prefix
		}
		v := b[:n]
		b = b[n:]
		binaryFmt := false
		switch {
		case nf == 1:
			binaryFmt = formats[1] == 1
		case i < nf:
			binaryFmt = formats[2*i+1] == 1
		}
		if !binaryFmt {
			ev.Token(v)
			continue
		}
		binaryToken(ev, v)
	}
}

// binaryToken adds a binary parameter: 2-, 4- and 8-byte values as
// integers, 16-byte values as UUIDs; other values are skipped.
func binaryToken(ev *evidence.Builder, v []byte) {
	switch len(v) {
	case 2:
		ev.Int(int64(int16(binary.BigEndian.Uint16(v))))
	case 4:
		ev.Int(int64(int32(binary.BigEndian.Uint32(v))))
	case 8:
		ev.Int(int64(binary.BigEndian.Uint64(v)))
	case 16:
		ev.UUID(v)
	}
}

// serverMessage handles a complete server message.
func (d *Decoder) serverMessage(end int64) {
	s := &d.s[proto.FromServer]
	if !d.ready {
		d.startupReply(s, end)
		return
	}
	if !s.open {
		c := &d.s[proto.FromClient]
		waiting := d.pair.Q.Len() > 0 || c.open && !c.copying
		switch {
		case !waiting && s.typ == 'A':
			d.open(proto.FromServer, proto.KindOneWay)
			s.label = "NOTIFY"
			d.emit(proto.FromServer, end)
			return
		case !waiting && (s.typ == 'N' || s.typ == 'S'):
			d.open(proto.FromServer, proto.KindControl)
			d.emit(proto.FromServer, end)
			return
		}
		d.open(proto.FromServer, proto.KindResponse)
	}
	d.responseMessage(s, end)
}

// responseMessage adds a message to the response being read.
func (d *Decoder) responseMessage(s *side, end int64) {
	switch s.typ {
	case 'C':
		if s.label == "" && !s.broken {
			tag, _ := cstring(s.body)
			w := tag
			if i := indexByte(tag, ' '); i >= 0 {
				w = tag[:i]
			}
			s.label = evidence.Intern(w)
		}
	case 'E':
		if !s.broken {
			d.errorLabel(s)
		}
	case 'D':
		d.dataRow(s)
	case 'W':
		d.st.Replication++
		d.emit(proto.FromServer, end)
		d.stop()
		return
	case 'Z':
		d.emit(proto.FromServer, end)
	}
}

// errorLabel labels a response "ERROR <SQLSTATE>" from an ErrorResponse's
// code field.
func (d *Decoder) errorLabel(s *side) {
	b := s.body
	for len(b) > 1 && b[0] != 0 {
		f := b[0]
		v, rest := cstring(b[1:])
		b = rest
		if f != 'C' || len(v) != 5 {
			continue
		}
		d.scratch = append(append(d.scratch[:0], "ERROR "...), v...)
		s.label = evidence.Intern(d.scratch)
		s.status = 1
		if v[0] >= '0' && v[0] <= '9' && v[1] >= '0' && v[1] <= '9' {
			s.status = int(v[0]-'0')*10 + int(v[1]-'0')
		}
		return
	}
}

// dataRow adds a DataRow's text values as tokens, within the first
// MaxBytes of the response.
func (d *Decoder) dataRow(s *side) {
	ev := d.Ev[proto.FromServer]
	if ev == nil || s.broken || s.msgStart-s.unitStart >= int64(ev.Config().MaxBytes) || len(s.body) < 2 {
		return
	}
	n := int(binary.BigEndian.Uint16(s.body))
	b := s.body[2:]
	for range n {
		if len(b) < 4 {
			return
		}
		l := int32(binary.BigEndian.Uint32(b))
		b = b[4:]
		if l < 0 {
			continue
		}
		if int(l) > len(b) {
			return
		}
		ev.Token(b[:l])
		b = b[l:]
	}
}

// startupReply groups the server's start-up messages into control units
// that end at each authentication request, an error, and the first
// ReadyForQuery.
func (d *Decoder) startupReply(s *side, end int64) {
	d.open(proto.FromServer, proto.KindControl)
	switch s.typ {
	case 'R':
		if len(s.body) == 4 && binary.BigEndian.Uint32(s.body) != 0 {
			d.emit(proto.FromServer, end)
		}
	case 'E':
		d.emit(proto.FromServer, end)
	case 'Z':
		d.ready = true
		d.emit(proto.FromServer, end)
	}
}

// knownType reports whether typ is a message type of dir.
func knownType(dir proto.Dir, typ byte, typed bool) bool {
	if !typed {
		return true
	}
	if dir == proto.FromClient {
		return indexByte([]byte("QPBDECHSFXdcfp"), typ) >= 0
	}
	return indexByte([]byte("RKSZTDCEINtn123scGHWAdVv"), typ) >= 0
}

// clientStart tests for a plausible client message header.
func clientStart(b []byte) dec.Verdict {
	return start(proto.FromClient, b)
}

// serverStart tests for a plausible server message header.
func serverStart(b []byte) dec.Verdict {
	return start(proto.FromServer, b)
}

func start(dir proto.Dir, b []byte) dec.Verdict {
	if !knownType(dir, b[0], true) {
		return dec.No
	}
	if len(b) < 6 {
		return dec.More
	}
	n := binary.BigEndian.Uint32(b[1:])
	if n < 4 || n > maxMessage {
		return dec.No
	}
	fixed := "cSH" // CopyDone, Sync, Flush
	if dir == proto.FromServer {
		fixed = "123nsIc" // ParseComplete ... CopyDone
	}
	if indexByte([]byte(fixed), b[0]) >= 0 && n != 4 {
		return dec.No
	}
	if b[0] == 'Z' && dir == proto.FromServer && (n != 5 || (b[5] != 'I' && b[5] != 'T' && b[5] != 'E')) {
		return dec.No
	}
	return dec.Yes
}

// cstring splits a NUL-terminated string off b.
func cstring(b []byte) ([]byte, []byte) {
	if i := indexByte(b, 0); i >= 0 {
		return b[:i], b[i+1:]
	}
	return b, nil
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// Summary returns the counters every decoder shares (see proto.Summary).
func (d *Decoder) Summary() proto.Summary {
	st := d.Stats()
	return st.Stats.Summary(st.Malformed)
}
