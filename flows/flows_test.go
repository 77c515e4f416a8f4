package flows

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	farm "github.com/dgryski/go-farm"

	"github.com/wirepath/wirepath/pcapio"
	"github.com/wirepath/wirepath/trace"
)

// mw is the shape of a message a test expects.
type mw struct {
	src   string
	kind  string // CALL, RETURN or -
	call  string
	bytes int64
	gap   int64
	inc   bool
	end   EndReason
	app   App
}

func shape(m *Message) mw {
	return mw{src: m.Src.String(), kind: m.Kind.String(), call: m.Call.String(), bytes: m.Bytes, gap: m.GapBytes,
		inc: m.Incomplete, end: m.End, app: m.App}
}

func checkShapes(t *testing.T, msgs []*Message, want []mw) {
	t.Helper()
	var got []mw
	for _, m := range msgs {
		got = append(got, shape(m))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("messages:\n got  %v\n want %v", got, want)
	}
}

const (
	cli = "10.0.0.1:40000"
	srv = "10.0.0.2:80"
)

var (
	get1 = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
	resp = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
)

func TestHTTPRequestResponse(t *testing.T) {
	c := newConv(cli, srv, 1000, 5000).handshake().send(true, get1, 1460).send(false, resp, 1460).close()
	msgs, conns, st := run(t, DefaultConfig(), c.pkts...)
	checkShapes(t, msgs, []mw{
		{cli, "CALL", "c1.0", int64(len(get1)), 0, false, EndProtocol, AppHTTP},
		{srv, "RETURN", "c1.0", int64(len(resp)), 0, false, EndProtocol, AppHTTP},
	})
	m := msgs[0]
	if m.Dst.String() != srv || m.Proto != trace.ProtoTCP || m.Seq != 1001 {
		t.Errorf("call: dst %v proto %v seq %d", m.Dst, m.Proto, m.Seq)
	}
	if want := farm.Fingerprint64([]byte(get1)); m.Fingerprint != want || m.FingerprintLen != len(get1) {
		t.Errorf("fingerprint %x/%d, want %x/%d", m.Fingerprint, m.FingerprintLen, want, len(get1))
	}
	// The request was the 4th packet: t0 + 4 ms; one segment, so First == Last.
	if len(m.Sightings) != 1 || m.Sightings[0].First != t0+4*ms || m.Sightings[0].Last != t0+4*ms {
		t.Errorf("sightings %+v", m.Sightings)
	}
	if m.SendTS() != trace.Timestamp(t0+4*ms) || m.RecvTS() != trace.Timestamp(t0+4*ms) {
		t.Errorf("send %d recv %d", m.SendTS(), m.RecvTS())
	}
	if st.Calls != 1 || st.Returns != 1 || st.ConnsFIN != 1 || st.HTTPMessages != 2 {
		t.Errorf("stats %+v", *st)
	}
	if len(conns) != 1 {
		t.Fatalf("conns %d", len(conns))
	}
	cs := conns[0]
	if cs.Client.String() != cli || cs.Caller != "syn" || cs.End != "fin" || cs.MidStream {
		t.Errorf("conn %+v", cs)
	}
	// One sniffer: SYN at +1, SYN-ACK at +2, ACK at +3 ms.
	if len(cs.Handshake) != 1 || cs.Handshake[0].RTTNS != 2*ms || cs.Handshake[0].ToServerNS != ms {
		t.Errorf("handshake %+v", cs.Handshake)
	}
	// Request at +4 ms, response at +5 ms.
	if cs.RTT.N != 1 || cs.RTT.MinNS != ms {
		t.Errorf("rtt %+v", cs.RTT)
	}
}

func TestWritesCoalesceIntoFatMessage(t *testing.T) {
	// A 5000-byte response in 4 segments, PSH after 2000 and at the end: two
	// writes, one fat message.
	body := strings.Repeat("x", 5000)
	c := newConv("10.0.0.1:40000", "10.0.0.2:7000", 1, 1).handshake().send(true, "req", 100)
	c.pkts = append(c.pkts,
		tcpP(c.srv, c.cli, fA, c.sseq, c.cseq, body[:1000], at(c.tick())),
		tcpP(c.srv, c.cli, fPA, c.sseq+1000, c.cseq, body[1000:2000], at(c.tick())),
		tcpP(c.srv, c.cli, fA, c.sseq+2000, c.cseq, body[2000:3500], at(c.tick())),
		tcpP(c.srv, c.cli, fPA, c.sseq+3500, c.cseq, body[3500:], at(c.tick())))
	c.sseq += 5000
	c.close()
	msgs, conns, _ := run(t, DefaultConfig(), c.pkts...)
	checkShapes(t, msgs, []mw{
		{c.cli, "CALL", "c1.0", 3, 0, false, EndDirection, AppNone},
		{c.srv, "RETURN", "c1.0", 5000, 0, false, EndFIN, AppNone},
	})
	if m := msgs[1]; m.Segments != 4 || m.Writes != 2 {
		t.Errorf("segments %d writes %d", m.Segments, m.Writes)
	}
	// Throughput at the receiver: 4000 bytes after the first segment over
	// the 3 ms from the first segment to the last.
	tp := conns[0].ServerThroughput
	if tp.N != 1 || int64(tp.P50) != 4000*1000/3 {
		t.Errorf("throughput %+v", tp)
	}
}

func TestPauseSplits(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SplitPause = 100 * time.Millisecond
	c := newConv(cli, "10.0.0.2:9000", 1, 1).handshake()
	c.send(true, "one", 10)
	c.t += 50 * ms
	c.send(true, "two", 10) // 51 ms later: same message
	c.t += 200 * ms
	c.send(true, "three", 10) // 201 ms later: a new message
	c.close()
	msgs, _, _ := run(t, cfg, c.pkts...)
	checkShapes(t, msgs, []mw{
		{cli, "CALL", "c1.0", 6, 0, false, EndPause, AppNone},
		{cli, "CALL", "c1.1", 5, 0, false, EndFIN, AppNone},
	})
}

