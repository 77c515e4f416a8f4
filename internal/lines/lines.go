// Package lines is the one line reader of the text inputs (trace files,
// preload traces, strace output): a Scanner that hands out one line at a
// time with its number and byte offset, the positioned ParseError every
// reader of those formats returns, and the skip-and-count policy for bad
// lines that keeps the first problems as errors, not strings.
//
// A reader of a format wraps a Scanner: it decodes each line, and hands an
// error for a bad line to Skip, which either counts it and lets the reader
// go on, or (strict reading, or an error marked Fatal) stops the reader
// with a *ParseError naming the file, line and offset.
package lines

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// ParseError is a problem with one line of a text input.
type ParseError struct {
	File   string // file name, "" for a stream
	Line   int    // 1-based line number, 0 for errors before the first line
	Offset int64  // byte offset of the line's start in the (decompressed) input
	Err    error
}

// Error formats the error as file:line: err (without the file for a
// stream, without the line for an error before the first line).
func (e *ParseError) Error() string {
	s := ""
	if e.File != "" {
		s = e.File + ":"
	}
	if e.Line > 0 {
		s += strconv.Itoa(e.Line) + ":"
	}
	return s + " " + e.Err.Error()
}

// Unwrap returns the underlying error.
func (e *ParseError) Unwrap() error { return e.Err }

// fatalError marks an error after which a reader cannot go on.
type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }
func (e *fatalError) Unwrap() error { return e.err }

// Fatal marks err as one that stops the reader even when bad lines are
// being skipped (a bad header, an unsupported version). Skip and Position
// take the mark off again: the *ParseError wraps err itself.
func Fatal(err error) error { return &fatalError{err} }

// DefaultMaxLine is the longest line a Scanner accepts by default.
const DefaultMaxLine = 16 << 20

// Options controls a Scanner.
type Options struct {
	// MaxLine bounds the length of one line (default DefaultMaxLine); a
	// longer line is an error that stops the scanner.
	MaxLine int
	// TooLong, when set, is the error for a line longer than MaxLine
	// (default "line longer than N bytes").
	TooLong error
	// KeepEmpty makes Scan return empty lines too (by default they are
	// passed over).
	KeepEmpty bool
	// Strict makes Skip stop at the first bad line.
	Strict bool
	// MaxProblems bounds the skipped lines' errors kept (default 10).
	MaxProblems int
}

// Scanner reads an input one line at a time, in the manner of
// bufio.Scanner (and accepting the same lines: a line with its line feed
// must fit in MaxLine bytes). A line is handed out without its line break
// (LF, or CR LF, and one more trailing CR is dropped). Errors are sticky:
// after Scan returns false, Err says why (nil at the end of the input).
type Scanner struct {
	r    io.Reader
	file string
	opt  Options
	buf  []byte
	// buf[start:end] is read and not yet scanned; it starts at offset
	// next of the input.
	start, end int
	eof        bool  // r returned io.EOF (or readErr)
	readErr    error // the error that ended the input, reported after its last line
	line       int
	off, next  int64 // offsets of the current line and of buf[start]
	tok        []byte
	err        error

	skipped  int64
	problems []*ParseError
}

// NewScanner returns a Scanner of r; file names r in errors.
func NewScanner(r io.Reader, file string, opt Options) *Scanner {
	if opt.MaxLine <= 0 {
		opt.MaxLine = DefaultMaxLine
	}
	if opt.MaxProblems <= 0 {
		opt.MaxProblems = 10
	}
	return &Scanner{r: r, file: file, opt: opt}
}

// Scan advances to the next line (the next non-empty line unless
// KeepEmpty), which Bytes then returns. It returns false at the end of the
// input or when an error stopped the scanner.
func (s *Scanner) Scan() bool {
	for s.err == nil {
		line, ok := s.cut()
		if !ok {
			if s.eof {
				s.finish()
				return false
			}
			s.fill()
			continue
		}
		s.line++
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		if len(line) == 0 && !s.opt.KeepEmpty {
			continue
		}
		s.tok = line
		return true
	}
	return false
}

// cut takes the next line off the buffer: up to a line feed, or what is
// left at the end of the input. It drops the line break and one CR.
func (s *Scanner) cut() ([]byte, bool) {
	data := s.buf[s.start:s.end]
	n := bytes.IndexByte(data, '\n') + 1
	if n == 0 {
		if !s.eof || len(data) == 0 {
			return nil, false
		}
		n = len(data)
	}
	line := data[:n]
	if line[n-1] == '\n' {
		line = line[:n-1]
	}
	if k := len(line); k > 0 && line[k-1] == '\r' {
		line = line[:k-1]
	}
	s.off, s.next = s.next, s.next+int64(n)
	s.start += n
	return line, true
}

