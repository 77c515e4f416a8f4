package trace

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/wirepath/wirepath/internal/jsonl"
)

// JSONLVersion is the version of the JSON Lines trace format that
// WriteJSONL writes when the trace has evidence (version 2 added its
// members); a trace without is written as version 1, which older readers
// read. The reader accepts both.
const JSONLVersion = 2

// jsonlHeaderKey names the member that marks the header record.
const jsonlHeaderKey = "wirepath_trace"

// WriteJSONL writes t as a JSON Lines trace: a header record
// {"wirepath_trace":2,"meta":{...}} (version 1 when no message has
// evidence) and one object per message (see AppendJSONL).
func WriteJSONL(w io.Writer, t *Trace) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	version := 1
	if EvidenceColumnsOf(t.Messages) != 0 {
		version = JSONLVersion
	}
	bw.WriteString(`{"` + jsonlHeaderKey + `":` + strconv.Itoa(version))
	if !metaEmpty(&t.Meta) {
		js, err := json.Marshal(&t.Meta)
		if err != nil {
			return err
		}
		bw.WriteString(`,"meta":`)
		bw.Write(js)
	}
	bw.WriteString("}\n")
	var buf []byte
	for i := range t.Messages {
		buf = AppendJSONL(buf[:0], t, &t.Messages[i])
		bw.Write(buf)
	}
	return bw.Flush()
}

// AppendJSONL appends one JSON Lines record (with its newline) for m to
// buf. Unknown values (NoTime, empty Syms, unknown kind and protocol, zero
// evidence) are left out.
func AppendJSONL(buf []byte, t *Trace, m *Message) []byte {
	buf = append(buf, '{')
	sep := false
	key := func(k string) {
		if sep {
			buf = append(buf, ',')
		}
		sep = true
		buf = append(buf, '"')
		buf = append(buf, k...)
		buf = append(buf, '"', ':')
	}
	if m.SendTS.Known() {
		key("send_ts")
		buf = strconv.AppendInt(buf, int64(m.SendTS), 10)
	}
	if m.RecvTS.Known() {
		key("recv_ts")
		buf = strconv.AppendInt(buf, int64(m.RecvTS), 10)
	}
	for _, f := range [...]struct {
		k string
		s Sym
	}{{"src", m.Src}, {"dst", m.Dst}, {"src_node", m.SrcNode}, {"dst_node", m.DstNode}} {
		if f.s != 0 {
			key(f.k)
			buf = jsonl.AppendString(buf, t.Str(f.s))
		}
	}
	key("bytes")
	buf = strconv.AppendInt(buf, m.Bytes, 10)
	if m.Kind != KindUnknown {
		key("kind")
		buf = append(buf, '"')
		buf = append(buf, m.Kind.String()...)
		buf = append(buf, '"')
	}
	if m.CallID != 0 {
		key("call_id")
		buf = jsonl.AppendString(buf, t.Str(m.CallID))
	}
	if m.Proto != ProtoUnknown {
		key("proto")
		buf = append(buf, '"')
		buf = append(buf, m.Proto.String()...)
		buf = append(buf, '"')
	}
	if m.Evidence != (Evidence{}) {
		buf = appendJSONLEvidence(buf, t, &m.Evidence)
	}
	return append(buf, '}', '\n')
}

// appendJSONLEvidence appends the members of e's known fields, each after
// a comma (the record has members before them).
func appendJSONLEvidence(buf []byte, t *Trace, e *Evidence) []byte {
	key := func(k string) {
		buf = append(buf, ',', '"')
		buf = append(buf, k...)
		buf = append(buf, '"', ':')
	}
	for _, f := range [...]struct {
		k string
		v uint64
	}{{"conn", uint64(e.Conn)}, {"seq", uint64(e.Seq)}, {"stream", e.Stream}} {
		if f.v != 0 {
			key(f.k)
			buf = strconv.AppendUint(buf, f.v, 10)
		}
	}
	for _, f := range [...]struct {
		k string
		v Task
	}{{"send_task", e.Sender}, {"recv_task", e.Receiver}} {
		if f.v.Known() {
			key(f.k)
			buf = append(buf, `{"pid":`...)
			buf = strconv.AppendInt(buf, int64(f.v.PID), 10)
			if f.v.TID != 0 {
				buf = append(buf, `,"tid":`...)
				buf = strconv.AppendInt(buf, int64(f.v.TID), 10)
			}
			buf = append(buf, '}')
		}
	}
	if e.ReqID != 0 {
		key("req_id")
		buf = jsonl.AppendString(buf, t.Str(e.ReqID))
	}
	if e.Label != 0 {
		key("label")
		buf = jsonl.AppendString(buf, t.Str(e.Label))
	}
	if toks := t.Syms.Tokens(e.Tokens); len(toks) > 0 {
		key("tokens")
		buf = append(buf, '[')
		for i, h := range toks {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, '"')
			buf = appendHash(buf, h)
			buf = append(buf, '"')
		}
		buf = append(buf, ']')
	}
	return buf
}

