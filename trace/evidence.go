package trace

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/wirepath/wirepath/internal/lines"
)

// Bounds of the evidence a trace keeps per message. A reader drops a
// longer label or request id (keeping the message) and cuts a longer token
// set to MaxTokens, counting each in the accounting ("trace",
// "oversized_values").
const (
	// MaxLabel is the longest label, in bytes.
	MaxLabel = 256
	// MaxReqID is the longest request identifier ("source:value"), in bytes.
	MaxReqID = 256
)

// CountOversized is the reader's counter of evidence values dropped or cut
// for exceeding MaxLabel, MaxReqID or MaxTokens (present only when some
// were).
const CountOversized = "oversized_values"

// IsZero reports whether e holds nothing.
func (e *Evidence) IsZero() bool { return *e == Evidence{} }

// String formats the task as "PID/TID", "PID" when the thread is unknown,
// or "-" for the zero Task.
func (t Task) String() string {
	if !t.Known() {
		return "-"
	}
	return string(appendTask(nil, t))
}

func appendTask(buf []byte, t Task) []byte {
	if !t.Known() {
		return append(buf, '-')
	}
	buf = strconv.AppendInt(buf, int64(t.PID), 10)
	if t.TID != 0 {
		buf = append(buf, '/')
		buf = strconv.AppendInt(buf, int64(t.TID), 10)
	}
	return buf
}

// ParseTask parses the form Task.String writes: "PID/TID", "PID" or "-".
// Both ids are non-negative 32-bit numbers.
func ParseTask(s string) (Task, error) { return parseTask([]byte(s)) }

func parseTask(f []byte) (Task, error) {
	if isDash(f) || len(f) == 0 {
		return Task{}, nil
	}
	pid, tid := f, []byte(nil)
	for i, c := range f {
		if c == '/' {
			pid, tid = f[:i], f[i+1:]
			break
		}
	}
	p, err := parseID32(pid)
	if err != nil {
		return Task{}, fmt.Errorf("bad task %q: %v", f, err)
	}
	var t int32
	if tid != nil {
		if t, err = parseID32(tid); err != nil {
			return Task{}, fmt.Errorf("bad task %q: %v", f, err)
		}
	}
	return Task{PID: p, TID: t}, nil
}

// parseID32 parses a process or thread id: digits, at most 2^31-1.
func parseID32(f []byte) (int32, error) {
	v, err := parseUint(f, math.MaxInt32)
	return int32(v), err
}

// parseUint parses a decimal number of at most lim without a sign.
func parseUint(f []byte, lim uint64) (uint64, error) {
	if len(f) == 0 {
		return 0, errors.New("empty number")
	}
	var v uint64
	for _, c := range f {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%q is not a valid number", f)
		}
		d := uint64(c - '0')
		if v > (lim-d)/10 {
			return 0, fmt.Errorf("%q is out of range", f)
		}
		v = v*10 + d
	}
	return v, nil
}

const hexDigits = "0123456789abcdef"

// appendHash appends h as 16 lowercase hex digits.
func appendHash(buf []byte, h uint64) []byte {
	for s := 60; s >= 0; s -= 4 {
		buf = append(buf, hexDigits[h>>uint(s)&15])
	}
	return buf
}

// appendTokens appends a token set as comma-separated hashes, "-" if empty.
func appendTokens(buf []byte, toks []uint64) []byte {
	if len(toks) == 0 {
		return append(buf, '-')
	}
	for i, h := range toks {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendHash(buf, h)
	}
	return buf
}

// hexVal is the value of each hex digit, 0xff for other bytes.
var hexVal = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := byte('0'); c <= '9'; c++ {
		t[c] = c - '0'
	}
	for c := byte('a'); c <= 'f'; c++ {
		t[c] = c - 'a' + 10
		t[c-'a'+'A'] = c - 'a' + 10
	}
	return t
}()

