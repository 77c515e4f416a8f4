package flows

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wirepath/wirepath/pcapio"
	"github.com/wirepath/wirepath/proto"
	"github.com/wirepath/wirepath/tools/benchgen"
	"github.com/wirepath/wirepath/trace"
)

// benchPackets decodes a synthetic capture into memory.
func benchPackets(tb testing.TB, o benchgen.Options) ([]*pcapio.Packet, int64) {
	tb.Helper()
	var buf bytes.Buffer
	st, err := benchgen.Write(&buf, o)
	if err != nil {
		tb.Fatal(err)
	}
	return decodeAll(tb, &buf), st.Payload
}

// BenchmarkAssembler measures the flows stage alone on decoded packets:
// many concurrent HTTP connections, in order.
func BenchmarkAssembler(b *testing.B) {
	o := benchgen.DefaultOptions()
	o.Packets = 20000
	pkts, payload := benchPackets(b, o)
	b.ReportAllocs()
	b.SetBytes(payload)
	var m Message
	var msgs int
	for b.Loop() {
		a, _ := NewAssembler(DefaultConfig())
		for _, p := range pkts {
			a.Add(p)
			for a.Next(&m) {
				msgs++
			}
		}
		a.Flush()
		for a.Next(&m) {
			msgs++
		}
		if err := a.Stats().Check(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(pkts))*float64(b.N)/b.Elapsed().Seconds(), "packets/s")
	if msgs == 0 {
		b.Fatal("no messages")
	}
}

// TestNoAllocsPerPacket guards the hot path: once a connection is open and
// the pools are warm, in-order request/response traffic (messages cut,
// kinds assigned, messages emitted) allocates nothing per packet, with and
// without the passive round-trip sampler (OnConn set).
func TestNoAllocsPerPacket(t *testing.T) {
	for _, onConn := range []func(*ConnStats){nil, func(*ConnStats) {}} {
		cfg := DefaultConfig()
		cfg.OnConn = onConn
		noAllocs(t, cfg, exchange{cli, srv, get1, resp, true})
	}
}

// TestNoAllocsMidStream: on a memcached connection taken up in its middle
// (no handshake), the traffic after the pickup allocates nothing either.
func TestNoAllocsMidStream(t *testing.T) {
	a := noAllocs(t, DefaultConfig(), exchange{cli, "10.0.0.2:11211", "get item:1\r\n", "END\r\n", false})
	if st := a.Stats(); st.MidStreamDecoded != 1 || st.Protocols["memcache"] == nil {
		t.Errorf("not taken up as memcached: %+v", st)
	}
}

// exchange is the traffic of noAllocs: a request and its response between
// cli and srv, on a connection whose handshake is seen or not.
type exchange struct {
	cli, srv, req, resp string
	handshake           bool
}

func noAllocs(t *testing.T, cfg Config, x exchange) *Assembler {
	a, err := NewAssembler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := newConv(x.cli, x.srv, 1, 1)
	if x.handshake {
		c.handshake()
	}
	for _, p := range c.pkts {
		a.Add(p)
	}
	cli, srv, get1, resp := x.cli, x.srv, x.req, x.resp
	req := tcpP(cli, srv, fPA, 0, 0, get1, at(0))
	rsp := tcpP(srv, cli, fPA, 0, 0, resp, at(0))
	ack := tcpP(cli, srv, fA, 0, 0, "", at(0))
	var m Message
	step := func() {
		// One exchange, each packet a second after the last so that the
		// messages before it settle and are emitted.
		c.t += 1e9
		req.Seq, req.Ack, req.Obs[0].Corrected = c.cseq, c.sseq, c.t
		a.Add(req)
		c.cseq += uint32(len(get1))
		c.t += 1e9
		rsp.Seq, rsp.Ack, rsp.Obs[0].Corrected = c.sseq, c.cseq, c.t
		a.Add(rsp)
		c.sseq += uint32(len(resp))
		c.t += 1e9
		ack.Seq, ack.Ack, ack.Obs[0].Corrected = c.cseq, c.sseq, c.t
		a.Add(ack)
		for a.Next(&m) {
		}
	}
	for i := 0; i < 100; i++ { // warm the pools
		step()
	}
	if allocs := testing.AllocsPerRun(200, step); allocs != 0 {
		t.Errorf("%v allocations per exchange of 3 packets, want 0", allocs)
	}
	if m.Kind != trace.KindReturn || m.Bytes != int64(len(resp)) {
		t.Errorf("last message %+v", m)
	}
	return a
}

