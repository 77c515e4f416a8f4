package trace

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/wirepath/wirepath/internal/lines"
)

// TSVColumns are the columns of version 1, which WriteTSV always writes,
// in order; the evidence columns of version 2 (EvidenceColumnNames) follow
// them where the trace has evidence.
var TSVColumns = []string{"send_ts", "recv_ts", "src", "dst", "src_node", "dst_node", "bytes", "kind", "call_id", "proto"}

// allColumns are the names of every column a reader knows, by column id:
// TSVColumns, then EvidenceColumnNames.
var allColumns = append(append([]string(nil), TSVColumns...), EvidenceColumnNames...)

// TSVMagic is the first line of a trace written by WriteTSV; it carries the
// format version: 2 when the trace has evidence columns, else TSVMagicV1
// (such a trace is a version-1 trace, which older readers read).
const (
	TSVMagic   = "# wirepath-trace v2"
	TSVMagicV1 = "# wirepath-trace v1"
)

// ParseError reports a bad line of a trace file: the file, the line, the
// byte offset of the line's start and the error, which is a *ColumnError
// when one column (or JSON member) is at fault. Its text is
// file:line: [column name: ]error, without the line for errors before the
// first line (such as a bad compression header).
type ParseError = lines.ParseError

// ColumnError is a bad value in one column of a trace line (the member of
// a JSON Lines record).
type ColumnError struct {
	Column string
	Err    error
}

// Error formats the error as "column name: err".
func (e *ColumnError) Error() string { return "column " + e.Column + ": " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *ColumnError) Unwrap() error { return e.Err }

// ErrNoHeader is returned for a TSV trace without a column header line.
var ErrNoHeader = errors.New("no header line naming the columns")

// ErrTooLarge is returned for a trace beyond what one in-memory trace
// holds: 2^31-1 messages, or 2^32 distinct names, or 64 GiB of their text.
var ErrTooLarge = errors.New("trace too large: more than 2^31-1 messages or 2^32 distinct names")

// WriteTSV writes t as a TSV trace: the magic line, a "#meta" line with the
// trace's Meta as JSON (when it has any), the header line and one line per
// message. The header names TSVColumns and the evidence columns some
// message has a value for (EvidenceColumnsOf); the version is 2 when there
// are any, 1 otherwise. Unknown values are written as "-".
func WriteTSV(w io.Writer, t *Trace) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	cols := EvidenceColumnsOf(t.Messages)
	if cols != 0 {
		bw.WriteString(TSVMagic + "\n")
	} else {
		bw.WriteString(TSVMagicV1 + "\n")
	}
	if !metaEmpty(&t.Meta) {
		js, err := json.Marshal(&t.Meta)
		if err != nil {
			return err
		}
		bw.WriteString("#meta ")
		bw.Write(js)
		bw.WriteByte('\n')
	}
	bw.WriteString(strings.Join(TSVColumns, "\t"))
	for _, n := range cols.Names() {
		bw.WriteByte('\t')
		bw.WriteString(n)
	}
	bw.WriteByte('\n')
	var buf []byte
	for i := range t.Messages {
		buf = AppendTSVWith(buf[:0], t, &t.Messages[i], cols)
		bw.Write(buf)
	}
	return bw.Flush()
}

func metaEmpty(m *Meta) bool {
	return m.Source == "" && !m.SingleClock && len(m.Offsets) == 0 && len(m.Clocks) == 0 && len(m.Aliases) == 0 && len(m.Accounting) == 0 && len(m.Warnings) == 0
}

// AppendTSV appends one TSV line of the columns TSVColumns (with its
// newline) for m to buf.
func AppendTSV(buf []byte, t *Trace, m *Message) []byte {
	return AppendTSVWith(buf, t, m, 0)
}

