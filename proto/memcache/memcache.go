// Package memcache decodes the memcached protocols of one connection, text
// (classic and meta commands) and binary, into proto Units. A connection
// whose first client byte is 0x80 is binary, as memcached itself decides.
//
// Text: each command line (with its data block for storage commands) is
// a request; the server's answer is its response: VALUE blocks up to END
// for get, gets, gat and gats (one response whatever the number of keys),
// STAT lines up to END for stats, one line otherwise (with its data block
// for a meta VA). Commands with noreply expect none and are one-way, as is
// quit. Binary: each request packet is a request; a Stat request is
// answered by packets up to one with an empty key.
//
// Quiet commands (meta commands with the q flag, the binary *Q opcodes)
// are answered only on a miss or a failure. A response is paired with the
// first waiting command it can answer when every command before that is
// quiet (and so finished without an answer): in binary by opcode and
// opaque; in text by the meta response's code, its opaque (O) or key (k)
// flag where present. When a quiet text response could answer more than
// one waiting command and carries neither flag, it is reported unpaired
// (Key 0, Stats.Ambiguous) rather than guessed; pairing is exact again at
// the next command that is not quiet.
//
// Labels: "memcache get", "memcache set", "memcache mg"; binary opcodes
// by the same names ("memcache getkq"). Text responses are labelled
// "hit" or "miss" for retrievals and by their first word otherwise
// ("STORED", "NOT_FOUND", "HD", "CLIENT_ERROR"); binary responses by
// "ok" or their status, with Status the binary status code. Tokens: the
// command's keys, and the keys of VALUE lines.
//
// Memory per connection: a 2 KiB line buffer per direction, the waiting
// commands (Config.MaxPending) and the few bytes a resynchronisation
// holds back.
//
// Gaps: a gap inside a data block or a binary body keeps the framing;
// any other gap loses it. Text resynchronises at a line starting with a
// command (client) or response word (server) after a line feed; binary at
// a header with the right magic, a known opcode and consistent lengths.
// Pairing is then suspended as dec.Serial documents.
package memcache

import (
	"bytes"
	"encoding/binary"
	"strings"

	"github.com/wirepath/wirepath/proto"
	"github.com/wirepath/wirepath/proto/evidence"
	"github.com/wirepath/wirepath/proto/internal/dec"
)

// Limits of the decoder.
const (
	maxLine  = 2048    // bytes of a text line
	maxBlock = 1 << 30 // bytes of a data block or binary body
	maxKey   = 250     // bytes of a key
)

// Config configures a Decoder. The zero Config takes evidence with the
// default caps.
type Config struct {
	NoEvidence bool            // take no evidence
	Evidence   evidence.Config // caps of the evidence taken
	MaxPending int             // commands waiting for responses (default 16384)
}

// Stats counts what a Decoder saw.
type Stats struct {
	dec.Stats
	Binary    int64 // connections using the binary protocol
	NoReply   int64 // commands that expect no response (noreply, quit, QuitQ)
	QuietDone int64 // quiet commands that finished without a response
	Ambiguous int64 // quiet responses that could answer several commands
	Malformed int64 // framing errors that lost sync
}

// Parser states of one direction.
const (
	stLine  = iota // reading a text line
	stBlock        // reading a data block (and its CRLF)
	stHead         // reading a binary header
	stBody         // reading a binary body
	stLost
	stOff
)

// side is the parser of one direction.
type side struct {
	st      uint8
	line    []byte
	remain  int64
	hdr     [24]byte
	hn      int
	body    []byte
	broken  bool
	msgOff  int64 // start of the current line or packet
	open    bool  // a unit is being read
	start   int64
	lineEnd bool // skip one '\n' before a resynchronised line
	rs      dec.Resync
}

// req is what the pairing keeps of a waiting command.
type req struct {
	kind   uint8  // what its response looks like (rSingle, ...)
	quiet  bool   // answered only on a miss or failure
	op     byte   // binary opcode, or the meta command's second letter
	opaque uint32 // binary opaque, or a hash of the meta O flag (0 if none)
	key    uint64 // hash of the meta command's key
}