// TestBenchCaptureIsClean runs the benchmark's generator and checks flows
// against what it generated: every request a CALL, every response its
// RETURN, nothing lost or retransmitted.
func TestBenchCaptureIsClean(t *testing.T) {
	o := benchgen.DefaultOptions()
	o.Packets, o.Concurrent = 5000, 20
	gen, err := benchgen.Write(io.Discard, o)
	if err != nil {
		t.Fatal(err)
	}
	pkts, _ := benchPackets(t, o)
	msgs, _, st := runQuiet(t, DefaultConfig(), pkts...)
	calls, returns := 0, 0
	for _, m := range msgs {
		switch {
		case m.Kind == trace.KindCall && m.App == AppHTTP && !m.Incomplete:
			calls++
		case m.Kind == trace.KindReturn && m.App == AppHTTP && !m.Incomplete:
			returns++
		case !m.Incomplete || m.End != EndEOF:
			// Only a response cut off by the end of the capture may be
			// incomplete.
			t.Errorf("unexpected message: %+v", *m)
		}
	}
	if calls != gen.Requests || returns != gen.Responses {
		t.Errorf("%d calls, %d returns; generated %d requests, %d responses", calls, returns, gen.Requests, gen.Responses)
	}
	if st.RetransSegments != 0 || st.GapBytes != 0 || st.UnpairedReturns != 0 || st.FramingLost != 0 {
		t.Errorf("stats %+v", *st)
	}
}

// decodeAll decodes every packet of a capture into memory, each on its
// sniffer's clock.
func decodeAll(tb testing.TB, in io.Reader) []*pcapio.Packet {
	tb.Helper()
	r, err := pcapio.NewReader(in, "bench")
	if err != nil {
		tb.Fatal(err)
	}
	var pkts []*pcapio.Packet
	var rec pcapio.Record
	for {
		if err := r.ReadRecord(&rec); err == io.EOF {
			break
		} else if err != nil {
			tb.Fatal(err)
		}
		p := &pcapio.Packet{}
		pcapio.Decode(p, rec.LinkType, rec.Data, rec.WireLen)
		p.Obs[0].TS, p.Obs[0].Corrected = rec.TS, rec.TS
		pkts = append(pkts, p.Clone())
	}
	return pkts
}

// grpcPackets decodes a synthetic all-gRPC capture into memory.
func grpcPackets(tb testing.TB, o benchgen.GRPCOptions) ([]*pcapio.Packet, benchgen.Stats) {
	tb.Helper()
	var buf bytes.Buffer
	st, err := benchgen.WriteGRPC(&buf, o)
	if err != nil {
		tb.Fatal(err)
	}
	return decodeAll(tb, &buf), st
}

// BenchmarkGRPC measures the flows stage on an all-gRPC capture (8
// connections, batches of 32 concurrent unary calls) with its HTTP/2
// framing and without (messages at direction changes): the cost of
// framing. The packets are 10 µs apart, so that messages settle and are
// emitted as they would be in a capture of that rate.
func BenchmarkGRPC(b *testing.B) {
	o := benchgen.DefaultGRPCOptions()
	o.Batches = 100
	pkts, gen := grpcPackets(b, o)
	for _, framing := range []bool{false, true} {
		b.Run(fmt.Sprintf("framing=%v", framing), func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.Framing = framing
			b.ReportAllocs()
			b.SetBytes(gen.Payload)
			var m Message
			for b.Loop() {
				a, _ := NewAssembler(cfg)
				for _, p := range pkts {
					a.Add(p)
					for a.Next(&m) {
					}
				}
				a.Flush()
				for a.Next(&m) {
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(gen.Requests), "ns/call")
		})
	}
}