// AppendTSVWith appends one TSV line (with its newline) for m to buf: the
// columns TSVColumns, then the evidence columns cols, in the order of
// EvidenceColumnNames.
func AppendTSVWith(buf []byte, t *Trace, m *Message, cols EvidenceColumns) []byte {
	buf = appendTS(buf, m.SendTS)
	buf = append(buf, '\t')
	buf = appendTS(buf, m.RecvTS)
	for _, s := range [...]Sym{m.Src, m.Dst, m.SrcNode, m.DstNode} {
		buf = append(buf, '\t')
		buf = appendField(buf, t.Str(s))
	}
	buf = append(buf, '\t')
	buf = strconv.AppendInt(buf, m.Bytes, 10)
	buf = append(buf, '\t')
	buf = append(buf, m.Kind.String()...)
	buf = append(buf, '\t')
	buf = appendField(buf, t.Str(m.CallID))
	buf = append(buf, '\t')
	buf = append(buf, m.Proto.String()...)
	if cols != 0 {
		buf = appendTSVEvidence(buf, t, &m.Evidence, cols)
	}
	return append(buf, '\n')
}

// appendTSVEvidence appends the evidence columns cols of e, each after a
// tab.
func appendTSVEvidence(buf []byte, t *Trace, e *Evidence, cols EvidenceColumns) []byte {
	num := func(v uint64) {
		buf = append(buf, '\t')
		if v == 0 {
			buf = append(buf, '-')
		} else {
			buf = strconv.AppendUint(buf, v, 10)
		}
	}
	if cols&ColConn != 0 {
		num(uint64(e.Conn))
	}
	if cols&ColSeq != 0 {
		num(uint64(e.Seq))
	}
	if cols&ColStream != 0 {
		num(e.Stream)
	}
	if cols&ColSendTask != 0 {
		buf = appendTask(append(buf, '\t'), e.Sender)
	}
	if cols&ColRecvTask != 0 {
		buf = appendTask(append(buf, '\t'), e.Receiver)
	}
	if cols&ColReqID != 0 {
		buf = appendField(append(buf, '\t'), t.Str(e.ReqID))
	}
	if cols&ColLabel != 0 {
		buf = appendField(append(buf, '\t'), t.Str(e.Label))
	}
	if cols&ColTokens != 0 {
		buf = appendTokens(append(buf, '\t'), t.Syms.Tokens(e.Tokens))
	}
	return buf
}

func appendTS(buf []byte, ts Timestamp) []byte {
	if !ts.Known() {
		return append(buf, '-')
	}
	return strconv.AppendInt(buf, int64(ts), 10)
}

// appendField writes s bare, or Go-quoted when it is empty-meaning "-",
// starts with a quote, or holds a tab or line break.
func appendField(buf []byte, s string) []byte {
	if s == "" {
		return append(buf, '-')
	}
	if s == "-" || s[0] == '"' || strings.ContainsAny(s, "\t\r\n") {
		return strconv.AppendQuote(buf, s)
	}
	return append(buf, s...)
}

// TSVReader reads a TSV trace line by line into a Trace's symbol table. It
// is the error-returning form of Reader for the TSV format: Next returns
// every bad line as a *ParseError and can go on after it.
type TSVReader struct {
	sc  *lines.Scanner
	dec tsvDecoder
}

const (
	colSend = iota
	colRecv
	colSrc
	colDst
	colSrcNode
	colDstNode
	colBytes
	colKind
	colCallID
	colProto
	colConn // the evidence columns, in the order of EvidenceColumnNames
	colSeq
	colStream
	colSendTask
	colRecvTask
	colReqID
	colLabel
	colTokens
)

// NewTSVReader returns a reader of the TSV trace in r that interns strings
// into t and reads t.Meta from a "#meta" line. file names r in errors.
func NewTSVReader(r io.Reader, file string, t *Trace) *TSVReader {
	return &TSVReader{sc: lines.NewScanner(r, file, lines.Options{}), dec: newTSVDecoder(t, &evidenceState{})}
}

