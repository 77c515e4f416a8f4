// Package resp decodes the Redis serialization protocol (RESP2 and RESP3)
// of one connection into proto Units: each command a request, each reply
// its response, paired in order however deep the client pipelines (Key =
// the command's ordinal), inline commands included.
//
// Commands that expect no regular reply are one-way: those sent while
// CLIENT REPLY OFF or after CLIENT REPLY SKIP, and SUBSCRIBE and its
// family on a RESP3 connection (their confirmations are pushes). Server
// messages that answer no command are one-way too: RESP3 pushes, RESP2
// pub/sub messages ("message", "pmessage", "smessage" arrays on a
// subscribed connection) and MONITOR's feed. A RESP2 SUBSCRIBE of k
// channels is answered by k confirmations, reported as one response; an
// UNSUBSCRIBE without arguments by confirmations up to the one whose
// count is 0. SYNC and PSYNC turn the connection into a replication
// stream, which is not framed (Stats.Replication).
//
// Labels: "redis GET", "redis CLIENT SETNAME"; error replies are labelled
// with their code ("ERR", "WRONGTYPE", "MOVED"). Tokens: the command's
// keys (argument positions by command: GET's first, MGET's all, MSET's
// every other, EVAL's numkeys), and the bulk and simple string values of
// replies, within the first Evidence.MaxBytes of each message. AUTH and
// HELLO arguments are never taken.
//
// Memory per connection is bounded: a line buffer of 64 bytes, an inline
// buffer and a capture buffer of at most Evidence.MaxBytes, the 32-level
// aggregate stack, the pending commands (Config.MaxPending), and the few
// bytes a resynchronisation holds back.
//
// Gaps: a gap inside a bulk string's bytes keeps the framing (the value is
// not captured); any other gap loses it. A direction that lost framing
// resynchronises at the next plausible message: for commands, "*<n>\r\n$"
// with n from 1 to 1<<20; for replies, a RESP type byte followed by a
// well-formed line. Pairing is then suspended as dec.Serial documents.
package resp

import (
	"bytes"
	"strings"

	"github.com/wirepath/wirepath/proto"
	"github.com/wirepath/wirepath/proto/evidence"
	"github.com/wirepath/wirepath/proto/internal/dec"
)

// Limits of the decoder.
const (
	maxDepth   = 32       // nesting of aggregates
	maxLine    = 64       // bytes of a line kept
	maxNumLine = 24       // a length or count line longer than this is malformed
	maxInline  = 64 << 10 // an inline command longer than this is malformed (Redis's own limit)
	maxCount   = 1 << 24  // elements of one aggregate (Redis accepts up to 1<<20 per command)
	maxBulk    = 1 << 32  // bytes of one bulk string
	maxCapture = 256      // bytes of one value captured for tokens or labels
)

// Config configures a Decoder. The zero Config takes evidence with the
// default caps and keeps up to dec.DefaultMaxPending commands waiting.
type Config struct {
	NoEvidence bool            // take no evidence (Units' Evidence stays nil)
	Evidence   evidence.Config // caps of the evidence taken
	MaxPending int             // commands waiting for replies (default 16384)
}

// Stats counts what a Decoder saw.
type Stats struct {
	dec.Stats
	Inline      int64 // inline commands
	Pushes      int64 // server messages that answer no command (pushes, pub/sub messages, MONITOR lines)
	NoReply     int64 // commands that expect no reply (CLIENT REPLY OFF or SKIP, RESP3 SUBSCRIBE)
	Replication int64 // connections turned into a replication stream (SYNC, PSYNC)
	Malformed   int64 // framing errors that lost sync
}

// Parser states of one direction.
const (
	stType   = iota // expecting a type byte
	stLine          // reading a line
	stBulk          // reading a bulk string's bytes
	stCRLF          // reading the CRLF after them
	stInline        // reading an inline command
	stLost          // framing lost: looking for the next message
	stOff           // not framed any more
)

