package reconcile

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/flows"
	"github.com/wirepath/wirepath/preload"
	"github.com/wirepath/wirepath/trace"
)

// The matcher's world: a client process cli[100] on host c (10.0.0.1) and
// a server srv[200] on host s (10.0.1.2:80), one sniffer s0 on their
// switch. The hosts' clocks run offC and offS ahead of the sniffer's.
const (
	cliEP = "10.0.0.1:40000"
	srvEP = "10.0.1.2:80"
	offC  = 250_000_000    // +250 ms
	offS  = -3_000_000_000 // -3 s
	cli   = "cli[100]@c"
	srv   = "srv[200]@s"
)

// world builds the traces and sniffed messages of one scenario.
type world struct {
	b     *traceBuilder
	msgs  []*flows.Message
	conns []*flows.ConnStats
	// stream positions and sequence numbers per direction
	cseq, sseq uint32
	index      uint32
	call       uint32
}

func newWorld(connect bool) *world {
	w := &world{b: newTraceBuilder(), cseq: 1001, sseq: 5001}
	w.b.proc("c", 100, "cli")
	w.b.proc("s", 200, "srv")
	if connect {
		w.b.connect("c", 100, 1e9+offC, 3, preload.SockTCP, cliEP, srvEP)
		w.b.accept("s", 200, 1e9+offS, 3, 4, preload.SockTCP, srvEP, cliEP)
	}
	w.conns = append(w.conns, &flows.ConnStats{Conn: 1, Proto: "tcp",
		Client: netip.MustParseAddrPort(cliEP), Server: netip.MustParseAddrPort(srvEP), Caller: "syn"})
	return w
}

// writes logs the client (or server) writing sizes from true time t (1 µs
// apart); reads logs the peer reading sizes, the last ending at t+end.
func (w *world) writes(fromClient bool, t int64, sizes ...int64) {
	host, pid, fd, off := "c", 100, 3, int64(offC)
	if !fromClient {
		host, pid, fd, off = "s", 200, 4, offS
	}
	for i, n := range sizes {
		w.b.write(host, pid, t+int64(i)*1000+off, fd, n)
	}
}

func (w *world) reads(byClient bool, t int64, sizes ...int64) {
	host, pid, fd, off := "c", 100, 3, int64(offC)
	if !byClient {
		host, pid, fd, off = "s", 200, 4, offS
	}
	for i, n := range sizes {
		w.b.read(host, pid, t+int64(i)*1000+off, 500, fd, n)
	}
}

// sniff adds a sniffed message of n bytes from client (or server), first
// seen at true time t, last at t+dur, by the given sniffers (TTL 64).
func (w *world) sniff(fromClient bool, t, dur, n int64, kind trace.Kind, points ...uint16) {
	src, dst, seq := cliEP, srvEP, &w.cseq
	if !fromClient {
		src, dst, seq = srvEP, cliEP, &w.sseq
	}
	var ss []sn
	for _, p := range points {
		ss = append(ss, sn{p, 64, t, t + dur, false})
	}
	if len(points) == 0 {
		ss = []sn{{0, 64, t, t + dur, false}}
	}
	w.msgs = append(w.msgs, fmsg(1, w.index, src, dst, *seq, n, kind, w.call, ss...))
	if kind == trace.KindReturn {
		w.call++
	}
	w.index++
	*seq += uint32(n)
}

// skip advances a direction's sequence numbers over n bytes no sniffer saw.
func (w *world) skip(fromClient bool, n int64) {
	if fromClient {
		w.cseq += uint32(n)
	} else {
		w.sseq += uint32(n)
	}
}

// exchange is a whole call and return: the client writes call bytes at t,
// the sniffer sees them at t+50µs, the server reads them by t+120µs and
// writes its answer at t+500µs, seen at t+550µs, read by t+600µs.
func (w *world) exchange(t int64, sniffed bool, call, ret []int64) {
	sum := func(xs []int64) (n int64) {
		for _, x := range xs {
			n += x
		}
		return
	}
	// Every delay between a call and the sniffer is 50 µs, so that the
	// hosts' clocks are estimated exactly.
	w.writes(true, t, call...)
	w.reads(false, t+119_500, sum(call))
	w.writes(false, t+500_000, ret...)
	w.reads(true, t+619_500, sum(ret))
	if sniffed {
		w.sniff(true, t+50_000, 20_000, sum(call), trace.KindCall)
		w.sniff(false, t+550_000, 20_000, sum(ret), trace.KindReturn)
	} else {
		w.skip(true, sum(call))
		w.skip(false, sum(ret))
	}
}