func TestRetransmissionOutOfOrderAndConflict(t *testing.T) {
	c := newConv(cli, "10.0.0.2:9000", 100, 900).handshake()
	s := c.cseq
	c.pkts = append(c.pkts,
		tcpP(cli, c.srv, fA, s+5, c.sseq, "FGHIJ", at(c.tick())),  // out of order: buffered
		tcpP(cli, c.srv, fA, s+5, c.sseq, "FGHIJ", at(c.tick())),  // retransmission of buffered data
		tcpP(cli, c.srv, fA, s+3, c.sseq, "DEfgh", at(c.tick())),  // "DE" new, "fgh" conflicts with buffered "FGH"
		tcpP(cli, c.srv, fA, s, c.sseq, "ABC", at(c.tick())),      // fills the hole: ABCDEFGHIJ delivered
		tcpP(cli, c.srv, fA, s, c.sseq, "ABX", at(c.tick())),      // retransmission that conflicts with delivered "ABC"
		tcpP(cli, c.srv, fPA, s+8, c.sseq, "IJxyz", at(c.tick())), // "IJ" again, "xyz" new
	)
	c.cseq += 13
	c.send(false, "ok", 10).close()
	msgs, _, st := run(t, DefaultConfig(), c.pkts...)
	checkShapes(t, msgs, []mw{
		{cli, "CALL", "c1.0", 13, 0, false, EndDirection, AppNone},
		{c.srv, "RETURN", "c1.0", 2, 0, false, EndFIN, AppNone},
	})
	if got, want := msgs[0].Fingerprint, farm.Fingerprint64([]byte("ABCDEFGHIJxyz")); got != want {
		t.Errorf("first copy did not win: fingerprint %x, want %x", got, want)
	}
	if st.RetransSegments != 2 || st.OverlapSegments != 2 || st.OutOfOrderSegments != 2 || st.ConflictSegments != 2 {
		t.Errorf("retrans %d overlap %d ooo %d conflict %d", st.RetransSegments, st.OverlapSegments, st.OutOfOrderSegments, st.ConflictSegments)
	}
	if st.RetransBytes != 5+3+3+2 || st.StreamBytes != 15 || st.CopyBytes != 0 {
		t.Errorf("retrans bytes %d stream bytes %d copy bytes %d", st.RetransBytes, st.StreamBytes, st.CopyBytes)
	}
	// Delivered in four chunks (ABC, DE, FGHIJ, xyz); First is the first
	// copy of FGHIJ, Last the segment with xyz; the two copies of delivered
	// bytes seen again are repeats.
	if s := msgs[0].Sightings[0]; s.Segments != 4 || s.First != t0+4*ms || s.Last != t0+9*ms || s.Repeats != 2 || s.Bytes != 13 {
		t.Errorf("sighting %+v", s)
	}
}

func TestGapAckedByReceiver(t *testing.T) {
	c := newConv(cli, "10.0.0.2:9000", 1, 1).handshake()
	s := c.cseq
	c.pkts = append(c.pkts,
		tcpP(cli, c.srv, fA, s, c.sseq, "AAAA", at(c.tick())),
		// s+4..s+8 never captured
		tcpP(cli, c.srv, fPA, s+8, c.sseq, "CCCC", at(c.tick())),
		// The server acknowledges all 12 bytes and answers.
		tcpP(c.srv, cli, fPA, c.sseq, s+12, "resp", at(c.tick())))
	c.cseq, c.sseq = s+12, c.sseq+4
	c.close()
	msgs, _, st := run(t, DefaultConfig(), c.pkts...)
	checkShapes(t, msgs, []mw{
		{cli, "CALL", "c1.0", 12, 4, true, EndDirection, AppNone},
		{c.srv, "RETURN", "c1.0", 4, 0, false, EndFIN, AppNone},
	})
	if st.GapsAcked != 1 || st.GapBytes != 4 || msgs[0].Gaps != 1 {
		t.Errorf("gaps acked %d bytes %d", st.GapsAcked, st.GapBytes)
	}
	// The fingerprint covers the bytes before the hole only.
	if msgs[0].FingerprintLen != 4 {
		t.Errorf("fingerprint length %d", msgs[0].FingerprintLen)
	}
}

func TestGapAfterReorderTimeout(t *testing.T) {
	cfg := DefaultConfig()
	c := newConv(cli, "10.0.0.2:9000", 1, 1).handshake()
	s := c.cseq
	c.pkts = append(c.pkts, tcpP(cli, c.srv, fA, s, c.sseq, "AAAA", at(c.tick())),
		tcpP(cli, c.srv, fA, s+8, c.sseq, "CCCC", at(c.tick())))
	// Nothing else for 3 s (> ReorderTimeout), then unrelated traffic moves
	// the clock.
	c.t += 3000 * ms
	c.pkts = append(c.pkts, udpP("10.9.9.9:1", "10.9.9.8:2", []byte("tick"), at(c.tick())))
	c.t += 3000 * ms
	c.pkts = append(c.pkts, udpP("10.9.9.9:1", "10.9.9.8:2", []byte("tock"), at(c.tick())))
	msgs, _, st := run(t, cfg, c.pkts...)
	if st.GapsTimeout != 1 {
		t.Errorf("gaps by timeout %d", st.GapsTimeout)
	}
	var tcpMsgs []*Message
	for _, m := range msgs {
		if m.Proto == trace.ProtoTCP {
			tcpMsgs = append(tcpMsgs, m)
		}
	}
	// The data after the hole was delivered when the hole timed out; the
	// message stayed open (same direction) and ended at the end of input.
	checkShapes(t, tcpMsgs, []mw{{cli, "CALL", "c1.0", 12, 4, true, EndEOF, AppNone}})
}

