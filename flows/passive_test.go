package flows

import (
	"slices"
	"testing"

	"github.com/wirepath/wirepath/pcapio"
)

// A path for the passive round-trip tests: the client, capture point 0
// beside it, 1 ms one way to capture point 1, 50 µs on to the server. The
// end-to-end round trip is 2.1 ms: point 0 sees the client's half as 0
// and the server's as 2.1 ms, point 1 the client's as 2 ms and the
// server's as 0.1 ms.
const (
	us       = int64(1e3)
	p0ToP1   = ms
	p1ToSrv  = 50 * us
	cliAddr  = "10.0.0.1:40000"
	srvAddr  = "10.0.0.2:80"
	pathRTT  = 2 * (p0ToP1 + p1ToSrv)
	srvHalf1 = 2 * p1ToSrv // the server's half at point 1
)

// wire is a conversation on that path: seg sends a segment from either end
// at a time on that end's clock and records it at both points, in time
// order.
type wire struct {
	pkts []*pcapio.Packet
}

func (w *wire) seg(fromClient bool, t int64, flags uint8, seq, ack uint32, payload string, opts pcapio.TCPOptions, win uint16) {
	src, dst := cliAddr, srvAddr
	obs := []sniff{{0, 64, t}, {1, 63, t + p0ToP1}}
	if !fromClient {
		src, dst = srvAddr, cliAddr
		obs = []sniff{{1, 64, t + p1ToSrv}, {0, 63, t + p1ToSrv + p0ToP1}}
	}
	p := tcpP(src, dst, flags, seq, ack, payload, obs)
	p.TCPOpts, p.Window = opts, win
	w.pkts = append(w.pkts, p)
}

// sorted returns the packets in the order the merge would give them: by
// their first observation.
func (w *wire) sorted() []*pcapio.Packet {
	slices.SortStableFunc(w.pkts, func(a, b *pcapio.Packet) int {
		switch {
		case a.TS() < b.TS():
			return -1
		case a.TS() > b.TS():
			return 1
		}
		return 0
	})
	return w.pkts
}

// handshake opens the connection at t0 (ISNs 1000 and 5000), the server
// answering at once and the client acknowledging at once, with the
// options and windows given.
func (w *wire) handshake(copt, sopt pcapio.TCPOptions) {
	w.seg(true, t0, fS, 1000, 0, "", copt, 64240)
	w.seg(false, t0+p0ToP1+p1ToSrv, fSA, 5000, 1001, "", sopt, 65160)
	w.seg(true, t0+pathRTT, fA, 1001, 5001, "", pcapio.TCPOptions{}, 502)
}

func ts(val, ecr uint32) pcapio.TCPOptions {
	return pcapio.TCPOptions{TSVal: val, TSEcr: ecr, HasTS: true}
}

// wantHalf is what a test expects of one half at one point: samples by
// source and the minimum.
type wantHalf struct {
	syn, acks, echoes int64
	min               int64
}

func checkHalf(t *testing.T, name, what string, h HalfRTT, want wantHalf) {
	t.Helper()
	if h.Handshake != want.syn || h.Acks != want.acks || h.Echoes != want.echoes || h.N != want.syn+want.acks+want.echoes {
		t.Errorf("%s: %s: %d samples (%d handshake, %d acks, %d echoes), want %d, %d, %d", name, what, h.N, h.Handshake, h.Acks, h.Echoes, want.syn, want.acks, want.echoes)
	}
	if h.N > 0 && h.MinNS != want.min {
		t.Errorf("%s: %s: min %d ns, want %d", name, what, h.MinNS, want.min)
	}
}