// Next reads the next message. It returns io.EOF at the end. A *ParseError
// reports a bad line; the reader can go on with the next line after one.
func (r *TSVReader) Next() (Message, error) {
	for r.sc.Scan() {
		m := Message{SendTS: NoTime, RecvTS: NoTime}
		ok, err := r.dec.decode(r.sc.Bytes(), &m)
		if err != nil {
			return Message{}, r.sc.Position(err)
		}
		if ok {
			return m, nil
		}
	}
	if err := r.sc.Err(); err != nil {
		return Message{}, err
	}
	if err := r.dec.finish(); err != nil {
		return Message{}, r.sc.Position(err)
	}
	return Message{}, io.EOF
}

// tsvMagicPrefix starts the magic line; the version follows.
const tsvMagicPrefix = "# wirepath-trace"

// tsvDecoder decodes the lines of a TSV trace.
type tsvDecoder struct {
	t    *Trace
	ev   *evidenceState
	cols []int // column index -> field id, -1 to ignore
	// span is the column index of src when src, dst, src_node and
	// dst_node follow each other (as WriteTSV writes them), else -1: the
	// four fields are then looked up together in cache (from line
	// cacheAfter on).
	span  int
	cache *spanCache
	// canonical is set when the columns start with TSVColumns in order
	// (as WriteTSV writes them): parseCanonical then reads the usual
	// lines, interning names through recent. extra are the ids of the
	// columns after them (the evidence columns WriteTSV writes).
	canonical bool
	extra     []int
	recent    *recentSyms
	lastSpan  *spanEntry // the span cache entry parseCanonical used
	lines     int        // data lines decoded
}

// cacheAfter is the data line from which a decoder uses its caches.
const cacheAfter = 1024

func newTSVDecoder(t *Trace, ev *evidenceState) tsvDecoder {
	return tsvDecoder{t: t, ev: ev, span: -1}
}

// colErr is the error of a bad value in column col, or of the whole line
// when col is "".
func colErr(col string, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	if col == "" {
		return err
	}
	return &ColumnError{Column: col, Err: err}
}

// fatalErr marks an error the reader cannot go on after (a bad header, an
// unsupported version).
func fatalErr(err error) error { return lines.Fatal(err) }

func (d *tsvDecoder) decode(line []byte, m *Message) (bool, error) {
	if line[0] == '#' {
		if rest, ok := bytes.CutPrefix(line, []byte(tsvMagicPrefix)); ok {
			v := string(bytes.TrimSpace(rest))
			if v != "v1" && v != "v2" {
				return false, fatalErr(fmt.Errorf("unsupported TSV trace version %q (this build reads v1 and v2)", v))
			}
		} else if rest, ok := bytes.CutPrefix(line, []byte("#meta ")); ok {
			if err := json.Unmarshal(rest, &d.t.Meta); err != nil {
				return false, colErr("", "bad #meta line: %v", err)
			}
		}
		return false, nil
	}
	if d.cols == nil {
		return false, d.header(line)
	}
	if d.canonical {
		if ok, err := d.parseCanonical(line, m); ok || err != nil {
			return true, err
		}
		*m = Message{SendTS: NoTime, RecvTS: NoTime}
	}
	return true, d.parse(line, m)
}

func (d *tsvDecoder) finish() error {
	if d.cols == nil {
		return fatalErr(ErrNoHeader)
	}
	return nil
}