// want is one expected message.
type want struct {
	src, dst string
	bytes    int64
	kind     trace.Kind
	// send, recv: the expected times on the nodes' clocks (the sniffer's,
	// as the sniffer is both hosts' home point); 0 means any known time,
	// -1 unknown.
	send, recv int64
}

func (w *world) check(t *testing.T, opts Options, wants []want, calls map[string]int64) (*trace.Trace, *Report) {
	t.Helper()
	if opts.Preload == nil {
		opts.Preload = w.b.t
	}
	if opts.Sniffers == nil {
		opts.Sniffers = sniffers(1)
	}
	opts.Naming = NameProcess
	tr, rep := run(t, opts, w.msgs, w.conns...)
	var got []string
	for i := range tr.Messages {
		m := &tr.Messages[i]
		got = append(got, fmt.Sprintf("%s->%s %d %v %v %v", tr.Str(m.SrcNode), tr.Str(m.DstNode), m.Bytes, m.Kind, m.SendTS, m.RecvTS))
	}
	if len(tr.Messages) != len(wants) {
		t.Fatalf("%d messages, want %d:\n%s", len(tr.Messages), len(wants), strings.Join(got, "\n"))
	}
	for i, wt := range wants {
		m := &tr.Messages[i]
		if tr.Str(m.SrcNode) != wt.src || tr.Str(m.DstNode) != wt.dst || m.Bytes != wt.bytes || m.Kind != wt.kind {
			t.Errorf("message %d: %s, want %s->%s %d %v", i, got[i], wt.src, wt.dst, wt.bytes, wt.kind)
		}
		for _, c := range []struct {
			what string
			ts   trace.Timestamp
			want int64
		}{{"send", m.SendTS, wt.send}, {"receive", m.RecvTS, wt.recv}} {
			switch {
			case c.want < 0 && c.ts.Known():
				t.Errorf("message %d: %s time %d, want none", i, c.what, c.ts)
			case c.want >= 0 && !c.ts.Known():
				t.Errorf("message %d: no %s time", i, c.what)
			case c.want > 0 && abs64(int64(c.ts)-c.want) > 2000:
				t.Errorf("message %d: %s time %d, want %d (±2µs)", i, c.what, c.ts, c.want)
			}
		}
	}
	for k, v := range calls {
		if rep.Calls[k] != v {
			t.Errorf("calls %s: %d, want %d (all: %v)", k, rep.Calls[k], v, rep.Calls)
		}
	}
	return tr, rep
}

const t1, t2, t3 = int64(1_000_100_000), int64(1_010_000_000), int64(1_020_000_000)

func TestMatchCoalesced(t *testing.T) {
	// Three writes of the request in one sniffed message (coalesced
	// segments), the answer in two writes.
	w := newWorld(true)
	w.exchange(t1, true, []int64{10, 20, 30}, []int64{100, 50})
	_, rep := w.check(t, Options{}, []want{
		{cli, srv, 60, trace.KindCall, t1 + 50_000, t1 + 70_000},
		{srv, cli, 150, trace.KindReturn, t1 + 550_000, t1 + 570_000},
	}, map[string]int64{"matched": 7})
	// The hosts' clocks: the write comes before the sniffer's first
	// byte, the read returns after its last, both ways.
	for _, c := range rep.Clocks {
		want := map[string]int64{"c": offC, "s": offS}[c.Name]
		if c.Kind == "host" && (!c.Known || abs64(c.OffsetNS-want) > c.UncertaintyNS) {
			t.Errorf("clock %s: %+v, want %d", c.Name, c, want)
		}
	}
}

func TestMatchPartialWrites(t *testing.T) {
	// A non-blocking write moves 600 of 1000 bytes, the next the rest:
	// one message.
	w := newWorld(true)
	w.exchange(t1, true, []int64{600, 400}, []int64{30})
	w.check(t, Options{}, []want{
		{cli, srv, 1000, trace.KindCall, 0, 0},
		{srv, cli, 30, trace.KindReturn, 0, 0},
	}, map[string]int64{"matched": 5})
}

