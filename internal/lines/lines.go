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
	"bufio"
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
// bufio.Scanner. A line is handed out without its line break (LF, or CR
// LF, and one more trailing CR is dropped). Errors are sticky: after Scan
// returns false, Err says why (nil at the end of the input).
type Scanner struct {
	sc   *bufio.Scanner
	file string
	opt  Options
	line int
	// off is the offset of the current line, next that of the line after.
	off, next int64
	tok       []byte
	err       error

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
	s := &Scanner{file: file, opt: opt}
	s.sc = bufio.NewScanner(r)
	s.sc.Buffer(make([]byte, 0, min(64<<10, opt.MaxLine)), opt.MaxLine)
	s.sc.Split(s.split)
	return s
}

// split is bufio.ScanLines that also keeps the offsets of the lines.
func (s *Scanner) split(data []byte, atEOF bool) (int, []byte, error) {
	if atEOF && len(data) == 0 {
		return 0, nil, nil
	}
	n := -1
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		n = i + 1
	} else if atEOF {
		n = len(data)
	}
	if n < 0 {
		return 0, nil, nil // request more data
	}
	tok := data[:n]
	if tok[len(tok)-1] == '\n' {
		tok = tok[:len(tok)-1]
	}
	if k := len(tok); k > 0 && tok[k-1] == '\r' {
		tok = tok[:k-1]
	}
	s.off, s.next = s.next, s.next+int64(n)
	return n, tok, nil
}

// Scan advances to the next line (the next non-empty line unless
// KeepEmpty), which Bytes then returns. It returns false at the end of the
// input or when an error stopped the scanner.
func (s *Scanner) Scan() bool {
	if s.err != nil {
		return false
	}
	for s.sc.Scan() {
		s.line++
		line := s.sc.Bytes()
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		if len(line) == 0 && !s.opt.KeepEmpty {
			continue
		}
		s.tok = line
		return true
	}
	s.tok = nil
	if err := s.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = s.opt.TooLong
			if err == nil {
				err = fmt.Errorf("line longer than %d bytes", s.opt.MaxLine)
			}
		}
		s.err = &ParseError{File: s.file, Line: s.line + 1, Offset: s.next, Err: err}
	}
	return false
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