func (d *tsvDecoder) header(line []byte) error {
	names := strings.Split(string(line), "\t")
	d.cols = make([]int, len(names))
	seen := make(map[int]bool)
	for i, n := range names {
		d.cols[i] = -1
		for id, c := range allColumns {
			if strings.EqualFold(strings.TrimSpace(n), c) {
				if seen[id] {
					d.cols = nil
					return fatalErr(fmt.Errorf("column %s named twice", c))
				}
				d.cols[i] = id
				seen[id] = true
			}
		}
	}
	if !seen[colSend] && !seen[colRecv] {
		d.cols = nil
		return fatalErr(fmt.Errorf("%w: the header must name send_ts or recv_ts (got %q)", ErrNoHeader, line))
	}
	d.span = -1
	d.canonical = len(d.cols) >= len(TSVColumns) &&
		slices.Equal(d.cols[:len(TSVColumns)], []int{colSend, colRecv, colSrc, colDst, colSrcNode, colDstNode, colBytes, colKind, colCallID, colProto})
	d.extra = nil
	if d.canonical {
		d.extra = d.cols[len(TSVColumns):]
	}
	for i := 0; i+3 < len(d.cols); i++ {
		if d.cols[i] == colSrc && d.cols[i+1] == colDst && d.cols[i+2] == colSrcNode && d.cols[i+3] == colDstNode {
			d.span = i
		}
	}
	return nil
}

// counted counts a data line and turns the caches on at line cacheAfter,
// when the trace is long enough to be worth them (about 330 KB).
func (d *tsvDecoder) counted() {
	if d.lines++; d.lines == cacheAfter {
		if d.span >= 0 {
			d.cache = &spanCache{on: true}
		}
		if d.canonical {
			d.recent = &recentSyms{}
		}
	}
}

func (d *tsvDecoder) parse(line []byte, m *Message) error {
	d.counted()
	if n := bytes.Count(line, []byte{'\t'}) + 1; n != len(d.cols) {
		return colErr("", "%d fields, the header names %d", n, len(d.cols))
	}
	for i := 0; ; i++ {
		if i == d.span && d.cache != nil && d.cache.on {
			if rest, last, ok := d.spanSyms(line, m); ok {
				if last {
					break // the span ended the line
				}
				line = rest
				i += 3
				continue
			}
		}
		j := indexTab(line)
		f := line
		if j >= 0 {
			f = line[:j]
		}
		if id := d.cols[i]; id >= 0 {
			if err := d.field(id, f, m); err != nil {
				return colErr(allColumns[id], "%v", err)
			}
		}
		if j < 0 {
			break
		}
		line = line[j+1:]
	}
	if !m.SendTS.Known() && !m.RecvTS.Known() {
		return colErr("", "neither send_ts nor recv_ts is known")
	}
	return nil
}

// parseCanonical parses a line of the canonical columns in one pass, for
// lines written the usual way: numbers without signs, names without
// quotes, kinds and protocols as WriteTSV writes them, then the extra
// (evidence) columns. It reports false, having maybe changed m, for any
// other line, which parse then reads (and reports the errors of); an
// error in an extra column is the line's error, as parse would report it
// (the extra columns may have interned a token set by then, which must not
// be done twice).
func (d *tsvDecoder) parseCanonical(line []byte, m *Message) (bool, error) {
	d.counted()
	var ok bool
	var f []byte
	if f, line, ok = nextField(line, 19); !ok {
		return false, nil
	}
	if m.SendTS, ok = plainTS(f); !ok {
		return false, nil
	}
	if f, line, ok = nextField(line, 19); !ok {
		return false, nil
	}
	if m.RecvTS, ok = plainTS(f); !ok || m.SendTS == NoTime && m.RecvTS == NoTime {
		return false, nil
	}
	if line, ok = d.canonicalNames(line, m); !ok {
		return false, nil
	}
	if f, line, ok = nextField(line, 0); !ok || !canonicalBytes(f, m) {
		return false, nil
	}
	if line, ok = canonicalKind(line, m); !ok {
		return false, nil
	}
	if f, line, ok = nextField(line, 0); !ok {
		return false, nil
	}
	if m.CallID, ok = d.plainSym(f); !ok {
		return false, nil
	}
	if len(d.extra) == 0 {
		// the rest of the line is the protocol, with no tab in it
		m.Proto, ok = canonicalProto(line)
		return ok, nil
	}
	if f, line, ok = nextField(line, 0); !ok {
		return false, nil
	}
	if m.Proto, ok = canonicalProto(f); !ok || bytes.Count(line, []byte{'\t'}) != len(d.extra)-1 {
		return false, nil
	}
	return true, d.extraFields(line, m)
}