// side is the parser of one direction.
type side struct {
	st      uint8
	inMsg   bool
	start   int64 // offset of the message's first byte
	stack   [maxDepth]int64
	sp      int
	typ     byte // the type byte of the line or bulk being read
	line    [maxLine]byte
	ln      int // bytes of line kept
	lineLen int // bytes of the line in all
	remain  int64
	crlf    int
	capture bool   // the current bulk is captured
	cbuf    []byte // captured value
	broken  bool   // a gap fell inside the captured value
	top     byte   // the message's first type byte (after attributes)
	attr    bool   // an attribute is being read before the reply
	idx     int    // elements of the top-level aggregate completed
	elemOff int64  // offset of the current element's first byte
	first   [16]byte
	firstN  int
	lastInt int64
	errCode []byte
	rs      dec.Resync
}

// reqInfo is what a reply needs to know about its command.
type reqInfo struct {
	expect  int32 // replies expected; -1: up to a confirmation with count 0
	monitor bool  // MONITOR: a feed follows its reply
}

// Decoder decodes one RESP connection. It implements proto.Decoder.
type Decoder struct {
	dec.Base
	cfg  Config
	s    [2]side
	pair dec.Serial[reqInfo]
	st   Stats
	// command being read
	cmd     [32]byte
	cmdLen  int
	sub     [24]byte
	subLen  int
	kind    keyKind
	numkeys int64
	nargs   int64
	arg2    [8]byte
	arg2Len int
	// connection state
	resp3      bool
	monitor    bool
	subscribed bool
	replyOff   bool
	skipNext   int // commands whose reply CLIENT REPLY SKIP suppressed
	// reply in progress
	got       int32 // replies of the oldest command seen so far
	respStart int64
	respBytes int64
	inline    []byte
}

var _ proto.Resumer = (*Decoder)(nil)

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
	cb := [2][]byte{d.s[0].cbuf[:0], d.s[1].cbuf[:0]}
	rs := [2]dec.Resync{d.s[0].rs, d.s[1].rs}
	inline := d.inline[:0]
	*d = Decoder{Base: d.Base, cfg: d.cfg, inline: inline}
	for i := range d.s {
		d.s[i].cbuf, d.s[i].rs = cb[i], rs[i]
		d.s[i].rs.Drop()
	}
	d.pair.Init(&d.Base.Stats, d.cfg.MaxPending)
}

// Resume prepares d, not yet fed, for a connection seen from its middle
// (proto.Resumer): a direction not in sync searches for a message start
// as after a loss; pairing starts suspended unless paired.
func (d *Decoder) Resume(sync [2]bool, paired bool) {
	for dir := range d.s {
		if !sync[dir] {
			d.s[dir].st = stLost
		}
	}
	if !paired {
		d.pair.Suspend()
	}
}

