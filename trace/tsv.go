package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// TSVColumns are the columns WriteTSV writes, in order.
var TSVColumns = []string{"send_ts", "recv_ts", "src", "dst", "src_node", "dst_node", "bytes", "kind", "call_id", "proto"}

// TSVMagic is the first line of a trace written by WriteTSV; it carries the
// format version.
const TSVMagic = "# wirepath-trace v1"

// ParseError reports a bad line of a trace file.
type ParseError struct {
	File   string // file name, "" for a stream
	Line   int    // 1-based line number
	Column string // column name, "" when the whole line is bad
	Err    error

	fatal bool // the reader cannot go on after it (bad header, version)
}

// Error formats the error as file:line: column: err (no line for errors
// before the first line, such as a bad compression header).
func (e *ParseError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteByte(':')
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, "%d:", e.Line)
	}
	b.WriteByte(' ')
	if e.Column != "" {
		fmt.Fprintf(&b, "column %s: ", e.Column)
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns the underlying error.
func (e *ParseError) Unwrap() error { return e.Err }

// ErrNoHeader is returned for a TSV trace without a column header line.
var ErrNoHeader = errors.New("no header line naming the columns")

// WriteTSV writes t as a TSV trace: the magic line, a "#meta" line with the
// trace's Meta as JSON (when it has any), the header line and one line per
// message. Unknown values are written as "-".
func WriteTSV(w io.Writer, t *Trace) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	bw.WriteString(TSVMagic + "\n")
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
	bw.WriteByte('\n')
	var buf []byte
	for i := range t.Messages {
		buf = AppendTSV(buf[:0], t, &t.Messages[i])
		bw.Write(buf)
	}
	return bw.Flush()
}

func metaEmpty(m *Meta) bool {
	return m.Source == "" && len(m.Offsets) == 0 && len(m.Aliases) == 0 && len(m.Accounting) == 0 && len(m.Warnings) == 0
}

// AppendTSV appends one TSV line (with its newline) for m to buf.
func AppendTSV(buf []byte, t *Trace, m *Message) []byte {
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
	return append(buf, '\n')
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
	sc   *bufio.Scanner
	file string
	line int
	dec  tsvDecoder
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
)

// NewTSVReader returns a reader of the TSV trace in r that interns strings
// into t and reads t.Meta from a "#meta" line. file names r in errors.
func NewTSVReader(r io.Reader, file string, t *Trace) *TSVReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	return &TSVReader{sc: sc, file: file, dec: tsvDecoder{t: t}}
}

// Next reads the next message. It returns io.EOF at the end. A *ParseError
// reports a bad line; the reader can go on with the next line after one.
func (r *TSVReader) Next() (Message, error) {
	for r.sc.Scan() {
		r.line++
		line := r.sc.Bytes()
		if len(line) > 0 && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
		if len(line) == 0 {
			continue
		}
		m := Message{SendTS: NoTime, RecvTS: NoTime}
		ok, err := r.dec.decode(line, &m)
		if err != nil {
			return Message{}, r.position(err)
		}
		if ok {
			return m, nil
		}
	}
	if err := r.sc.Err(); err != nil {
		return Message{}, &ParseError{File: r.file, Line: r.line + 1, Err: err}
	}
	if err := r.dec.finish(); err != nil {
		return Message{}, r.position(err)
	}
	return Message{}, io.EOF
}

func (r *TSVReader) position(err error) error {
	if pe, ok := err.(*ParseError); ok {
		pe.File, pe.Line = r.file, r.line
		return pe
	}
	return &ParseError{File: r.file, Line: r.line, Err: err}
}

// tsvMagicPrefix starts the magic line; the version follows.
const tsvMagicPrefix = "# wirepath-trace"

// tsvDecoder decodes the lines of a TSV trace.
type tsvDecoder struct {
	t      *Trace
	cols   []int // column index -> field id, -1 to ignore
	fields [][]byte
}

func colErr(col string, format string, args ...any) error {
	return &ParseError{Column: col, Err: fmt.Errorf(format, args...)}
}

func fatalErr(err error) error {
	return &ParseError{Err: err, fatal: true}
}

func (d *tsvDecoder) decode(line []byte, m *Message) (bool, error) {
	if line[0] == '#' {
		if rest, ok := bytes.CutPrefix(line, []byte(tsvMagicPrefix)); ok {
			v := string(bytes.TrimSpace(rest))
			if v != "v1" {
				return false, fatalErr(fmt.Errorf("unsupported TSV trace version %q (this build reads v1)", v))
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
		for id, c := range TSVColumns {
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
	return nil
}

func (d *tsvDecoder) parse(line []byte, m *Message) error {
	d.fields = d.fields[:0]
	for {
		i := indexTab(line)
		if i < 0 {
			d.fields = append(d.fields, line)
			break
		}
		d.fields = append(d.fields, line[:i])
		line = line[i+1:]
	}
	if len(d.fields) != len(d.cols) {
		return colErr("", "%d fields, the header names %d", len(d.fields), len(d.cols))
	}
	for i, f := range d.fields {
		id := d.cols[i]
		if id < 0 {
			continue
		}
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
		}
		if err != nil {
			return colErr(TSVColumns[id], "%v", err)
		}
	}
	if !m.SendTS.Known() && !m.RecvTS.Known() {
		return colErr("", "neither send_ts nor recv_ts is known")
	}
	return nil
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