// extraFields parses the extra columns of a canonical line: line holds
// exactly their fields.
func (d *tsvDecoder) extraFields(line []byte, m *Message) error {
	for k, id := range d.extra {
		f := line
		if k < len(d.extra)-1 {
			f, line, _ = nextField(line, 0)
		}
		if id < 0 {
			continue
		}
		if err := d.field(id, f, m); err != nil {
			return colErr(allColumns[id], "%v", err)
		}
	}
	return nil
}

// canonicalNames reads src, dst, src_node and dst_node, through the span
// cache once it is on.
func (d *tsvDecoder) canonicalNames(line []byte, m *Message) ([]byte, bool) {
	end := 0
	for k := 0; k < 4; k++ {
		j := bytes.IndexByte(line[end:], '\t')
		if j < 0 {
			return nil, false
		}
		end += j + 1
	}
	span := line[:end-1]
	line = line[end:]
	if d.cache != nil && d.cache.on {
		return line, d.spanAt(span, m)
	}
	var ok bool
	var f []byte
	for _, dst := range [4]*Sym{&m.Src, &m.Dst, &m.SrcNode, &m.DstNode} {
		f, span, _ = nextField(span, 0)
		if *dst, ok = d.plainSym(f); !ok {
			return nil, false
		}
	}
	return line, true
}

// canonicalBytes reads the size: digits or "-".
func canonicalBytes(f []byte, m *Message) bool {
	if isDash(f) {
		return true
	}
	if len(f) == 0 || f[0] < '0' || f[0] > '9' {
		return false
	}
	v, err := parseInt(f)
	m.Bytes = v
	return err == nil
}

// canonicalKind reads the kind as WriteTSV writes it.
func canonicalKind(line []byte, m *Message) ([]byte, bool) {
	switch {
	case bytes.HasPrefix(line, []byte("CALL\t")):
		m.Kind = KindCall
		return line[5:], true
	case bytes.HasPrefix(line, []byte("RETURN\t")):
		m.Kind = KindReturn
		return line[7:], true
	case bytes.HasPrefix(line, []byte("-\t")):
		m.Kind = KindUnknown
		return line[2:], true
	}
	return nil, false
}

// canonicalProto reads the protocol as WriteTSV writes it.
func canonicalProto(f []byte) (Proto, bool) {
	switch string(f) {
	case "tcp":
		return ProtoTCP, true
	case "udp":
		return ProtoUDP, true
	case "-":
		return ProtoUnknown, true
	case "unix":
		return ProtoUnix, true
	case "other":
		return ProtoOther, true
	}
	return ProtoUnknown, false
}

// nextField splits line at its first tab into the field before it and the
// rest after it; guess is the field's likely length (checked first), 0
// for none. It reports false when there is no tab.
func nextField(line []byte, guess int) (f, rest []byte, ok bool) {
	if guess > 0 && guess < len(line) && line[guess] == '\t' && line[0] != '-' {
		return line[:guess], line[guess+1:], true
	}
	for i, c := range line {
		if c == '\t' {
			return line[:i], line[i+1:], true
		}
	}
	return line, nil, false
}

// plainTS parses a timestamp of digits or "-".
func plainTS(f []byte) (Timestamp, bool) {
	if isDash(f) {
		return NoTime, true
	}
	if len(f) == 0 || f[0] < '0' || f[0] > '9' {
		return NoTime, false
	}
	v, err := parseInt(f)
	return Timestamp(v), err == nil
}

// plainSym interns a name without quotes ("-" for none).
func (d *tsvDecoder) plainSym(f []byte) (Sym, bool) {
	if len(f) == 0 || f[0] == '"' {
		return 0, false
	}
	if isDash(f) {
		return 0, true
	}
	return d.recent.intern(&d.t.Syms, f), true
}

