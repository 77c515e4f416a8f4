package trace

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/wirepath/wirepath/internal/decompress"
	"github.com/wirepath/wirepath/internal/lines"
)

// ReadOptions controls how a trace is read.
type ReadOptions struct {
	// Strict makes the first bad line an error. Otherwise bad lines are
	// skipped, counted in Meta.Accounting ("trace", "skipped_lines") and the
	// first few reported in Meta.Warnings.
	Strict bool
	// MaxWarnings bounds the warnings recorded for skipped lines (default 10).
	MaxWarnings int
	// Format forces a format; FormatAuto (the zero value) detects it.
	Format Format
	// MaxLine bounds the length of one line (default 16 MiB); a longer line
	// is an error that stops the reader.
	MaxLine int
}

// lineDecoder parses the lines of one format.
type lineDecoder interface {
	// decode parses one non-empty line (without its line break) into m,
	// which the caller has reset. It reports whether the line held a
	// message rather than a header or comment. A bad value in one column
	// is a *ColumnError; errors the reader cannot go on after are marked
	// lines.Fatal.
	decode(line []byte, m *Message) (bool, error)
	// finish is called at the end of the input.
	finish() error
}

// Reader reads a trace one message at a time, in the manner of
// bufio.Scanner, in any format ReadFile understands, gzip- or
// zstd-compressed or not. Strings are interned into the reader's Trace,
// whose Meta it also fills; the reader never holds more than one line.
//
//	r := trace.NewReader(f, "t.tsv", trace.ReadOptions{})
//	defer r.Close()
//	for r.Scan() {
//		m := r.Message()
//		...
//	}
//	if err := r.Err(); err != nil { ... }
//
// Errors are sticky: after Scan returns false, Err says why (nil at the
// end of the input). Bad lines are skipped and counted unless Strict is
// set; I/O errors, lines longer than MaxLine, missing headers and
// unsupported versions always stop the reader.
type Reader struct {
	in      io.Reader
	file    string
	opt     ReadOptions
	t       *Trace
	sc      *lines.Scanner
	dec     lineDecoder
	format  Format
	msg     Message
	ev      evidenceState
	err     error
	n       int64
	closers []func() error
	started bool
	done    bool

	// sizeHint is the size of the input in bytes when known (a regular
	// file); with an uncompressed input, start estimates from it how many
	// messages are coming (estimate).
	sizeHint int64
	estimate int
}

// NewReader returns a Reader of the trace in r; file names r in errors.
// Nothing is read until the first Scan.
func NewReader(r io.Reader, file string, opt ReadOptions) *Reader {
	if opt.MaxWarnings <= 0 {
		opt.MaxWarnings = 10
	}
	if opt.MaxLine <= 0 {
		opt.MaxLine = 16 << 20
	}
	return &Reader{in: r, file: file, opt: opt, t: &Trace{}}
}

// Trace returns the trace the reader interns strings into and fills the
// Meta of. Its Messages are left empty: Scan hands them out one by one.
func (r *Reader) Trace() *Trace { return r.t }

// Format returns the format being read; it is known after the first Scan.
func (r *Reader) Format() Format { return r.format }

// Line returns the number of the line last read.
func (r *Reader) Line() int {
	if r.sc == nil {
		return 0
	}
	return r.sc.Line()
}

// Skipped returns how many bad lines were skipped so far.
func (r *Reader) Skipped() int64 {
	if r.sc == nil {
		return 0
	}
	return r.sc.Skipped()
}

// Problems returns the errors of the first bad lines skipped (at most
// MaxWarnings), with their positions.
func (r *Reader) Problems() []*ParseError {
	if r.sc == nil {
		return nil
	}
	return r.sc.Problems()
}

// Message returns the message the last successful Scan read.
func (r *Reader) Message() Message { return r.msg }

// Err returns the error that stopped the reader, or nil at a clean end.
func (r *Reader) Err() error { return r.err }

// Close releases the decompressor, if any. It does not close the
// underlying reader.
func (r *Reader) Close() error {
	for _, c := range r.closers {
		c()
	}
	r.closers = nil
	return nil
}

