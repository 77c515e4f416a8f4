package preload

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/wirepath/wirepath/internal/jsonl"
	"github.com/wirepath/wirepath/internal/lines"
)

// ParseError reports a bad line of a preload trace: the file, the line,
// the byte offset of the line's start and the error, which is a
// *MemberError when one JSON member is at fault. Its text is
// file:line: [member name: ]error, without the line for errors before the
// first line (such as a bad compression header).
type ParseError = lines.ParseError

// MemberError is a bad value of one JSON member of a record.
type MemberError struct {
	Member string
	Err    error
}

// Error formats the error as "member name: err".
func (e *MemberError) Error() string { return "member " + e.Member + ": " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *MemberError) Unwrap() error { return e.Err }

// ErrVersion is returned for a header of a version this package cannot read.
var ErrVersion = errors.New("unsupported preload trace version")

// Options controls a Reader.
type Options struct {
	// Strict makes the first bad line an error; otherwise bad lines are
	// skipped and counted (Skipped, Problems).
	Strict bool
	// MaxWarnings bounds the bad lines' errors kept (default 10).
	MaxWarnings int
}

// maxLine is the longest line of a preload trace.
const maxLine = 1 << 20

// Reader reads a preload trace one record at a time, in the manner of
// bufio.Scanner:
//
//	r := preload.NewReader(f, name, preload.Options{})
//	for r.Scan() {
//		rec := r.Record() // reused by the next Scan
//	}
//	if err := r.Err(); err != nil { ... }
//
// Header records are not returned by Scan; Header returns the one in force
// and Headers all seen. Errors are sticky. Strings are interned, so a
// record costs no allocation once its names have been seen.
type Reader struct {
	sc      *lines.Scanner
	rec     Record
	hdr     *Header
	headers []*Header
	byPID   map[int]*Header
	obj     jsonl.Object
	strs    map[string]string
	records int64
}

// NewReader returns a Reader of the trace in r; file names r in errors.
func NewReader(r io.Reader, file string, opt Options) *Reader {
	sc := lines.NewScanner(r, file, lines.Options{
		MaxLine:     maxLine,
		TooLong:     errors.New("line longer than 1 MiB"),
		Strict:      opt.Strict,
		MaxProblems: opt.MaxWarnings,
	})
	return &Reader{sc: sc, byPID: make(map[int]*Header), strs: make(map[string]string)}
}

// Record returns the record the last Scan read. It is overwritten by the
// next Scan.
func (r *Reader) Record() *Record { return &r.rec }

// Header returns the header in force (nil before the first).
func (r *Reader) Header() *Header { return r.hdr }

// Headers returns every header read so far.
func (r *Reader) Headers() []*Header { return r.headers }

// Err returns the error that stopped the reader, nil at a clean end.
func (r *Reader) Err() error { return r.sc.Err() }

// Line returns the number of the line last read.
func (r *Reader) Line() int { return r.sc.Line() }

// Records returns how many records Scan returned.
func (r *Reader) Records() int64 { return r.records }

// Skipped returns how many bad lines were skipped.
func (r *Reader) Skipped() int64 { return r.sc.Skipped() }

// Problems returns the errors of the first bad lines skipped (at most
// MaxWarnings).
func (r *Reader) Problems() []*ParseError { return r.sc.Problems() }

// Warnings returns the first bad lines skipped, as error messages.
func (r *Reader) Warnings() []string {
	var w []string
	for _, p := range r.sc.Problems() {
		w = append(w, p.Error())
	}
	return w
}

// Scan reads the next call record. It returns false at the end of the
// input or when an error stops the reader.
func (r *Reader) Scan() bool {
	for r.sc.Scan() {
		isRec, err := r.parse(r.sc.Bytes())
		if err != nil {
			if !r.sc.Skip(err) {
				return false
			}
			continue
		}
		if isRec {
			r.records++
			return true
		}
	}
	return false
}

func (r *Reader) intern(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if s, ok := r.strs[string(b)]; ok {
		return s
	}
	if len(r.strs) > 1<<20 { // bound the table on hostile input
		return string(b)
	}
	s := string(b)
	r.strs[s] = s
	return s
}

// lineFacts is what parse learns of a line besides the record's fields.
type lineFacts struct {
	header         bool // a header line ("wirepath_preload")
	version        int64
	hasTS, hasCall bool
	hasPID         bool
	pid            int64
	host, process  string
}

// parse decodes one line: a header, which it records, or a call record
// into r.rec, in which case it reports true.
func (r *Reader) parse(line []byte) (bool, error) {
	if err := r.obj.Reset(line); err != nil {
		return false, err
	}
	r.rec.reset()
	var f lineFacts
	for {
		k, v, ok := r.obj.Next()
		if !ok {
			break
		}
		if err := r.member(&f, k, v); err != nil {
			return false, &MemberError{Member: string(k), Err: err}
		}
	}
	if err := r.obj.Err(); err != nil {
		return false, err
	}
	if f.header {
		return false, r.header(line, f.version)
	}
	if !f.hasTS {
		return false, errors.New(`record without "ts"`)
	}
	if !f.hasCall {
		return false, errors.New(`record without "call"`)
	}
	r.attribute(&f)
	return true, nil
}