// TestGRPCCaptureIsClean checks flows against the gRPC generator: every
// call one CALL and one RETURN, paired, labelled, nothing lost.
func TestGRPCCaptureIsClean(t *testing.T) {
	o := benchgen.DefaultGRPCOptions()
	o.Conns, o.Batches = 3, 5
	pkts, gen := grpcPackets(t, o)
	msgs, _, st := runQuiet(t, DefaultConfig(), pkts...)
	calls := map[CallID]int{}
	for _, m := range msgs {
		switch {
		case m.Kind == trace.KindCall && m.App == AppH2 && strings.HasPrefix(m.Label, "grpc /hotel."):
			calls[m.Call]++
		case m.Kind == trace.KindReturn && m.Label == "grpc OK":
			calls[m.Call] += 10
		default:
			t.Errorf("unexpected message: %+v", *m)
		}
	}
	for id, n := range calls {
		if n != 11 {
			t.Errorf("call %v: %d", id, n)
		}
	}
	if len(calls) != gen.Requests || st.UnpairedReturns != 0 || st.Protocols["h2"].UnframedBytes != 0 {
		t.Errorf("%d calls of %d; stats %+v", len(calls), gen.Requests, *st)
	}
}

// TestGRPCSteadyStateAllocs checks that framing gRPC traffic allocates
// nothing per packet once the pools are warm (messages, their evidence
// and the HTTP/2 decoders' state are reused after emission), but the copy
// of each request's traceparent id its evidence keeps.
func TestGRPCSteadyStateAllocs(t *testing.T) {
	o := benchgen.DefaultGRPCOptions()
	o.Conns, o.Batches = 2, 60
	pkts, gen := grpcPackets(t, o)
	for _, tc := range []struct {
		evidence bool
		perCall  float64
	}{
		{false, 0},
		{true, 1},
	} {
		t.Run(fmt.Sprintf("evidence=%v", tc.evidence), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Evidence = tc.evidence
			cfg.Settle = 5 * time.Millisecond // messages leave within the capture
			a, err := NewAssembler(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var m Message
			i := 0
			step := func() {
				a.Add(pkts[i])
				i++
				for a.Next(&m) {
				}
			}
			warm := len(pkts) / 2
			for i < warm {
				step()
			}
			allocs := testing.AllocsPerRun(len(pkts)-warm-1, step)
			perCall := allocs * float64(len(pkts)) / float64(gen.Requests)
			t.Logf("%.3f allocations per call, %d messages", perCall, a.Stats().Messages)
			if perCall > tc.perCall {
				t.Errorf("%.3f allocations per call (%.3f per packet), want at most %v", perCall, allocs, tc.perCall)
			}
		})
	}
}

// tsvBenchMessage is the message the TSV benchmarks write: a decoded gRPC
// request seen by one capture point.
func tsvBenchMessage() *Message {
	return &Message{Conn: 7, Index: 1234, Proto: trace.ProtoTCP, App: AppH2,
		Src: netip.MustParseAddrPort("10.1.0.7:40312"), Dst: netip.MustParseAddrPort("10.1.0.9:50051"),
		Kind: trace.KindCall, Call: CallID{7, 617}, Seq: 123456789, Bytes: 497, Segments: 1, Writes: 1,
		End: EndProtocol, Fingerprint: 0x0123456789abcdef, FingerprintLen: 64, Ordinal: 618, Stream: 1235,
		Label:     "grpc /hotel.Search/Nearby",
		Sightings: []Sighting{{TTL: 64, First: 1_700_000_000_123_456_789, Last: 1_700_000_000_123_466_789, FirstBytes: 497, Bytes: 497, Segments: 1}},
		Evidence:  &proto.Evidence{IDs: []proto.ID{{Source: "traceparent", Value: "4bf92f3577b34da6a3ce929d0e0e4736"}}, Tokens: []uint64{1, 2, 3, 4}}}
}

// BenchmarkAppendMessageTSV measures writing one line of the messages
// format: a decoded gRPC request seen by one capture point.
func BenchmarkAppendMessageTSV(b *testing.B) {
	m := tsvBenchMessage()
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendMessageTSV(buf[:0], m)
	}
	b.SetBytes(int64(len(buf)))
}

// BenchmarkMessageTSV is BenchmarkAppendMessageTSV through a MessageTSV,
// which copies the text of the endpoints it wrote before.
func BenchmarkMessageTSV(b *testing.B) {
	m := tsvBenchMessage()
	var w MessageTSV
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = w.Append(buf[:0], m)
	}
	b.SetBytes(int64(len(buf)))
}