// recentSyms is a direct-mapped cache of recently interned short names
// in front of a symbol table: a trace names the same few call ids,
// endpoints and nodes over and over within a short time, and the cache
// answers them from a few cache lines (the name is kept in the entry)
// where the symbol table would take several misses.
type recentSyms struct {
	entries [recentSize]recentEntry
}

type recentEntry struct {
	id Sym
	n  uint8
	b  [recentMax]byte
}

const (
	recentSize = 1 << 12
	recentMax  = 27 // longest name cached
)

func (c *recentSyms) intern(syms *Symbols, f []byte) Sym {
	if c == nil || len(f) > recentMax {
		return syms.InternBytes(f)
	}
	e := &c.entries[hashString(unsafe.String(unsafe.SliceData(f), len(f)))&(recentSize-1)]
	if int(e.n) == len(f) && e.id != 0 && string(e.b[:e.n]) == string(f) {
		return e.id
	}
	id := syms.InternBytes(f)
	e.id, e.n = id, uint8(len(f))
	copy(e.b[:], f)
	return id
}

// field parses field f of column id into m.
func (d *tsvDecoder) field(id int, f []byte, m *Message) error {
	var err error
	switch id {
	case colSend:
		m.SendTS, err = parseTS(f)
	case colRecv:
		m.RecvTS, err = parseTS(f)
	case colSrc:
		m.Src, err = d.sym(f)
	case colDst:
		m.Dst, err = d.sym(f)
	case colSrcNode:
		m.SrcNode, err = d.sym(f)
	case colDstNode:
		m.DstNode, err = d.sym(f)
	case colCallID:
		m.CallID, err = d.sym(f)
	case colBytes:
		if !isDash(f) {
			m.Bytes, err = parseInt(f)
			if err == nil && m.Bytes < 0 {
				err = errors.New("negative size")
			}
		}
	case colKind:
		m.Kind, err = kindFromBytes(f)
	case colProto:
		m.Proto, err = protoFromBytes(f)
	default:
		return d.evidenceField(id, f, &m.Evidence)
	}
	return err
}

// evidenceField parses field f of evidence column id into e.
func (d *tsvDecoder) evidenceField(id int, f []byte, e *Evidence) error {
	var err error
	switch id {
	case colConn:
		var v uint64
		v, err = optUint(f, math.MaxUint32)
		e.Conn = uint32(v)
	case colSeq:
		var v uint64
		v, err = optUint(f, math.MaxUint32)
		e.Seq = uint32(v)
	case colStream:
		e.Stream, err = optUint(f, math.MaxUint64)
	case colSendTask:
		e.Sender, err = parseTask(f)
	case colRecvTask:
		e.Receiver, err = parseTask(f)
	case colReqID:
		e.ReqID, err = d.boundedSym(f, MaxReqID)
	case colLabel:
		e.Label, err = d.boundedSym(f, MaxLabel)
	case colTokens:
		e.Tokens, err = d.ev.tokens(&d.t.Syms, f)
	}
	return err
}

// optUint parses a number of at most lim, or "-" for 0.
func optUint(f []byte, lim uint64) (uint64, error) {
	if isDash(f) {
		return 0, nil
	}
	return parseUint(f, lim)
}

// boundedSym interns a name (Go-quoted or not, "-" for none) of at most
// limit bytes; a longer one is dropped and counted.
func (d *tsvDecoder) boundedSym(f []byte, limit int) (Sym, error) {
	if isDash(f) || len(f) == 0 {
		return 0, nil
	}
	if f[0] == '"' {
		s, err := strconv.Unquote(string(f))
		if err != nil {
			return 0, fmt.Errorf("bad quoted field %s", f)
		}
		f = []byte(s)
	}
	return d.ev.bounded(&d.t.Syms, f, limit), nil
}