func TestSequenceWraparound(t *testing.T) {
	// The client's ISN is 10 bytes before 2^32: its data wraps.
	c := newConv(cli, srv, 0xFFFFFFF5, 0xFFFFFFFE).handshake()
	body := "0123456789abcdefghij"
	s := c.cseq
	c.pkts = append(c.pkts,
		tcpP(cli, srv, fA, s+12, c.sseq, body[12:], at(c.tick())), // after the wrap, first
		tcpP(cli, srv, fA, s, c.sseq, body[:7], at(c.tick())),
		tcpP(cli, srv, fA, s+5, c.sseq, body[5:12], at(c.tick()))) // crosses 2^32
	c.cseq += uint32(len(body))
	c.send(false, "ok", 10).close()
	msgs, _, st := run(t, DefaultConfig(), c.pkts...)
	checkShapes(t, msgs, []mw{
		{cli, "CALL", "c1.0", 20, 0, false, EndDirection, AppNone},
		{srv, "RETURN", "c1.0", 2, 0, false, EndFIN, AppNone},
	})
	if msgs[0].Fingerprint != farm.Fingerprint64([]byte(body)) {
		t.Error("wrapped stream reassembled wrong")
	}
	if st.ConnsFIN != 1 {
		t.Errorf("FIN across the wrap not seen: %+v", *st)
	}
}

func TestMidStreamCallerInference(t *testing.T) {
	tests := []struct {
		name     string
		first    *pcapio.Packet
		second   *pcapio.Packet
		caller   string
		from     string
		firstKnd string
	}{
		{"http request", tcpP("10.0.0.5:8080", "10.0.0.6:8081", fPA, 7, 9, get1, at(t0)),
			tcpP("10.0.0.6:8081", "10.0.0.5:8080", fPA, 9, 7+uint32(len(get1)), resp, at(t0+ms)),
			"10.0.0.5:8080", "http", "CALL"},
		{"http response seen first", tcpP("10.0.0.6:8081", "10.0.0.5:8080", fPA, 9, 7, resp, at(t0)),
			tcpP("10.0.0.5:8080", "10.0.0.6:8081", fPA, 7, 9+uint32(len(resp)), get1, at(t0+ms)),
			"10.0.0.5:8080", "http", "RETURN"}, // of a call before the capture: an orphan
		{"ports", tcpP("10.0.0.6:5432", "10.0.0.5:51000", fPA, 9, 7, "row", at(t0)),
			tcpP("10.0.0.5:51000", "10.0.0.6:5432", fPA, 7, 12, "query", at(t0+ms)),
			"10.0.0.5:51000", "ports", "-"},
		{"unknown", tcpP("10.0.0.6:40001", "10.0.0.5:40002", fPA, 9, 7, "xx", at(t0)),
			tcpP("10.0.0.5:40002", "10.0.0.6:40001", fPA, 7, 11, "yy", at(t0+ms)),
			"10.0.0.5:40002", "unknown", "-"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msgs, conns, st := run(t, DefaultConfig(), tc.first, tc.second)
			if len(conns) != 1 || conns[0].Caller != tc.from || (tc.from != "unknown" && conns[0].Client.String() != tc.caller) || !conns[0].MidStream {
				t.Errorf("conn %+v", conns)
			}
			if len(msgs) != 2 || msgs[0].Kind.String() != tc.firstKnd {
				for _, m := range msgs {
					t.Logf("%+v", *m)
				}
				t.Errorf("first message kind wrong")
			}
			if st.MidStream != 1 {
				t.Errorf("mid-stream %d", st.MidStream)
			}
		})
	}
}

func TestNATCopyIsASightingNotARetransmission(t *testing.T) {
	// Sniffer 0 sees the client side (TTL 64), sniffer 1 the server side
	// after the NAT (TTL 63, 200 µs later). After canonicalisation each
	// segment arrives twice, as two packets, one per sniffer.
	c := newConv(cli, srv, 1, 1)
	lag := int64(200e3)
	c.obs = func(ts int64) []sniff { return []sniff{{0, 64, ts}} }
	var pkts []*pcapio.Packet
	add := func(p *pcapio.Packet, fromClient bool) {
		q := *p
		q.Obs = nil
		ts := p.Obs[0].TS
		ttlNear, ttlFar := uint8(64), uint8(63)
		if !fromClient {
			// The server's packets pass sniffer 1 first.
			pkts = append(pkts, withObs(&q, sniff{1, ttlNear, ts}))
			r := *p
			r.Obs = nil
			pkts = append(pkts, withObs(&r, sniff{0, ttlFar, ts + lag}))
			return
		}
		pkts = append(pkts, withObs(&q, sniff{0, ttlNear, ts}))
		r := *p
		r.Obs = nil
		pkts = append(pkts, withObs(&r, sniff{1, ttlFar, ts + lag}))
	}
	c.handshake().send(true, get1, 10).send(false, resp, 1460)
	for i, p := range c.pkts {
		add(p, i != 1 && (i < 3 || p.SrcPort == 40000))
	}
	// A real retransmission of the response's only segment at sniffer 1.
	last := c.pkts[len(c.pkts)-1]
	rt := *last
	rt.Obs = nil
	pkts = append(pkts, withObs(&rt, sniff{1, 64, last.Obs[0].TS + 300*ms}))
	sortByTime(pkts)
	msgs, conns, st := run(t, DefaultConfig(), pkts...)
	checkShapes(t, msgs, []mw{
		{cli, "CALL", "c1.0", int64(len(get1)), 0, false, EndProtocol, AppHTTP},
		{srv, "RETURN", "c1.0", int64(len(resp)), 0, false, EndProtocol, AppHTTP},
	})
	call := msgs[0]
	if len(call.Sightings) != 2 {
		t.Fatalf("sightings %+v", call.Sightings)
	}
	// The request was cut in 10-byte segments: the sender-side point saw
	// the first at +4 ms, the receiver side got the last lag later.
	nSeg := int64((len(get1) + 9) / 10)
	if s := call.SenderSide(); s.Point.Sniffer != 0 || s.First != t0+4*ms || s.Segments != int32(nSeg) || s.Bytes != int64(len(get1)) {
		t.Errorf("sender side %+v", *s)
	}
	if r := call.ReceiverSide(); r.Point.Sniffer != 1 || r.Last != t0+(3+nSeg)*ms+lag {
		t.Errorf("receiver side %+v", *r)
	}
	if st.CopySegments != nSeg+1 || st.RetransSegments != 1 {
		t.Errorf("copies %d retransmissions %d", st.CopySegments, st.RetransSegments)
	}
	if ret := msgs[1]; ret.ReceiverSide().Point.Sniffer != 0 || ret.Sightings[1].Repeats != 1 && ret.Sightings[0].Repeats != 1 {
		t.Errorf("return sightings %+v", ret.Sightings)
	}
	if len(conns[0].Handshake) != 2 {
		t.Errorf("handshake points %+v", conns[0].Handshake)
	}
}