func TestMatchPauseInsideWrite(t *testing.T) {
	// flows cut one write of 1000 bytes at a pause (a sender blocked by
	// the receiver's window): the application's boundary joins them.
	w := newWorld(true)
	w.writes(true, t1, 1000)
	w.reads(false, t1+900_000, 1000)
	w.sniff(true, t1+50_000, 10_000, 600, trace.KindCall)
	w.msgs[len(w.msgs)-1].Call = flows.CallID{}
	w.msgs[len(w.msgs)-1].Kind = trace.KindCall
	w.sniff(true, t1+800_000, 10_000, 400, trace.KindUnknown)
	w.writes(false, t2, 30)
	w.reads(true, t2+100_000, 30)
	w.sniff(false, t2+50_000, 1000, 30, trace.KindReturn)
	for _, b := range []Boundaries{BoundFat, BoundWrites} {
		w.check(t, Options{Boundaries: b}, []want{
			{cli, srv, 1000, trace.KindCall, t1 + 50_000, t1 + 810_000},
			{srv, cli, 30, trace.KindReturn, 0, 0},
		}, map[string]int64{"matched": 4})
	}
}

func TestMatchWritesMode(t *testing.T) {
	// Every write a message: the parts of one sniffed message take the
	// traced times (the sniffed ones belong to the whole).
	w := newWorld(true)
	w.exchange(t1, true, []int64{10, 20, 30}, []int64{100})
	w.check(t, Options{Boundaries: BoundWrites}, []want{
		{cli, srv, 10, trace.KindCall, t1, t1 + 120_000},
		{cli, srv, 20, trace.KindUnknown, t1 + 1000, t1 + 120_000},
		{cli, srv, 30, trace.KindUnknown, t1 + 2000, t1 + 120_000},
		{srv, cli, 100, trace.KindReturn, t1 + 550_000, t1 + 570_000},
	}, nil)
}

func TestMatchCaptureEndedEarly(t *testing.T) {
	// The second exchange happened after the capture ended: the traces
	// alone make its messages, labelled and on the sniffer's clock.
	w := newWorld(true)
	w.exchange(t1, true, []int64{10, 20}, []int64{100})
	w.exchange(t2, false, []int64{40}, []int64{70})
	w.check(t, Options{}, []want{
		{cli, srv, 30, trace.KindCall, 0, 0},
		{srv, cli, 100, trace.KindReturn, 0, 0},
		{cli, srv, 40, trace.KindCall, t2, t2 + 120_000},
		{srv, cli, 70, trace.KindReturn, t2 + 500_000, t2 + 620_000},
	}, map[string]int64{"matched": 5, "only_outside_capture": 4})
}

func TestMatchCaptureStartedLate(t *testing.T) {
	// The capture began after the first exchange (flows saw no
	// handshake): the byte counts are lined up by the message ends.
	w := newWorld(true)
	w.conns[0].MidStream = true
	w.conns[0].Caller = "http"
	w.exchange(t1, false, []int64{10, 20}, []int64{100})
	w.exchange(t2, true, []int64{40}, []int64{70, 5})
	w.exchange(t3, true, []int64{44}, []int64{33})
	w.check(t, Options{}, []want{
		{cli, srv, 30, trace.KindCall, t1, t1 + 120_000},
		{srv, cli, 100, trace.KindReturn, t1 + 500_000, t1 + 620_000},
		{cli, srv, 40, trace.KindCall, t2 + 50_000, t2 + 70_000},
		{srv, cli, 75, trace.KindReturn, t2 + 550_000, t2 + 570_000},
		{cli, srv, 44, trace.KindCall, t3 + 50_000, t3 + 70_000},
		{srv, cli, 33, trace.KindReturn, t3 + 550_000, t3 + 570_000},
	}, map[string]int64{"matched": 9, "only_outside_capture": 5})
}