// TestAppendDecimal checks appendUint and appendInt against strconv on
// every power of ten and its neighbours, the extremes and random values.
func TestAppendDecimal(t *testing.T) {
	vals := []uint64{0, 1, 9, 10, 11, 99, 100, 101, math.MaxUint64, math.MaxInt64, 1<<63 + 1}
	for p := uint64(1); p <= 1e19; p *= 10 {
		vals = append(vals, p-1, p, p+1)
		if p > math.MaxUint64/10 {
			break
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		vals = append(vals, r.Uint64()>>r.IntN(64))
	}
	for _, v := range vals {
		if got, want := string(appendUint([]byte("x"), v)), "x"+strconv.FormatUint(v, 10); got != want {
			t.Fatalf("appendUint(%d) = %q, want %q", v, got, want)
		}
		for _, s := range []int64{int64(v), -int64(v)} {
			if got, want := string(appendInt(nil, s)), strconv.FormatInt(s, 10); got != want {
				t.Fatalf("appendInt(%d) = %q, want %q", s, got, want)
			}
		}
	}
}

// TestMessageTSVMatchesAppend checks that a MessageTSV, which copies
// what it remembers of the lines before (endpoints, times, labels and id
// sources found printable), writes what AppendMessageTSV writes: labels
// that share memory with a remembered one but not its length, control
// bytes after a printable label, times that do and do not share digits.
func TestMessageTSVMatchesAppend(t *testing.T) {
	label := "grpc /hotel.Search/Nearby"
	src := "traceparent"
	cases := []struct {
		label, source string
		first, last   int64
	}{
		{label, src, 1_700_000_000_123_456_789, 1_700_000_000_123_466_789},
		{label, src, 1_700_000_000_123_456_789, 1_700_000_000_123_456_789},
		{label[:4], src[:5], 1_700_000_000_123_456_790, 1_700_000_001_000_000_000},
		{"grpc\t/x\n", "b3\x7f", 5, 999_999},
		{label, src, 1_000_000, 1_999_999},
		{"", "", 0, 1},
		{"grpc\t/hotel.Search/Nearby"[:len(label)], src, -1, 1_700_000_000_123_456_789},
		{label, src, 1_700_000_000_123_456_789, 1_700_000_000_123_456_788},
	}
	other := netip.MustParseAddrPort("[fe80::1]:40312") // the same port as the bench message's client
	var w MessageTSV
	for i, tc := range cases {
		for v := range 6 {
			m := tsvBenchMessage()
			m.Label = tc.label
			m.Evidence.IDs[0].Source = tc.source
			m.Sightings[0].First, m.Sightings[0].Last = tc.first, tc.last
			switch v { // the columns from src to kind, changed one at a time
			case 1:
				m.Src, m.Dst, m.Kind = m.Dst, m.Src, trace.KindReturn
			case 2:
				m.Src = other
			case 3:
				m.App = AppNone
			case 4:
				m.Kind = trace.KindReturn
			case 5:
				m.Proto = trace.ProtoUDP
			}
			base := tsvBenchMessage() // written first: the cache holds its columns
			base.Sightings[0].First, base.Sightings[0].Last = tc.last, tc.first
			for _, m := range []*Message{base, m} {
				if got, want := string(w.Append(nil, m)), string(AppendMessageTSV(nil, m)); got != want {
					t.Fatalf("case %d.%d: MessageTSV wrote\n%q, AppendMessageTSV\n%q", i, v, got, want)
				}
			}
		}
	}
}

// TestAppendHex16 checks appendHex16 against fmt.
func TestAppendHex16(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, v := range []uint64{0, 1, 0xf, 0x10, 0x0123456789abcdef, math.MaxUint64, r.Uint64(), r.Uint64()} {
		if got, want := string(appendHex16([]byte("x"), v)), fmt.Sprintf("x%016x", v); got != want {
			t.Fatalf("appendHex16(%#x) = %q, want %q", v, got, want)
		}
	}
}

// TestLastTime checks the times a MessageTSV copies from the last one
// against strconv: runs of equal times, times that differ in their last
// six digits or more, and small, negative and growing ones.
func TestLastTime(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var l lastTime
	v := int64(1_700_000_000_000_000_000)
	for i := range 100000 {
		switch r.IntN(6) {
		case 0: // the same
		case 1:
			v += int64(r.IntN(1000))
		case 2:
			v += int64(r.IntN(10_000_000))
		case 3:
			v = int64(r.Uint64() >> r.IntN(64))
		case 4:
			v = -int64(r.IntN(3_000_000))
		case 5:
			v = int64(r.IntN(3_000_000))
		}
		if got, want := string(l.append([]byte("x"), v)), "x"+strconv.FormatInt(v, 10); got != want {
			t.Fatalf("time %d: lastTime.append(%d) = %q, want %q", i, v, got, want)
		}
	}
}

// TestPrintable checks the eight-bytes-at-a-time test of appendText
// against a byte loop: random strings rich in the bytes around the
// limits, and every byte value at every position of strings of up to 19
// bytes.
func TestPrintable(t *testing.T) {
	slow := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if s[i] < 0x20 || s[i] == 0x7f {
				return false
			}
		}
		return true
	}
	r := rand.New(rand.NewPCG(3, 4))
	edges := []byte{0, 0x1f, 0x20, 0x21, 0x7e, 0x7f, 0x80, 0x9f, 0xa0, 0xff}
	for range 20000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			if r.IntN(8) == 0 {
				b[i] = edges[r.IntN(len(edges))]
			} else {
				b[i] = byte(0x20 + r.IntN(0x5f))
			}
		}
		if got, want := printable(string(b)), slow(string(b)); got != want {
			t.Fatalf("printable(%q) = %v, want %v", b, got, want)
		}
	}
	for n := 1; n < 20; n++ {
		for pos := range n {
			for c := range 256 {
				b := []byte(strings.Repeat("a", n))
				b[pos] = byte(c)
				if got, want := printable(string(b)), slow(string(b)); got != want {
					t.Fatalf("printable(%q) = %v, want %v", b, got, want)
				}
			}
		}
	}
}