func withObs(p *pcapio.Packet, o sniff) *pcapio.Packet {
	p.Obs = []pcapio.Observation{{Sniffer: o.sniffer, TTL: o.ttl, TS: o.ts, Corrected: o.ts}}
	return p
}

func sortByTime(pkts []*pcapio.Packet) {
	for i := 1; i < len(pkts); i++ {
		for j := i; j > 0 && pkts[j].TS() < pkts[j-1].TS(); j-- {
			pkts[j], pkts[j-1] = pkts[j-1], pkts[j]
		}
	}
}

func TestHTTPFraming(t *testing.T) {
	chunked := "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-T: 1\r\n\r\n"
	head := "HEAD /h HTTP/1.1\r\nHost: x\r\n\r\n"
	headResp := "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n"
	post := "POST /p HTTP/1.1\r\nContent-Length: 10\r\nExpect: 100-continue\r\n\r\n"
	cont := "HTTP/1.1 100 Continue\r\n\r\n"
	final := "HTTP/1.1 204 No Content\r\n\r\n"
	noLen := "HTTP/1.0 200 OK\r\n\r\nbody until close"
	tests := []struct {
		name string
		conv func(c *conv)
		want []mw
	}{
		{"pipelined requests in one segment, chunked and length responses", func(c *conv) {
			c.send(true, get1+head, 1460).send(false, chunked+headResp, 1460)
		}, []mw{
			{cli, "CALL", "c1.0", int64(len(get1)), 0, false, EndProtocol, AppHTTP},
			{cli, "CALL", "c1.1", int64(len(head)), 0, false, EndProtocol, AppHTTP},
			{srv, "RETURN", "c1.0", int64(len(chunked)), 0, false, EndProtocol, AppHTTP},
			{srv, "RETURN", "c1.1", int64(len(headResp)), 0, false, EndProtocol, AppHTTP},
		}},
		{"headers and chunks split across segments", func(c *conv) {
			c.send(true, get1, 7).send(false, chunked, 3)
		}, []mw{
			{cli, "CALL", "c1.0", int64(len(get1)), 0, false, EndProtocol, AppHTTP},
			{srv, "RETURN", "c1.0", int64(len(chunked)), 0, false, EndProtocol, AppHTTP},
		}},
		{"100-continue", func(c *conv) {
			c.send(true, post, 1460).send(false, cont, 1460).send(true, "0123456789", 1460).send(false, final, 1460)
		}, []mw{
			{cli, "CALL", "c1.0", int64(len(post)), 0, false, EndDirection, AppHTTP},
			{srv, "-", "-", int64(len(cont)), 0, false, EndProtocol, AppHTTP},
			{cli, "-", "-", 10, 0, false, EndProtocol, AppNone},
			{srv, "RETURN", "c1.0", int64(len(final)), 0, false, EndProtocol, AppHTTP},
		}},
		{"response without length ends with the connection", func(c *conv) {
			c.send(true, get1, 1460).send(false, noLen, 5)
		}, []mw{
			{cli, "CALL", "c1.0", int64(len(get1)), 0, false, EndProtocol, AppHTTP},
			{srv, "RETURN", "c1.0", int64(len(noLen)), 0, false, EndFIN, AppHTTP},
		}},
		{"text protocol that starts like HTTP (SMTP)", func(c *conv) {
			c.send(false, "220 mx ESMTP\r\n", 1460).send(true, "EHLO me\r\n", 1460).send(false, "250 ok\r\n", 1460).
				send(true, "MAIL FROM:<a@b>\r\n", 1460).send(false, "250 ok\r\n", 1460)
		}, []mw{
			{srv, "-", "-", 14, 0, false, EndDirection, AppNone},
			{cli, "CALL", "c1.0", 9, 0, false, EndDirection, AppNone},
			{srv, "RETURN", "c1.0", 8, 0, false, EndDirection, AppNone},
			{cli, "CALL", "c1.1", 17, 0, false, EndDirection, AppNone},
			{srv, "RETURN", "c1.1", 8, 0, false, EndFIN, AppNone},
		}},
		{"not HTTP: alternation", func(c *conv) {
			c.send(true, "\x16\x03\x01hello", 1460).send(false, "\x16\x03\x03world", 1460).send(true, "again", 1460)
		}, []mw{
			{cli, "CALL", "c1.0", 8, 0, false, EndDirection, AppNone},
			{srv, "RETURN", "c1.0", 8, 0, false, EndDirection, AppNone},
			{cli, "CALL", "c1.1", 5, 0, false, EndFIN, AppNone},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newConv(cli, srv, 1, 1).handshake()
			tc.conv(c)
			c.close()
			msgs, _, _ := run(t, DefaultConfig(), c.pkts...)
			checkShapes(t, msgs, tc.want)
		})
	}
}

func TestHTTPBodyGapKeepsFraming(t *testing.T) {
	// A segment inside a Content-Length body is lost; the receiver
	// acknowledges past it. The framing keeps counting and the next
	// response is still framed.
	body := strings.Repeat("b", 30)
	r1 := "HTTP/1.1 200 OK\r\nContent-Length: 30\r\n\r\n" + body
	c := newConv(cli, srv, 1, 1).handshake().send(true, get1, 1460)
	hdr := len(r1) - 30
	c.pkts = append(c.pkts,
		tcpP(srv, cli, fA, c.sseq, c.cseq, r1[:hdr+10], at(c.tick())),
		// r1[hdr+10:hdr+20] lost
		tcpP(srv, cli, fPA, c.sseq+uint32(hdr+20), c.cseq, r1[hdr+20:], at(c.tick())))
	c.sseq += uint32(len(r1))
	c.ack(true).send(true, get1, 1460).send(false, resp, 1460).close()
	msgs, _, st := run(t, DefaultConfig(), c.pkts...)
	checkShapes(t, msgs, []mw{
		{cli, "CALL", "c1.0", int64(len(get1)), 0, false, EndProtocol, AppHTTP},
		{srv, "RETURN", "c1.0", int64(len(r1)), 10, true, EndProtocol, AppHTTP},
		{cli, "CALL", "c1.1", int64(len(get1)), 0, false, EndProtocol, AppHTTP},
		{srv, "RETURN", "c1.1", int64(len(resp)), 0, false, EndProtocol, AppHTTP},
	})
	if st.FramingLost != 0 {
		t.Errorf("framing lost %d times", st.FramingLost)
	}
}

