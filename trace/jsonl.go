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

func (d *jsonlDecoder) decode(line []byte, m *Message) (bool, error) {
	first := !d.seen
	d.seen = true
	if err := d.obj.Reset(line); err != nil {
		return false, colErr("", "%v", err)
	}
	header := false
	var version int64
	var meta []byte
	for {
		k, v, ok := d.obj.Next()
		if !ok {
			break
		}
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
			if v.Kind != jsonl.Null {
				m.Bytes, err = v.Int()
				if err == nil && m.Bytes < 0 {
					err = errors.New("negative size")
				}
			}
		case "kind":
			var b []byte
			if b, err = v.Bytes(); err == nil && b != nil {
				m.Kind, err = kindFromBytes(b)
			}
		case "proto":
			var b []byte
			if b, err = v.Bytes(); err == nil && b != nil {
				m.Proto, err = protoFromBytes(b)
			}
		case jsonlHeaderKey:
			header = true
			version, err = v.Int()
		case "meta":
			meta = v.Raw()
		}
		if err != nil {
			return false, colErr(string(k), "%v", err)
		}
	}
	if err := d.obj.Err(); err != nil {
		return false, colErr("", "%v", err)
	}
	if header {
		if !first {
			return false, colErr("", "header record after the first line")
		}
		if version != JSONLVersion {
			return false, fatalErr(fmt.Errorf("unsupported JSON Lines trace version %d (this build reads %d)", version, JSONLVersion))
		}
		if meta != nil {
			if err := json.Unmarshal(meta, &d.t.Meta); err != nil {
				return false, colErr("meta", "%v", err)
			}
		}
		return false, nil
	}
	if !m.SendTS.Known() && !m.RecvTS.Known() {
		return false, colErr("", "neither send_ts nor recv_ts is known")
	}
	return true, nil
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
