package pcapio

import (
	"bytes"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"testing"
)

// benchFrames is a mix like a LAN capture's: TCP data and pure ACKs over
// IPv4 and IPv6, UDP, some VLAN tags, one ARP in fifty.
func benchFrames(n int) [][]byte {
	rng := rand.New(rand.NewPCG(7, 7))
	out := make([][]byte, n)
	for i := range out {
		payload := make([]byte, 0)
		if rng.IntN(10) < 6 {
			payload = make([]byte, 1+rng.IntN(1400))
		}
		tsopt := []byte{1, 1, 8, 10, 0, 0, 0, byte(i), 0, 0, 0, 7}
		switch {
		case i%50 == 0:
			out[i] = eth(0x0806, make([]byte, 28))
		case i%10 == 1:
			out[i] = eth(etherTypeIPv6, ipv6(v6{src: "2001:db8::1", dst: "2001:db8::2", hop: 64, proto: ProtoTCP},
				tcpSeg(443, 50000, uint32(i), 9, FlagACK, 500, tsopt, payload)))
		case i%10 == 2:
			out[i] = eth(etherTypeIPv4, ipv4(v4{src: "10.0.0.3", dst: "10.0.0.4", ttl: 64, id: uint16(i), proto: ProtoUDP},
				udpDgram(5353, 53, payload[:min(len(payload), 200)])))
		case i%10 == 3:
			out[i] = eth(etherTypeIPv4, ipv4(v4{src: "10.0.0.1", dst: "10.0.0.2", ttl: 64, id: uint16(i), df: true, proto: ProtoTCP},
				tcpSeg(40000, 80, uint32(i), 9, FlagACK|FlagPSH, 500, tsopt, payload)), [2]uint16{etherTypeVLAN, 10})
		default:
			out[i] = eth(etherTypeIPv4, ipv4(v4{src: "10.0.0.1", dst: "10.0.0.2", ttl: 64, id: uint16(i), df: true, proto: ProtoTCP},
				tcpSeg(40000, 80, uint32(i), 9, FlagACK|FlagPSH, 500, tsopt, payload)))
		}
	}
	return out
}

// BenchmarkDecode measures decoding and fingerprinting (both keys) of
// one packet.
func BenchmarkDecode(b *testing.B) {
	frames := benchFrames(1024)
	var total int
	for _, f := range frames {
		total += len(f)
	}
	var p Packet
	b.SetBytes(int64(total / len(frames)))
	b.ReportAllocs()
	b.ResetTimer()
	var sum uint64
	for i := 0; i < b.N; i++ {
		f := frames[i%len(frames)]
		Decode(&p, LinkTypeEthernet, f, len(f))
		sum += p.WireKey
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "packets/s")
	if sum == 0 && b.N > 0 {
		b.Fatal("no keys")
	}
}

// BenchmarkReadDecode measures reading a pcap from memory and decoding
// every record: the per-packet cost of one input of the merge.
func BenchmarkReadDecode(b *testing.B) {
	frames := benchFrames(4096)
	pk := make([]testPkt, len(frames))
	for i, f := range frames {
		pk[i] = testPkt{ts: int64(i) * 1000, data: f}
	}
	data := pcapFile(binary.LittleEndian, false, LinkTypeEthernet, 262144, pk)
	b.SetBytes(int64(len(data) / len(frames)))
	b.ReportAllocs()
	var p Packet
	var rec Record
	var r *Reader
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%len(frames) == 0 {
			b.StopTimer()
			if r != nil {
				r.Close()
			}
			var err error
			if r, err = NewReader(bytes.NewReader(data), "bench"); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		if err := r.ReadRecord(&rec); err != nil {
			b.Fatal(err)
		}
		Decode(&p, rec.LinkType, rec.Data, rec.WireLen)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "packets/s")
}

// BenchmarkMerge merges the generated four-sniffer scenario
// (offset estimation, dedupe, reorder) per observation. Large inputs are
// benchmarked by scripts/bench-merge.sh instead.
func BenchmarkMerge(b *testing.B) {
	s := makeScenario(b, 3, 3000)
	b.ReportAllocs()
	b.ResetTimer()
	var obs int64
	for i := 0; i < b.N; i++ {
		m, err := Open(s.paths, Options{})
		if err != nil {
			b.Fatal(err)
		}
		for {
			p, err := m.Next()
			if err == io.EOF {
				break
			}
			obs += int64(len(p.Obs))
		}
		m.Close()
	}
	b.StopTimer()
	if obs != int64(b.N*s.obs) {
		b.Fatalf("%d observations, want %d", obs, b.N*s.obs)
	}
	b.ReportMetric(float64(obs)/b.Elapsed().Seconds(), "records/s")
}