// jsonlDecoder decodes the lines of a JSON Lines trace.
type jsonlDecoder struct {
	t    *Trace
	ev   *evidenceState
	obj  jsonl.Object
	sub  jsonl.Object // a task's members
	arr  jsonl.Elems  // the tokens
	seen bool         // a record was read
}

func (d *jsonlDecoder) finish() error { return nil }

// jsonlHeader is what a header line says: the format version and the
// trace's Meta.
type jsonlHeader struct {
	is      bool // the line is a header
	version int64
	meta    []byte
}

func (d *jsonlDecoder) decode(line []byte, m *Message) (bool, error) {
	first := !d.seen
	d.seen = true
	if err := d.obj.Reset(line); err != nil {
		return false, colErr("", "%v", err)
	}
	var h jsonlHeader
	for {
		k, v, ok := d.obj.Next()
		if !ok {
			break
		}
		if err := d.member(k, v, m, &h); err != nil {
			return false, colErr(string(k), "%v", err)
		}
	}
	if err := d.obj.Err(); err != nil {
		return false, colErr("", "%v", err)
	}
	if h.is {
		return false, d.header(&h, first)
	}
	if !m.SendTS.Known() && !m.RecvTS.Known() {
		return false, colErr("", "neither send_ts nor recv_ts is known")
	}
	return true, nil
}

// member decodes member k of a line into m, or into h for the members of
// a header.
func (d *jsonlDecoder) member(k []byte, v jsonl.Value, m *Message, h *jsonlHeader) error {
	var err error
	switch string(k) {
	case "send_ts":
		m.SendTS, err = jsonTS(v)
	case "recv_ts":
		m.RecvTS, err = jsonTS(v)
	case "src":
		m.Src, err = d.sym(v)
	case "dst":
		m.Dst, err = d.sym(v)
	case "src_node":
		m.SrcNode, err = d.sym(v)
	case "dst_node":
		m.DstNode, err = d.sym(v)
	case "call_id":
		m.CallID, err = d.sym(v)
	case "bytes":
		err = jsonSize(v, &m.Bytes)
	case "kind":
		err = jsonKind(v, &m.Kind)
	case "proto":
		err = jsonProto(v, &m.Proto)
	case "conn":
		err = jsonUint32(v, &m.Conn)
	case "seq":
		err = jsonUint32(v, &m.Seq)
	case "stream":
		if v.Kind != jsonl.Null {
			m.Stream, err = v.Uint()
		}
	case "send_task":
		m.Sender, err = d.task(v)
	case "recv_task":
		m.Receiver, err = d.task(v)
	case "req_id":
		m.ReqID, err = d.boundedSym(v, MaxReqID)
	case "label":
		m.Label, err = d.boundedSym(v, MaxLabel)
	case "tokens":
		m.Tokens, err = d.tokens(v)
	case jsonlHeaderKey:
		h.is = true
		h.version, err = v.Int()
	case "meta":
		h.meta = v.Raw()
	}
	return err
}

// header checks a header line, which only the first line may be, and
// reads the trace's Meta from it.
func (d *jsonlDecoder) header(h *jsonlHeader, first bool) error {
	if !first {
		return colErr("", "header record after the first line")
	}
	if h.version != 1 && h.version != JSONLVersion {
		return fatalErr(fmt.Errorf("unsupported JSON Lines trace version %d (this build reads 1 and %d)", h.version, JSONLVersion))
	}
	if h.meta != nil {
		if err := json.Unmarshal(h.meta, &d.t.Meta); err != nil {
			return colErr("meta", "%v", err)
		}
	}
	return nil
}