// parseHash parses 1 to 16 hex digits, either case.
func parseHash(f []byte) (uint64, error) {
	if len(f) == 0 || len(f) > 16 {
		return 0, fmt.Errorf("token %q is not 1 to 16 hex digits", f)
	}
	var h uint64
	var bad byte
	for _, c := range f {
		d := hexVal[c]
		bad |= d
		h = h<<4 | uint64(d&15)
	}
	if bad == 0xff {
		return 0, fmt.Errorf("token %q is not 1 to 16 hex digits", f)
	}
	return h, nil
}

// EvidenceColumns is a set of the evidence columns of the TSV format
// (version 2), one bit per entry of EvidenceColumnNames; WriteTSV writes
// those the trace's messages use.
type EvidenceColumns uint8

// The evidence columns.
const (
	ColConn EvidenceColumns = 1 << iota
	ColSeq
	ColStream
	ColSendTask
	ColRecvTask
	ColReqID
	ColLabel
	ColTokens

	AllEvidenceColumns EvidenceColumns = 1<<iota - 1
)

// EvidenceColumnNames are the names of the evidence columns, in the order
// of their bits and in the order WriteTSV writes them, after TSVColumns.
var EvidenceColumnNames = []string{"conn", "seq", "stream", "send_task", "recv_task", "req_id", "label", "tokens"}

// Names returns the names of the columns in c, in order.
func (c EvidenceColumns) Names() []string {
	var out []string
	for i, n := range EvidenceColumnNames {
		if c&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// columnsOf returns the evidence columns e has a value for.
func (e *Evidence) columnsOf() EvidenceColumns {
	var c EvidenceColumns
	if e.Conn != 0 {
		c |= ColConn
	}
	if e.Seq != 0 {
		c |= ColSeq
	}
	if e.Stream != 0 {
		c |= ColStream
	}
	if e.Sender.Known() {
		c |= ColSendTask
	}
	if e.Receiver.Known() {
		c |= ColRecvTask
	}
	if e.ReqID != 0 {
		c |= ColReqID
	}
	if e.Label != 0 {
		c |= ColLabel
	}
	if e.Tokens != 0 {
		c |= ColTokens
	}
	return c
}

// EvidenceColumnsOf returns the evidence columns that some message of ms
// has a value for: those WriteTSV writes.
func EvidenceColumnsOf(ms []Message) EvidenceColumns {
	var c EvidenceColumns
	for i := range ms {
		if c |= ms[i].Evidence.columnsOf(); c == AllEvidenceColumns {
			break
		}
	}
	return c
}

// evidenceState is what the readers of one trace share to decode evidence:
// scratch for token sets and the count of oversized values.
type evidenceState struct {
	toks      []uint64
	oversized int64
}

// tokens interns the token set in f (comma-separated hashes, or "-") into
// syms, cutting it to MaxTokens (counted).
func (s *evidenceState) tokens(syms *Symbols, f []byte) (TokenRef, error) {
	if isDash(f) || len(f) == 0 {
		return 0, nil
	}
	s.toks = s.toks[:0]
	for len(f) > 0 {
		j := len(f)
		for i, c := range f {
			if c == ',' {
				j = i
				break
			}
		}
		h, err := parseHash(f[:j])
		if err != nil {
			return 0, err
		}
		s.toks = append(s.toks, h)
		if j == len(f) {
			break
		}
		f = f[j+1:]
		if len(f) == 0 {
			return 0, errors.New("token list ends with a comma")
		}
	}
	return s.addTokens(syms)
}

// addTokens interns s.toks, counting a set cut to MaxTokens.
func (s *evidenceState) addTokens(syms *Symbols) (TokenRef, error) {
	if len(s.toks) > MaxTokens {
		s.oversized++
	}
	r, err := syms.AddTokens(s.toks)
	if err != nil {
		return 0, lines.Fatal(ErrTooLarge)
	}
	return r, nil
}

// bounded interns a label or request id, dropping (and counting) one
// longer than limit.
func (s *evidenceState) bounded(syms *Symbols, b []byte, limit int) Sym {
	if len(b) > limit {
		s.oversized++
		return 0
	}
	return syms.InternBytes(b)
}