func TestMatchRetransmission(t *testing.T) {
	// A sniffer at the server (s1, behind a router) missed the request's
	// first segment and saw its retransmission 200 ms later: the receive
	// time is when the bytes reached the server's side, not the client's.
	w := newWorld(true)
	w.writes(true, t1, 100)
	w.reads(false, t1+200_100_000, 100)
	m := fmsg(1, 0, cliEP, srvEP, 1001, 100, trace.KindCall, 0,
		sn{0, 64, t1 + 50_000, t1 + 50_000, false},
		sn{1, 63, t1 + 200_060_000, t1 + 200_060_000, false})
	m.Sightings[0].Repeats = 1
	w.msgs = append(w.msgs, m)
	w.writes(false, t1+300_000_000, 30)
	w.reads(true, t1+300_100_000, 30)
	w.msgs = append(w.msgs, fmsg(1, 1, srvEP, cliEP, 5001, 30, trace.KindReturn, 0,
		sn{1, 64, t1 + 300_050_000, t1 + 300_050_000, false},
		sn{0, 63, t1 + 300_060_000, t1 + 300_060_000, false}))
	w.check(t, Options{Sniffers: sniffers(2)}, []want{
		{cli, srv, 100, trace.KindCall, t1 + 50_000, t1 + 200_060_000},
		{srv, cli, 30, trace.KindReturn, t1 + 300_050_000, t1 + 300_060_000},
	}, map[string]int64{"matched": 4})
}

func TestMatchDatagrams(t *testing.T) {
	// Three datagrams each way are traced; the sniffer lost the second
	// query: it is a message of the traces alone.
	b := newTraceBuilder()
	b.proc("c", 100, "cli")
	b.proc("s", 200, "srv")
	const cliU, srvU = "10.0.0.1:5353", "10.0.1.2:53"
	b.rec("c", 100, 1e9+offC, 100, preload.CallSocket, -1, 3, func(r *preload.Record) { r.Sock, r.Local = preload.SockUDP, "0.0.0.0:5353" })
	b.rec("s", 200, 1e9+offS, 100, preload.CallSocket, -1, 4, func(r *preload.Record) { r.Sock, r.Local = preload.SockUDP, "10.0.1.2:53" })
	var msgs []*flows.Message
	for i, n := range []int64{40, 50, 60} {
		t0 := t1 + int64(i)*1e6
		b.rec("c", 100, t0+offC, 100, preload.CallSendto, 3, n, func(r *preload.Record) { r.Peer = srvU; r.Sum, r.HasSum = uint32(i), true })
		b.rec("s", 200, t0+100_000+offS, 100, preload.CallRecvfrom, 4, n, func(r *preload.Record) { r.Peer = cliU; r.Sum, r.HasSum = uint32(i), true })
		if i != 1 {
			m := fmsg(uint64(1), uint32(i), cliU, srvU, 0, n, trace.KindUnknown, 0, sn{0, 64, t0 + 50_000, t0 + 50_000, false})
			m.Proto = trace.ProtoUDP
			msgs = append(msgs, m)
		}
	}
	// An answer each way, sniffed, so that the hosts' clocks are tied.
	b.rec("s", 200, t1+500_000+offS, 100, preload.CallSendto, 4, 80, func(r *preload.Record) { r.Peer = cliU })
	b.rec("c", 100, t1+600_000+offC, 100, preload.CallRecvfrom, 3, 80, func(r *preload.Record) { r.Peer = srvU })
	m := fmsg(2, 0, srvU, cliU, 0, 80, trace.KindUnknown, 0, sn{0, 64, t1 + 550_000, t1 + 550_000, false})
	m.Proto = trace.ProtoUDP
	msgs = append(msgs, m)
	w := &world{b: b, msgs: msgs}
	w.check(t, Options{}, []want{
		{cli, srv, 40, trace.KindUnknown, t1 + 50_000, t1 + 50_000},
		{srv, cli, 80, trace.KindUnknown, t1 + 550_000, t1 + 550_000},
		{cli, srv, 50, trace.KindUnknown, t1 + 1e6, t1 + 1e6 + 100_100},
		{cli, srv, 60, trace.KindUnknown, t1 + 2e6 + 50_000, t1 + 2e6 + 50_000},
	}, map[string]int64{"matched": 6, "only_outside_capture": 2})
}

