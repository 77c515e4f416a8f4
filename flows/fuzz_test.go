package flows

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"net/netip"
	"slices"
	"testing"

	"github.com/wirepath/wirepath/pcapio"
	"github.com/wirepath/wirepath/trace"

	"github.com/wirepath/wirepath/internal/fuzzseed"
)

// FuzzAssembler turns the input into packets of a few TCP connections and
// UDP flows (any flags, sequence numbers, payloads, sniffers and IP
// fragments) and checks that the stage never panics, that its accounting
// balances, and that every message is consistent: sizes add up, captured
// bytes equal the stream bytes, sightings only where bytes were seen.
func FuzzAssembler(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	fuzzseed.Files(f, "flows/testdata/*.pcap*")
	// Each packet is 8 bytes of header: conn, flags, seq (2), ack (2), len, sniffer.
	f.Add([]byte{0, fS, 0, 0, 0, 0, 0, 0, 0, fSA, 0, 9, 0, 1, 0, 0, 0, fPA, 0, 1, 0, 10, 20, 0})
	f.Add([]byte{1, fPA, 1, 0, 0, 0, 30, 0, 1, fPA, 0, 0, 0, 0, 30, 1, 1, fA, 0, 200, 0, 0, 0, 0})
	f.Add([]byte{4, 0, 0, 0, 0, 0, 12, 0, 4, 0, 0, 0, 0, 0, 12, 1})       // UDP, then its copy
	f.Add([]byte{5, 0x80, 0, 0, 0, 0, 16, 0, 5, 0x81, 0, 2, 0, 0, 16, 0}) // fragments
	f.Fuzz(func(t *testing.T, in []byte) {
		cfg := DefaultConfig()
		cfg.MaxConns = 4
		cfg.MaxBufferPerConn = 300
		cfg.MaxBufferTotal = 600
		cfg.SplitPause = 3e6
		var pkts []*pcapio.Packet
		ts := t0
		for b := in; len(b) >= 8 && len(pkts) < 400; b = b[8:] {
			conn, flags, seq, ack, n, sn := b[0]%8, b[1], binary.BigEndian.Uint16(b[2:]), binary.BigEndian.Uint16(b[4:]), int(b[6]), b[7]
			ts += int64(sn&0x0f) * 1e6
			src := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 0, 1 + conn%3}), 1000+uint16(conn))
			dst := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 1, 1}), 80)
			if conn%3 == 2 {
				dst = netip.AddrPortFrom(dst.Addr(), 53)
			}
			if sn&0x10 != 0 {
				src, dst = dst, src
			}
			payload := bytes.Repeat([]byte{'A' + byte(seq%26)}, n)
			if n > 4 && sn&0x20 != 0 {
				copy(payload, "GET / HTTP/1.1\r\n\r\n")
			}
			obs := []sniff{{pcapio.SnifferID(sn >> 6), 64 - sn>>6, ts}}
			var p *pcapio.Packet
			switch {
			case conn < 4:
				p = tcpP(src.String(), dst.String(), flags, uint32(seq)<<8, uint32(ack)<<8, string(payload), obs)
			case conn < 5:
				p = udpP(src.String(), dst.String(), payload, obs)
			default:
				frag := payload
				if n < 8 {
					frag = append(frag, make([]byte, 8-n)...)
				}
				p = decodeRaw(ipv4Frame(src.Addr().String(), dst.Addr().String(), 7, int(flags&0x0f)*8, flags&0x80 != 0, pcapio.ProtoUDP, 64, frag[:len(frag)&^7]), obs)
			}
			if sn&0x0f == 0x0f && len(p.Payload) > 2 {
				p.Payload = p.Payload[:2] // cut by a snap length
				p.Truncated = true
			}
			pkts = append(pkts, p)
		}
		msgs, _, st := runQuiet(t, cfg, pkts...)
		var captured, gaps int64
		for _, m := range msgs {
			// (An empty UDP datagram is a message of 0 bytes; TCP messages
			// always hold bytes.)
			if m.Bytes < 0 || (m.Bytes == 0 && m.Proto.String() == "tcp") || m.GapBytes < 0 || m.GapBytes > m.Bytes || m.TruncBytes > m.Bytes-m.GapBytes {
				t.Fatalf("message sizes %+v", *m)
			}
			if len(m.Sightings) == 0 && m.GapBytes != m.Bytes {
				t.Fatalf("a message with captured bytes but no sighting: %+v", *m)
			}
			for _, s := range m.Sightings {
				if s.First > s.Last || s.Bytes < 0 || (s.Bytes == 0 && m.Bytes > 0) {
					t.Fatalf("sighting %+v", s)
				}
			}
			if m.Incomplete != (m.GapBytes > 0 || m.TruncBytes > 0) && !m.Incomplete {
				t.Fatalf("incomplete flag %+v", *m)
			}
			if m.Proto.String() == "tcp" {
				captured += m.Bytes - m.GapBytes
				gaps += m.GapBytes
			}
		}
		if captured != st.StreamBytes || gaps != st.GapBytes {
			t.Fatalf("messages hold %d captured and %d gap bytes; stats say %d and %d", captured, gaps, st.StreamBytes, st.GapBytes)
		}
	})
}