// Starts says whether a message of dir plausibly starts at b[0]
// (proto.Resumer): a command array "*<n>\r\n$" from the client (inline
// commands are not taken: any text line would pass), a type byte and a
// well-formed line from the server.
func (d *Decoder) Starts(dir proto.Dir, b []byte) proto.Verdict {
	if len(b) == 0 {
		return dec.More
	}
	if dir == proto.FromClient {
		return commandStart(b)
	}
	return replyStart(b)
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

// Close ends the connection: a message cut short is reported as far as it
// came (Truncated), waiting commands are counted unanswered.
func (d *Decoder) Close() {
	d.Begin()
	for dir := range proto.Dir(2) {
		s := &d.s[dir]
		end := d.Offset(dir)
		switch {
		case s.st == stLost:
			d.Skip(dir, int64(s.rs.Drop()))
		case s.inMsg:
			d.Base.Stats.Truncated++
			d.finish(dir, end)
		}
		if dir == proto.FromServer && d.respBytes > 0 {
			d.Skip(dir, d.respBytes) // confirmations of a command whose last never came
			d.respBytes = 0
		}
	}
	d.pair.Close()
	d.End()
}

// gap handles n missing bytes of dir at the current position.
func (d *Decoder) gap(dir proto.Dir, n int64) {
	s := &d.s[dir]
	switch s.st {
	case stOff:
		d.Skip(dir, n)
		return
	case stLost:
		d.Skip(dir, int64(s.rs.Drop())+n)
		return
	case stBulk, stCRLF:
		left := s.remain + int64(2-s.crlf)
		if n < left {
			s.broken = true
			if n <= s.remain {
				s.remain -= n
			} else {
				s.crlf += int(n - s.remain)
				s.remain, s.st = 0, stCRLF
			}
			return
		}
		if n == left {
			s.broken = true
			s.remain, s.crlf = 0, 0
			s.st = stType
			d.elemDone(dir, d.Offset(dir))
			return
		}
	}
	d.lose(dir, d.Offset(dir)-n)
	d.Skip(dir, n)
}

// lose gives up framing in dir at offset at: the message in progress (from
// its start to at) is skipped.
func (d *Decoder) lose(dir proto.Dir, at int64) {
	s := &d.s[dir]
	if s.inMsg {
		d.Skip(dir, at-s.start)
	}
	if dir == proto.FromServer && d.respBytes > 0 {
		d.Skip(dir, d.respBytes)
		d.respBytes, d.got = 0, 0
	}
	d.Lost(dir)
	d.st.Malformed++
	d.pair.Lose()
	d.resetSide(s)
	s.st = stLost
}

// stop ends framing in both directions (replication follows): bytes of a
// message still open, and replies of a response not yet reported, are
// skipped.
func (d *Decoder) stop() {
	for dir := range proto.Dir(2) {
		s := &d.s[dir]
		switch {
		case s.st == stLost:
			d.Skip(dir, int64(s.rs.Drop()))
		case s.inMsg:
			d.Skip(dir, d.Offset(dir)-s.start)
		}
		d.resetSide(s)
		s.st = stOff
	}
	d.Skip(proto.FromServer, d.respBytes)
	d.respBytes, d.got = 0, 0
}

func (d *Decoder) resetSide(s *side) {
	rs, cb := s.rs, s.cbuf[:0]
	*s = side{rs: rs, cbuf: cb}
}

// consume runs the parser of dir over data, whose first byte is at off.
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
		case stType:
			n = d.typeByte(dir, off, data[0])
		case stLine:
			n = d.readLine(dir, off, data)
		case stBulk:
			n = d.readBulk(s, data)
		case stCRLF:
			n = d.readCRLF(dir, off, data)
		case stInline:
			n = d.readInline(dir, off, data)
		}
		data, off = data[n:], off+int64(n)
	}
}

// resync looks for the next plausible message in dir and decodes from it.
func (d *Decoder) resync(dir proto.Dir, off int64, data []byte) {
	s := &d.s[dir]
	test := replyStart
	if dir == proto.FromClient {
		test = commandStart
	}
	pend := int64(s.rs.Pending())
	skipped, replay, rest, found := s.rs.Find(data, maxLine, test)
	d.Skip(dir, int64(skipped))
	if !found {
		return
	}
	d.Found(dir)
	s.st = stType
	start := off - pend + int64(skipped)
	d.consume(dir, start, replay)
	d.consume(dir, off+int64(len(data)-len(rest)), rest)
}

// typeByte starts an element with its type byte c at off.
func (d *Decoder) typeByte(dir proto.Dir, off int64, c byte) int {
	s := &d.s[dir]
	if !s.inMsg {
		s.inMsg, s.start = true, off
		d.BeginMsg(dir)
		if dir == proto.FromClient {
			d.cmdLen, d.subLen, d.arg2Len, d.nargs, d.numkeys, d.kind = 0, 0, 0, 0, -1, keyFirst
			if c != '*' {
				s.st, s.lineLen = stInline, 0
				d.inline = d.inline[:0]
				return 0
			}
		}
	}
	if !validType(c) || (dir == proto.FromClient && c != '*' && c != '$') {
		d.lose(dir, off)
		return 0
	}
	if dir == proto.FromServer && c != '+' && c != '-' && c != ':' && c != '$' && c != '*' {
		d.resp3 = true
	}
	if s.sp == 0 {
		if c == '|' {
			s.attr = true
		} else {
			s.top = c
		}
	}
	s.typ, s.ln, s.lineLen, s.st, s.elemOff = c, 0, 0, stLine, off
	return 1
}