func TestMatchAcrossNAT(t *testing.T) {
	// The client connected to a load balancer's address; the sniffed
	// messages carry the real server's after nat undid the translation.
	const vip = "10.0.9.9:80"
	w := newWorld(false)
	w.b.connect("c", 100, 1e9+offC, 3, preload.SockTCP, cliEP, vip)
	w.b.accept("s", 200, 1e9+offS, 3, 4, preload.SockTCP, srvEP, "10.0.1.1:61000")
	w.exchange(t1, true, []int64{10}, []int64{20})
	canon := func(proto uint8, src, dst netip.AddrPort, ts int64) (netip.AddrPort, netip.AddrPort, bool) {
		m := map[string]string{cliEP: cliEP, vip: srvEP, srvEP: srvEP, "10.0.1.1:61000": cliEP}
		s, ok1 := m[src.String()]
		d, ok2 := m[dst.String()]
		if !ok1 || !ok2 || (src.String() == cliEP && dst.String() != vip) {
			return src, dst, false
		}
		return netip.MustParseAddrPort(s), netip.MustParseAddrPort(d), true
	}
	w.check(t, Options{Canonical: canon}, []want{
		{cli, srv, 10, trace.KindCall, 0, 0},
		{srv, cli, 20, trace.KindReturn, 0, 0},
	}, map[string]int64{"matched": 4})
}

func TestMatchUnix(t *testing.T) {
	// Two processes of host s talk over a UNIX socket; no sniffer sees
	// it; one host, one clock.
	b := newTraceBuilder()
	b.proc("s", 200, "srv")
	b.proc("s", 300, "logger")
	b.connect("s", 200, 1e9, 5, preload.SockUnixStream, "unix:", "unix:/run/log.sock")
	b.t.Conns[len(b.t.Conns)-1].PeerPID = 300
	b.accept("s", 300, 1e9+1000, 3, 4, preload.SockUnixStream, "unix:/run/log.sock", "unix:")
	b.t.Conns[len(b.t.Conns)-1].PeerPID = 200
	b.write("s", 200, 2e9, 5, 10)
	b.read("s", 300, 2e9+100, 50, 4, 10)
	b.write("s", 300, 2e9+1000, 4, 3)
	b.read("s", 200, 2e9+1100, 50, 5, 3)
	w := &world{b: b}
	tr, _ := w.check(t, Options{}, []want{
		{srv, "logger[300]@s", 10, trace.KindCall, 2e9, 2e9 + 150},
		{"logger[300]@s", srv, 3, trace.KindReturn, 2e9 + 1000, 2e9 + 1150},
	}, map[string]int64{"only_unix": 4})
	if tr.Messages[0].Proto != trace.ProtoUnix || tr.Str(tr.Messages[0].Dst) != "unix:/run/log.sock" {
		t.Errorf("first message: %v to %s", tr.Messages[0].Proto, tr.Str(tr.Messages[0].Dst))
	}
}

func TestMatchRemoteSniffer(t *testing.T) {
	// The only sniffer is on the client's side of a router: it is the
	// server's home point too, but what the server sends reaches it with
	// TTL 63. The traced server's own calls are nearer its ends: its
	// times come from them (on the sniffer's clock).
	w := newWorld(true)
	for i, t0 := range []int64{t1, t2, t3} {
		w.writes(true, t0, 40)
		w.reads(false, t0+119_500, 40)
		w.writes(false, t0+500_000, 70)
		w.reads(true, t0+619_500, 70)
		w.msgs = append(w.msgs,
			fmsg(1, uint32(2*i), cliEP, srvEP, w.cseq, 40, trace.KindCall, uint32(i), sn{0, 64, t0 + 50_000, t0 + 70_000, false}),
			fmsg(1, uint32(2*i+1), srvEP, cliEP, w.sseq, 70, trace.KindReturn, uint32(i), sn{0, 63, t0 + 550_000, t0 + 570_000, false}))
		w.cseq += 40
		w.sseq += 70
	}
	var wants []want
	for _, t0 := range []int64{t1, t2, t3} {
		wants = append(wants,
			want{cli, srv, 40, trace.KindCall, t0 + 50_000, t0 + 120_000},
			want{srv, cli, 70, trace.KindReturn, t0 + 500_000, t0 + 570_000})
	}
	w.check(t, Options{}, wants, map[string]int64{"matched": 12})
}

