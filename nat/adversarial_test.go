package nat

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"github.com/wirepath/wirepath/pcapio"
)

// Traffic that puts identical bodies on different connections without any
// translation. None of it may produce a mapping or rename a packet.

// heartbeats: many hosts send the same datagram (IPv4 ID 0) to a collector
// every second, seen by two sniffers at equal or different hop counts.
func heartbeats(v6 bool) []pcapio.Packet {
	var pkts []pcapio.Packet
	coll := ap("10.9.9.9:514")
	if v6 {
		coll = ap("[fd00:9::9]:514")
	}
	for sec := 0; sec < 60; sec++ {
		for h := 0; h < 30; h++ {
			src := ap(fmt.Sprintf("10.2.0.%d:5000", h+1))
			if v6 {
				src = ap(fmt.Sprintf("[fd00:2::%x]:5000", h+1))
			}
			sg := seg{proto: pcapio.ProtoUDP, src: src, dst: coll, payload: []byte("HEARTBEAT v1 status=ok\n")}
			ts := int64(1e18) + int64(sec)*1e9 + int64(h)*37_000
			pkts = append(pkts, mkPacket(&sg, sight{sniffer: pcapio.SnifferID(h % 2), ttl: uint8(64 - h%3), ts: ts}))
		}
	}
	return pkts
}

// pureACKs: hosts with a fixed ISN exchange identical bare segments (a
// traffic generator, an embedded stack), some seen by each sniffer.
func pureACKs() []pcapio.Packet {
	var pkts []pcapio.Packet
	for h := 0; h < 20; h++ {
		for k := 0; k < 50; k++ {
			sg := seg{proto: pcapio.ProtoTCP, src: ap(fmt.Sprintf("10.3.0.%d:40000", h+1)), dst: ap(fmt.Sprintf("10.4.0.%d:80", h+1)),
				seq: 1, ack: 1 + uint32(k)*100, flags: pcapio.FlagACK}
			ts := int64(1e18) + int64(k)*10e6 + int64(h)*1000
			pkts = append(pkts, mkPacket(&sg, sight{sniffer: pcapio.SnifferID(h % 3), ttl: uint8(64 - h%2), ts: ts}))
		}
	}
	return pkts
}

// twins: two unrelated hosts send byte-identical streams (datagrams with IP
// ID 0 and distinct payloads, TCP data with a fixed ISN) to two servers,
// one seen by each sniffer, with TTLs ttlA and ttlB.
func twins(ttlA, ttlB uint8) []pcapio.Packet {
	var pkts []pcapio.Packet
	for k := 0; k < 100; k++ {
		payload := []byte(fmt.Sprintf("reading %d: temperature=%d", k, 20+k%7))
		for i, h := range []struct {
			src, dst string
			ttl      uint8
		}{{"10.3.0.1:7000", "10.4.0.1:7000", ttlA}, {"10.3.0.2:7000", "10.4.0.2:7000", ttlB}} {
			ts := int64(1e18) + int64(k)*50e6 + int64(i)*3_000 + int64(k%5)*1000
			u := seg{proto: pcapio.ProtoUDP, src: ap(h.src), dst: ap(h.dst), payload: payload}
			pkts = append(pkts, mkPacket(&u, sight{sniffer: pcapio.SnifferID(i), ttl: h.ttl, ts: ts}))
			tc := seg{proto: pcapio.ProtoTCP, src: ap(h.src), dst: ap(h.dst), seq: 1 + uint32(k)*100, ack: 1,
				flags: pcapio.FlagACK | pcapio.FlagPSH, payload: payload}
			pkts = append(pkts, mkPacket(&tc, sight{sniffer: pcapio.SnifferID(i), ttl: h.ttl, ts: ts + 500}))
		}
	}
	return pkts
}

// fanout: one host sends each datagram to two receivers (a replication
// protocol), and each answers differently.
func fanout(sameSniffer bool) []pcapio.Packet {
	var pkts []pcapio.Packet
	for k := 0; k < 100; k++ {
		payload := []byte(fmt.Sprintf("replicate key=%d value=%d", k, k*k))
		for i, dst := range []string{"10.6.0.1:9000", "10.6.0.2:9000"} {
			sn := pcapio.SnifferID(i)
			if sameSniffer {
				sn = 0
			}
			ts := int64(1e18) + int64(k)*20e6 + int64(i)*2_000
			u := seg{proto: pcapio.ProtoUDP, src: ap("10.5.0.1:9000"), dst: ap(dst), payload: payload}
			pkts = append(pkts, mkPacket(&u, sight{sniffer: sn, ttl: 64, ts: ts}))
			r := seg{proto: pcapio.ProtoUDP, src: ap(dst), dst: ap("10.5.0.1:9000"), payload: []byte(fmt.Sprintf("ack %d from %d", k, i))}
			pkts = append(pkts, mkPacket(&r, sight{sniffer: sn, ttl: 63, ts: ts + 300_000}))
		}
	}
	return pkts
}