func validType(c byte) bool {
	return bytes.IndexByte([]byte("+-:$*%~>|_#,(!="), c) >= 0
}

// readLine reads the line of the current element.
func (d *Decoder) readLine(dir proto.Dir, off int64, data []byte) int {
	s := &d.s[dir]
	i := bytes.IndexByte(data, '\n')
	chunk := data
	if i >= 0 {
		chunk = data[:i+1]
	}
	limit := maxInline
	if s.typ != '+' && s.typ != '-' && s.typ != '(' && s.typ != ',' {
		limit = maxNumLine
	}
	if s.lineLen+len(chunk) > limit {
		// Lost at the byte past the limit, wherever the feed was cut;
		// the search for a message start begins there.
		k := limit - s.lineLen
		d.lose(dir, off+int64(k))
		return k
	}
	s.ln += copy(s.line[s.ln:], chunk)
	s.lineLen += len(chunk)
	if i < 0 {
		return len(data)
	}
	end := off + int64(len(chunk))
	line := bytes.TrimRight(s.line[:min(s.ln, maxLine)], "\r\n")
	if !d.lineDone(dir, end, line) {
		d.lose(dir, end)
	}
	return len(chunk)
}

// lineDone handles a complete line; it reports false if it is malformed.
func (d *Decoder) lineDone(dir proto.Dir, end int64, line []byte) bool {
	s := &d.s[dir]
	s.st = stType
	switch s.typ {
	case '+', '-', '(', ',', '#', '_':
		if s.typ == '-' && s.sp == 0 {
			s.errCode = errorCode(line)
		}
		d.value(dir, line, s.lineLen <= maxLine)
		d.elemDone(dir, end)
		return true
	case ':':
		v, ok := parseInt(line)
		s.lastInt = v
		d.elemDone(dir, end)
		return ok
	case '$', '!', '=':
		n, ok := parseInt(line)
		if !ok || n < -1 || n > maxBulk {
			return false
		}
		if n == -1 {
			d.elemDone(dir, end)
			return true
		}
		s.remain, s.crlf, s.st, s.broken = n, 0, stBulk, false
		s.capture = d.wantValue(dir)
		s.cbuf = s.cbuf[:0]
		return true
	}
	// Aggregates.
	n, ok := parseInt(line)
	if !ok || n < -1 || n > maxCount {
		return false
	}
	if s.typ == '%' || s.typ == '|' {
		n *= 2
	}
	if s.sp == 0 && dir == proto.FromClient {
		d.nargs = n
	}
	if n <= 0 {
		d.elemDone(dir, end)
		return true
	}
	if s.sp == maxDepth {
		return false
	}
	s.stack[s.sp] = n
	s.sp++
	return true
}

// readBulk reads a bulk string's bytes, capturing the first of them.
func (d *Decoder) readBulk(s *side, data []byte) int {
	k := int(min(s.remain, int64(len(data))))
	if s.capture && !s.broken && len(s.cbuf) < maxCapture {
		s.cbuf = append(s.cbuf, data[:min(k, maxCapture-len(s.cbuf))]...)
	}
	s.remain -= int64(k)
	if s.remain == 0 {
		s.st, s.crlf = stCRLF, 0
	}
	return k
}

// readCRLF checks the CRLF that ends a bulk string.
func (d *Decoder) readCRLF(dir proto.Dir, off int64, data []byte) int {
	s := &d.s[dir]
	want := byte('\r')
	if s.crlf == 1 {
		want = '\n'
	}
	if data[0] != want {
		d.lose(dir, off)
		return 0
	}
	s.crlf++
	if s.crlf < 2 {
		return 1
	}
	s.st = stType
	if !s.broken && s.remain == 0 {
		d.value(dir, s.cbuf, s.capture)
	}
	d.elemDone(dir, off+1)
	return 1
}

