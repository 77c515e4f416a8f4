// Package mysql decodes the MySQL and MariaDB client/server protocol of
// one connection into proto Units.
//
// Packets are a 3-byte length, a sequence id and a payload; a payload of
// 0xffffff bytes continues in the next packet, so a logical packet ends at
// the first shorter one. The handshake is control: the server's greeting,
// the client's handshake response (an SSLRequest means TLS follows and
// ends framing, Stats.Encrypted; a negotiated CLIENT_COMPRESS ends it
// after authentication, Stats.Compressed), and the authentication
// exchange up to the server's OK or ERR, as is a COM_CHANGE_USER exchange.
//
// Commands: a client packet with sequence id 0 starts one; the command
// (with its continuation packets) is a request, and the server's packets
// that answer it are its response, paired in order (Key = ordinal): an OK
// or ERR; a result set of column definitions, an EOF unless
// CLIENT_DEPRECATE_EOF was negotiated, rows, and the closing EOF or OK,
// followed by further result sets while SERVER_MORE_RESULTS_EXISTS is
// set; COM_STMT_PREPARE's OK with its parameter and column definitions;
// COM_FIELD_LIST's definitions up to EOF; COM_STATISTICS's one string;
// LOCAL INFILE's request, the client's file packets (one-way, "LOAD DATA
// file") and the final OK. COM_STMT_CLOSE and COM_STMT_SEND_LONG_DATA
// expect no response and are one-way, COM_QUIT is control, and
// COM_BINLOG_DUMP starts replication, which ends framing.
//
// Labels: COM_QUERY and COM_STMT_PREPARE by their SQL ("SELECT users"),
// COM_STMT_EXECUTE by the statement's prepared SQL (the last 256
// statements are kept), other commands by name ("PING", "INIT_DB");
// responses "OK", "ERROR <code>" with Status the error code, or by the
// rows' presence ("rows"). Tokens: the SQL's literals; COM_STMT_EXECUTE's
// parameters (integers as decimal text, strings as sent), using the types
// the execute sends or the last ones sent for the statement; text rows'
// values in the first Evidence.MaxBytes of a response.
//
// Memory per connection: a 4 KiB prefix of one logical packet per
// direction, 256 statements with up to 64 parameter types each, the
// pending commands (Config.MaxPending), a few bytes for resynchronisation.
//
// Gaps: a gap inside a payload keeps the framing; a gap across a header
// loses it. The client resynchronises at a packet with sequence id 0, a
// plausible length and a known command; the server at a plausible first
// packet of a response (sequence id 1: an OK, an ERR with its SQL state
// marker, or a column count). Pairing is then suspended as dec.Serial
// documents.
package mysql

import (
	"encoding/binary"

	"github.com/wirepath/wirepath/proto"
	"github.com/wirepath/wirepath/proto/evidence"
	"github.com/wirepath/wirepath/proto/internal/dec"
)

// Limits of the decoder.
const (
	maxKeep       = 4096 // bytes of a logical packet kept
	maxStatements = 256
	maxParams     = 64
	maxPayload    = 0xffffff
)

// Capability flags.
const (
	capLongPassword    = 1 << 0
	capCompress        = 1 << 5
	capProtocol41      = 1 << 9
	capSSL             = 1 << 11
	capQueryAttributes = 1 << 27
	capDeprecateEOF    = 1 << 24
)

// Status flags.
const (
	statusMoreResults  = 0x0008
	statusCursorExists = 0x0040
)

// Commands.
const (
	comQuit           = 0x01
	comInitDB         = 0x02
	comQuery          = 0x03
	comFieldList      = 0x04
	comStatistics     = 0x09
	comChangeUser     = 0x11
	comBinlogDump     = 0x12
	comStmtPrepare    = 0x16
	comStmtExecute    = 0x17
	comStmtLongData   = 0x18
	comStmtClose      = 0x19
	comBinlogDumpGTID = 0x1e
)