// fill reads more of the input, making room first: it moves the unscanned
// bytes to the front of the buffer, or grows it (up to MaxLine, beyond
// which the line is too long).
func (s *Scanner) fill() {
	if s.start > 0 && (s.end == len(s.buf) || s.start == s.end) {
		copy(s.buf, s.buf[s.start:s.end])
		s.end -= s.start
		s.start = 0
	}
	if s.end == len(s.buf) {
		if len(s.buf) >= s.opt.MaxLine {
			s.stop(s.tooLong())
			return
		}
		size := min(max(2*len(s.buf), 4096), s.opt.MaxLine)
		if len(s.buf) == 0 {
			size = min(64<<10, s.opt.MaxLine)
		}
		nb := make([]byte, size)
		copy(nb, s.buf[s.start:s.end])
		s.buf, s.end, s.start = nb, s.end-s.start, 0
	}
	for empty := 0; ; empty++ {
		n, err := s.r.Read(s.buf[s.end:])
		if n < 0 || n > len(s.buf)-s.end {
			n, err = 0, errors.New("lines: reader returned an impossible count")
		}
		s.end += n
		if err != nil {
			s.eof = true
			if err != io.EOF {
				s.readErr = err
			}
			return
		}
		if n > 0 {
			return
		}
		if empty >= 100 {
			s.eof, s.readErr = true, io.ErrNoProgress
			return
		}
	}
}

// finish ends the input: it reports the error that ended it, if any.
func (s *Scanner) finish() {
	s.tok = nil
	if s.readErr != nil {
		s.stop(s.readErr)
	}
}

// tooLong is the error of a line longer than MaxLine.
func (s *Scanner) tooLong() error {
	if s.opt.TooLong != nil {
		return s.opt.TooLong
	}
	return fmt.Errorf("line longer than %d bytes", s.opt.MaxLine)
}

// stop stops the scanner with err at the line after the last one read.
func (s *Scanner) stop(err error) {
	s.tok = nil
	s.err = &ParseError{File: s.file, Line: s.line + 1, Offset: s.next, Err: err}
}

// Bytes returns the line the last Scan read. It aliases the scanner's
// buffer and is overwritten by the next Scan.
func (s *Scanner) Bytes() []byte { return s.tok }

// Line returns the number of the line last read (1-based).
func (s *Scanner) Line() int { return s.line }

// Offset returns the byte offset of the line last read.
func (s *Scanner) Offset() int64 { return s.off }

// File returns the name the scanner gives its input in errors.
func (s *Scanner) File() string { return s.file }

// Err returns the error that stopped the scanner: a *ParseError, or nil
// at the end of the input.
func (s *Scanner) Err() error { return s.err }

// Stop stops the scanner with err, positioned at the current line; Scan
// then returns false and Err returns the *ParseError.
func (s *Scanner) Stop(err error) *ParseError {
	pe := s.Position(err)
	s.err = pe
	return pe
}

// Position returns err as a *ParseError at the line last read. An err
// that already is (or wraps) a *ParseError gets that error's position
// filled in; a Fatal mark is taken off.
func (s *Scanner) Position(err error) *ParseError {
	var fe *fatalError
	if errors.As(err, &fe) {
		err = fe.err
	}
	var pe *ParseError
	if !errors.As(err, &pe) {
		pe = &ParseError{Err: err}
	}
	pe.File, pe.Line, pe.Offset = s.file, s.line, s.off
	return pe
}

// Skip handles the error of the line last read. When reading is strict or
// err is Fatal it stops the scanner and returns false. Otherwise it counts
// the line as skipped, keeps its error if fewer than MaxProblems are kept,
// and returns true: the caller goes on with the next line.
func (s *Scanner) Skip(err error) bool {
	var fe *fatalError
	fatal := errors.As(err, &fe)
	pe := s.Position(err)
	if s.opt.Strict || fatal {
		s.err = pe
		return false
	}
	if len(s.problems) < s.opt.MaxProblems {
		s.problems = append(s.problems, pe)
	}
	s.skipped++
	return true
}

// Skipped returns how many bad lines Skip passed over.
func (s *Scanner) Skipped() int64 { return s.skipped }

// Problems returns the errors of the first skipped lines (at most
// MaxProblems).
func (s *Scanner) Problems() []*ParseError { return s.problems }

// MaxProblems returns the bound on Problems.
func (s *Scanner) MaxProblems() int { return s.opt.MaxProblems }