// FuzzHTTPFramer feeds a byte stream to the HTTP framer whole and cut at
// random places and checks that the boundaries found are the same, and
// that they never exceed the stream.
func FuzzHTTPFramer(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	for _, d := range fuzzseed.Read(f, "cmd/wirepath/testdata/traces/rpc-small.tsv", "report/testdata/shop.tsv") {
		f.Add(d, []byte{7, 100, 3})
	}
	f.Add([]byte(get1+"POST /x HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"), []byte{5, 17, 40})
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"+resp), []byte{1, 2, 3, 50})
	f.Add([]byte("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"), []byte{9})
	f.Add([]byte("\x00\x01binary"), []byte{3})
	f.Fuzz(func(t *testing.T, stream, cuts []byte) {
		whole := frameAll(stream, nil)
		pieces := frameAll(stream, cuts)
		if len(whole) != len(pieces) {
			t.Fatalf("boundaries %v whole, %v in pieces", whole, pieces)
		}
		for i := range whole {
			if whole[i] != pieces[i] {
				t.Fatalf("boundaries %v whole, %v in pieces", whole, pieces)
			}
		}
		for _, b := range whole {
			if b <= 0 || b > len(stream) {
				t.Fatalf("boundary %d outside a %d-byte stream", b, len(stream))
			}
		}
	})
}

// frameAll runs a request-direction framer over stream delivered in pieces
// cut at cuts, and returns the offsets of the message boundaries.
func frameAll(stream, cuts []byte) []int {
	var f framer
	f.init(true, false)
	var sh httpShared
	sh.reset()
	var out []int
	pos := 0
	for i := 0; pos < len(stream); i++ {
		end := len(stream)
		if i < len(cuts) {
			end = min(len(stream), pos+1+int(cuts[i]))
		}
		piece := stream[pos:end]
		for len(piece) > 0 {
			used, boundary, _ := f.feed(piece, len(piece), 0, &sh)
			if used <= 0 || used > len(piece) {
				used, boundary = len(piece), false
			}
			pos += used
			piece = piece[used:]
			if boundary {
				out = append(out, pos)
			}
		}
	}
	return out
}

// fuzzStarts are first bytes that make a connection one of the decoded
// protocols (or HTTP/1.x, or server-first MySQL), by the fuzz input's
// first byte.
var fuzzStarts = []struct {
	client, server string
	ports          map[uint16]App
}{
	{client: h2Preface + "\x00\x00\x00\x04\x00\x00\x00\x00\x00"},
	{client: "\x16\x03\x01\x00\x30\x01\x00\x00\x2c\x03\x03"},
	{client: pgStartup()},
	{client: resp3("GET", "k")},
	{client: "get k\r\n"},
	{server: myGreeting()},
	{client: kafkaReq(1, "t"), ports: map[uint16]App{9000: AppKafka}},
	{client: "GET / HTTP/1.1\r\n\r\n"},
	{client: "x", ports: map[uint16]App{9000: AppH2}},
	{client: "x", ports: map[uint16]App{9000: AppTLS}},
}

