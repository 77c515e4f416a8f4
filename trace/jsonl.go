package trace

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/wirepath/wirepath/internal/jsonl"
)

// JSONLVersion is the version of the JSON Lines trace format that
// WriteJSONL writes and the reader accepts.
const JSONLVersion = 1

// jsonlHeaderKey names the member that marks the header record.
const jsonlHeaderKey = "wirepath_trace"

// WriteJSONL writes t as a JSON Lines trace: a header record
// {"wirepath_trace":1,"meta":{...}} and one object per message (see
// AppendJSONL).
func WriteJSONL(w io.Writer, t *Trace) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	bw.WriteString(`{"` + jsonlHeaderKey + `":` + strconv.Itoa(JSONLVersion))
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
// buf. Unknown values (NoTime, empty Syms, unknown kind and protocol) are
// left out.
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
	return append(buf, '}', '\n')
}

// jsonlDecoder decodes the lines of a JSON Lines trace.
type jsonlDecoder struct {
	t    *Trace
	obj  jsonl.Object
	seen bool // a record was read
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
	if h.version != JSONLVersion {
		return fatalErr(fmt.Errorf("unsupported JSON Lines trace version %d (this build reads %d)", h.version, JSONLVersion))
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

func (d *jsonlDecoder) sym(v jsonl.Value) (Sym, error) {
	b, err := v.Bytes()
	if err != nil {
		return 0, err
	}
	return d.t.Syms.InternBytes(b), nil
}
