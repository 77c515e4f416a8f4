package nat

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/wirepath/wirepath/pcapio"

	"github.com/wirepath/wirepath/internal/fuzzseed"
)

// fuzzPackets turns bytes into a time-ordered packet set drawn from few
// hosts, ports and body keys, so that bodies collide across connections,
// sniffers and TTLs all the time. Six bytes make one packet:
//
//	b0: bits 0-2 source host, 3-5 destination host, 6 TCP (else UDP), 7 IPv6
//	b1: bits 0-1 source port, 2-3 destination port, 4-5 sniffer (3: two
//	    sniffers), 6 payload, 7 IP ID 0
//	b2: bits 0-3 body key, 4-6 TTL (60..66, 7: 128)
//	b3: time step in units of 20 ms (so the 2 s window expires)
//	b4: bits 0-4 TCP flags FIN SYN RST PSH ACK, 5 random-looking sequence
//	    number, 6 not decoded, 7 fragment
//	b5: a second body key bit pattern mixed into the key
func fuzzPackets(data []byte) []pcapio.Packet {
	var pkts []pcapio.Packet
	ts := int64(1e18)
	ports := [4]uint16{53, 80, 40000, 50001}
	for len(data) >= 6 {
		b := data[:6]
		data = data[6:]
		v6 := b[0]&0x80 != 0
		host := func(n byte) netip.Addr {
			if v6 {
				return netip.AddrFrom16([16]byte{0xfd, 0, 15: n + 1})
			}
			return netip.AddrFrom4([4]byte{10, 0, 0, n + 1})
		}
		sg := seg{
			proto: pcapio.ProtoUDP,
			src:   netip.AddrPortFrom(host(b[0]&7), ports[b[1]&3]),
			dst:   netip.AddrPortFrom(host(b[0]>>3&7), ports[b[1]>>2&3]),
		}
		if b[0]&0x40 != 0 {
			sg.proto = pcapio.ProtoTCP
			sg.flags = b[4] & 0x1f
			sg.seq, sg.ack = uint32(b[2]), uint32(b[5])
			if b[4]&0x20 != 0 {
				sg.seq += 1 << 30
			}
		}
		if b[1]&0x40 != 0 {
			sg.payload = []byte{b[2], b[5]}
		}
		if b[1]&0x80 == 0 {
			sg.ipid = uint16(b[5]) + 1
		}
		ts += int64(b[3]) * 20e6
		ttl := 60 + b[2]>>4&7
		if ttl == 67 {
			ttl = 128
		}
		sights := []sight{{sniffer: pcapio.SnifferID(b[1] >> 4 & 3), ttl: ttl, ts: ts}}
		if sights[0].sniffer == 3 {
			sights = []sight{{sniffer: 0, ttl: ttl, ts: ts}, {sniffer: 1, ttl: ttl - 1, ts: ts + 1000}}
		}
		p := mkPacket(&sg, sights...)
		p.BodyKey = uint64(b[2]&15) | uint64(b[5]&1)<<4
		if b[4]&0x40 != 0 {
			p.Status = pcapio.StatusUndecodable
		}
		if b[4]&0x80 != 0 {
			p.MoreFragments = true
		}
		pkts = append(pkts, p)
	}
	return pkts
}

