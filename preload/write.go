package preload

import (
	"bufio"
	"encoding/json"
	"io"
	"strconv"

	"github.com/wirepath/wirepath/internal/jsonl"
)

// Writer writes a preload trace. Records of a process other than the one
// the last header names carry their own "pid".
type Writer struct {
	bw  *bufio.Writer
	hdr *Header
	buf []byte
}

// NewWriter returns a Writer to w. Call Flush at the end.
func NewWriter(w io.Writer) *Writer {
	return &Writer{bw: bufio.NewWriterSize(w, 256<<10)}
}

// WriteHeader writes a header record; records after it belong to h.PID.
func (w *Writer) WriteHeader(h *Header) error {
	hc := *h
	if hc.Version == 0 {
		hc.Version = Version
	}
	js, err := json.Marshal(&hc)
	if err != nil {
		return err
	}
	w.hdr = &hc
	w.bw.Write(js)
	return w.bw.WriteByte('\n')
}

// WriteRecord writes one call record.
func (w *Writer) WriteRecord(r *Record) error {
	w.buf = AppendRecord(w.buf[:0], r, w.hdr == nil || w.hdr.PID != r.PID)
	_, err := w.bw.Write(w.buf)
	return err
}

// Flush writes out what is buffered.
func (w *Writer) Flush() error { return w.bw.Flush() }

// AppendRecord appends r as one JSON Lines record (with its newline) to
// buf, with a "pid" member when withPID is set. Host and Process are not
// written: they come from the header.
func AppendRecord(buf []byte, r *Record, withPID bool) []byte {
	buf = append(buf, `{"ts":`...)
	buf = strconv.AppendInt(buf, r.TS, 10)
	kint := func(k string, v int64) {
		buf = append(buf, ',', '"')
		buf = append(buf, k...)
		buf = append(buf, '"', ':')
		buf = strconv.AppendInt(buf, v, 10)
	}
	kstr := func(k, v string) {
		buf = append(buf, ',', '"')
		buf = append(buf, k...)
		buf = append(buf, '"', ':')
		buf = jsonl.AppendString(buf, v)
	}
	if r.Dur != 0 {
		kint("dur", r.Dur)
	}
	if withPID {
		kint("pid", int64(r.PID))
	}
	if r.TID != 0 {
		kint("tid", int64(r.TID))
	}
	name := r.CallName
	if r.Call != CallUnknown {
		name = r.Call.String()
	}
	kstr("call", name)
	if r.FD >= 0 {
		kint("fd", int64(r.FD))
	}
	if r.FD2 >= 0 {
		kint("fd2", int64(r.FD2))
	}
	if r.Len >= 0 {
		kint("len", r.Len)
	}
	if r.HasRet {
		kint("ret", r.Ret)
	}
	if r.Errno != "" {
		kstr("errno", r.Errno)
	}
	if r.Peek {
		buf = append(buf, `,"peek":true`...)
	}
	if r.Sock != SockUnknown {
		kstr("sock", r.Sock.String())
	}
	if r.Local != "" {
		kstr("local", r.Local)
	}
	if r.Remote != "" {
		kstr("remote", r.Remote)
	}
	if r.PeerPID != 0 {
		kint("peer_pid", int64(r.PeerPID))
	}
	if r.Peer != "" {
		kstr("peer", r.Peer)
	}
	if r.Trunc {
		buf = append(buf, `,"trunc":true`...)
	}
	if r.HasSum {
		buf = append(buf, `,"sum":"`...)
		s := strconv.FormatUint(uint64(r.Sum), 16)
		for i := len(s); i < 8; i++ {
			buf = append(buf, '0')
		}
		buf = append(buf, s...)
		buf = append(buf, '"')
	}
	if r.How != 0 {
		kint("how", int64(r.How))
	}
	if r.Path != "" {
		kstr("path", r.Path)
	}
	buf = appendEndCounters(buf, r)
	return append(buf, '}', '\n')
}

// appendEndCounters appends the counters of an "end" record (the
// version-2 ones only when not zero).
func appendEndCounters(buf []byte, r *Record) []byte {
	kint := func(k string, v int64) {
		buf = append(buf, ',', '"')
		buf = append(buf, k...)
		buf = append(buf, '"', ':')
		buf = strconv.AppendInt(buf, v, 10)
	}
	if r.Call == CallEnd || r.Records != 0 || r.EAGAINSkipped != 0 || r.WriteErrors != 0 {
		kint("records", r.Records)
		kint("eagain_skipped", r.EAGAINSkipped)
		kint("write_errors", r.WriteErrors)
	}
	if r.LostRecords != 0 {
		kint("lost_records", r.LostRecords)
	}
	if r.LogReopens != 0 {
		kint("log_reopens", r.LogReopens)
	}
	return buf
}