// spanSyms reads the four fields src, dst, src_node and dst_node at the
// start of line through the span cache. It returns the rest of the line
// after them (without the tab) or last when they end the line, and false
// when the cache cannot answer; then nothing was consumed.
func (d *tsvDecoder) spanSyms(line []byte, m *Message) (rest []byte, last, ok bool) {
	end := 0
	for k := 0; k < 4; k++ {
		j := bytes.IndexByte(line[end:], '\t')
		if j < 0 {
			if k < 3 {
				return nil, false, false
			}
			end = len(line)
			break
		}
		end += j
		if k < 3 {
			end++
		}
	}
	if !d.spanAt(line[:end], m) {
		return nil, false, false
	}
	if end == len(line) {
		return nil, true, true
	}
	return line[end+1:], false, true
}

// spanAt sets the four Syms of span, the fields src, dst, src_node and
// dst_node with their tabs, through the span cache. It reports false when
// the cache cannot answer.
func (d *tsvDecoder) spanAt(span []byte, m *Message) bool {
	c := d.cache
	e, h := c.lookup(span)
	if e == nil {
		// Parse the four fields the usual way and remember them.
		var syms [4]Sym
		f := span
		for k := range syms {
			j := indexTab(f)
			g := f
			if j >= 0 {
				g = f[:j]
				f = f[j+1:]
			}
			if len(g) > 0 && g[0] == '"' {
				return false // quoted: the cache keeps plain names only
			}
			s, err := d.sym(g)
			if err != nil {
				return false
			}
			syms[k] = s
		}
		e = c.insert(h, span, syms)
	}
	m.Src, m.Dst, m.SrcNode, m.DstNode = e.syms[0], e.syms[1], e.syms[2], e.syms[3]
	d.lastSpan = e
	return true
}

// spanCache remembers the Syms of recently seen (src, dst, src_node,
// dst_node) spans of TSV lines: one hash and one comparison of the span
// instead of four lookups in the symbol table. It turns itself off when
// most lookups miss (traces where most connections are new).
type spanCache struct {
	entries      [spanCacheSize]spanEntry
	text         []byte // the spans of the entries
	on           bool
	hits, misses int
}

type spanEntry struct {
	h      uint64
	off, n uint32 // the span is text[off:off+n]
	syms   [4]Sym
	// the flow ReadTable last found for the span, with its kind,
	// protocol and connection
	flow    uint32
	conn    uint32
	kind    Kind
	proto   Proto
	flowSet bool
}

const (
	spanCacheSize = 1 << 12
	spanCacheText = 1 << 20 // text kept before the cache starts afresh
)

func (c *spanCache) lookup(span []byte) (*spanEntry, uint64) {
	h := hashString(unsafe.String(unsafe.SliceData(span), len(span)))
	e := &c.entries[h&(spanCacheSize-1)]
	if e.h == h && int(e.n) == len(span) && e.n > 0 && bytes.Equal(c.text[e.off:e.off+e.n], span) {
		c.hits++
		return e, h
	}
	c.misses++
	if c.misses == 1<<14 && c.hits < c.misses {
		c.on = false
	}
	return nil, h
}

func (c *spanCache) insert(h uint64, span []byte, syms [4]Sym) *spanEntry {
	if len(c.text)+len(span) > spanCacheText {
		c.entries = [spanCacheSize]spanEntry{}
		c.text = c.text[:0]
	}
	e := &c.entries[h&(spanCacheSize-1)]
	*e = spanEntry{h: h, off: uint32(len(c.text)), n: uint32(len(span)), syms: syms}
	c.text = append(c.text, span...)
	return e
}

func indexTab(b []byte) int {
	for i, c := range b {
		if c == '\t' {
			return i
		}
	}
	return -1
}

func isDash(f []byte) bool { return len(f) == 1 && f[0] == '-' }

func parseTS(f []byte) (Timestamp, error) {
	if isDash(f) {
		return NoTime, nil
	}
	v, err := parseInt(f)
	if err != nil {
		return NoTime, err
	}
	if Timestamp(v) == NoTime {
		return NoTime, errors.New("timestamp out of range")
	}
	return Timestamp(v), nil
}