func FuzzLearner(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	fuzzseed.Files(f, "testdata/nat/*.pcap")
	// Two copies of one UDP datagram across a NAT (hosts 1->2 and 1->3,
	// TTL 64 then 63, sniffers 0 and 1): a match.
	f.Add([]byte{0x08, 0x45, 0x41, 0x00, 0x00, 0x00, 0x10, 0x55, 0x31, 0x00, 0x00, 0x00})
	// A body on three connections: ambiguous.
	f.Add(bytes.Repeat([]byte{0x08, 0x45, 0x41, 0x00, 0x00, 0x00, 0x10, 0x45, 0x41, 0x00, 0x00, 0x00, 0x18, 0x45, 0x41, 0x00, 0x00, 0x00}, 3))
	// Equal TTLs at one capture point.
	f.Add([]byte{0x08, 0x05, 0x41, 0x00, 0x00, 0x00, 0x10, 0x05, 0x41, 0x00, 0x00, 0x00})
	// TCP SYN then FIN across a NAT, then silence beyond the window.
	f.Add([]byte{0x48, 0x45, 0x41, 0x00, 0x22, 0x07, 0x50, 0x55, 0x31, 0x00, 0x22, 0x07, 0x48, 0x45, 0x42, 0xff, 0x31, 0x08, 0x50, 0x55, 0x32, 0x00, 0x31, 0x08})
	// IPv6 and IPv4 with one body key.
	f.Add([]byte{0x88, 0x45, 0x41, 0x00, 0x00, 0x00, 0x10, 0x55, 0x31, 0x00, 0x00, 0x00})
	// Undecodable and fragment.
	f.Add([]byte{0x08, 0x45, 0x41, 0x00, 0x40, 0x00, 0x10, 0x55, 0x31, 0x00, 0x80, 0x00})
	// A long repeated exchange that makes a mapping.
	var long []byte
	for i := 0; i < 40; i++ {
		k := byte(i % 16)
		long = append(long, 0x48, 0x44, 0x40|k, 0x01, 0x38, byte(i), 0x50, 0x54, 0x30|k, 0x00, 0x38, byte(i))
	}
	f.Add(long)

	f.Fuzz(func(t *testing.T, data []byte) {
		pkts := fuzzPackets(data)
		opts := DefaultOptions()
		opts.IdleTimeout = 4 * opts.Window
		tb := learn(pkts, opts)
		checkStats(t, tb)
		if again := learn(pkts, opts); !equalTables(tb, again) {
			t.Fatal("two runs on the same input differ")
		}
		c := NewCanonicalizer(tb)
		for i := range pkts {
			p := pkts[i].Clone()
			before := *p
			changed := c.Rewrite(p)
			if !changed && (p.Src != before.Src || p.Dst != before.Dst || p.SrcPort != before.SrcPort || p.DstPort != before.DstPort) {
				t.Fatal("Rewrite changed a packet but said it did not")
			}
			if p.Proto != before.Proto || p.BodyKey != before.BodyKey || p.Seq != before.Seq || !bytes.Equal(p.Payload, before.Payload) {
				t.Fatal("Rewrite changed more than the names")
			}
			if changed {
				// The new names are inside names of accepted mappings or
				// unchanged endpoints.
				if p.Src.Is4() != before.Src.Is4() {
					t.Fatal("Rewrite changed the address family")
				}
			}
		}
		if st := c.Stats(); st.Packets != st.Rewritten+st.Canonical+st.Untouched+st.Fragments {
			t.Fatalf("apply counters do not add up: %+v", st)
		}

		// Without connection ends the reference applies.
		var plain []pcapio.Packet
		for _, p := range pkts {
			if p.Proto == pcapio.ProtoTCP && p.TCPFlags&(pcapio.FlagSYN|pcapio.FlagFIN|pcapio.FlagRST) != 0 {
				continue
			}
			plain = append(plain, p)
		}
		ropts := DefaultOptions()
		ropts.IdleTimeout = time.Duration(1 << 62)
		ropts.AnsweredTimeout = -1 // the reference has no ends at all
		compareWithReference(t, plain, ropts)
	})
}

// equalTables compares what two learning runs produced.
func equalTables(a, b *Table) bool {
	if a.Stats != b.Stats || len(a.Mappings) != len(b.Mappings) || len(a.Rejected) != len(b.Rejected) || len(a.apply) != len(b.apply) {
		return false
	}
	for i := range a.Mappings {
		if a.Mappings[i] != b.Mappings[i] {
			return false
		}
	}
	for i := range a.Rejected {
		if a.Rejected[i] != b.Rejected[i] {
			return false
		}
	}
	return true
}