// commandNames are the labels of the commands without SQL.
var commandNames = [...]string{
	0x00: "SLEEP", 0x01: "QUIT", 0x02: "INIT_DB", 0x03: "QUERY", 0x04: "FIELD_LIST", 0x05: "CREATE_DB",
	0x06: "DROP_DB", 0x07: "REFRESH", 0x08: "SHUTDOWN", 0x09: "STATISTICS", 0x0a: "PROCESS_INFO",
	0x0b: "CONNECT", 0x0c: "PROCESS_KILL", 0x0d: "DEBUG", 0x0e: "PING", 0x0f: "TIME", 0x10: "DELAYED_INSERT",
	0x11: "CHANGE_USER", 0x12: "BINLOG_DUMP", 0x13: "TABLE_DUMP", 0x14: "CONNECT_OUT", 0x15: "REGISTER_SLAVE",
	0x16: "STMT_PREPARE", 0x17: "STMT_EXECUTE", 0x18: "STMT_SEND_LONG_DATA", 0x19: "STMT_CLOSE",
	0x1a: "STMT_RESET", 0x1b: "SET_OPTION", 0x1c: "STMT_FETCH", 0x1d: "DAEMON", 0x1e: "BINLOG_DUMP_GTID",
	0x1f: "RESET_CONNECTION",
}

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
	Packets     [2]int64 // logical packets by direction
	Encrypted   int64    // connections that turned to TLS
	Compressed  int64    // connections that negotiated compression (not framed after authentication)
	Replication int64    // connections that started a binlog dump
	SeqErrors   int64    // response packets whose sequence id did not follow the request's
	Malformed   int64    // framing errors that lost sync
}

// Parser states of one direction.
const (
	stHead = iota
	stBody
	stLost
	stOff
)

// Connection phases.
const (
	phGreeting = iota // the server's greeting
	phResponse        // the client's handshake response
	phAuth            // authentication exchange
	phCommand         // commands
)

// side is the packet reader of one direction.
type side struct {
	st       uint8
	hdr      [4]byte
	hn       int
	remain   int64
	seq      byte
	cont     bool // the logical packet continues in the next physical one
	body     []byte
	broken   bool
	msgStart int64 // start of the logical packet
	rs       dec.Resync
	open     bool
	start    int64
}

// reqInfo is what a response needs to know about its command.
type reqInfo struct {
	cmd     byte
	seq     byte // sequence id of the command's last packet
	label   string
	prepare bool
}

// stmt is a prepared statement.
type stmt struct {
	label  string
	params int
	types  []byte // two bytes per parameter, from the last execute that sent them
}

// Response states.
const (
	rsFirst      = iota // the first packet of a result
	rsColumns           // column definitions
	rsColumnsEOF        // the EOF after them
	rsRows              // rows up to EOF or OK
	rsParams            // a prepared statement's parameter definitions
	rsParamsEOF         // the EOF after them
	rsUntilEOF          // COM_FIELD_LIST's definitions up to EOF
	rsInfile            // after a LOCAL INFILE request: up to OK or ERR
)

// Decoder decodes one MySQL connection. It implements proto.Decoder.
type Decoder struct {
	dec.Base
	cfg   Config
	s     [2]side
	pair  dec.Serial[reqInfo]
	st    Stats
	phase uint8
	caps  uint32 // the server's capabilities, then the negotiated ones
	// the response being read
	rs      uint8
	left    int64
	cols    int64
	rinfo   reqInfo
	rhave   bool
	label   string
	status  int
	stmts   map[uint32]*stmt
	scratch []byte
	lb      *evidence.Builder // labels SQL when no evidence is taken
}

var _ proto.Decoder = (*Decoder)(nil)

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
	var keep [2]side
	for i := range d.s {
		keep[i] = side{body: d.s[i].body[:0], rs: d.s[i].rs}
		keep[i].rs.Drop()
	}
	stmts := d.stmts
	clear(stmts)
	*d = Decoder{Base: d.Base, cfg: d.cfg, s: keep, stmts: stmts, scratch: d.scratch, lb: d.lb}
	d.pair.Init(&d.Base.Stats, d.cfg.MaxPending)
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
		case s.open || s.hn > 0 || s.st == stBody || s.cont:
			if !s.open {
				s.start = s.msgStart
			}
			d.Base.Stats.Truncated++
			d.Emit(proto.Unit{Dir: dir, Kind: proto.KindControl, Start: s.start, End: d.Offset(dir)})
			s.open = false
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
		d.physical(dir, d.Offset(dir))
	default:
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
	case s.hn > 0 || s.st == stBody || s.cont:
		d.Skip(dir, at-s.msgStart)
	}
	d.Lost(dir)
	d.st.Malformed++
	d.pair.Lose()
	if dir == proto.FromServer {
		d.rhave = false
	}
	rs, body := s.rs, s.body[:0]
	*s = side{rs: rs, body: body, st: stLost}
}