// elemDone closes the element that ended at end, and the aggregates it
// completes; the message is finished when the stack empties (unless what
// completed was an attribute, which precedes the reply it describes).
func (d *Decoder) elemDone(dir proto.Dir, end int64) {
	s := &d.s[dir]
	s.capture = false
	for s.sp > 0 {
		if s.sp == 1 {
			s.idx++
		}
		s.stack[s.sp-1]--
		if s.stack[s.sp-1] > 0 {
			return
		}
		s.sp--
	}
	if s.attr {
		s.attr, s.idx, s.firstN = false, 0, 0
		return
	}
	d.finish(dir, end)
}

// wantValue reports whether the bulk string about to be read is captured:
// a command's name, subcommand or key, a reply's value, within the first
// MaxBytes of the message.
func (d *Decoder) wantValue(dir proto.Dir) bool {
	s := &d.s[dir]
	if dir == proto.FromClient {
		return s.sp == 1 && (s.idx <= 1 || (d.Ev[dir] != nil && s.elemOff-s.start < int64(d.Ev[dir].Config().MaxBytes)))
	}
	if s.sp == 1 && s.idx == 0 {
		return true // a pub/sub message's kind
	}
	return d.Ev[dir] != nil && s.elemOff-s.start < int64(d.Ev[dir].Config().MaxBytes)
}

// value handles a string value: a command's argument or a reply's value.
// whole says whether v is the complete value.
func (d *Decoder) value(dir proto.Dir, v []byte, whole bool) {
	s := &d.s[dir]
	if dir == proto.FromServer {
		if s.sp == 1 && s.idx == 0 {
			s.firstN = copy(s.first[:], v)
		}
		if ev := d.Ev[dir]; ev != nil && whole && s.elemOff-s.start < int64(ev.Config().MaxBytes) {
			ev.Token(v)
		}
		return
	}
	if s.sp != 1 {
		return
	}
	d.arg(s.idx, v, whole)
}

// arg handles argument i of a command.
func (d *Decoder) arg(i int, v []byte, whole bool) {
	switch i {
	case 0:
		d.cmdLen = upperInto(d.cmd[:], v)
		if d.cmdLen > 0 {
			if k, ok := keyKinds[string(d.cmd[:d.cmdLen])]; ok {
				d.kind = k
			}
		}
		return
	case 1:
		d.subLen = upperInto(d.sub[:], v)
	case 2:
		d.arg2Len = upperInto(d.arg2[:], v)
		if d.kind == keyNumkeys {
			d.numkeys, _ = parseInt(v)
		}
	}
	ev := d.Ev[proto.FromClient]
	if ev != nil && whole && isKey(d.kind, i, d.numkeys) {
		ev.Key(v)
	}
}

// upperInto copies v upper-cased into dst if it is a plausible command
// word (letters, digits, '_', '-', '.', '|') that fits; else returns 0.
func upperInto(dst, v []byte) int {
	if len(v) == 0 || len(v) > len(dst) {
		return 0
	}
	for i, c := range v {
		switch {
		case c >= 'a' && c <= 'z':
			dst[i] = c - 'a' + 'A'
		case c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-', c == '.', c == '|':
			dst[i] = c
		default:
			return 0
		}
	}
	return len(v)
}

// readInline reads an inline command: a line of words.
func (d *Decoder) readInline(dir proto.Dir, off int64, data []byte) int {
	s := &d.s[dir]
	i := bytes.IndexByte(data, '\n')
	chunk := data
	if i >= 0 {
		chunk = data[:i+1]
	}
	if s.lineLen+len(chunk) > maxInline {
		k := maxInline - s.lineLen
		d.lose(dir, off+int64(k))
		return k
	}
	if keep := maxCapture*4 - len(d.inline); keep > 0 {
		d.inline = append(d.inline, chunk[:min(keep, len(chunk))]...)
	}
	s.lineLen += len(chunk)
	if i < 0 {
		return len(data)
	}
	end := off + int64(len(chunk))
	d.st.Inline++
	line := bytes.TrimRight(d.inline, "\r\n")
	n := 0
	for w := range bytes.FieldsSeq(line) {
		d.arg(n, w, true)
		n++
	}
	d.nargs = int64(n)
	s.st = stType
	if n == 0 {
		// An empty line: Redis ignores it; it is no command.
		s.inMsg = false
		d.Skip(dir, end-s.start)
		return len(chunk)
	}
	d.finish(dir, end)
	return len(chunk)
}