// A traced host that sends again from a port it used seconds earlier (a
// resolver's fresh socket per lookup, here 3 s before the capture began)
// sent other datagrams: the early ones are not paired with the sniffed
// ones of equal size (the testbed's bug of issue 10: one such pair put a
// traced host's clock 1.49 s off), and the host's clock stays right.
func TestMatchDatagramPortReused(t *testing.T) {
	w := newWorld(true)
	w.exchange(t1, true, []int64{100}, []int64{30}) // ties the hosts' clocks, roughly and exactly
	const cliU, dnsU = "10.0.0.1:5353", "10.0.2.9:53"
	for i, t0 := range []int64{t1 - 3e9, t2} {
		fd := 10 + i
		w.b.rec("c", 100, t0-1000+offC, 100, preload.CallSocket, -1, int64(fd), func(r *preload.Record) { r.Sock, r.Local = preload.SockUDP, "0.0.0.0:5353" })
		w.b.rec("c", 100, t0+offC, 100, preload.CallSendto, fd, 40, func(r *preload.Record) { r.Peer = dnsU })
		w.b.rec("c", 100, t0+300_000+offC, 100, preload.CallRecvfrom, fd, 47, func(r *preload.Record) { r.Peer = dnsU })
	}
	q := fmsg(7, 0, cliU, dnsU, 0, 40, trace.KindUnknown, 0, sn{0, 64, t2 + 50_000, t2 + 50_000, false})
	a := fmsg(8, 0, dnsU, cliU, 0, 47, trace.KindUnknown, 0, sn{0, 64, t2 + 250_000, t2 + 250_000, false})
	q.Proto, a.Proto = trace.ProtoUDP, trace.ProtoUDP
	w.msgs = append(w.msgs, q, a)
	tr, rep := run(t, Options{Preload: w.b.t, Sniffers: sniffers(1), Naming: NameProcess}, w.msgs, w.conns...)
	if rep.Calls["matched"] != 6 || rep.Calls["only_unsniffed"]+rep.Calls["only_outside_capture"] != 2 {
		t.Errorf("calls %v", rep.Calls)
	}
	for _, c := range rep.Clocks {
		if c.Name == "c" && (!c.Known || abs64(c.OffsetNS-offC) > 60_000) {
			t.Errorf("clock %+v, true offset %d", c, int64(offC))
		}
	}
	// The early answer is the trace's alone (received before the
	// capture); the sniffed one has both times from the sniffer.
	ms := find(tr, dnsU, cliU)
	if len(ms) != 2 || ms[0].SendTS.Known() || int64(ms[0].RecvTS) > t1 || int64(ms[1].SendTS) != t2+250_000 || int64(ms[1].RecvTS) != t2+250_000 {
		for _, m := range ms {
			t.Logf("%v %v", m.SendTS, m.RecvTS)
		}
		t.Errorf("the answers: %d", len(ms))
	}
	for _, wn := range rep.Warnings {
		if strings.Contains(wn, "clocks") {
			t.Errorf("warning %q", wn)
		}
	}
}

func TestMatchLostCallPairedWithItsReturn(t *testing.T) {
	// The sniffer lost the second request (flows gave the hole up as a
	// message of gap bytes only) and saw its response, which flows made
	// an orphan RETURN (c1.1, of no CALL). The traces hold the request:
	// it becomes the CALL of that RETURN, so the pair the loss broke is
	// whole again and the third exchange keeps its own ids.
	w := newWorld(true)
	w.exchange(t1, true, []int64{30}, []int64{100})
	w.writes(true, t2, 40)
	w.reads(false, t2+119_500, 40)
	w.writes(false, t2+500_000, 70)
	w.reads(true, t2+619_500, 70)
	gap := fmsg(1, w.index, cliEP, srvEP, w.cseq, 40, trace.KindUnknown, 0)
	gap.GapBytes, gap.Gaps, gap.Incomplete = 40, 1, true
	w.msgs = append(w.msgs, gap)
	w.index++
	w.cseq += 40
	w.sniff(false, t2+550_000, 20_000, 70, trace.KindReturn)
	w.exchange(t3, true, []int64{44}, []int64{33})
	tr, _ := w.check(t, Options{}, []want{
		{cli, srv, 30, trace.KindCall, 0, 0},
		{srv, cli, 100, trace.KindReturn, 0, 0},
		{cli, srv, 40, trace.KindCall, t2, t2 + 120_000},
		{srv, cli, 70, trace.KindReturn, 0, 0},
		{cli, srv, 44, trace.KindCall, 0, 0},
		{srv, cli, 33, trace.KindReturn, 0, 0},
	}, nil)
	var ids []string
	for i := range tr.Messages {
		ids = append(ids, tr.Str(tr.Messages[i].CallID))
	}
	if got, want := strings.Join(ids, " "), "c1.0 c1.0 c1.1 c1.1 c1.2 c1.2"; got != want {
		t.Errorf("call ids %s, want %s", got, want)
	}
}