// FuzzDecoded builds one TCP connection whose first bytes pick a decoded
// protocol and whose rest comes from the input, in segments of varying
// size, with gaps (sequence numbers skipped), reordering, and copies seen
// late by a second sniffer, and checks that the stage never panics, that
// its accounting (and each decoder's) balances, and that every message
// is consistent: sizes, sightings, and at most one CALL and one RETURN
// per call id.
func FuzzDecoded(f *testing.F) {
	f.Add([]byte{0, 0x01, 20, 'a', 'b', 'c', 0x00, 9, 0, 0, 0, 4, 1, 0, 0, 0, 1})
	f.Add([]byte{3, 0x00, 20, '$', '1', '\r', '\n', 'x', '\r', '\n', 0x03, 4, 0x01, 10})
	f.Add([]byte{2, 0x01, 9, 'Z', 0, 0, 0, 5, 'I', 'Q', 0, 0})
	f.Add([]byte{6, 0x01, 12, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0})
	f.Add([]byte{1, 0x05, 40, 0x16, 3, 3, 0, 4, 2, 0, 0, 0, 0x17, 3, 3, 0, 5, 1, 2, 3, 4, 5})
	f.Add([]byte{5, 0x00, 11, 1, 0, 0, 0, 3, 'S', 'E', 'L', 'E', 'C', 'T'})
	f.Add([]byte{8, 0x00, 9, 0, 0, 0, 4, 0, 0, 0, 0, 0})
	f.Fuzz(fuzzOne)
}

func fuzzOne(t *testing.T, in []byte) {
	{
		if len(in) == 0 {
			return
		}
		start := fuzzStarts[int(in[0])%len(fuzzStarts)]
		cfg := DefaultConfig()
		cfg.Ports = start.ports
		cfg.MaxTokens = int(in[0]) % 3
		c := newConv("10.0.0.1:40000", "10.0.0.2:9000", 1000, 5000).handshake()
		c.obs = func(ts int64) []sniff { return []sniff{{0, 64, ts}} }
		if start.server != "" {
			c.send(false, start.server, 1448)
		}
		c.send(true, start.client, 1448)
		var late []*pcapio.Packet
		for b := in[1:]; len(b) >= 2 && len(c.pkts) < 300; {
			op, n := b[0], int(b[1])
			b = b[2:]
			data := b[:min(n, len(b))]
			b = b[len(data):]
			client := op&1 != 0
			switch {
			case op&2 != 0: // lost by the capture
				if client {
					c.cseq += uint32(len(data))
				} else {
					c.sseq += uint32(len(data))
				}
				continue
			case op&8 != 0 && len(c.pkts) > 4: // the previous packet comes after this one
				k := len(c.pkts)
				c.send(client, string(data), 1+int(op>>4)*100)
				c.pkts[k-1], c.pkts[len(c.pkts)-1] = c.pkts[len(c.pkts)-1], c.pkts[k-1]
			default:
				c.send(client, string(data), 1+int(op>>4)*100)
			}
			if op&4 != 0 { // a second sniffer sees this packet later
				p := *c.pkts[len(c.pkts)-1]
				p.Obs = []pcapio.Observation{{Sniffer: 1, TTL: 60, TS: c.t + 3*ms, Corrected: c.t + 3*ms}}
				late = append(late, &p)
			}
		}
		c.ack(true).ack(false).close()
		pkts := append(c.pkts, late...)
		slices.SortStableFunc(pkts, func(a, b *pcapio.Packet) int { return cmp.Compare(a.TS(), b.TS()) })
		msgs, _, _ := runQuiet(t, cfg, pkts...)
		checkFuzzMsgs(t, msgs)
	}
}

// checkFuzzMsgs checks the fuzzed messages: sizes, sightings, and at most
// one CALL and one RETURN per call id.
func checkFuzzMsgs(t *testing.T, msgs []*Message) {
	{
		calls, rets := map[CallID]int{}, map[CallID]int{}
		for _, m := range msgs {
			if m.Bytes < 0 || m.GapBytes < 0 || m.GapBytes > m.Bytes || m.TruncBytes < 0 || m.Ordinal == 0 {
				t.Fatalf("message sizes %+v", *m)
			}
			for _, s := range m.Sightings {
				if s.First > s.Last || s.Bytes < 0 || s.Bytes > m.Bytes {
					t.Fatalf("sighting %+v of %+v", s, *m)
				}
			}
			switch m.Kind {
			case trace.KindCall:
				calls[m.Call]++
			case trace.KindReturn:
				rets[m.Call]++
			}
		}
		for id, n := range calls {
			if n > 1 || rets[id] > 1 {
				t.Fatalf("call %v: %d calls, %d returns", id, n, rets[id])
			}
		}
	}
}