// TestMessageTSVMatches checks that MessageTSV, which copies the text of
// endpoints it wrote before, writes what AppendMessageTSV writes: over
// messages between random endpoints of a pool (IPv4, IPv6, a zone, a
// text too long to remember) that collide in its cache, with times that
// repeat and differ.
func TestMessageTSVMatches(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var pool []netip.AddrPort
	for i := range 300 {
		var a netip.Addr
		switch i % 4 {
		case 0, 1:
			a = netip.AddrFrom4([4]byte{10, byte(r.IntN(3)), byte(r.IntN(4)), byte(r.IntN(256))})
		case 2:
			a = netip.MustParseAddr(fmt.Sprintf("2001:db8::%x:%x", r.IntN(65536), r.IntN(65536)))
		default:
			a = netip.MustParseAddr(fmt.Sprintf("fe80::%x%%%s", r.IntN(65536), strings.Repeat("z", 1+r.IntN(40))))
		}
		pool = append(pool, netip.AddrPortFrom(a, []uint16{80, 443, 50051, uint16(r.IntN(65536))}[r.IntN(4)]))
	}
	var w MessageTSV
	var got, want []byte
	for range 20000 {
		first := int64(1_700_000_000_000_000_000 + r.IntN(1000))
		m := &Message{Src: pool[r.IntN(len(pool))], Dst: pool[r.IntN(len(pool))], Proto: trace.ProtoTCP,
			Bytes: int64(r.IntN(5000)), Label: "GET /x", Status: r.IntN(600),
			Sightings: []Sighting{{TTL: 64, First: first, Last: first + int64(r.IntN(2))*int64(r.IntN(1e9))}}}
		if r.IntN(4) == 0 {
			m.Sightings = append(m.Sightings, Sighting{Point: Point{Sniffer: 1}, TTL: 63, First: first + 5, Last: first + 7})
		}
		got, want = w.Append(got[:0], m), AppendMessageTSV(want[:0], m)
		if !bytes.Equal(got, want) {
			t.Fatalf("MessageTSV:\n%s\nAppendMessageTSV:\n%s", got, want)
		}
	}
}