// TestHTTPLossStaysLocal: a message no capture point saw, or saw only
// part of, costs the pairs of the requests it belongs to; the responses
// after it are paired with their own requests again (issue 10, loss that
// stays local).
func TestHTTPLossStaysLocal(t *testing.T) {
	body := strings.Repeat("b", 30)
	r30 := "HTTP/1.1 200 OK\r\nContent-Length: 30\r\n\r\n" + body
	hdr := len(r30) - 30
	chunked := "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"
	lenResp := int64(len(resp))
	tests := []struct {
		name      string
		conv      func(c *conv)
		want      []mw
		unpaired  int64
		resyncs   int64
		unanswerd int64
	}{
		{"a response lost", func(c *conv) {
			c.send(true, get1, 1460).send(false, resp, 1460).
				send(true, get1, 1460).lose(false, resp).
				send(true, get1, 1460).send(false, resp, 1460).
				send(true, get1, 1460).send(false, resp, 1460)
		}, []mw{
			{cli, "CALL", "c1.0", int64(len(get1)), 0, false, EndProtocol, AppHTTP},
			{srv, "RETURN", "c1.0", lenResp, 0, false, EndProtocol, AppHTTP},
			{cli, "CALL", "c1.1", int64(len(get1)), 0, false, EndProtocol, AppHTTP},
			{srv, "-", "-", lenResp, lenResp, true, EndDirection, AppNone},
			{cli, "CALL", "c1.2", int64(len(get1)), 0, false, EndProtocol, AppHTTP},
			{srv, "RETURN", "c1.2", lenResp, 0, false, EndProtocol, AppHTTP},
			{cli, "CALL", "c1.3", int64(len(get1)), 0, false, EndProtocol, AppHTTP},
			{srv, "RETURN", "c1.3", lenResp, 0, false, EndProtocol, AppHTTP},
		}, 0, 1, 1},
		{"the first response lost: the direction is still framed", func(c *conv) {
			c.send(true, get1, 1460).lose(false, resp).
				send(true, get1, 1460).send(false, resp, 1460)
		}, []mw{
			{cli, "CALL", "c1.0", int64(len(get1)), 0, false, EndProtocol, AppHTTP},
			{srv, "-", "-", lenResp, lenResp, true, EndDirection, AppNone},
			{cli, "CALL", "c1.1", int64(len(get1)), 0, false, EndProtocol, AppHTTP},
			{srv, "RETURN", "c1.1", lenResp, 0, false, EndProtocol, AppHTTP},
		}, 0, 1, 1},
		{"a request lost", func(c *conv) {
			c.send(true, get1, 1460).send(false, resp, 1460).
				lose(true, get1).send(false, resp, 1460).
				send(true, get1, 1460).send(false, resp, 1460)
		}, []mw{
			{cli, "CALL", "c1.0", int64(len(get1)), 0, false, EndProtocol, AppHTTP},
			{srv, "RETURN", "c1.0", lenResp, 0, false, EndProtocol, AppHTTP},
			{cli, "-", "-", int64(len(get1)), int64(len(get1)), true, EndDirection, AppNone},
			{srv, "RETURN", "c1.1", lenResp, 0, false, EndProtocol, AppHTTP}, // an orphan
			{cli, "CALL", "c1.2", int64(len(get1)), 0, false, EndProtocol, AppHTTP},
			{srv, "RETURN", "c1.2", lenResp, 0, false, EndProtocol, AppHTTP},
		}, 1, 0, 0},
		{"a response's head lost, its body seen", func(c *conv) {
			c.send(true, get1, 1460).lose(false, r30[:hdr+10])
			c.pkts = append(c.pkts, tcpP(srv, cli, fPA, c.sseq, c.cseq, r30[hdr+10:], at(c.tick())))
			c.sseq += 20
			c.send(true, get1, 1460).send(false, resp, 1460)
		}, []mw{
			{cli, "CALL", "c1.0", int64(len(get1)), 0, false, EndProtocol, AppHTTP},
			{srv, "-", "-", int64(len(r30)), int64(hdr + 10), true, EndDirection, AppNone},
			{cli, "CALL", "c1.1", int64(len(get1)), 0, false, EndProtocol, AppHTTP},
			{srv, "RETURN", "c1.1", lenResp, 0, false, EndProtocol, AppHTTP},
		}, 0, 1, 1},
		{"a chunk lost after the response's head", func(c *conv) {
			c.send(true, get1, 1460).send(false, chunked, 1460).lose(false, "6\r\n world\r\n").
				send(false, "0\r\n\r\n", 1460).send(true, get1, 1460).send(false, resp, 1460)
		}, []mw{
			{cli, "CALL", "c1.0", int64(len(get1)), 0, false, EndProtocol, AppHTTP},
			{srv, "RETURN", "c1.0", int64(len(chunked) + 11 + 5), 11, true, EndDirection, AppHTTP},
			{cli, "CALL", "c1.1", int64(len(get1)), 0, false, EndProtocol, AppHTTP},
			{srv, "RETURN", "c1.1", lenResp, 0, false, EndProtocol, AppHTTP},
		}, 0, 0, 0},
		{"a pipelining connection stays unpaired after a loss", func(c *conv) {
			c.send(true, get1+get1+get1, 1460).lose(false, resp).send(false, resp+resp, 1460).
				send(true, get1, 1460).send(false, resp, 1460)
		}, []mw{
			{cli, "CALL", "c1.0", int64(len(get1)), 0, false, EndProtocol, AppHTTP},
			{cli, "CALL", "c1.1", int64(len(get1)), 0, false, EndProtocol, AppHTTP},
			{cli, "CALL", "c1.2", int64(len(get1)), 0, false, EndProtocol, AppHTTP},
			{srv, "-", "-", 3 * lenResp, lenResp, true, EndDirection, AppNone},
			{cli, "CALL", "c1.3", int64(len(get1)), 0, false, EndProtocol, AppHTTP},
			{srv, "-", "-", lenResp, 0, false, EndProtocol, AppHTTP},
		}, 1, 1, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newConv(cli, srv, 1, 1).handshake()
			tc.conv(c)
			c.close()
			msgs, _, st := run(t, DefaultConfig(), c.pkts...)
			checkShapes(t, msgs, tc.want)
			if st.UnpairedReturns != tc.unpaired || st.PairingResyncs != tc.resyncs || st.UnansweredAtLoss != tc.unanswerd {
				t.Errorf("unpaired returns %d, resyncs %d, unanswered at a loss %d; want %d, %d, %d",
					st.UnpairedReturns, st.PairingResyncs, st.UnansweredAtLoss, tc.unpaired, tc.resyncs, tc.unanswerd)
			}
		})
	}
}