// Response shapes of text commands.
const (
	rSingle = iota // one line
	rValues        // VALUE blocks up to END
	rStats         // lines up to END
)

// Decoder decodes one memcached connection. It implements proto.Decoder.
type Decoder struct {
	dec.Base
	cfg    Config
	s      [2]side
	pair   dec.Serial[req]
	st     Stats
	binary bool
	known  bool // the protocol was decided
	// the response being read
	hits   int
	label  string
	status int
	shape  uint8
	rOpq   uint32
	rKey   uint64
	cur    cmdInfo // the text command being read
	fbuf   [24][]byte
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
	var keep [2]side
	for i := range d.s {
		keep[i] = side{line: d.s[i].line[:0], body: d.s[i].body[:0], rs: d.s[i].rs}
		keep[i].rs.Drop()
	}
	*d = Decoder{Base: d.Base, cfg: d.cfg, s: keep}
	d.pair.Init(&d.Base.Stats, d.cfg.MaxPending)
}

// Resume prepares d, not yet fed, for a connection seen from its middle
// (proto.Resumer): a direction not in sync searches for a line starting
// with a command or response word as after a loss (the text protocol is
// assumed when the client's direction is not in sync: its first byte
// cannot tell); pairing starts suspended unless paired.
func (d *Decoder) Resume(sync [2]bool, paired bool) {
	if !sync[proto.FromClient] {
		d.known = true
	}
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
// (proto.Resumer): a binary header with the direction's magic, a known
// opcode and consistent lengths, or a line beginning with a command word
// (client) or response word (server).
func (d *Decoder) Starts(dir proto.Dir, b []byte) proto.Verdict {
	switch {
	case len(b) == 0:
		return dec.More
	case b[0] >= 0x80:
		return binaryStart(dir)(b)
	}
	return startsWord(dir, b)
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
// came (Truncated), waiting commands are counted unanswered.
func (d *Decoder) Close() {
	d.Begin()
	for dir := range proto.Dir(2) {
		s := &d.s[dir]
		switch {
		case s.st == stLost:
			d.Skip(dir, int64(s.rs.Drop()))
		case s.open || len(s.line) > 0 || s.hn > 0 || s.st == stBlock || s.st == stBody:
			if !s.open {
				s.start = s.msgOff
			}
			d.Base.Stats.Truncated++
			u := proto.Unit{Dir: dir, Kind: proto.KindControl, Start: s.start, End: d.Offset(dir)}
			if s.start < u.End {
				d.Emit(u)
			}
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
	case (s.st == stBlock || s.st == stBody) && n < s.remain:
		s.remain -= n
		s.broken = true
	case s.st == stBody && n == s.remain:
		s.remain, s.broken = 0, true
		d.packet(dir, d.Offset(dir))
	default:
		// A gap that ends a data block exactly still covers its CRLF
		// check; like any other it loses the framing.
		d.lose(dir, d.Offset(dir)-n)
		d.Skip(dir, n)
	}
}

// lose gives up framing in dir at offset at.
func (d *Decoder) lose(dir proto.Dir, at int64) {
	s := &d.s[dir]
	switch {
	case s.open:
		d.Skip(dir, at-s.start)
	case len(s.line) > 0 || s.hn > 0 || s.st == stBlock || s.st == stBody:
		d.Skip(dir, at-s.msgOff)
	}
	d.Lost(dir)
	d.st.Malformed++
	d.pair.Lose()
	if dir == proto.FromServer {
		d.hits, d.label, d.status = 0, "", 0
	}
	s.open, s.line, s.hn, s.remain, s.broken = false, s.line[:0], 0, 0, false
	s.st = stLost
}

func (d *Decoder) consume(dir proto.Dir, off int64, data []byte) {
	if !d.known && len(data) > 0 && dir == proto.FromClient {
		d.known = true
		if data[0] == 0x80 {
			d.toBinary()
		}
	}
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
		case stLine:
			n = d.readLine(dir, off, data)
		case stBlock:
			n = d.readBlock(dir, off, data)
		case stHead:
			n = d.readHead(dir, off, data)
		case stBody:
			n = d.readBody(dir, off, data)
		}
		data, off = data[n:], off+int64(n)
	}
}

// toBinary turns d to the binary protocol at the client's first byte. What
// a server that spoke first sent until then, read as text, is skipped.
func (d *Decoder) toBinary() {
	d.binary = true
	d.st.Binary++
	sv := &d.s[proto.FromServer]
	end := d.Offset(proto.FromServer)
	switch {
	case sv.st == stLost:
		d.Skip(proto.FromServer, int64(sv.rs.Drop()))
	case sv.open:
		d.Skip(proto.FromServer, end-sv.start)
	case len(sv.line) > 0 || sv.st == stBlock:
		d.Skip(proto.FromServer, end-sv.msgOff)
	}
	sv.open, sv.line, sv.remain, sv.broken, sv.lineEnd = false, sv.line[:0], 0, false, false
	d.s[0].st, sv.st = stHead, stHead
}

func (d *Decoder) resync(dir proto.Dir, off int64, data []byte) {
	s := &d.s[dir]
	test := textStart(dir)
	if d.binary {
		test = binaryStart(dir)
	}
	pend := int64(s.rs.Pending())
	skipped, replay, rest, found := s.rs.Find(data, 24, test)
	d.Skip(dir, int64(skipped))
	if !found {
		return
	}
	d.Found(dir)
	s.st = stHead
	if !d.binary {
		s.st, s.lineEnd = stLine, true
	}
	start := off - pend + int64(skipped)
	d.consume(dir, start, replay)
	d.consume(dir, off+int64(len(data)-len(rest)), rest)
}

// readLine reads a text line and handles it once complete.
func (d *Decoder) readLine(dir proto.Dir, off int64, data []byte) int {
	s := &d.s[dir]
	if s.lineEnd {
		// The line feed before a resynchronised line.
		s.lineEnd = false
		d.Skip(dir, 1)
		return 1
	}
	if len(s.line) == 0 {
		s.msgOff = off
	}
	i := bytes.IndexByte(data, '\n')
	chunk := data
	if i >= 0 {
		chunk = data[:i+1]
	}
	if len(s.line)+len(chunk) > maxLine {
		k := maxLine - len(s.line)
		d.lose(dir, off+int64(k))
		return k
	}
	s.line = append(s.line, chunk...)
	if i < 0 {
		return len(chunk)
	}
	end := off + int64(len(chunk))
	line := bytes.TrimRight(s.line, "\r\n")
	var ok bool
	if dir == proto.FromClient {
		ok = d.command(end, line)
	} else {
		ok = d.reply(end, line)
	}
	s.line = s.line[:0]
	if !ok {
		d.lose(dir, end)
	}
	return len(chunk)
}

// readBlock reads a data block and its CRLF (remain counts both).
func (d *Decoder) readBlock(dir proto.Dir, off int64, data []byte) int {
	s := &d.s[dir]
	k := int(min(s.remain, int64(len(data))))
	// The last two bytes must be the CRLF.
	for i := int(max(0, s.remain-2)); i < k; i++ {
		left := s.remain - int64(i)
		if data[i] != "\r\n"[2-left] {
			d.lose(dir, off+int64(i))
			return i
		}
	}
	s.remain -= int64(k)
	if s.remain > 0 {
		return k
	}
	s.st = stLine
	end := off + int64(k)
	if dir == proto.FromClient {
		d.endCommand(end)
	} else {
		d.blockDone(end)
	}
	return k
}

// open starts a unit of dir at the current message unless one is open.
func (d *Decoder) open(dir proto.Dir) {
	s := &d.s[dir]
	if !s.open {
		s.open, s.start = true, s.msgOff
		d.BeginMsg(dir)
	}
}

// text command handling

// cmdInfo describes the command being read, until its unit is emitted.
type cmdInfo struct {
	label string
	kind  proto.Kind
	req   req
}

// command handles a client command line; it reports false if the line is
// no command.
func (d *Decoder) command(end int64, line []byte) bool {
	s := &d.s[proto.FromClient]
	if len(line) == 0 {
		d.Skip(proto.FromClient, end-s.msgOff) // memcached ignores empty lines
		return true
	}
	d.open(proto.FromClient)
	name, args, _ := bytes.Cut(line, []byte(" "))
	ci, block, ok := d.parseCommand(name, args)
	if !ok {
		return false
	}
	d.cur = ci
	if block >= 0 {
		s.remain, s.st = block+2, stBlock
		return true
	}
	d.endCommand(end)
	return true
}

// endCommand reports the command being read, which ended at end.
func (d *Decoder) endCommand(end int64) {
	s := &d.s[proto.FromClient]
	ci := d.cur
	u := proto.Unit{Dir: proto.FromClient, Kind: ci.kind, Start: s.start, End: end, Label: ci.label}
	if ci.kind == proto.KindRequest {
		sv := &d.s[proto.FromServer]
		u.Key = d.pair.Request(ci.req, !sv.open && len(sv.line) == 0 && sv.hn == 0 && (sv.st == stLine || sv.st == stHead))
	}
	s.open = false
	d.Emit(u)
}

// reply handles a server line.
func (d *Decoder) reply(end int64, line []byte) bool {
	s := &d.s[proto.FromServer]
	if !s.open {
		d.open(proto.FromServer)
		d.hits, d.label, d.status, d.rOpq, d.rKey = 0, "", 0, 0, 0
		d.shape = rSingle
		if _, r, ok := d.pair.Q.Front(); ok && d.pair.Q.Len() > 0 {
			d.shape = r.kind
		}
	}
	word, rest, _ := bytes.Cut(line, []byte(" "))
	switch {
	case string(word) == "VALUE":
		d.shape = rValues
		d.hits++
		f := d.fields(rest)
		if len(f) < 3 {
			return false
		}
		n, ok := atoi(f[2])
		if !ok || n > maxBlock {
			return false
		}
		if ev := d.Ev[proto.FromServer]; ev != nil {
			ev.Token(f[0])
		}
		s.remain, s.st = n+2, stBlock
		return true
	case string(word) == "STAT" || d.shape == rStats && string(word) != "END" && !isError(word):
		d.shape = rStats
		return true
	case string(word) == "VA":
		f := d.fields(rest)
		if len(f) < 1 {
			return false
		}
		n, ok := atoi(f[0])
		if !ok || n > maxBlock {
			return false
		}
		d.metaFlags(f[1:])
		d.label = "VA"
		s.remain, s.st = n+2, stBlock
		return true
	case string(word) == "END":
		if d.shape == rValues || d.hits > 0 {
			d.label = "miss"
			if d.hits > 0 {
				d.label = "hit"
			}
		} else {
			d.label = "END"
		}
	default:
		if d.shape == rValues && d.hits > 0 && !isError(word) {
			return false
		}
		d.label = wordLabel(word)
		d.metaFlags(d.fields(rest))
	}
	d.endReply(end, word)
	return true
}

// blockDone handles the end of a VALUE or VA data block.
func (d *Decoder) blockDone(end int64) {
	if d.label == "VA" {
		d.endReply(end, []byte("VA"))
	}
}

// endReply reports the response being read, which ended at end.
func (d *Decoder) endReply(end int64, code []byte) {
	s := &d.s[proto.FromServer]
	key := d.matchText(code)
	s.open = false
	d.Emit(proto.Unit{Dir: proto.FromServer, Kind: proto.KindResponse, Key: key, Start: s.start, End: end, Label: d.label, Status: d.status})
}

// matchText pairs a text response with the command it answers: the first
// waiting command it can answer with only quiet commands before it.
func (d *Decoder) matchText(code []byte) uint64 {
	q := &d.pair.Q
	match, candidates := -1, 0
	for i := range q.Len() {
		_, r := q.At(i)
		if d.answers(r, code) {
			if match < 0 {
				match = i
			}
			candidates++
		}
		if !r.quiet {
			break
		}
	}
	if match < 0 {
		key, _, _ := d.pair.Response() // nothing fits: take the oldest, or none
		return key
	}
	_, r := q.At(match)
	ambiguous := r.quiet && candidates > 1 && d.rOpq == 0 && d.rKey == 0
	for range match {
		q.Pop()
		d.st.QuietDone++
	}
	key, _, _ := d.pair.Response()
	if ambiguous {
		d.st.Ambiguous++
		d.Base.Stats.Unpaired++
		return 0
	}
	return key
}

// answers reports whether a text response with code can answer r.
func (d *Decoder) answers(r *req, code []byte) bool {
	if isError(code) {
		return true
	}
	if r.op == 0 { // a classic command
		return true
	}
	if d.rOpq != 0 && r.opaque != 0 && d.rOpq != r.opaque {
		return false
	}
	if d.rKey != 0 && r.key != 0 && d.rKey != r.key {
		return false
	}
	return strings.Contains(metaCodes[r.op], " "+string(code)+" ")
}

// metaCodes lists the response codes of each meta command (by its second
// letter).
var metaCodes = map[byte]string{
	'g': " VA HD EN ", 's': " HD NS EX NF ", 'd': " HD NF EX ", 'a': " HD VA NF NS EX ", 'n': " MN ", 'e': " ME EN ",
}

// metaFlags reads a meta response's O (opaque) and k (key) flags.
func (d *Decoder) metaFlags(f [][]byte) {
	for _, x := range f {
		if len(x) < 2 {
			continue
		}
		switch x[0] {
		case 'O':
			d.rOpq = hash32(x[1:])
		case 'k':
			d.rKey = hash64(x[1:])
		}
	}
}

func isError(w []byte) bool {
	s := string(w)
	return s == "ERROR" || s == "CLIENT_ERROR" || s == "SERVER_ERROR"
}

// wordLabel returns a response line's first word as its label when it is
// an upper-case code ("STORED", "HD"); a number (incr) gives "".
func wordLabel(w []byte) string {
	if len(w) == 0 || len(w) > 24 {
		return ""
	}
	for _, c := range w {
		if (c < 'A' || c > 'Z') && c != '_' {
			return ""
		}
	}
	return evidence.Intern(w)
}

// fields splits b on spaces into d's reused slice: at most 24 fields.
func (d *Decoder) fields(b []byte) [][]byte {
	f := d.fbuf[:0]
	for x := range bytes.FieldsSeq(b) {
		if len(f) == len(d.fbuf) {
			break
		}
		f = append(f, x)
	}
	return f
}

func atoi(b []byte) (int64, bool) {
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
	return v, true
}

func hash64(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return h | 1
}

func hash32(b []byte) uint32 { return uint32(hash64(b)>>32) | 1 }

// readHead reads a binary header.
func (d *Decoder) readHead(dir proto.Dir, off int64, data []byte) int {
	s := &d.s[dir]
	if s.hn == 0 {
		s.msgOff = off
	}
	n := copy(s.hdr[s.hn:], data)
	s.hn += n
	if s.hn < 24 {
		return n
	}
	h := s.hdr[:]
	total := int64(binary.BigEndian.Uint32(h[8:]))
	if !validHeader(dir, h) {
		d.lose(dir, off+int64(n))
		return n
	}
	s.hn = 0
	s.remain, s.broken, s.body = total, false, s.body[:0]
	if total == 0 {
		d.packet(dir, off+int64(n))
		return n
	}
	s.st = stBody
	return n
}

func (d *Decoder) readBody(dir proto.Dir, off int64, data []byte) int {
	s := &d.s[dir]
	k := int(min(s.remain, int64(len(data))))
	keyEnd := int(s.hdr[4]) + int(binary.BigEndian.Uint16(s.hdr[2:]))
	if !s.broken && len(s.body) < keyEnd {
		s.body = append(s.body, data[:min(k, keyEnd-len(s.body))]...)
	}
	s.remain -= int64(k)
	if s.remain == 0 {
		d.packet(dir, off+int64(k))
	}
	return k
}

// Text commands and their labels.
var textLabels = func() map[string]string {
	m := map[string]string{}
	for _, c := range []string{"get", "gets", "gat", "gats", "set", "add", "replace", "append", "prepend",
		"cas", "delete", "incr", "decr", "touch", "stats", "version", "verbosity", "flush_all", "quit",
		"mg", "ms", "md", "ma", "mn", "me", "lru_crawler", "slabs", "cache_memlimit", "shutdown", "misbehave", "watch"} {
		m[c] = "memcache " + c
	}
	return m
}()

// parseCommand reads a text command line: what it is, the length of the
// data block that follows (-1 if none), and whether it is a command.
func (d *Decoder) parseCommand(name, rest []byte) (cmdInfo, int64, bool) {
	ci := cmdInfo{kind: proto.KindRequest, label: textLabels[string(name)]}
	if ci.label == "" {
		if !word(name) {
			return ci, -1, false
		}
		ci.label = "memcache unknown" // memcached answers ERROR
		return ci, -1, true
	}
	args := d.fields(rest)
	noreply := len(args) > 0 && string(args[len(args)-1]) == "noreply"
	block := int64(-1)
	switch n := string(name); n {
	case "get", "gets", "gat", "gats":
		ci.req.kind = rValues
		for i, k := range args {
			if i > 0 || n[1] != 'a' { // gat's first argument is the expiry
				d.keyToken(k)
			}
		}
	case "set", "add", "replace", "append", "prepend", "cas":
		size, ok := d.storage(args)
		if !ok {
			return ci, -1, false
		}
		block = size
	case "delete", "incr", "decr", "touch":
		if len(args) > 0 {
			d.keyToken(args[0])
		}
	case "stats", "lru_crawler":
		ci.req.kind = multiline(n, args)
	case "quit":
		ci.kind = proto.KindOneWay
		d.st.NoReply++
	case "mg", "ms", "md", "ma", "mn", "me":
		return d.meta(ci, n, args)
	}
	if noreply && ci.kind == proto.KindRequest {
		ci.kind = proto.KindOneWay
		d.st.NoReply++
	}
	return ci, block, true
}

// storage reads a storage command's key and data length.
func (d *Decoder) storage(args [][]byte) (int64, bool) {
	if len(args) < 4 {
		return 0, false
	}
	size, ok := atoi(args[3])
	if !ok || size > maxBlock {
		return 0, false
	}
	d.keyToken(args[0])
	return size, true
}

// multiline returns the response shape of stats and lru_crawler: lines up
// to END, except stats reset and stats detail on|off, and the crawler's
// commands other than metadump, which answer one line.
func multiline(name string, args [][]byte) uint8 {
	first := ""
	if len(args) > 0 {
		first = string(args[0])
	}
	if name == "lru_crawler" {
		if first == "metadump" {
			return rStats
		}
		return rSingle
	}
	if first == "reset" || first == "detail" && len(args) > 1 && string(args[1]) != "dump" {
		return rSingle
	}
	return rStats
}

// keyToken adds a key as a token, and its parts (evidence.Builder.Key).
func (d *Decoder) keyToken(k []byte) {
	if ev := d.Ev[proto.FromClient]; ev != nil && len(k) <= maxKey {
		ev.Key(k)
	}
}

// meta reads a meta command: its key, the q (quiet) and O (opaque) flags,
// and ms's data length.
func (d *Decoder) meta(ci cmdInfo, n string, args [][]byte) (cmdInfo, int64, bool) {
	ci.req.op = n[1]
	block := int64(-1)
	flags := args
	if n != "mn" {
		if len(args) == 0 {
			return ci, -1, false
		}
		d.keyToken(args[0])
		ci.req.key = hash64(args[0])
		flags = args[1:]
	}
	if n == "ms" {
		if len(flags) == 0 {
			return ci, -1, false
		}
		size, ok := atoi(flags[0])
		if !ok || size > maxBlock {
			return ci, -1, false
		}
		block = size
		flags = flags[1:]
	}
	for _, f := range flags {
		switch {
		case len(f) == 1 && f[0] == 'q':
			ci.req.quiet = true
		case len(f) > 1 && f[0] == 'O':
			ci.req.opaque = hash32(f[1:])
		}
	}
	return ci, block, true
}

// word reports whether w looks like a command name.
func word(w []byte) bool {
	if len(w) == 0 || len(w) > 32 {
		return false
	}
	for _, c := range w {
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && c != '_' {
			return false
		}
	}
	return true
}

// Binary opcodes.
var opNames = [...]string{
	0x00: "get", 0x01: "set", 0x02: "add", 0x03: "replace", 0x04: "delete", 0x05: "incr", 0x06: "decr",
	0x07: "quit", 0x08: "flush", 0x09: "getq", 0x0a: "noop", 0x0b: "version", 0x0c: "getk", 0x0d: "getkq",
	0x0e: "append", 0x0f: "prepend", 0x10: "stat", 0x11: "setq", 0x12: "addq", 0x13: "replaceq",
	0x14: "deleteq", 0x15: "incrq", 0x16: "decrq", 0x17: "quitq", 0x18: "flushq", 0x19: "appendq",
	0x1a: "prependq", 0x1b: "verbosity", 0x1c: "touch", 0x1d: "gat", 0x1e: "gatq", 0x20: "sasl_list_mechs",
	0x21: "sasl_auth", 0x22: "sasl_step", 0x23: "gatk", 0x24: "gatkq",
}

var opLabels = func() (t [len(opNames)]string) {
	for i, n := range opNames {
		if n != "" {
			t[i] = "memcache " + n
		}
	}
	return t
}()

// quietOp reports whether a binary opcode is quiet.
func quietOp(op byte) bool {
	switch op {
	case 0x09, 0x0d, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1e, 0x24:
		return true
	}
	return false
}

// Binary response statuses.
var statusNames = map[uint16]string{0x00: "ok", 0x01: "KEY_ENOENT", 0x02: "KEY_EEXISTS", 0x03: "E2BIG",
	0x04: "EINVAL", 0x05: "NOT_STORED", 0x06: "DELTA_BADVAL", 0x07: "NOT_MY_VBUCKET", 0x20: "AUTH_ERROR",
	0x21: "AUTH_CONTINUE", 0x81: "UNKNOWN_COMMAND", 0x82: "ENOMEM", 0x83: "NOT_SUPPORTED", 0x84: "EINTERNAL",
	0x85: "EBUSY", 0x86: "ETMPFAIL"}

// validHeader checks a binary header: the direction's magic, a known
// opcode, no data type, and key and extras within the body.
func validHeader(dir proto.Dir, h []byte) bool {
	magic := byte(0x80)
	if dir == proto.FromServer {
		magic = 0x81
	}
	total := int64(binary.BigEndian.Uint32(h[8:]))
	keyLen := int64(binary.BigEndian.Uint16(h[2:]))
	return h[0] == magic && int(h[1]) < len(opNames) && opNames[h[1]] != "" && h[5] == 0 &&
		int64(h[4])+keyLen <= total && total <= maxBlock && keyLen <= maxKey
}

// packet handles a complete binary packet of dir.
func (d *Decoder) packet(dir proto.Dir, end int64) {
	s := &d.s[dir]
	s.st = stHead
	h := s.hdr[:]
	op := h[1]
	opaque := binary.BigEndian.Uint32(h[12:])
	keyLen := int(binary.BigEndian.Uint16(h[2:]))
	d.open(dir)
	if ev := d.Ev[dir]; ev != nil && !s.broken && keyLen > 0 && len(s.body) >= int(h[4])+keyLen {
		ev.Key(s.body[h[4] : int(h[4])+keyLen])
	}
	if dir == proto.FromClient {
		u := proto.Unit{Dir: dir, Kind: proto.KindRequest, Start: s.start, End: end, Label: opLabels[op]}
		if op == 0x17 { // QuitQ
			u.Kind = proto.KindOneWay
			d.st.NoReply++
		} else {
			sv := &d.s[proto.FromServer]
			u.Key = d.pair.Request(req{op: op, opaque: opaque, quiet: quietOp(op)}, !sv.open && sv.hn == 0 && sv.st == stHead)
		}
		s.open = false
		d.Emit(u)
		return
	}
	if op == 0x10 && keyLen > 0 {
		return // a statistic: the response goes on to the empty one
	}
	status := binary.BigEndian.Uint16(h[6:])
	label := statusNames[status]
	if label == "" {
		label = "error"
	}
	key := d.matchBinary(op, opaque)
	s.open = false
	d.Emit(proto.Unit{Dir: dir, Kind: proto.KindResponse, Key: key, Start: s.start, End: end, Label: label, Status: int(status)})
}

// matchBinary pairs a binary response with the first waiting request of
// the same opcode and opaque that has only quiet requests before it.
func (d *Decoder) matchBinary(op byte, opaque uint32) uint64 {
	q := &d.pair.Q
	for i := range q.Len() {
		_, r := q.At(i)
		if r.op == op && r.opaque == opaque {
			for range i {
				q.Pop()
				d.st.QuietDone++
			}
			break
		}
		if !r.quiet {
			break
		}
	}
	key, _, _ := d.pair.Response()
	return key
}

// Words that start a text command or response line, for resynchronisation.
var (
	clientWords = []string{"get ", "gets ", "gat ", "gats ", "set ", "add ", "replace ", "append ", "prepend ",
		"cas ", "delete ", "incr ", "decr ", "touch ", "stats", "version", "mg ", "ms ", "md ", "ma ", "mn", "me "}
	serverWords = []string{"VALUE ", "END\r", "STORED\r", "NOT_STORED\r", "EXISTS\r", "NOT_FOUND\r",
		"DELETED\r", "TOUCHED\r", "OK\r", "ERROR", "CLIENT_ERROR ", "SERVER_ERROR ", "VERSION ", "STAT ",
		"VA ", "HD", "NS", "EX", "NF", "EN\r", "MN\r"}
)

// textStart returns the resynchronisation test of a text direction: a
// line feed followed by a command (or response) word.
func textStart(dir proto.Dir) func([]byte) dec.Verdict {
	words := clientWords
	if dir == proto.FromServer {
		words = serverWords
	}
	return func(b []byte) dec.Verdict {
		if b[0] != '\n' {
			return dec.No
		}
		return wordStart(words, b[1:])
	}
}

// startsWord tests for a line beginning with a command (client) or
// response (server) word.
func startsWord(dir proto.Dir, b []byte) dec.Verdict {
	if dir == proto.FromServer {
		return wordStart(serverWords, b)
	}
	return wordStart(clientWords, b)
}

// wordStart tests b for a beginning with one of words.
func wordStart(words []string, b []byte) dec.Verdict {
	more := false
	for _, w := range words {
		n := min(len(w), len(b))
		if string(b[:n]) == w[:n] {
			if n == len(w) {
				return dec.Yes
			}
			more = true
		}
	}
	if more {
		return dec.More
	}
	return dec.No
}

// binaryStart returns the resynchronisation test of a binary direction.
func binaryStart(dir proto.Dir) func([]byte) dec.Verdict {
	return func(b []byte) dec.Verdict {
		magic := byte(0x80)
		if dir == proto.FromServer {
			magic = 0x81
		}
		if b[0] != magic {
			return dec.No
		}
		if len(b) < 24 {
			return dec.More
		}
		if validHeader(dir, b) {
			return dec.Yes
		}
		return dec.No
	}
}

// Summary returns the counters every decoder shares (see proto.Summary).
func (d *Decoder) Summary() proto.Summary {
	st := d.Stats()
	return st.Stats.Summary(st.Malformed)
}