// member decodes the member k of a line into r.rec or f: the members of
// every call record here, in one switch (a second dispatch per member
// would cost the reader some 5%), the rarer ones in rareMember.
func (r *Reader) member(f *lineFacts, k []byte, v jsonl.Value) error {
	rec := &r.rec
	var err error
	var b []byte
	switch string(k) {
	case "wirepath_preload":
		f.header = true
		f.version, err = v.Int()
	case "ts":
		rec.TS, err = nonNegative(v, "timestamp")
		f.hasTS = err == nil
	case "dur":
		rec.Dur, err = nonNegative(v, "duration")
	case "pid":
		f.pid, err = v.Int()
		f.hasPID = true
	case "tid":
		rec.TID, err = intOf(v)
	case "host":
		b, err = v.Bytes()
		f.host = r.intern(b)
	case "process":
		b, err = v.Bytes()
		f.process = r.intern(b)
	case "call":
		b, err = v.Bytes()
		r.setCall(b)
		f.hasCall = len(b) > 0
	case "fd":
		rec.FD, err = intOf(v)
	case "len":
		rec.Len, err = v.Int()
	case "ret":
		rec.Ret, err = v.Int()
		rec.HasRet = err == nil
	case "sock":
		b, err = v.Bytes()
		rec.Sock = parseSockBytes(b)
	case "local":
		b, err = v.Bytes()
		rec.Local = r.intern(b)
	case "remote":
		b, err = v.Bytes()
		rec.Remote = r.intern(b)
	case "peer":
		b, err = v.Bytes()
		rec.Peer = r.intern(b)
	case "sum":
		rec.Sum, rec.HasSum, err = parseSum(v)
	default:
		return r.rareMember(k, v)
	}
	return err
}

// rareMember decodes the members that only some records have: of failed,
// peeking, cut or exec calls, of socketpair and shutdown, and the library's
// end record.
func (r *Reader) rareMember(k []byte, v jsonl.Value) error {
	rec := &r.rec
	var err error
	switch string(k) {
	case "errno":
		rec.Errno, err = r.str(v)
	case "fd2":
		rec.FD2, err = intOf(v)
	case "peer_pid":
		rec.PeerPID, err = intOf(v)
	case "peek":
		rec.Peek, err = v.Bool()
	case "trunc":
		rec.Trunc, err = v.Bool()
	case "how":
		rec.How, err = intOf(v)
	case "path":
		rec.Path, err = r.str(v)
	case "records":
		rec.Records, err = v.Int()
	case "eagain_skipped":
		rec.EAGAINSkipped, err = v.Int()
	case "write_errors":
		rec.WriteErrors, err = v.Int()
	case "lost_records":
		rec.LostRecords, err = v.Int()
	case "log_reopens":
		rec.LogReopens, err = v.Int()
	}
	return err
}

// str returns the interned string value of v.
func (r *Reader) str(v jsonl.Value) (string, error) {
	b, err := v.Bytes()
	return r.intern(b), err
}

// intOf returns the integer value of v as an int.
func intOf(v jsonl.Value) (int, error) {
	n, err := v.Int()
	return int(n), err
}

// nonNegative returns the integer value of v, which must not be negative;
// what names it in the error.
func nonNegative(v jsonl.Value, what string) (int64, error) {
	n, err := v.Int()
	if err == nil && n < 0 {
		err = errors.New("negative " + what)
	}
	return n, err
}

// parseSum parses a checksum: a string of 8 hex digits.
func parseSum(v jsonl.Value) (uint32, bool, error) {
	b, err := v.Bytes()
	if err != nil {
		return 0, false, err
	}
	s, err := strconv.ParseUint(string(b), 16, 32)
	if err != nil || len(b) != 8 {
		return uint32(s), false, fmt.Errorf("%q is not 8 hex digits", b)
	}
	return uint32(s), true, nil
}

// setCall sets the call of r.rec from its name.
func (r *Reader) setCall(b []byte) {
	rec := &r.rec
	rec.Call = parseCallBytes(b)
	if rec.Call != CallUnknown {
		rec.CallName = rec.Call.String()
	} else {
		rec.CallName = r.intern(b)
	}
}

// header records a header line of the given version.
func (r *Reader) header(line []byte, version int64) error {
	if version < 1 || version > Version {
		return lines.Fatal(fmt.Errorf("%w %d (this build reads 1 to %d)", ErrVersion, version, Version))
	}
	var h Header
	if err := json.Unmarshal(line, &h); err != nil {
		return fmt.Errorf("bad header: %v", err)
	}
	h.Host, h.Process, h.Exe = r.intern([]byte(h.Host)), r.intern([]byte(h.Process)), r.intern([]byte(h.Exe))
	r.hdr = &h
	r.headers = append(r.headers, &h)
	r.byPID[h.PID] = &h
	return nil
}

// attribute fills in the process of r.rec: its pid (from the header in
// force when the record names none) and its host and process names (the
// record's own, else those of its process's header).
func (r *Reader) attribute(f *lineFacts) {
	rec := &r.rec
	h := r.hdr
	if f.hasPID {
		rec.PID = int(f.pid)
		if hp, ok := r.byPID[rec.PID]; ok {
			h = hp
		} else if h != nil && h.PID != rec.PID {
			h = &Header{Host: h.Host}
		}
	} else if h != nil {
		rec.PID = h.PID
	}
	if h != nil {
		rec.Host, rec.Process = h.Host, h.Process
	}
	if f.host != "" {
		rec.Host = f.host
	}
	if f.process != "" {
		rec.Process = f.process
	}
}