func dnsMsg(id uint16, response bool, name string) []byte {
	b := []byte{byte(id >> 8), byte(id), 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0}
	if response {
		b[2] |= 0x80
		b[7] = 1
	}
	for _, l := range strings.Split(name, ".") {
		b = append(b, byte(len(l)))
		b = append(b, l...)
	}
	return append(b, 0, 0, 1, 0, 1)
}

func TestDNSOverUDP(t *testing.T) {
	c1, c2, ns := "10.0.0.1:5001", "10.0.0.1:5002", "10.0.0.53:53"
	q1, q2 := dnsMsg(0x1111, false, "a.example"), dnsMsg(0x2222, false, "b.example")
	r1, r2 := dnsMsg(0x1111, true, "a.example"), dnsMsg(0x2222, true, "b.example")
	pkts := []*pcapio.Packet{
		udpP(c1, ns, q1, at(t0)),
		udpP(c1, ns, q2, at(t0+1*ms)), // second query on the same socket
		udpP(c2, ns, q1, at(t0+2*ms)), // same id, other socket
		udpP(ns, c1, r2, at(t0+3*ms)), // answers out of order
		udpP(ns, c1, r1, at(t0+4*ms)),
		udpP(ns, c2, r1, at(t0+5*ms)),
		udpP(ns, c2, r1, at(t0+6*ms)), // a duplicate answer: unpaired, the RETURN of no CALL seen
		udpP("10.0.0.1:7000", "10.0.0.2:7001", []byte("plain"), at(t0+7*ms)),
	}
	msgs, conns, st := run(t, DefaultConfig(), pkts...)
	n1 := int64(len(q1))
	checkShapes(t, msgs, []mw{
		{c1, "CALL", "c1.0", n1, 0, false, EndDatagram, AppDNS},
		{c1, "CALL", "c1.1", n1, 0, false, EndDatagram, AppDNS},
		{c2, "CALL", "c2.0", n1, 0, false, EndDatagram, AppDNS},
		{ns, "RETURN", "c1.1", int64(len(r2)), 0, false, EndDatagram, AppDNS},
		{ns, "RETURN", "c1.0", int64(len(r1)), 0, false, EndDatagram, AppDNS},
		{ns, "RETURN", "c2.0", int64(len(r1)), 0, false, EndDatagram, AppDNS},
		{ns, "RETURN", "c2.1", int64(len(r1)), 0, false, EndDatagram, AppDNS}, // of no CALL seen
		{"10.0.0.1:7000", "-", "-", 5, 0, false, EndDatagram, AppNone},
	})
	if st.UnpairedReturns != 1 || st.UDPMessages != 8 {
		t.Errorf("unpaired %d udp messages %d", st.UnpairedReturns, st.UDPMessages)
	}
	// Round trips: c1: 4 ms (q1->r1) and 2 ms (q2->r2).
	for _, cs := range conns {
		if cs.Client.String() == c1 && (cs.RTT.N != 2 || cs.RTT.MinNS != 2*ms || cs.RTT.MaxNS != 4*ms) {
			t.Errorf("rtt %+v", cs.RTT)
		}
	}
}

func TestUDPCopiesMerge(t *testing.T) {
	q := dnsMsg(7, false, "x.example")
	pkts := []*pcapio.Packet{
		udpP("10.0.0.1:5000", "10.0.0.53:53", q, []sniff{{0, 64, t0}}),
		udpP("10.0.0.1:5000", "10.0.0.53:53", q, []sniff{{1, 63, t0 + 100e3}}),  // the other side of a NAT
		udpP("10.0.0.1:5000", "10.0.0.53:53", q, []sniff{{0, 64, t0 + 500*ms}}), // a retry: a new message
	}
	msgs, _, st := run(t, DefaultConfig(), pkts...)
	if len(msgs) != 2 || len(msgs[0].Sightings) != 2 || len(msgs[1].Sightings) != 1 {
		t.Fatalf("messages %d, sightings %v", len(msgs), msgs[0].Sightings)
	}
	if st.UDPCopies != 1 || msgs[0].RecvTS() != trace.Timestamp(t0+100e3) {
		t.Errorf("copies %d recv %d", st.UDPCopies, msgs[0].RecvTS())
	}
}

func TestDNSOverTCP(t *testing.T) {
	q := dnsMsg(0xabcd, false, "tcp.example")
	r := dnsMsg(0xabcd, true, "tcp.example")
	frame := func(b []byte) string { return string([]byte{byte(len(b) >> 8), byte(len(b))}) + string(b) }
	c := newConv("10.0.0.1:40000", "10.0.0.53:53", 1, 1).handshake()
	c.send(true, frame(q)+frame(q), 9).send(false, frame(r), 1460).close()
	msgs, _, _ := run(t, DefaultConfig(), c.pkts...)
	n := int64(len(q) + 2)
	checkShapes(t, msgs, []mw{
		{"10.0.0.1:40000", "CALL", "c1.0", n, 0, false, EndProtocol, AppDNS},
		{"10.0.0.1:40000", "CALL", "c1.1", n, 0, false, EndProtocol, AppDNS},
		{"10.0.0.53:53", "RETURN", "c1.1", n, 0, false, EndProtocol, AppDNS},
	})
}