// finish handles a complete message of dir that ended at end.
func (d *Decoder) finish(dir proto.Dir, end int64) {
	if dir == proto.FromClient {
		d.finishCommand(end)
	} else {
		d.finishReply(end)
	}
	s := &d.s[dir]
	st, rs, cb := s.st, s.rs, s.cbuf[:0]
	*s = side{st: st, rs: rs, cbuf: cb}
	if s.st != stOff && s.st != stLost {
		s.st = stType
	}
}

// finishCommand reports a command and registers the replies it expects.
func (d *Decoder) finishCommand(end int64) {
	s := &d.s[proto.FromClient]
	u := proto.Unit{Dir: proto.FromClient, Kind: proto.KindRequest, Start: s.start, End: end, Label: d.label()}
	info := reqInfo{expect: 1}
	name := string(d.cmd[:d.cmdLen])
	switch name {
	case "SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "UNSUBSCRIBE", "PUNSUBSCRIBE", "SUNSUBSCRIBE":
		unsub := strings.Contains(name, "UNSUB")
		switch {
		case d.resp3:
			u.Kind = proto.KindOneWay // confirmations are pushes
		case d.nargs > 1:
			info.expect = int32(min(d.nargs-1, 1<<20))
		case unsub: // of all channels: up to the confirmation with count 0
			info.expect = -1
		}
		if !unsub {
			d.subscribed = true
		}
	case "MONITOR":
		info.monitor = true
	case "SYNC", "PSYNC":
		u.Kind = proto.KindControl
		d.st.Replication++
		defer d.stop() // after the command is reported
		s.inMsg = false
	case "CLIENT":
		if string(d.sub[:d.subLen]) == "REPLY" {
			d.clientReply(&u)
		}
	}
	if u.Kind == proto.KindRequest && (d.replyOff || d.skipNext > 0) {
		u.Kind = proto.KindOneWay
		d.st.NoReply++
		if d.skipNext > 0 {
			d.skipNext--
		}
	}
	if u.Kind == proto.KindRequest {
		sv := &d.s[proto.FromServer]
		u.Key = d.pair.Request(info, !sv.inMsg && sv.st == stType && d.got == 0)
	}
	d.Emit(u)
}

// clientReply applies CLIENT REPLY ON, OFF or SKIP: OFF and SKIP get no
// reply themselves.
func (d *Decoder) clientReply(u *proto.Unit) {
	switch string(d.arg2[:d.arg2Len]) {
	case "ON":
		d.replyOff = false
	case "OFF":
		d.replyOff = true
		u.Kind = proto.KindOneWay
		d.st.NoReply++
	case "SKIP":
		if !d.replyOff {
			d.skipNext = 1
		}
		u.Kind = proto.KindOneWay
		d.st.NoReply++
	}
}

// finishReply reports a reply: a push, or (part of) the response to the
// oldest waiting command.
func (d *Decoder) finishReply(end int64) {
	s := &d.s[proto.FromServer]
	first := s.first[:s.firstN]
	if s.top == '>' || d.monitor || (d.subscribed && !d.resp3 && s.top == '*' && pubsubMessage(first)) {
		d.st.Pushes++
		d.Emit(proto.Unit{Dir: proto.FromServer, Kind: proto.KindOneWay, Start: s.start, End: end})
		return
	}
	label := ""
	if s.top == '-' {
		label = evidence.Intern(s.errCode)
	}
	_, info, ok := d.pair.Q.Front()
	if !ok {
		key, _, _ := d.pair.Response()
		d.Emit(proto.Unit{Dir: proto.FromServer, Kind: proto.KindResponse, Key: key, Start: s.start, End: end, Label: label})
		return
	}
	if d.got == 0 {
		d.respStart = s.start
	}
	d.got++
	d.respBytes += end - s.start
	if s.top == '*' && s.lastInt == 0 && len(first) > 11 && string(first[len(first)-11:]) == "unsubscribe" {
		d.subscribed = false
	}
	done := s.top == '-' || (info.expect < 0 && s.lastInt <= 0) || (info.expect >= 0 && d.got >= info.expect)
	if !done {
		return
	}
	key, inf, _ := d.pair.Response()
	if inf.monitor && s.top != '-' {
		d.monitor = true
	}
	d.Emit(proto.Unit{Dir: proto.FromServer, Kind: proto.KindResponse, Key: key, Start: d.respStart, End: end, Bytes: d.respBytes, Label: label})
	d.got, d.respBytes = 0, 0
}