func TestPassiveRoundTrips(t *testing.T) {
	none := pcapio.TCPOptions{}
	start := t0 + 10*ms // after the handshake
	for _, c := range []struct {
		name string
		// build adds the segments after the handshake (data from ISN+1).
		build func(w *wire)
		// want[point] = {to client, to server}
		want [2][2]wantHalf
	}{
		{"handshake only", func(w *wire) {},
			[2][2]wantHalf{{{syn: 1, min: 0}, {syn: 1, min: pathRTT}}, {{syn: 1, min: 2 * p0ToP1}, {syn: 1, min: srvHalf1}}}},
		{"data acknowledged at once", func(w *wire) {
			w.seg(true, start, fPA, 1001, 5001, "GET", none, 502)
			w.seg(false, start+p0ToP1+p1ToSrv, fA, 5001, 1004, "", none, 509)
		}, [2][2]wantHalf{{{syn: 1}, {syn: 1, acks: 1, min: pathRTT}}, {{syn: 1, min: 2 * p0ToP1}, {syn: 1, acks: 1, min: srvHalf1}}}},
		{"the answer acknowledges after 3 ms, the client at once", func(w *wire) {
			w.seg(true, start, fPA, 1001, 5001, "GET", none, 502)
			w.seg(false, start+p0ToP1+p1ToSrv+3*ms, fPA, 5001, 1004, "200 OK", none, 509)
			w.seg(true, start+pathRTT+3*ms, fA, 1004, 5007, "", none, 502)
		}, [2][2]wantHalf{{{syn: 1, acks: 1, min: 0}, {syn: 1, acks: 1, min: pathRTT}}, {{syn: 1, acks: 1, min: 2 * p0ToP1}, {syn: 1, acks: 1, min: srvHalf1}}}},
		{"one ACK for two segments: the newest is sampled", func(w *wire) {
			w.seg(true, start, fA, 1001, 5001, "aaaa", none, 502)
			w.seg(true, start+200*us, fPA, 1005, 5001, "bbbb", none, 502)
			w.seg(false, start+200*us+p0ToP1+p1ToSrv, fA, 5001, 1009, "", none, 509)
		}, [2][2]wantHalf{{{syn: 1}, {syn: 1, acks: 1, min: pathRTT}}, {{syn: 1, min: 2 * p0ToP1}, {syn: 1, acks: 1, min: srvHalf1}}}},
		{"an ACK inside a segment samples nothing", func(w *wire) {
			w.seg(true, start, fPA, 1001, 5001, "aaaa", none, 502)
			w.seg(false, start+p0ToP1+p1ToSrv, fA, 5001, 1003, "", none, 509)
		}, [2][2]wantHalf{{{syn: 1}, {syn: 1, min: pathRTT}}, {{syn: 1, min: 2 * p0ToP1}, {syn: 1, min: srvHalf1}}}},
		{"Karn: a retransmitted segment is not sampled", func(w *wire) {
			w.seg(true, start, fPA, 1001, 5001, "aaaa", none, 502)
			w.seg(true, start+200*ms, fPA, 1001, 5001, "aaaa", none, 502)
			w.seg(false, start+200*ms+p0ToP1+p1ToSrv, fA, 5001, 1005, "", none, 509)
		}, [2][2]wantHalf{{{syn: 1}, {syn: 1, min: pathRTT}}, {{syn: 1, min: 2 * p0ToP1}, {syn: 1, min: srvHalf1}}}},
		{"a timestamp echo in a pure ACK that acknowledges the middle of a segment", func(w *wire) {
			w.seg(true, start, fPA, 1001, 5001, "aaaa", ts(700, 300), 502)
			w.seg(false, start+p0ToP1+p1ToSrv, fA, 5001, 1003, "", ts(310, 700), 509)
		}, [2][2]wantHalf{{{syn: 1}, {syn: 1, echoes: 1, min: pathRTT}}, {{syn: 1, min: 2 * p0ToP1}, {syn: 1, echoes: 1, min: srvHalf1}}}},
		{"a timestamp value in two segments is ambiguous: no echo sample", func(w *wire) {
			w.seg(true, start, fA, 1001, 5001, "aaaa", ts(700, 300), 502)
			w.seg(true, start+200*us, fPA, 1005, 5001, "bbbb", ts(700, 300), 502)
			w.seg(false, start+200*us+p0ToP1+p1ToSrv, fA, 5001, 1007, "", ts(310, 700), 509)
		}, [2][2]wantHalf{{{syn: 1}, {syn: 1, min: pathRTT}}, {{syn: 1, min: 2 * p0ToP1}, {syn: 1, min: srvHalf1}}}},
	} {
		w := &wire{}
		w.handshake(none, none)
		c.build(w)
		_, conns, _ := run(t, DefaultConfig(), w.sorted()...)
		if len(conns) != 1 || len(conns[0].Points) != 2 {
			t.Fatalf("%s: %d connections, points %+v", c.name, len(conns), conns)
		}
		for i, p := range conns[0].Points {
			if p.Point != []string{"0/0", "1/0"}[i] {
				t.Fatalf("%s: point %d is %s", c.name, i, p.Point)
			}
			checkHalf(t, c.name, p.Point+" to client", p.ToClient, c.want[i][0])
			checkHalf(t, c.name, p.Point+" to server", p.ToServer, c.want[i][1])
			if rtt, ok := p.RTT(); !ok || rtt != pathRTT {
				t.Errorf("%s: %s: end-to-end %d ns, %v; want %d", c.name, p.Point, rtt, ok, pathRTT)
			}
		}
		if p := conns[0].Points[0]; p.ClientTTL != 64 || p.ServerTTL != 63 {
			t.Errorf("%s: TTLs at point 0: client %d server %d", c.name, p.ClientTTL, p.ServerTTL)
		}
	}
}

