package preload

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/wirepath/wirepath/internal/jsonl"
)

// ParseError reports a bad line of a preload trace.
type ParseError struct {
	File   string // file name, "" for a stream
	Line   int    // 1-based line number
	Member string // JSON member at fault, "" when the whole line is bad
	Err    error

	fatal bool
}

// Error formats the error as file:line: member: err (no line for errors
// before the first line, such as a bad compression header).
func (e *ParseError) Error() string {
	s := ""
	if e.File != "" {
		s = e.File + ":"
	}
	if e.Line > 0 {
		s += strconv.Itoa(e.Line) + ":"
	}
	s += " "
	if e.Member != "" {
		s += "member " + e.Member + ": "
	}
	return s + e.Err.Error()
}

// Unwrap returns the underlying error.
func (e *ParseError) Unwrap() error { return e.Err }

// ErrVersion is returned for a header of a version this package cannot read.
var ErrVersion = errors.New("unsupported preload trace version")

// Options controls a Reader.
type Options struct {
	// Strict makes the first bad line an error; otherwise bad lines are
	// skipped and counted (Skipped, Warnings).
	Strict bool
	// MaxWarnings bounds the warnings kept (default 10).
	MaxWarnings int
}

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
	sc       *bufio.Scanner
	file     string
	opt      Options
	line     int
	rec      Record
	hdr      *Header
	headers  []*Header
	byPID    map[int]*Header
	obj      jsonl.Object
	strs     map[string]string
	err      error
	records  int64
	skipped  int64
	warnings []string
}

// NewReader returns a Reader of the trace in r; file names r in errors.
func NewReader(r io.Reader, file string, opt Options) *Reader {
	if opt.MaxWarnings <= 0 {
		opt.MaxWarnings = 10
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	return &Reader{sc: sc, file: file, opt: opt, byPID: make(map[int]*Header), strs: make(map[string]string)}
}

// Record returns the record the last Scan read. It is overwritten by the
// next Scan.
func (r *Reader) Record() *Record { return &r.rec }

// Header returns the header in force (nil before the first).
func (r *Reader) Header() *Header { return r.hdr }

// Headers returns every header read so far.
func (r *Reader) Headers() []*Header { return r.headers }

// Err returns the error that stopped the reader, nil at a clean end.
func (r *Reader) Err() error { return r.err }

// Line returns the number of the line last read.
func (r *Reader) Line() int { return r.line }

// Records returns how many records Scan returned.
func (r *Reader) Records() int64 { return r.records }

// Skipped returns how many bad lines were skipped.
func (r *Reader) Skipped() int64 { return r.skipped }

// Warnings returns the first bad lines skipped, as error messages.
func (r *Reader) Warnings() []string { return r.warnings }

// Scan reads the next call record. It returns false at the end of the
// input or when an error stops the reader.
func (r *Reader) Scan() bool {
	if r.err != nil {
		return false
	}
	for r.sc.Scan() {
		r.line++
		line := r.sc.Bytes()
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		if len(line) == 0 {
			continue
		}
		isRec, err := r.parse(line)
		if err != nil {
			pe, ok := err.(*ParseError)
			if !ok {
				pe = &ParseError{Err: err}
			}
			pe.File, pe.Line = r.file, r.line
			if r.opt.Strict || pe.fatal {
				r.err = pe
				return false
			}
			if len(r.warnings) < r.opt.MaxWarnings {
				r.warnings = append(r.warnings, pe.Error())
			}
			r.skipped++
			continue
		}
		if isRec {
			r.records++
			return true
		}
	}
	if err := r.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = errors.New("line longer than 1 MiB")
		}
		r.err = &ParseError{File: r.file, Line: r.line + 1, Err: err}
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

func memberErr(k []byte, err error) error {
	return &ParseError{Member: string(k), Err: err}
}

func (r *Reader) parse(line []byte) (bool, error) {
	if err := r.obj.Reset(line); err != nil {
		return false, &ParseError{Err: err}
	}
	rec := &r.rec
	rec.reset()
	var header bool
	var version int64
	var hasTS, hasCall, hasPID bool
	var pid int64
	var host, process string
	for {
		k, v, ok := r.obj.Next()
		if !ok {
			break
		}
		var err error
		var n int64
		var b []byte
		switch string(k) {
		case "wirepath_preload":
			header = true
			version, err = v.Int()
		case "ts":
			rec.TS, err = v.Int()
			hasTS = err == nil
			if err == nil && rec.TS < 0 {
				err = errors.New("negative timestamp")
			}
		case "dur":
			rec.Dur, err = v.Int()
			if err == nil && rec.Dur < 0 {
				err = errors.New("negative duration")
			}
		case "pid":
			pid, err = v.Int()
			hasPID = true
		case "tid":
			n, err = v.Int()
			rec.TID = int(n)
		case "host":
			b, err = v.Bytes()
			host = r.intern(b)
		case "process":
			b, err = v.Bytes()
			process = r.intern(b)
		case "call":
			b, err = v.Bytes()
			rec.Call = parseCallBytes(b)
			if rec.Call != CallUnknown {
				rec.CallName = rec.Call.String()
			} else {
				rec.CallName = r.intern(b)
			}
			hasCall = len(b) > 0
		case "fd":
			n, err = v.Int()
			rec.FD = int(n)
		case "fd2":
			n, err = v.Int()
			rec.FD2 = int(n)
		case "len":
			rec.Len, err = v.Int()
		case "ret":
			rec.Ret, err = v.Int()
			rec.HasRet = err == nil
		case "errno":
			b, err = v.Bytes()
			rec.Errno = r.intern(b)
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
		case "peer_pid":
			n, err = v.Int()
			rec.PeerPID = int(n)
		case "sum":
			b, err = v.Bytes()
			if err == nil {
				var s uint64
				s, err = strconv.ParseUint(string(b), 16, 32)
				if err != nil || len(b) != 8 {
					err = fmt.Errorf("%q is not 8 hex digits", b)
				}
				rec.Sum, rec.HasSum = uint32(s), err == nil
			}
		case "peek":
			rec.Peek, err = v.Bool()
		case "trunc":
			rec.Trunc, err = v.Bool()
		case "how":
			n, err = v.Int()
			rec.How = int(n)
		case "path":
			b, err = v.Bytes()
			rec.Path = r.intern(b)
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
		if err != nil {
			return false, memberErr(k, err)
		}
	}
	if err := r.obj.Err(); err != nil {
		return false, &ParseError{Err: err}
	}
	if header {
		if version < 1 || version > Version {
			return false, &ParseError{Err: fmt.Errorf("%w %d (this build reads 1 to %d)", ErrVersion, version, Version), fatal: true}
		}
		var h Header
		if err := json.Unmarshal(line, &h); err != nil {
			return false, &ParseError{Err: fmt.Errorf("bad header: %v", err)}
		}
		h.Host, h.Process, h.Exe = r.intern([]byte(h.Host)), r.intern([]byte(h.Process)), r.intern([]byte(h.Exe))
		r.hdr = &h
		r.headers = append(r.headers, &h)
		r.byPID[h.PID] = &h
		return false, nil
	}
	if !hasTS {
		return false, &ParseError{Err: errors.New(`record without "ts"`)}
	}
	if !hasCall {
		return false, &ParseError{Err: errors.New(`record without "call"`)}
	}
	h := r.hdr
	if hasPID {
		rec.PID = int(pid)
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
	if host != "" {
		rec.Host = host
	}
	if process != "" {
		rec.Process = process
	}
	return true, nil
}