// parseInt parses a decimal int64 without allocating.
func parseInt(f []byte) (int64, error) {
	n := len(f)
	if n == 19 {
		// a nanosecond timestamp of this century: 8 + 8 + 3 digits
		hi, ok1 := digits8(f)
		mid, ok2 := digits8(f[8:])
		d0, d1, d2 := f[16]-'0', f[17]-'0', f[18]-'0'
		if ok1 && ok2 && d0 <= 9 && d1 <= 9 && d2 <= 9 && hi <= 92233720 {
			v := hi*1e11 + mid*1e3 + uint64(d0)*100 + uint64(d1)*10 + uint64(d2)
			if v <= math.MaxInt64 {
				return int64(v), nil
			}
		}
		return parseIntSlow(f)
	}
	if n == 0 || n > 19 {
		return parseIntSlow(f)
	}
	// Eight digits at a time; 19 digits fit in a uint64.
	var v uint64
	i := 0
	for ; i+8 <= n; i += 8 {
		x, ok := digits8(f[i:])
		if !ok {
			return parseIntSlow(f)
		}
		v = v*1e8 + x
	}
	for ; i < n; i++ {
		d := f[i] - '0'
		if d > 9 {
			return parseIntSlow(f)
		}
		v = v*10 + uint64(d)
	}
	if v > math.MaxInt64 {
		return parseIntSlow(f)
	}
	return int64(v), nil
}

// digits8 parses the eight ASCII digits at the start of b (SWAR: three
// multiplications instead of eight dependent ones), or reports that they
// are not all digits.
func digits8(b []byte) (uint64, bool) {
	v := binary.LittleEndian.Uint64(b)
	const ones = 0x0101010101010101
	if (v|(v-'0'*ones)|(v+0x46*ones))&(0x80*ones) != 0 { // a byte above 0x7f, below '0' or above '9'
		return 0, false
	}
	v -= '0' * ones
	v = (v * 10) + (v >> 8) // pairs of digits in the even bytes
	v = ((v & 0x000000FF000000FF) * (100 + 1000000<<32)) + (((v >> 16) & 0x000000FF000000FF) * (1 + 10000<<32))
	return v >> 32, true
}

// parseIntSlow is parseInt for signs, long numbers and errors.
func parseIntSlow(f []byte) (int64, error) {
	b := f
	neg := false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, fmt.Errorf("%q is not a valid number", f)
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%q is not a valid number", f)
		}
		d := uint64(c - '0')
		if n > (1<<63)/10 || n*10 > 1<<63-d {
			return 0, fmt.Errorf("%q is out of range", f)
		}
		n = n*10 + d
	}
	if neg {
		return -int64(n), nil
	}
	if n > 1<<63-1 {
		return 0, fmt.Errorf("%q is out of range", f)
	}
	return int64(n), nil
}

func (d *tsvDecoder) sym(f []byte) (Sym, error) {
	if isDash(f) || len(f) == 0 {
		return 0, nil
	}
	if f[0] == '"' {
		s, err := strconv.Unquote(string(f))
		if err != nil {
			return 0, fmt.Errorf("bad quoted field %s", f)
		}
		return d.t.Intern(s), nil
	}
	return d.t.Syms.InternBytes(f), nil
}

// kindFromBytes is ParseKind without allocating.
func kindFromBytes(f []byte) (Kind, error) {
	for _, k := range [...]struct {
		name string
		kind Kind
	}{{"CALL", KindCall}, {"RETURN", KindReturn}, {"-", KindUnknown}, {"CALL_SENT", KindCall}, {"RET_SENT", KindReturn}} {
		if string(f) == k.name {
			return k.kind, nil
		}
	}
	return ParseKind(string(f))
}

// protoFromBytes is ParseProto without allocating.
func protoFromBytes(f []byte) (Proto, error) {
	for i, n := range protoNames {
		if string(f) == n {
			return Proto(i), nil
		}
	}
	return ParseProto(string(f))
}
