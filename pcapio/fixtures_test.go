package pcapio

import (
	"encoding/binary"
	"testing"

	"github.com/wirepath/wirepath/internal/golden"
)

// exampleFixtures builds the two small captures the examples read: a
// client-side pcap and a server-side pcapng whose clock is 60 s ahead,
// 100 µs of wire between them.
func exampleFixtures() map[string][]byte {
	const t0 = 1700000000_000000000
	type pk struct {
		toServer bool
		payload  string
		inA      bool
	}
	pkts := []pk{{true, "hello", true}, {false, "hi!!", true}, {true, "bye", true}, {false, "ok", false}}
	var pa []testPkt
	nb := &ngBuilder{order: binary.LittleEndian}
	nb.shb().idb(LinkTypeSLL2, 262144, "any", 9, 0)
	seqC, seqS := uint32(1), uint32(1)
	for i, p := range pkts {
		h := v4{src: "10.0.0.1", dst: "10.0.0.2", ttl: 64, id: uint16(100 + i), df: true, proto: ProtoTCP}
		var seg []byte
		if p.toServer {
			seg = tcpSeg(40000, 80, seqC, seqS, FlagACK|FlagPSH, 502, nil, []byte(p.payload))
			seqC += uint32(len(p.payload))
		} else {
			h.src, h.dst = h.dst, h.src
			seg = tcpSeg(80, 40000, seqS, seqC, FlagACK|FlagPSH, 502, nil, []byte(p.payload))
			seqS += uint32(len(p.payload))
		}
		ta := int64(t0 + i*500_000)
		tb := ta + 100_000
		if !p.toServer {
			tb = ta - 100_000
		}
		if p.inA {
			pa = append(pa, testPkt{ts: ta, data: eth(etherTypeIPv4, ipv4(h, seg))})
		}
		h.ttl--
		f := sll2(etherTypeIPv4, 2, ipv4(h, seg))
		nb.epb(0, uint64(tb+60e9), f, len(f))
	}
	return map[string][]byte{
		"testdata/example-a.pcap":   pcapFile(binary.LittleEndian, false, LinkTypeEthernet, 262144, pa),
		"testdata/example-b.pcapng": nb.bytes(),
	}
}

// TestExampleFixtures keeps the committed example captures equal to what
// exampleFixtures builds (go test -update rewrites them).
func TestExampleFixtures(t *testing.T) {
	for path, data := range exampleFixtures() {
		golden.Check(t, path, data)
	}
}