func (r *Reader) start() error {
	r.started = true
	br, kind, done, err := decompress.NewReader(r.in, decompress.Options{BufSize: 256 << 10, LowMem: true})
	r.closers = append(r.closers, done)
	if err != nil {
		return &ParseError{File: r.file, Err: cutShort(err)}
	}
	r.format = r.opt.Format
	if r.format == FormatAuto {
		head, err := br.Peek(64 << 10)
		if err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
			return &ParseError{File: r.file, Line: 1, Err: cutShort(err)}
		}
		r.format = DetectFormat(head)
	}
	if r.sizeHint > 0 && kind == decompress.None {
		head, _ := br.Peek(64 << 10)
		r.estimate = estimateLines(head, r.sizeHint)
	}
	switch r.format {
	case FormatTSV:
		d := newTSVDecoder(r.t, &r.ev)
		r.dec = &d
	case FormatJSONL:
		r.dec = &jsonlDecoder{t: r.t, ev: &r.ev}
	case FormatProject5:
		r.dec = &p5Decoder{t: r.t}
		r.t.Meta.SingleClock = true
	default:
		return fmt.Errorf("%s: unknown trace format %v", r.file, r.format)
	}
	r.sc = lines.NewScanner(br, r.file, lines.Options{MaxLine: r.opt.MaxLine, Strict: r.opt.Strict, MaxProblems: r.opt.MaxWarnings})
	return nil
}

// Scan reads the next message, which Message then returns. It returns
// false at the end of the input or when an error stops the reader.
func (r *Reader) Scan() bool {
	if r.err != nil || r.done {
		return false
	}
	if !r.started {
		if err := r.start(); err != nil {
			r.err = err
			return false
		}
	}
	for r.sc.Scan() {
		line := r.sc.Bytes()
		if !r.t.Syms.roomFor(len(line)) || r.n >= maxMessages {
			r.err = r.sc.Stop(ErrTooLarge)
			return false
		}
		if r.decodeLine(line) {
			return true
		}
		if r.err != nil {
			return false
		}
	}
	r.end()
	return false
}

// decodeLine decodes a non-empty line into r.msg and reports whether it
// held a message. A bad line is skipped and counted, or, when Strict or
// fatal, sets r.err.
func (r *Reader) decodeLine(line []byte) bool {
	r.msg = Message{SendTS: NoTime, RecvTS: NoTime}
	ok, err := r.dec.decode(line, &r.msg)
	if err != nil {
		r.badLine(err)
		return false
	}
	if ok {
		r.n++
	}
	return ok
}

// badLine skips and counts the line that err is about, or, when Strict or
// fatal, sets r.err.
func (r *Reader) badLine(err error) {
	if !r.sc.Skip(err) {
		r.err = r.sc.Err()
	} else if p := r.sc.Problems(); int64(len(p)) == r.sc.Skipped() {
		// The first skipped lines are warnings of the trace.
		r.t.Meta.Warnings = append(r.t.Meta.Warnings, "skipped "+p[len(p)-1].Error())
	}
}

// end finishes the input once the scanner stops: it sets r.err, or marks
// the reader done and records the accounting.
func (r *Reader) end() {
	if err := r.sc.Err(); err != nil {
		var pe *ParseError
		if errors.As(err, &pe) {
			pe.Err = cutShort(pe.Err)
		}
		r.err = err
		return
	}
	if err := r.dec.finish(); err != nil {
		r.err = r.sc.Stop(err)
		return
	}
	r.done = true
	m := &r.t.Meta
	skipped := r.sc.Skipped()
	if skipped > int64(r.opt.MaxWarnings) {
		m.Warnings = append(m.Warnings, fmt.Sprintf("... and %d more skipped lines", skipped-int64(r.opt.MaxWarnings)))
	}
	m.SetCount(StageTrace, CountMessagesRead, r.n)
	m.SetCount(StageTrace, CountSkippedLines, skipped)
	if r.ev.oversized > 0 {
		m.SetCount(StageTrace, CountOversized, r.ev.oversized)
	}
	if m.Source == "" {
		m.Source = r.file
	}
}

// cutShort explains io.ErrUnexpectedEOF, which compressed input returns
// when the file was truncated.
func cutShort(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("the file is cut short: %w", err)
	}
	return err
}

// maxMessages is the most messages a Trace or Table read from a file holds
// (a Table indexes rows with 31 bits).
const maxMessages = 1<<31 - 2

// estimateLines estimates the lines of an input of size bytes from its
// first bytes, erring a little on the high side so that storage sized by
// it rarely has to grow (capacity never written costs address space, not
// memory). It returns 0 when head is too short to tell.
func estimateLines(head []byte, size int64) int {
	n := bytes.Count(head, []byte{'\n'})
	if n < 8 {
		return 0
	}
	est := float64(size) / (float64(len(head)) / float64(n))
	return int(min(est*1.03+1024, 1<<31-1))
}