func TestConnectionEndings(t *testing.T) {
	cfg := DefaultConfig()
	cfg.IdleTimeout = 10 * time.Second
	// RST mid-response.
	c := newConv(cli, srv, 1, 1).handshake().send(true, get1, 1460)
	c.pkts = append(c.pkts, tcpP(srv, cli, fA, c.sseq, c.cseq, resp[:10], at(c.tick())),
		tcpP(srv, cli, fR|fA, c.sseq+10, c.cseq, "", at(c.tick())),
		tcpP(srv, cli, fA, c.sseq+10, c.cseq, "zz", at(c.tick()))) // after the reset
	msgs, conns, st := run(t, cfg, c.pkts...)
	checkShapes(t, msgs, []mw{
		{cli, "CALL", "c1.0", int64(len(get1)), 0, false, EndProtocol, AppHTTP},
		// The response's headers were cut by the reset: not framed, but
		// the answer to the request, and incomplete.
		{srv, "RETURN", "c1.0", 10, 0, true, EndRST, AppNone},
	})
	if st.ConnsRST != 1 || st.DroppedAfterClose != 2 || conns[0].End != "rst" {
		t.Errorf("rst %d after close %d", st.ConnsRST, st.DroppedAfterClose)
	}

	// Idle: a half-open request, then 20 s of other traffic.
	c = newConv(cli, srv, 1, 1).handshake().send(true, "GET / HTTP/1.1\r\n", 1460)
	c.t += 20e9
	c.pkts = append(c.pkts, udpP("10.9.9.9:1", "10.9.9.8:2", []byte("x"), at(c.tick())))
	msgs, conns, st = run(t, cfg, c.pkts...)
	// The UDP datagram that moved the clock ends first.
	if len(msgs) != 2 || msgs[1].End != EndIdle || !msgs[1].Incomplete || st.ConnsIdle != 1 {
		t.Errorf("idle: %v %+v", len(msgs), st)
	}
	_ = conns

	// Port reuse: a new SYN with another ISN on a connection that never closed.
	c = newConv(cli, srv, 1, 1).handshake().send(true, "x", 10)
	c2 := newConv(cli, srv, 777777, 888888)
	c2.t = c.t
	c2.handshake().send(true, "y", 10).close()
	msgs, conns, st = run(t, cfg, append(c.pkts, c2.pkts...)...)
	if len(msgs) != 2 || msgs[0].End != EndReused || msgs[1].Conn != 2 || st.ConnsReused != 1 || len(conns) != 2 {
		t.Errorf("reuse: %d msgs, %+v", len(msgs), st)
	}
}

func TestIPv4Fragments(t *testing.T) {
	// A 3000-byte UDP datagram in three fragments, the middle one first and
	// duplicated, plus a datagram whose last fragment never comes.
	payload := []byte(strings.Repeat("0123456789", 300))
	dgram := append([]byte{0x13, 0x88, 0x17, 0x70, 0x0b, 0xc0, 0, 0}, payload...) // 5000 -> 6000, length 3008
	frag := func(off, end int, more bool, id uint32, ts int64) *pcapio.Packet {
		return decodeRaw(ipv4Frame("10.0.0.1", "10.0.0.2", uint16(id), off, more, pcapio.ProtoUDP, 64, dgram[off:end]), at(ts))
	}
	pkts := []*pcapio.Packet{
		frag(1480, 2960, true, 9, t0),
		frag(1480, 2960, true, 9, t0+ms),
		frag(0, 1480, true, 9, t0+2*ms),
		frag(2960, len(dgram), false, 9, t0+3*ms),
		frag(0, 1480, true, 10, t0+4*ms),
	}
	msgs, _, st := run(t, DefaultConfig(), pkts...)
	if len(msgs) != 1 {
		t.Fatalf("%d messages", len(msgs))
	}
	m := msgs[0]
	if m.Src.String() != "10.0.0.1:5000" || m.Dst.String() != "10.0.0.2:6000" || m.Bytes != 3000 ||
		m.Fingerprint != farm.Fingerprint64(payload[:64]) || m.Sightings[0].First != t0 || m.Sightings[0].Last != t0+3*ms {
		t.Errorf("message %+v", *m)
	}
	if st.FragUsed != 4 || st.FragDroppedEOF != 1 || st.FragUDPDatagrams != 1 {
		t.Errorf("fragments: used %d dropped %d", st.FragUsed, st.FragDroppedEOF)
	}
}

func TestTCPFragments(t *testing.T) {
	// A TCP segment with 12 bytes of options (data offset 8), fragmented
	// after 40 bytes of IP payload: pcapio decodes the TCP header of the
	// first fragment, flows takes it back from the frame.
	hdr := []byte{0x9c, 0x40, 0x00, 0x50, 0, 0, 0x10, 0x00, 0, 0, 0, 1, 0x80, fPA, 0xff, 0xff, 0, 0, 0, 0,
		1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2} // 40000 -> 80, seq 4096, ack 1, NOP NOP timestamps
	data := []byte(get1)
	seg := append(hdr, data...)
	pkts := []*pcapio.Packet{
		decodeRaw(ipv4Frame("10.0.0.1", "10.0.0.2", 77, 0, true, pcapio.ProtoTCP, 64, seg[:40]), at(t0)),
		decodeRaw(ipv4Frame("10.0.0.1", "10.0.0.2", 77, 40, false, pcapio.ProtoTCP, 64, seg[40:]), at(t0+ms)),
	}
	if pkts[0].SrcPort != 40000 || pkts[0].Seq != 4096 || pkts[0].PayloadLen != 8 {
		t.Fatalf("pcapio decoded the first fragment as %+v", *pkts[0])
	}
	msgs, _, st := run(t, DefaultConfig(), pkts...)
	if len(msgs) != 1 || msgs[0].Bytes != int64(len(data)) || msgs[0].Seq != 4096 || msgs[0].Kind != trace.KindCall ||
		msgs[0].Fingerprint != farm.Fingerprint64(data) || st.FragTCPDatagrams != 1 {
		t.Errorf("messages %v, stats %+v", msgs, *st)
	}
}