// bareNAT: a real NAT that only ever carries payload-less segments
// (connections opened and closed without data, keepalives).
func bareNAT() []pcapio.Packet {
	s := newSim(11)
	vip, real := ap("192.0.2.100:80"), ap("10.1.0.11:8080")
	ts := int64(1e18)
	for i := 0; i < 20; i++ {
		cp := ap(fmt.Sprintf("198.51.100.%d:%d", i+1, 50000+i))
		c := conn{proto: pcapio.ProtoTCP, client: cp, serverOut: vip, clientOut: cp, server: real}
		isnC, isnS := s.rng.Uint32(), s.rng.Uint32()
		for _, step := range []struct {
			fromClient bool
			seq, ack   uint32
			flags      uint8
		}{
			{true, isnC, 0, pcapio.FlagSYN},
			{false, isnS, isnC + 1, pcapio.FlagSYN | pcapio.FlagACK},
			{true, isnC + 1, isnS + 1, pcapio.FlagACK},
			{true, isnC + 1, isnS + 1, pcapio.FlagACK | pcapio.FlagFIN},
			{false, isnS + 1, isnC + 2, pcapio.FlagACK | pcapio.FlagFIN},
			{true, isnC + 2, isnS + 2, pcapio.FlagACK},
		} {
			ts += 100_000
			s.send(&c, step.fromClient, ts, step.seq, step.ack, step.flags, nil)
		}
	}
	pkts, _ := s.sorted()
	return pkts
}

func sortByTime(pkts []pcapio.Packet) []pcapio.Packet {
	slices.SortStableFunc(pkts, func(a, b pcapio.Packet) int { return cmp.Compare(a.TS(), b.TS()) })
	return pkts
}

func TestAdversarialNoMapping(t *testing.T) {
	cases := []struct {
		name string
		pkts []pcapio.Packet
		// what must have stopped the matches, as a counter check
		check func(t *testing.T, s Stats)
	}{
		{"heartbeats-v4", heartbeats(false), func(t *testing.T, s Stats) {
			if s.RejectedAmbiguous == 0 {
				t.Error("no ambiguous bodies counted")
			}
		}},
		{"heartbeats-v6", heartbeats(true), nil},
		{"pure-acks-fixed-isn", pureACKs(), func(t *testing.T, s Stats) {
			if s.RejectedAmbiguous == 0 {
				t.Error("no ambiguous bodies counted")
			}
		}},
		{"twins-equal-ttl", twins(64, 64), func(t *testing.T, s Stats) {
			if s.Matches == 0 {
				t.Error("the twins' bodies never matched; the case tests nothing")
			}
		}},
		{"twins-one-hop-apart", twins(64, 63), nil},
		{"twins-different-os", twins(64, 128), func(t *testing.T, s Stats) {
			if s.RejectedTTLGap == 0 {
				t.Error("no TTL gap rejections")
			}
		}},
		{"fanout-one-sniffer", fanout(true), func(t *testing.T, s Stats) {
			if s.RejectedSameCapture == 0 {
				t.Error("no same-capture-point rejections")
			}
		}},
		{"fanout-two-sniffers", fanout(false), nil},
		{"bare-segments-through-real-nat", bareNAT(), func(t *testing.T, s Stats) {
			if s.Matches == 0 {
				t.Error("the bare segments never matched; the case tests nothing")
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pkts := sortByTime(tc.pkts)
			tb := learn(pkts, DefaultOptions())
			if len(tb.Mappings) != 0 {
				t.Errorf("false mappings: %v", rowsOf(tb.Mappings))
			}
			checkStats(t, tb)
			if tc.check != nil {
				tc.check(t, tb.Stats)
			}
			c := NewCanonicalizer(tb)
			for i := range pkts {
				if c.Rewrite(pkts[i].Clone()) {
					t.Fatalf("packet %d renamed without a mapping", i)
				}
			}
		})
	}
}

// TestNoiseAroundRealNAT: the adversarial traffic mixed into a real load
// balancer's leaves its table exactly as it is alone.
func TestNoiseAroundRealNAT(t *testing.T) {
	s, want := lbScenario(9, 40, false)
	pkts, truth := s.sorted()
	// Shift the noise into the load balancer's time.
	base := pkts[0].TS() - int64(1e18)
	var noise []pcapio.Packet
	for _, ps := range [][]pcapio.Packet{heartbeats(false), pureACKs(), twins(64, 64), fanout(false)} {
		for _, p := range ps {
			for i := range p.Obs {
				p.Obs[i].TS += base
				p.Obs[i].Corrected += base
			}
			noise = append(noise, p)
		}
	}
	type tagged struct {
		p     pcapio.Packet
		truth tuple
	}
	var all []tagged
	for i := range pkts {
		all = append(all, tagged{pkts[i], truth[i]})
	}
	for _, p := range noise {
		all = append(all, tagged{p, tuple{p.Proto, netip.AddrPortFrom(p.Src, p.SrcPort), netip.AddrPortFrom(p.Dst, p.DstPort)}})
	}
	slices.SortStableFunc(all, func(a, b tagged) int { return cmp.Compare(a.p.TS(), b.p.TS()) })
	pkts, truth = pkts[:0], truth[:0]
	for _, x := range all {
		pkts = append(pkts, x.p)
		truth = append(truth, x.truth)
	}
	tb := learn(pkts, DefaultOptions())
	checkRows(t, tb.Mappings, want)
	checkStats(t, tb)
	checkCanonical(t, tb, pkts, truth)
}