// jsonSize decodes a message size (null leaves *n as it is).
func jsonSize(v jsonl.Value, n *int64) error {
	if v.Kind == jsonl.Null {
		return nil
	}
	var err error
	*n, err = v.Int()
	if err == nil && *n < 0 {
		err = errors.New("negative size")
	}
	return err
}

// jsonKind decodes a message kind (null leaves *k as it is).
func jsonKind(v jsonl.Value, k *Kind) error {
	b, err := v.Bytes()
	if err != nil || b == nil {
		return err
	}
	*k, err = kindFromBytes(b)
	return err
}

// jsonProto decodes a transport protocol (null leaves *p as it is).
func jsonProto(v jsonl.Value, p *Proto) error {
	b, err := v.Bytes()
	if err != nil || b == nil {
		return err
	}
	*p, err = protoFromBytes(b)
	return err
}

func jsonTS(v jsonl.Value) (Timestamp, error) {
	if v.Kind == jsonl.Null {
		return NoTime, nil
	}
	n, err := v.Int()
	if err != nil {
		return NoTime, err
	}
	if Timestamp(n) == NoTime {
		return NoTime, errors.New("timestamp out of range")
	}
	return Timestamp(n), nil
}

// jsonUint32 decodes a number of at most 2^32-1 (null leaves *n as it is).
func jsonUint32(v jsonl.Value, n *uint32) error {
	if v.Kind == jsonl.Null {
		return nil
	}
	x, err := v.Uint()
	if err == nil && x > math.MaxUint32 {
		err = jsonl.ErrRange
	}
	*n = uint32(x)
	return err
}

// task decodes a task object {"pid":N,"tid":N} (null for none; other
// members are ignored).
func (d *jsonlDecoder) task(v jsonl.Value) (Task, error) {
	if v.Kind == jsonl.Null {
		return Task{}, nil
	}
	if v.Kind != jsonl.ObjectKind {
		return Task{}, jsonl.ErrType
	}
	var t Task
	if err := d.sub.Reset(v.Raw()); err != nil {
		return Task{}, err
	}
	for {
		k, x, ok := d.sub.Next()
		if !ok {
			break
		}
		var id *int32
		switch string(k) {
		case "pid":
			id = &t.PID
		case "tid":
			id = &t.TID
		default:
			continue
		}
		n, err := x.Int()
		if err == nil && (n < 0 || n > math.MaxInt32) {
			err = jsonl.ErrRange
		}
		if err != nil {
			return Task{}, fmt.Errorf("%s: %w", k, err)
		}
		*id = int32(n)
	}
	return t, d.sub.Err()
}

// tokens decodes an array of hashes, each a string of 1 to 16 hex digits
// (null for none), cut to MaxTokens.
func (d *jsonlDecoder) tokens(v jsonl.Value) (TokenRef, error) {
	if v.Kind == jsonl.Null {
		return 0, nil
	}
	if err := d.arr.Reset(v); err != nil {
		return 0, err
	}
	s := d.ev
	s.toks = s.toks[:0]
	for {
		x, ok := d.arr.Next()
		if !ok {
			break
		}
		b, err := x.Bytes()
		if err == nil && b == nil {
			err = jsonl.ErrType
		}
		if err != nil {
			return 0, err
		}
		h, err := parseHash(b)
		if err != nil {
			return 0, err
		}
		s.toks = append(s.toks, h)
	}
	if err := d.arr.Err(); err != nil {
		return 0, err
	}
	return s.addTokens(&d.t.Syms)
}

// boundedSym decodes a label or request id (null for none); one longer
// than limit is dropped and counted.
func (d *jsonlDecoder) boundedSym(v jsonl.Value, limit int) (Sym, error) {
	b, err := v.Bytes()
	if err != nil {
		return 0, err
	}
	return d.ev.bounded(&d.t.Syms, b, limit), nil
}

func (d *jsonlDecoder) sym(v jsonl.Value) (Sym, error) {
	b, err := v.Bytes()
	if err != nil {
		return 0, err
	}
	return d.t.Syms.InternBytes(b), nil
}