func TestPassiveWindows(t *testing.T) {
	for _, c := range []struct {
		name       string
		copt, sopt pcapio.TCPOptions
		cli, srv   Window
	}{
		// Both SYNs scale: the largest windows after them, shifted.
		{"both scale", pcapio.TCPOptions{MSS: 1460, WScale: 7, HasWScale: true}, pcapio.TCPOptions{MSS: 1400, WScale: 2, HasWScale: true},
			Window{MSS: 1460, MaxBytes: 502 << 7, Scaled: true}, Window{MSS: 1400, MaxBytes: 65160 << 2, Scaled: true}},
		// Only one SYN offers scaling: no side scales (RFC 7323 2.2).
		{"one scales", pcapio.TCPOptions{MSS: 1460, WScale: 7, HasWScale: true}, pcapio.TCPOptions{MSS: 1460},
			Window{MSS: 1460, MaxBytes: 502, Scaled: true}, Window{MSS: 1460, MaxBytes: 65160, Scaled: true}},
	} {
		w := &wire{}
		w.handshake(c.copt, c.sopt)
		// The server's window is the largest of its non-SYN segments.
		w.seg(false, t0+5*ms, fA, 5001, 1001, "", pcapio.TCPOptions{}, 65160)
		_, conns, _ := run(t, DefaultConfig(), w.sorted()...)
		if len(conns) != 1 || conns[0].ClientWindow != c.cli || conns[0].ServerWindow != c.srv {
			t.Errorf("%s: windows %+v %+v, want %+v %+v", c.name, conns[0].ClientWindow, conns[0].ServerWindow, c.cli, c.srv)
		}
	}
	// Seen from its middle: raw windows, not scaled; no MSS.
	w := &wire{}
	w.seg(true, t0, fPA, 1001, 5001, "GET", pcapio.TCPOptions{}, 502)
	_, conns, _ := run(t, DefaultConfig(), w.sorted()...)
	if got := conns[0].ClientWindow; got != (Window{MaxBytes: 502}) || conns[0].ServerWindow.MaxBytes != -1 {
		t.Errorf("mid-stream: windows %+v %+v", got, conns[0].ServerWindow)
	}
}

func TestPassivePacketPairs(t *testing.T) {
	w := &wire{}
	w.handshake(pcapio.TCPOptions{}, pcapio.TCPOptions{})
	big := string(make([]byte, 1000))
	// The server sends two large segments 800 µs apart and a small one:
	// one pair (the small one is no pair).
	s := t0 + 10*ms
	w.seg(false, s, fA, 5001, 1001, big, pcapio.TCPOptions{}, 509)
	w.seg(false, s+800*us, fA, 6001, 1001, big, pcapio.TCPOptions{}, 509)
	w.seg(false, s+900*us, fPA, 7001, 1001, "x", pcapio.TCPOptions{}, 509)
	_, conns, _ := run(t, DefaultConfig(), w.sorted()...)
	want := float64(1000+tcpHeaderBytes) * 1e9 / float64(800*us)
	for _, p := range conns[0].Points {
		if p.ServerPairs.N != 1 || p.ServerPairs.P50 != want || p.ClientPairs.N != 0 {
			t.Errorf("%s: pairs %+v / %+v, want one server pair at %.0f B/s", p.Point, p.ServerPairs, p.ClientPairs, want)
		}
	}
}

// TestPassiveOff checks that without OnConn the sampler keeps nothing.
func TestPassiveOff(t *testing.T) {
	w := &wire{}
	w.handshake(pcapio.TCPOptions{}, pcapio.TCPOptions{})
	a, err := NewAssembler(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range w.sorted() {
		a.Add(p)
	}
	for _, c := range a.conns {
		if len(c.ps.pts) != 0 {
			t.Errorf("sampler ran without OnConn: %d points", len(c.ps.pts))
		}
	}
}