// ReadTable reads the rest of the trace into a Table, which takes about
// half the memory of a Trace and is never held as a []Message. The Reader
// is closed; its Trace must not be used afterwards (the Table took its
// symbols and Meta).
func (r *Reader) ReadTable() (*Table, error) {
	defer r.Close()
	tab := &Table{}
	if !r.Scan() { // the first message, after the headers
		if r.err != nil {
			return nil, r.err
		}
		return r.table(tab), nil
	}
	if r.estimate > 0 {
		tab.Grow(r.estimate)
	}
	tab.Append(&r.msg)
	// The usual TSV lines are decoded straight into the table; the rest go
	// through decodeLine as Scan would send them.
	d, _ := r.dec.(*tsvDecoder)
	for r.sc.Scan() {
		line := r.sc.Bytes()
		if !r.t.Syms.roomFor(len(line)) || tab.Len() >= maxMessages {
			r.err = r.sc.Stop(ErrTooLarge)
			return nil, r.err
		}
		if d == nil || !d.canonical || line[0] == '#' || !r.appendCanonical(d, tab, line) {
			if r.decodeLine(line) {
				tab.Append(&r.msg)
			}
		}
		if r.err != nil {
			return nil, r.err
		}
	}
	r.end()
	if r.err != nil {
		return nil, r.err
	}
	return r.table(tab), nil
}

// appendCanonical decodes a line of a canonical TSV trace straight into a
// row of tab. It reports false, having added nothing, when the line is not
// in the usual form (parseCanonical gives up on it); a bad value in an
// evidence column is handled as decodeLine handles bad lines.
func (r *Reader) appendCanonical(d *tsvDecoder, tab *Table, line []byte) bool {
	m := Message{SendTS: NoTime, RecvTS: NoTime}
	d.lastSpan = nil
	ok, err := d.parseCanonical(line, &m)
	if err != nil {
		r.badLine(err)
		return true
	}
	if !ok {
		return false
	}
	r.n++
	// The span cache remembers the flow the span had last, with its kind,
	// protocol and connection.
	var fid uint32
	if e := d.lastSpan; e != nil && e.flowSet && e.kind == m.Kind && e.proto == m.Proto && e.conn == m.Conn {
		fid = e.flow
	} else {
		fid = tab.flowOf(flowOfMessage(&m))
		if e != nil {
			e.flow, e.kind, e.proto, e.conn, e.flowSet = fid, m.Kind, m.Proto, m.Conn, true
		}
	}
	tab.appendRow(&m, fid)
	return true
}

// table hands the reader's symbols and Meta over to tab.
func (r *Reader) table(tab *Table) *Table {
	tab.Syms, tab.Meta = r.t.Syms, r.t.Meta
	r.t.Syms, r.t.Meta = Symbols{}, Meta{}
	return tab
}

// ReadFileTable is ReadFile into a Table (see Reader.ReadTable). The
// file's size sizes the table when the file is not compressed.
func ReadFileTable(path string, opt ReadOptions) (*Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := NewReader(f, path, opt)
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		r.sizeHint = st.Size()
	}
	return r.ReadTable()
}

// ReadAll reads the rest of the trace and returns it with its messages.
// The Reader is closed.
func (r *Reader) ReadAll() (*Trace, error) {
	defer r.Close()
	sized := false
	for r.Scan() {
		if !sized {
			sized = true
			if r.estimate > 0 && r.t.Messages == nil {
				r.t.Messages = make([]Message, 0, r.estimate)
			}
		}
		r.t.Messages = append(r.t.Messages, r.msg)
	}
	if r.err != nil {
		return nil, r.err
	}
	return r.t, nil
}

// Read reads a whole trace from r in any supported format; file names r in
// errors.
func Read(r io.Reader, file string, opt ReadOptions) (*Trace, error) {
	return NewReader(r, file, opt).ReadAll()
}

// ReadTSV reads a whole TSV trace from r; file names r in errors.
func ReadTSV(r io.Reader, file string, opt ReadOptions) (*Trace, error) {
	opt.Format = FormatTSV
	return Read(r, file, opt)
}

// ReadFile reads the trace in the named file. Unless opt.Format says
// otherwise it detects the format (wirepath TSV with or without its magic
// line, JSON Lines, Project 5) and gzip or zstd compression from the
// content, not the name.
func ReadFile(path string, opt ReadOptions) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := NewReader(f, path, opt)
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		r.sizeHint = st.Size()
	}
	return r.ReadAll()
}