func pubsubMessage(kind []byte) bool {
	switch string(kind) {
	case "message", "pmessage", "smessage":
		return true
	}
	return false
}

// label returns "redis CMD" or "redis CMD SUB" for a container command,
// "" when the command name is unreadable.
func (d *Decoder) label() string {
	if d.cmdLen == 0 {
		return ""
	}
	var b [64]byte
	l := append(b[:0], "redis "...)
	l = append(l, d.cmd[:d.cmdLen]...)
	if d.subLen > 0 && containers[string(d.cmd[:d.cmdLen])] {
		l = append(l, ' ')
		l = append(l, d.sub[:d.subLen]...)
	}
	return evidence.Intern(l)
}

// errorCode returns the code of an error reply line: its first word when
// that is upper case ("ERR", "WRONGTYPE", "MOVED"), else "error".
func errorCode(line []byte) []byte {
	w, _, _ := bytes.Cut(line, []byte(" "))
	if len(w) == 0 || len(w) > 24 {
		return []byte("error")
	}
	for _, c := range w {
		if (c < 'A' || c > 'Z') && c != '_' && (c < '0' || c > '9') {
			return []byte("error")
		}
	}
	return w
}

// parseInt parses a RESP decimal integer.
func parseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg || len(b) > 0 && b[0] == '+' {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// commandStart tests for "*<n>\r\n$" with n from 1 to 1<<20.
func commandStart(b []byte) dec.Verdict {
	if b[0] != '*' {
		return dec.No
	}
	i := 1
	for i < len(b) && i < 9 && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	if i+3 > len(b) {
		if i == len(b) {
			return dec.More
		}
		if b[i] == '\r' && (i+1 == len(b) || b[i+1] == '\n') {
			return dec.More
		}
		return dec.No
	}
	if i == 1 || string(b[i:i+3]) != "\r\n$" {
		return dec.No
	}
	n, _ := parseInt(b[1:i])
	if n < 1 || n > 1<<20 || b[1] == '0' {
		return dec.No
	}
	return dec.Yes
}

// replyStart tests for a RESP type byte followed by a well-formed line:
// visible text for simple strings and errors, a number for lengths and
// counts.
func replyStart(b []byte) dec.Verdict {
	c := b[0]
	if !validType(c) {
		return dec.No
	}
	for i := 1; i < len(b) && i < maxLine; i++ {
		x := b[i]
		if x == '\r' {
			if i+1 == len(b) {
				return dec.More
			}
			if b[i+1] != '\n' {
				return dec.No
			}
			return lineVerdict(c, b[1:i])
		}
		if x < 0x20 || x == 0x7f {
			return dec.No
		}
	}
	if len(b) < maxLine {
		return dec.More
	}
	return dec.No
}

func lineVerdict(c byte, line []byte) dec.Verdict {
	switch c {
	case '+', '-', '(', ',':
		if len(line) == 0 && c != '+' {
			return dec.No
		}
		return dec.Yes
	case '_':
		if len(line) == 0 {
			return dec.Yes
		}
		return dec.No
	case '#':
		if len(line) == 1 && (line[0] == 't' || line[0] == 'f') {
			return dec.Yes
		}
		return dec.No
	}
	if n, ok := parseInt(line); ok && n >= -1 && n <= maxBulk {
		return dec.Yes
	}
	return dec.No
}

// Summary returns the counters every decoder shares (see proto.Summary).
func (d *Decoder) Summary() proto.Summary {
	st := d.Stats()
	return st.Stats.Summary(st.Malformed)
}
