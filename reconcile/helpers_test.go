package reconcile

import (
	"net/netip"
	"testing"

	"github.com/wirepath/wirepath/flows"
	"github.com/wirepath/wirepath/pcapio"
	"github.com/wirepath/wirepath/preload"
	"github.com/wirepath/wirepath/trace"
)

// sn is one sighting of a synthetic message: sniffer, TTL, first and last
// time, and whether the point missed some of its bytes.
type sn struct {
	sniffer     uint16
	ttl         uint8
	first, last int64
	part        bool
}

// fmsg builds a sniffed message.
func fmsg(conn uint64, idx uint32, src, dst string, seq uint32, bytes int64, kind trace.Kind, call uint32, ss ...sn) *flows.Message {
	m := &flows.Message{
		Conn: conn, Index: idx, Proto: trace.ProtoTCP,
		Src: netip.MustParseAddrPort(src), Dst: netip.MustParseAddrPort(dst),
		Seq: seq, Bytes: bytes, Kind: kind,
	}
	if kind != trace.KindUnknown {
		m.Call = flows.CallID{Conn: conn, Index: call}
	}
	for _, s := range ss {
		b := bytes
		if s.part {
			b = bytes / 2
		}
		m.Sightings = append(m.Sightings, flows.Sighting{
			Point: flows.Point{Sniffer: pcapio.SnifferID(s.sniffer)}, TTL: s.ttl,
			First: s.first, Last: s.last, Bytes: b, Segments: 1,
		})
	}
	return m
}

// sniffers describes n sniffers, the first the reference, all corrected.
func sniffers(n int) []Sniffer {
	out := make([]Sniffer, n)
	for i := range out {
		out[i] = Sniffer{Name: "s" + string(rune('0'+i)), Known: true, Reference: i == 0, Method: "symmetric"}
	}
	out[0].Method = "reference"
	return out
}

// traceBuilder builds a preload table call by call.
type traceBuilder struct {
	t *preload.Table
}

func newTraceBuilder() *traceBuilder { return &traceBuilder{t: preload.NewTable()} }

func (b *traceBuilder) proc(host string, pid int, name string) {
	b.t.AddHeader(&preload.Header{Version: 1, Host: host, PID: pid, Process: name})
}

// rec adds one call of process host/pid at ts lasting dur.
func (b *traceBuilder) rec(host string, pid int, ts, dur int64, call preload.Call, fd int, ret int64, mod func(*preload.Record)) {
	r := &preload.Record{Host: host, PID: pid, TS: ts, Dur: dur, Call: call, CallName: call.String(), FD: fd, FD2: -1, Len: ret, Ret: ret, HasRet: true}
	if mod != nil {
		mod(r)
	}
	b.t.Add(r)
}

func (b *traceBuilder) connect(host string, pid int, ts int64, fd int, sock preload.SockType, local, remote string) {
	b.rec(host, pid, ts, 1000, preload.CallConnect, fd, 0, func(r *preload.Record) { r.Sock, r.Local, r.Remote = sock, local, remote })
}

func (b *traceBuilder) accept(host string, pid int, ts int64, lfd, fd int, sock preload.SockType, local, remote string) {
	b.rec(host, pid, ts, 1000, preload.CallAccept, lfd, int64(fd), func(r *preload.Record) { r.Sock, r.Local, r.Remote = sock, local, remote })
}

func (b *traceBuilder) write(host string, pid int, ts int64, fd int, n int64) {
	b.rec(host, pid, ts, 500, preload.CallWrite, fd, n, nil)
}

func (b *traceBuilder) read(host string, pid int, ts, dur int64, fd int, n int64) {
	b.rec(host, pid, ts, dur, preload.CallRead, fd, n, nil)
}

// run reconciles msgs with opts and checks the report's identities.
func run(t *testing.T, opts Options, msgs []*flows.Message, conns ...*flows.ConnStats) (*trace.Trace, *Report) {
	t.Helper()
	r, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		r.AddMessage(m)
	}
	for _, c := range conns {
		r.AddConn(c)
	}
	tr, rep, err := r.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Check(); err != nil {
		t.Fatal(err)
	}
	return tr, rep
}

// find returns the messages from src to dst (endpoints), in trace order.
func find(tr *trace.Trace, src, dst string) []*trace.Message {
	var out []*trace.Message
	for i := range tr.Messages {
		m := &tr.Messages[i]
		if tr.Str(m.Src) == src && tr.Str(m.Dst) == dst {
			out = append(out, m)
		}
	}
	return out
}