// stop ends framing in both directions (TLS, compression, replication
// follow): bytes of a packet or unit still open are skipped.
func (d *Decoder) stop() {
	for dir := range proto.Dir(2) {
		s := &d.s[dir]
		switch {
		case s.st == stLost:
			d.Skip(dir, int64(s.rs.Drop()))
		case s.open:
			d.Skip(dir, d.Offset(dir)-s.start)
		case s.hn > 0 || s.st == stBody || s.cont:
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
	skipped, replay, rest, found := s.rs.Find(data, 8, test)
	d.Skip(dir, int64(skipped))
	if !found {
		return
	}
	d.Found(dir)
	s.st = stHead
	if d.phase < phCommand {
		d.phase = phCommand
	}
	start := off - pend + int64(skipped)
	d.consume(dir, start, replay)
	d.consume(dir, off+int64(len(data)-len(rest)), rest)
}

// head reads a packet header.
func (d *Decoder) head(dir proto.Dir, off int64, data []byte) int {
	s := &d.s[dir]
	if s.hn == 0 && !s.cont {
		s.msgStart = off
		s.body, s.broken = s.body[:0], false
	}
	n := copy(s.hdr[s.hn:], data)
	s.hn += n
	if s.hn < 4 {
		return n
	}
	s.hn = 0
	s.remain = int64(s.hdr[0]) | int64(s.hdr[1])<<8 | int64(s.hdr[2])<<16
	if !s.cont {
		s.seq = s.hdr[3]
	}
	s.cont = s.remain == maxPayload
	s.st = stBody
	if s.remain == 0 {
		s.st = stHead
		d.physical(dir, off+int64(n))
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
		s.st = stHead
		d.physical(dir, off+int64(k))
	}
	return k
}

// physical handles the end of a physical packet: a logical packet ends
// with the first one shorter than 0xffffff bytes.
func (d *Decoder) physical(dir proto.Dir, end int64) {
	if d.s[dir].cont {
		return
	}
	d.st.Packets[dir]++
	if dir == proto.FromClient {
		d.clientPacket(end)
	} else {
		d.serverPacket(end)
	}
}

// emit reports a unit of dir from its start (or the packet's) to end.
func (d *Decoder) emit(dir proto.Dir, u proto.Unit) {
	s := &d.s[dir]
	u.Dir = dir
	if s.open {
		u.Start = s.start
	} else {
		u.Start = s.msgStart
	}
	s.open = false
	d.Emit(u)
}

// control reports the current packet of dir as control.
func (d *Decoder) control(dir proto.Dir, end int64) {
	d.BeginMsg(dir)
	d.emit(dir, proto.Unit{Kind: proto.KindControl, End: end})
}

// clientPacket handles a complete logical packet from the client.
func (d *Decoder) clientPacket(end int64) {
	s := &d.s[proto.FromClient]
	switch d.phase {
	case phGreeting, phResponse:
		d.handshakeResponse(end)
		return
	case phAuth:
		d.control(proto.FromClient, end)
		return
	}
	if s.seq != 0 {
		// LOCAL INFILE data after the server asked for the file.
		d.BeginMsg(proto.FromClient)
		d.emit(proto.FromClient, proto.Unit{Kind: proto.KindOneWay, End: end, Label: "LOAD DATA file"})
		return
	}
	d.command(end)
}

// handshakeResponse reads the client's handshake response (or
// SSLRequest).
func (d *Decoder) handshakeResponse(end int64) {
	s := &d.s[proto.FromClient]
	b := s.body
	d.control(proto.FromClient, end)
	if len(b) < 4 {
		d.phase = phAuth
		return
	}
	caps := uint32(binary.LittleEndian.Uint16(b))
	if caps&capProtocol41 != 0 {
		caps = binary.LittleEndian.Uint32(b)
	}
	d.caps &= caps
	if caps&capSSL != 0 && len(b) <= 32 {
		d.st.Encrypted++
		d.stop()
		return
	}
	d.phase = phAuth
}

// command reads a command packet (sequence id 0).
func (d *Decoder) command(end int64) {
	s := &d.s[proto.FromClient]
	b := s.body
	d.BeginMsg(proto.FromClient)
	if len(b) == 0 {
		d.emit(proto.FromClient, proto.Unit{Kind: proto.KindControl, End: end})
		return
	}
	cmd := b[0]
	u := proto.Unit{Kind: proto.KindRequest, End: end}
	if int(cmd) < len(commandNames) {
		u.Label = commandNames[cmd]
	}
	info := reqInfo{cmd: cmd, seq: s.seq}
	switch cmd {
	case comQuery, comStmtPrepare:
		// The kept bytes are a prefix of the payload even when a gap
		// followed them: the SQL is read as far as it was captured.
		q := b[1:]
		if cmd == comQuery && d.caps&capQueryAttributes != 0 && len(q) >= 2 && q[0] == 0 && q[1] == 1 {
			q = q[2:]
		}
		u.Label = d.sql(q)
		info.label, info.prepare = u.Label, cmd == comStmtPrepare
	case comStmtExecute:
		u.Label = d.execute(b[1:], s.broken)
	case comStmtClose, comStmtLongData:
		u.Kind = proto.KindOneWay
		if cmd == comStmtClose && len(b) >= 5 {
			delete(d.stmts, binary.LittleEndian.Uint32(b[1:]))
		}
	case comQuit:
		u.Kind = proto.KindControl
	case comChangeUser:
		u.Kind = proto.KindControl
		d.phase = phAuth
	case comBinlogDump, comBinlogDumpGTID:
		u.Kind = proto.KindControl
		d.st.Replication++
		defer d.stop() // after the command is reported
	}
	if u.Kind == proto.KindRequest {
		sv := &d.s[proto.FromServer]
		u.Key = d.pair.Request(info, !sv.open && sv.hn == 0 && sv.st == stHead && !sv.cont)
	}
	d.emit(proto.FromClient, u)
}

// sql returns a query's label and adds its literals as tokens.
func (d *Decoder) sql(q []byte) string {
	ev := d.Ev[proto.FromClient]
	if ev == nil {
		ev = d.lb
		ev.Reset()
	}
	return ev.SQL(q, evidence.MySQL)
}

// serverPacket handles a complete logical packet from the server.
func (d *Decoder) serverPacket(end int64) {
	s := &d.s[proto.FromServer]
	b := s.body
	switch d.phase {
	case phGreeting:
		d.greeting(b)
		d.control(proto.FromServer, end)
		d.phase = phResponse
		return
	case phResponse, phAuth:
		d.control(proto.FromServer, end)
		if len(b) > 0 && (b[0] == 0x00 || b[0] == 0xff) && d.phase == phAuth {
			d.phase = phCommand
			if d.caps&capCompress != 0 && b[0] == 0x00 {
				d.st.Compressed++
				d.stop()
			}
		}
		return
	}
	if !s.open {
		s.open, s.start = true, s.msgStart
		d.BeginMsg(proto.FromServer)
		d.startResponse()
	}
	if d.result(b, end) {
		key, _, _ := d.pair.Response()
		d.emit(proto.FromServer, proto.Unit{Kind: proto.KindResponse, Key: key, End: end, Label: d.label, Status: d.status})
		d.rhave = false
	}
}

// greeting reads the server's capabilities from its initial handshake.
func (d *Decoder) greeting(b []byte) {
	d.caps = 0
	if len(b) < 1 || b[0] != 10 {
		return
	}
	i := 1
	for i < len(b) && b[i] != 0 {
		i++
	}
	i += 1 + 4 + 8 + 1 // NUL, thread id, auth data part 1, filler
	if i+2 > len(b) {
		return
	}
	d.caps = uint32(binary.LittleEndian.Uint16(b[i:]))
	if i+7 <= len(b) {
		d.caps |= uint32(binary.LittleEndian.Uint16(b[i+5:])) << 16
	}
}

// startResponse begins reading the response to the oldest waiting
// command (or to an unknown one, read as a query's).
func (d *Decoder) startResponse() {
	d.rs, d.label, d.status = rsFirst, "", 0
	d.rinfo, d.rhave = reqInfo{cmd: comQuery}, false
	if _, r, ok := d.pair.Q.Front(); ok {
		d.rinfo, d.rhave = *r, true
		if d.s[proto.FromServer].seq != r.seq+1 {
			d.st.SeqErrors++
		}
	}
}

// deprecateEOF reports whether result sets end without EOF packets.
func (d *Decoder) deprecateEOF() bool { return d.caps&capDeprecateEOF != 0 }

// isEOF reports whether b is an EOF (or, with CLIENT_DEPRECATE_EOF, the
// OK that replaces it) rather than a row starting with 0xfe.
func (d *Decoder) isEOF(b []byte, length int64) bool {
	if len(b) == 0 || b[0] != 0xfe {
		return false
	}
	if d.deprecateEOF() {
		return length < maxPayload
	}
	return length < 9
}

// result advances the response state with packet b; it reports whether
// the response is complete.
func (d *Decoder) result(b []byte, end int64) bool {
	s := &d.s[proto.FromServer]
	length := end - s.msgStart - 4
	if len(b) == 0 {
		return d.rs == rsFirst
	}
	if b[0] == 0xff && (d.rs == rsFirst || d.rs == rsRows || d.rs == rsInfile || d.rs == rsUntilEOF) {
		d.errorLabel(b)
		return true
	}
	switch d.rs {
	case rsFirst:
		return d.first(b)
	case rsColumns, rsParams:
		d.left--
		if d.left > 0 {
			return false
		}
		return d.afterDefinitions()
	case rsColumnsEOF, rsParamsEOF:
		if !d.isEOF(b, length) {
			return false
		}
		if d.rs == rsParamsEOF {
			d.rs = rsColumns
			d.left = d.cols
			return d.cols == 0
		}
		d.rs = rsRows
		return d.rinfo.cmd == comStmtExecute && eofStatus(b)&statusCursorExists != 0
	case rsRows:
		if d.isEOF(b, length) {
			d.label = "rows"
			return d.moreResults(b)
		}
		d.row(b, end)
		return false
	case rsUntilEOF:
		return d.isEOF(b, length)
	case rsInfile:
		if b[0] == 0x00 {
			d.label = "OK"
			return true
		}
	}
	return false
}

// first handles the first packet of a result.
func (d *Decoder) first(b []byte) bool {
	switch {
	case d.rinfo.cmd == comStatistics:
		d.label = "OK"
		return true
	case d.rinfo.cmd == comFieldList:
		d.rs = rsUntilEOF
		return d.isEOF(b, int64(len(b)))
	case b[0] == 0x00 && d.rinfo.prepare && len(b) >= 9:
		d.prepared(b)
		return d.rs == rsFirst
	case b[0] == 0x00 || (b[0] == 0xfe && len(b) < 9):
		d.label = "OK"
		return d.moreResults(b)
	case b[0] == 0xfb:
		d.rs = rsInfile
		return false
	}
	n, _, ok := lenenc(b)
	if !ok || n <= 0 {
		return true
	}
	d.rs, d.left, d.cols = rsColumns, n, n
	return false
}

// afterDefinitions moves past a block of column or parameter definitions.
func (d *Decoder) afterDefinitions() bool {
	params := d.rs == rsParams
	switch {
	case !d.deprecateEOF() && params:
		d.rs = rsParamsEOF
	case !d.deprecateEOF():
		d.rs = rsColumnsEOF
		if d.rinfo.prepare {
			d.rs = rsUntilEOF
		}
	case params:
		d.rs, d.left = rsColumns, d.cols
		return d.cols == 0
	case d.rinfo.prepare:
		return true
	default:
		d.rs = rsRows
	}
	return false
}

// prepared reads COM_STMT_PREPARE's OK and remembers the statement.
func (d *Decoder) prepared(b []byte) {
	id := binary.LittleEndian.Uint32(b[1:])
	cols := int64(binary.LittleEndian.Uint16(b[5:]))
	params := int64(binary.LittleEndian.Uint16(b[7:]))
	d.label = "OK"
	if d.stmts == nil {
		d.stmts = make(map[uint32]*stmt)
	}
	if len(d.stmts) >= maxStatements {
		clear(d.stmts)
	}
	d.stmts[id] = &stmt{label: d.rinfo.label, params: int(min(params, 1<<16))}
	d.cols = cols
	switch {
	case params > 0:
		d.rs, d.left = rsParams, params
	case cols > 0:
		d.rs, d.left = rsColumns, cols
	}
}

// moreResults reads the status flags of an OK or EOF: another result set
// follows when SERVER_MORE_RESULTS_EXISTS is set.
func (d *Decoder) moreResults(b []byte) bool {
	var status uint16
	if b[0] == 0xfe && len(b) < 9 {
		status = eofStatus(b)
	} else {
		_, n1, ok1 := lenenc(b[1:])
		if !ok1 {
			return true
		}
		_, n2, ok2 := lenenc(b[1+n1:])
		if !ok2 || 1+n1+n2+2 > len(b) {
			return true
		}
		status = binary.LittleEndian.Uint16(b[1+n1+n2:])
	}
	if status&statusMoreResults != 0 {
		d.rs = rsFirst
		return false
	}
	return true
}

func eofStatus(b []byte) uint16 {
	if len(b) >= 5 {
		return binary.LittleEndian.Uint16(b[3:])
	}
	return 0
}

// errorLabel labels the response "ERROR <code>" with Status the code.
func (d *Decoder) errorLabel(b []byte) {
	if len(b) < 3 {
		d.label = "ERROR"
		return
	}
	code := int(binary.LittleEndian.Uint16(b[1:]))
	d.scratch = append(d.scratch[:0], "ERROR "...)
	d.scratch = appendInt(d.scratch, code)
	d.label, d.status = evidence.Intern(d.scratch), code
}

func appendInt(b []byte, v int) []byte {
	var t [20]byte
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

// row adds a text row's values as tokens, in the first MaxBytes of the
// response.
func (d *Decoder) row(b []byte, end int64) {
	s := &d.s[proto.FromServer]
	ev := d.Ev[proto.FromServer]
	if ev == nil || s.broken || d.rinfo.cmd != comQuery || s.msgStart-s.start >= int64(ev.Config().MaxBytes) {
		return
	}
	for len(b) > 0 {
		if b[0] == 0xfb { // NULL
			b = b[1:]
			continue
		}
		n, k, ok := lenenc(b)
		if !ok || n < 0 || int64(len(b)-k) < n {
			return
		}
		ev.Token(b[k : k+int(n)])
		b = b[k+int(n):]
	}
}

// lenenc reads a length-encoded integer: its value, its size, and whether
// b holds it. 0xfb (NULL) reads as -1.
func lenenc(b []byte) (int64, int, bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	switch c := b[0]; {
	case c < 0xfb:
		return int64(c), 1, true
	case c == 0xfb:
		return -1, 1, true
	case c == 0xfc && len(b) >= 3:
		return int64(binary.LittleEndian.Uint16(b[1:])), 3, true
	case c == 0xfd && len(b) >= 4:
		return int64(b[1]) | int64(b[2])<<8 | int64(b[3])<<16, 4, true
	case c == 0xfe && len(b) >= 9:
		v := binary.LittleEndian.Uint64(b[1:])
		if v > 1<<62 {
			return 0, 0, false
		}
		return int64(v), 9, true
	}
	return 0, 0, false
}

// clientStart tests for a plausible command packet: sequence id 0, a
// payload of 1 to 16 MiB starting with a known command (COM_QUERY's text
// starting with a visible character).
func clientStart(b []byte) dec.Verdict {
	if len(b) < 6 {
		return dec.More
	}
	n := int(b[0]) | int(b[1])<<8 | int(b[2])<<16
	if n == 0 || b[3] != 0 || int(b[4]) >= len(commandNames) {
		return dec.No
	}
	if b[4] == comQuery && (b[5] < 0x20 || b[5] > 0x7e) && n > 1 {
		return dec.No
	}
	return dec.Yes
}

// serverStart tests for a plausible first packet of a response: sequence
// id 1 and an OK, an ERR with its SQL state marker, or a column count.
func serverStart(b []byte) dec.Verdict {
	if len(b) < 8 {
		return dec.More
	}
	n := int(b[0]) | int(b[1])<<8 | int(b[2])<<16
	if b[3] != 1 || n == 0 {
		return dec.No
	}
	switch p := b[4:]; {
	case p[0] == 0x00 && n >= 7 && n < 1<<16:
		return dec.Yes
	case p[0] == 0xff && n >= 9 && p[3] == '#':
		return dec.Yes
	case n == 1 && p[0] > 0 && p[0] < 0xfb:
		return dec.Yes
	}
	return dec.No
}

// execute reads COM_STMT_EXECUTE: the statement's label, and its
// parameters as tokens.
func (d *Decoder) execute(b []byte, broken bool) string {
	if len(b) < 9 {
		return commandNames[comStmtExecute]
	}
	st := d.stmts[binary.LittleEndian.Uint32(b)]
	if st == nil {
		return commandNames[comStmtExecute]
	}
	if broken || st.params == 0 || st.params > maxParams || d.Ev[proto.FromClient] == nil {
		return st.label
	}
	p := b[9:]
	nb := (st.params + 7) / 8
	if len(p) < nb+1 {
		return st.label
	}
	nulls, bound := p[:nb], p[nb]
	p = p[nb+1:]
	if bound == 1 {
		if len(p) < 2*st.params {
			return st.label
		}
		st.types = append(st.types[:0], p[:2*st.params]...)
		p = p[2*st.params:]
	}
	if len(st.types) < 2*st.params {
		return st.label
	}
	for i := range st.params {
		if nulls[i/8]&(1<<(i%8)) != 0 {
			continue
		}
		var ok bool
		if p, ok = d.param(st.types[2*i], st.types[2*i+1]&0x80 != 0, p); !ok {
			break
		}
	}
	return st.label
}

// param adds one binary parameter value of type t as a token and returns
// the bytes after it; false when the type is unknown or the value cut.
func (d *Decoder) param(t byte, unsigned bool, p []byte) ([]byte, bool) {
	ev := d.Ev[proto.FromClient]
	size := 0
	switch t {
	case 0x01: // TINY
		size = 1
	case 0x02, 0x0d: // SHORT, YEAR
		size = 2
	case 0x03, 0x09, 0x04: // LONG, INT24, FLOAT
		size = 4
	case 0x08, 0x05: // LONGLONG, DOUBLE
		size = 8
	case 0x07, 0x0a, 0x0b, 0x0c: // TIMESTAMP, DATE, TIME, DATETIME: a length byte first
		if len(p) < 1 || len(p) < 1+int(p[0]) {
			return p, false
		}
		return p[1+int(p[0]):], true
	case 0x00, 0x0f, 0x10, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa, 0xfb, 0xfc, 0xfd, 0xfe:
		n, k, ok := lenenc(p)
		if !ok || n < 0 || int64(len(p)-k) < n {
			return p, false
		}
		ev.Token(p[k : k+int(n)])
		return p[k+int(n):], true
	default:
		return p, false
	}
	if len(p) < size {
		return p, false
	}
	if t != 0x04 && t != 0x05 {
		ev.Int(leInt(p[:size], unsigned))
	}
	return p[size:], true
}

// leInt reads a little-endian integer of 1, 2, 4 or 8 bytes.
func leInt(b []byte, unsigned bool) int64 {
	var u uint64
	for i := len(b) - 1; i >= 0; i-- {
		u = u<<8 | uint64(b[i])
	}
	if unsigned || len(b) == 8 {
		return int64(u)
	}
	shift := 64 - 8*len(b)
	return int64(u<<shift) >> shift
}

// Summary returns the counters every decoder shares (see proto.Summary).
func (d *Decoder) Summary() proto.Summary {
	st := d.Stats()
	return st.Stats.Summary(st.Malformed)
}
