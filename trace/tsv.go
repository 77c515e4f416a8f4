package trace

import (
	"bufio"
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
}

// Error formats the error as file:line: column: err.
func (e *ParseError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteByte(':')
	}
	fmt.Fprintf(&b, "%d: ", e.Line)
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

// TSVReader reads a TSV trace line by line into a Trace's symbol table.
type TSVReader struct {
	sc     *bufio.Scanner
	file   string
	line   int
	t      *Trace
	cols   []int // column index -> field id, -1 to ignore
	fields [][]byte
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
	return &TSVReader{sc: sc, file: file, t: t}
}

func (r *TSVReader) errf(col string, format string, args ...any) error {
	return &ParseError{File: r.file, Line: r.line, Column: col, Err: fmt.Errorf(format, args...)}
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
		if line[0] == '#' {
			if rest, ok := strings.CutPrefix(string(line), "#meta "); ok {
				if err := json.Unmarshal([]byte(rest), &r.t.Meta); err != nil {
					return Message{}, r.errf("", "bad #meta line: %v", err)
				}
			}
			continue
		}
		if r.cols == nil {
			if err := r.header(line); err != nil {
				return Message{}, err
			}
			continue
		}
		return r.parse(line)
	}
	if err := r.sc.Err(); err != nil {
		return Message{}, &ParseError{File: r.file, Line: r.line + 1, Err: err}
	}
	if r.cols == nil {
		return Message{}, &ParseError{File: r.file, Line: r.line, Err: ErrNoHeader}
	}
	return Message{}, io.EOF
}

func (r *TSVReader) header(line []byte) error {
	names := strings.Split(string(line), "\t")
	r.cols = make([]int, len(names))
	seen := make(map[int]bool)
	for i, n := range names {
		r.cols[i] = -1
		for id, c := range TSVColumns {
			if strings.EqualFold(strings.TrimSpace(n), c) {
				if seen[id] {
					return r.errf("", "column %s named twice", c)
				}
				r.cols[i] = id
				seen[id] = true
			}
		}
	}
	if !seen[colSend] && !seen[colRecv] {
		r.cols = nil
		return r.errf("", "%v: the header must name send_ts or recv_ts (got %q)", ErrNoHeader, string(line))
	}
	return nil
}

func (r *TSVReader) parse(line []byte) (Message, error) {
	r.fields = r.fields[:0]
	for {
		i := indexTab(line)
		if i < 0 {
			r.fields = append(r.fields, line)
			break
		}
		r.fields = append(r.fields, line[:i])
		line = line[i+1:]
	}
	if len(r.fields) != len(r.cols) {
		return Message{}, r.errf("", "%d fields, the header names %d", len(r.fields), len(r.cols))
	}
	m := Message{SendTS: NoTime, RecvTS: NoTime}
	for i, f := range r.fields {
		id := r.cols[i]
		if id < 0 {
			continue
		}
		name := TSVColumns[id]
		var err error
		switch id {
		case colSend:
			m.SendTS, err = parseTS(f)
		case colRecv:
			m.RecvTS, err = parseTS(f)
		case colSrc, colDst, colSrcNode, colDstNode, colCallID:
			var s Sym
			s, err = r.sym(f)
			switch id {
			case colSrc:
				m.Src = s
			case colDst:
				m.Dst = s
			case colSrcNode:
				m.SrcNode = s
			case colDstNode:
				m.DstNode = s
			case colCallID:
				m.CallID = s
			}
		case colBytes:
			if !isDash(f) {
				m.Bytes, err = strconv.ParseInt(string(f), 10, 64)
				if err == nil && m.Bytes < 0 {
					err = errors.New("negative size")
				}
			}
		case colKind:
			m.Kind, err = ParseKind(string(f))
		case colProto:
			m.Proto, err = ParseProto(string(f))
		}
		if err != nil {
			return Message{}, r.errf(name, "%v", unwrapNum(err))
		}
	}
	if !m.SendTS.Known() && !m.RecvTS.Known() {
		return Message{}, r.errf("", "neither send_ts nor recv_ts is known")
	}
	return m, nil
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
	v, err := strconv.ParseInt(string(f), 10, 64)
	if err != nil {
		return NoTime, err
	}
	if Timestamp(v) == NoTime {
		return NoTime, errors.New("timestamp out of range")
	}
	return Timestamp(v), nil
}

func (r *TSVReader) sym(f []byte) (Sym, error) {
	if isDash(f) || len(f) == 0 {
		return 0, nil
	}
	if f[0] == '"' {
		s, err := strconv.Unquote(string(f))
		if err != nil {
			return 0, fmt.Errorf("bad quoted field %s", f)
		}
		return r.t.Intern(s), nil
	}
	return r.t.Syms.InternBytes(f), nil
}

func unwrapNum(err error) error {
	var ne *strconv.NumError
	if errors.As(err, &ne) {
		return fmt.Errorf("%q is not a valid number", ne.Num)
	}
	return err
}
