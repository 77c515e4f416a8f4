package trace

import (
	"bytes"
)

// Project 5's trace layout (Project 5 section 6.5), read as input:
//
//	timestamp          operation  sender  receiver  id
//	1047680084.482205  CALL_SENT  nodeA   nodeB     id37
//
// Fields are separated by spaces or tabs. The timestamp is in seconds since
// the epoch with up to nine fractional digits. A line has three fields
// (timestamp sender receiver), four (with the operation) or five (with the
// call id). Project 5 traces carry one timestamp per message, taken on one
// clock, so SendTS and RecvTS are both set to it: the aggregator then sees
// a single clock and no network delay.

// p5Decoder decodes the lines of a Project 5 trace.
type p5Decoder struct {
	t      *Trace
	fields [][]byte
}

func isP5Header(f [][]byte) bool {
	return len(f) >= 3 && bytes.EqualFold(f[0], []byte("timestamp")) &&
		(bytes.EqualFold(f[1], []byte("operation")) || bytes.EqualFold(f[1], []byte("sender")))
}

// splitFields splits line at runs of spaces and tabs into fields[:0].
func splitFields(fields [][]byte, line []byte) [][]byte {
	fields = fields[:0]
	i := 0
	for i < len(line) {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		j := i
		for j < len(line) && line[j] != ' ' && line[j] != '\t' {
			j++
		}
		if j > i {
			fields = append(fields, line[i:j])
		}
		i = j
	}
	return fields
}

func (d *p5Decoder) decode(line []byte, m *Message) (bool, error) {
	d.fields = splitFields(d.fields, line)
	f := d.fields
	if len(f) == 0 || f[0][0] == '#' || isP5Header(f) {
		return false, nil
	}
	if len(f) < 3 || len(f) > 5 {
		return false, colErr("", "%d fields, want timestamp [operation] sender receiver [id]", len(f))
	}
	ts, ok := parseSeconds(f[0])
	if !ok {
		return false, colErr("timestamp", "%q is not a time in seconds", f[0])
	}
	m.SendTS, m.RecvTS = ts, ts
	nodes := f[1:]
	if len(f) >= 4 {
		k, err := kindFromBytes(f[1])
		if err != nil {
			return false, colErr("operation", "%v", err)
		}
		m.Kind = k
		nodes = f[2:]
	}
	var err error
	if m.SrcNode, err = d.sym(nodes[0]); err == nil {
		if m.DstNode, err = d.sym(nodes[1]); err == nil && len(nodes) == 3 {
			m.CallID, err = d.sym(nodes[2])
		}
	}
	return true, err
}

func (d *p5Decoder) sym(f []byte) (Sym, error) {
	if isDash(f) {
		return 0, nil
	}
	return d.t.Syms.InternBytes(f), nil
}

func (d *p5Decoder) finish() error { return nil }

// maxSeconds bounds the seconds parseSeconds accepts so that nanoseconds
// fit an int64.
const maxSeconds = (1<<63 - 1) / 1_000_000_000

// parseSeconds parses a non-negative decimal number of seconds with up to
// nine fractional digits (more are truncated) into nanoseconds.
func parseSeconds(b []byte) (Timestamp, bool) {
	var sec, frac int64
	i := 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		if sec > maxSeconds {
			return NoTime, false
		}
		sec = sec*10 + int64(b[i]-'0')
		i++
	}
	if i == 0 {
		return NoTime, false
	}
	digits := 0
	if i < len(b) && b[i] == '.' {
		i++
		if i == len(b) {
			return NoTime, false
		}
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			if digits < 9 {
				frac = frac*10 + int64(b[i]-'0')
				digits++
			}
		}
	}
	if i != len(b) || sec >= maxSeconds {
		return NoTime, false
	}
	for ; digits < 9; digits++ {
		frac *= 10
	}
	return Timestamp(sec*1e9 + frac), true
}