func TestLimits(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxBufferPerConn = 10
	cfg.MaxBufferTotal = 10
	cfg.MaxConns = 2
	c := newConv(cli, "10.0.0.2:9000", 1, 1).handshake()
	s := c.cseq
	// 12 bytes buffered behind a hole: over the limit, the hole is given up.
	c.pkts = append(c.pkts, tcpP(cli, c.srv, fA, s+5, c.sseq, "123456", at(c.tick())),
		tcpP(cli, c.srv, fA, s+11, c.sseq, "abcdef", at(c.tick())))
	// Two more connections: the table holds 2, the oldest is evicted.
	c.pkts = append(c.pkts, udpP("10.1.0.1:1", "10.1.0.2:2", []byte("u1"), at(c.tick())),
		udpP("10.1.0.3:1", "10.1.0.4:2", []byte("u2"), at(c.tick())))
	msgs, _, st := run(t, cfg, c.pkts...)
	if st.GapsLimit != 1 || st.BufferLimitHits != 1 || st.ConnsEvicted != 1 || st.PeakConns != 2 {
		t.Errorf("limits: %+v", *st)
	}
	// The UDP flow's message ended first; the TCP connection's when the
	// second UDP flow evicted it.
	if len(msgs) != 3 || msgs[1].GapBytes != 5 || msgs[1].Bytes != 17 || msgs[1].End != EndEvicted {
		for _, m := range msgs {
			t.Logf("%+v", shape(m))
		}
		t.Errorf("messages wrong")
	}
}

func TestIPv6(t *testing.T) {
	c6, s6 := "[fd00::1]:40000", "[fd00::2]:80"
	c := newConv(c6, s6, 0xfffffff0, 7).handshake().send(true, get1, 10).send(false, resp, 1460).close()
	msgs, conns, _ := run(t, DefaultConfig(), c.pkts...)
	checkShapes(t, msgs, []mw{
		{c6, "CALL", "c1.0", int64(len(get1)), 0, false, EndProtocol, AppHTTP},
		{s6, "RETURN", "c1.0", int64(len(resp)), 0, false, EndProtocol, AppHTTP},
	})
	if len(conns) != 1 || conns[0].Client.String() != c6 {
		t.Errorf("conns %+v", conns)
	}
	line := string(AppendMessageTSV(nil, msgs[0]))
	if !strings.Contains(line, "\t[fd00::1]:40000\t[fd00::2]:80\ttcp\thttp\tCALL\tc1.0\t") {
		t.Errorf("TSV line %q", line)
	}
}

func TestSamePointTwiceInOnePacket(t *testing.T) {
	// pcapio grouped a retransmission with identical bytes into the
	// original: one packet, two observations by sniffer 0.
	c := newConv(cli, "10.0.0.2:9000", 1, 1).handshake().send(true, "hello", 10)
	p := c.pkts[len(c.pkts)-1]
	p.Obs = append(p.Obs, pcapio.Observation{Sniffer: 0, TTL: 64, TS: p.Obs[0].TS + 3*ms, Corrected: p.Obs[0].TS + 3*ms})
	c.close()
	msgs, _, st := run(t, DefaultConfig(), c.pkts...)
	if len(msgs) != 1 || len(msgs[0].Sightings) != 1 || msgs[0].Sightings[0].Last != p.Obs[0].TS || st.RepeatObservations != 1 {
		t.Errorf("messages %v, repeats %d", msgs, st.RepeatObservations)
	}
}

// TestUDPAnsweredTimeout: a UDP flow answered one for one (a lookup)
// ends after UDPAnsweredTimeout of silence, so a later datagram on its
// ports opens another flow; one not answered (more one way) lives
// UDPTimeout; a third datagram takes an answered flow back to the long
// timeout until it is answered again; 0 means UDPTimeout for all.
func TestUDPAnsweredTimeout(t *testing.T) {
	const (
		cli, ns   = "10.0.0.1:4000", "10.0.0.53:53"
		cli2, srv = "10.0.0.1:4001", "10.0.0.9:9"
		cli3      = "10.0.0.1:4002"
	)
	q := []byte("query")
	pkts := []*pcapio.Packet{
		udpP(cli, ns, q, at(t0)),                              // answered one for one
		udpP(ns, cli, q, at(t0+1*ms)),                         // ...
		udpP(cli2, srv, q, at(t0+2*ms)),                       // never answered
		udpP(cli3, srv, q, at(t0+3*ms)),                       // answered, then asked again
		udpP(srv, cli3, q, at(t0+4*ms)),                       // ...
		udpP(cli3, srv, q, at(t0+5*ms)),                       // ...
		udpP("10.0.0.7:1", "10.0.0.8:2", q, at(t0+20_000*ms)), // time goes by
		udpP(cli, ns, q, at(t0+21_000*ms)),                    // the lookup's ports again
	}
	for _, tt := range []struct {
		timeout time.Duration
		flows   int64
		idle    []string // the clients of the flows that ended idle
	}{
		{10 * time.Second, 5, []string{cli}},
		{0, 4, nil},
	} {
		cfg := DefaultConfig()
		cfg.UDPAnsweredTimeout = tt.timeout
		_, conns, st := run(t, cfg, clonePkts(pkts)...)
		if st.UDPFlows != tt.flows {
			t.Errorf("timeout %v: %d UDP flows, want %d", tt.timeout, st.UDPFlows, tt.flows)
		}
		var idle []string
		for _, c := range conns {
			if c.End == EndIdle.String() {
				idle = append(idle, c.Client.String())
			}
		}
		if !slices.Equal(idle, tt.idle) {
			t.Errorf("timeout %v: flows of %v ended idle, want %v", tt.timeout, idle, tt.idle)
		}
	}
}

// clonePkts deep-copies packets, for a second run over them.
func clonePkts(pkts []*pcapio.Packet) []*pcapio.Packet {
	out := make([]*pcapio.Packet, len(pkts))
	for i, p := range pkts {
		out[i] = p.Clone()
	}
	return out
}
