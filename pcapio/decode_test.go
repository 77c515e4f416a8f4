package pcapio

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

var (
	tcpPayload = []byte("GET / HTTP/1.1\r\nHost: example\r\n\r\n")
	tcp4       = ipv4(v4{src: "10.0.0.1", dst: "10.0.0.2", ttl: 64, id: 0x1234, df: true, proto: ProtoTCP},
		tcpSeg(40000, 80, 1000, 2000, FlagACK|FlagPSH, 512, nil, tcpPayload))
	udp6 = ipv6(v6{src: "2001:db8::1", dst: "2001:db8::2", hop: 64, proto: ProtoUDP}, udpDgram(5353, 53, []byte("query")))
)

// want is what a decode case must produce; zero fields are not checked
// unless the case says so via the status.
type want struct {
	status     Status
	ipv        uint8
	src, dst   string
	proto      uint8
	sport      uint16
	dport      uint16
	seq, ack   uint32
	flags      uint8
	ipid       uint32
	fragOff    uint16
	mf, df     bool
	ttl        uint8
	payload    []byte
	payloadLen int
	truncated  bool
}

func TestDecode(t *testing.T) {
	v4opts := ipv4(v4{src: "10.0.0.1", dst: "10.0.0.2", ttl: 3, id: 7, proto: ProtoUDP,
		options: []byte{7, 7, 4, 0, 0, 0, 0, 0}}, // record route with one empty slot
		udpDgram(1, 2, []byte("opts")))
	v6ext := ipv6(v6{src: "2001:db8::1", dst: "2001:db8::2", hop: 9, proto: ProtoTCP, exts: []ext6{
		{typ: ipv6HopByHop, body: []byte{1, 4, 0, 0, 0, 0}},                               // PadN
		{typ: ipv6Routing, body: []byte{0, 0, 0, 0, 0, 0}},                                // type 0, no segments left
		{typ: ipv6DestOpts, body: []byte{1, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},      // 16 bytes
		{typ: ipv6AH, body: []byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 9, 9, 9, 9, 9, 9}}, // SPI, seq, 8-byte ICV... 20 bytes
	}}, tcpSeg(443, 50000, 5, 6, FlagSYN|FlagACK, 100, []byte{2, 4, 5, 0xb4}, nil))
	frag1 := ipv6(v6{src: "2001:db8::1", dst: "2001:db8::2", hop: 9, proto: ProtoUDP, exts: []ext6{fragExt(0, true, 0xabcdef)}},
		udpDgram(7, 8, bytes.Repeat([]byte{1}, 16)))
	frag2 := ipv6(v6{src: "2001:db8::1", dst: "2001:db8::2", hop: 9, proto: ProtoUDP, exts: []ext6{fragExt(24, false, 0xabcdef)}},
		[]byte("rest of it"))
	v4frag2 := ipv4(v4{src: "10.0.0.1", dst: "10.0.0.2", ttl: 64, id: 99, fragOff: 1480, proto: ProtoUDP}, []byte("tail"))
	icmp := ipv4(v4{src: "10.0.0.1", dst: "10.0.0.2", ttl: 64, id: 5, proto: ProtoICMP}, []byte{8, 0, 0xf7, 0xfe, 0, 1, 0, 1})
	cut := eth(etherTypeIPv4, tcp4)[:14+20+20+10] // snaplen cut inside the payload
	cutHdr := eth(etherTypeIPv4, tcp4)[:14+20+12] // cut inside the TCP header
	padded := append(eth(etherTypeIPv4, ipv4(v4{src: "10.0.0.1", dst: "10.0.0.2", ttl: 1, proto: ProtoUDP}, udpDgram(1, 2, []byte("x")))), make([]byte, 15)...)
	badIHL := bytes.Clone(tcp4)
	badIHL[0] = 0x43
	badDoff := bytes.Clone(tcp4)
	badDoff[20+12] = 0x30

	okTCP := want{status: StatusOK, ipv: 4, src: "10.0.0.1", dst: "10.0.0.2", proto: ProtoTCP, sport: 40000, dport: 80,
		seq: 1000, ack: 2000, flags: FlagACK | FlagPSH, ipid: 0x1234, df: true, ttl: 64, payload: tcpPayload, payloadLen: len(tcpPayload)}
	okUDP6 := want{status: StatusOK, ipv: 6, src: "2001:db8::1", dst: "2001:db8::2", proto: ProtoUDP, sport: 5353, dport: 53,
		ttl: 64, payload: []byte("query"), payloadLen: 5}

	cases := []struct {
		name  string
		lt    uint16
		frame []byte
		wire  int
		want  want
	}{
		{"ethernet ipv4 tcp", LinkTypeEthernet, eth(etherTypeIPv4, tcp4), 0, okTCP},
		{"ethernet ipv6 udp", LinkTypeEthernet, eth(etherTypeIPv6, udp6), 0, okUDP6},
		{"802.1Q", LinkTypeEthernet, eth(etherTypeIPv4, tcp4, [2]uint16{etherTypeVLAN, 100}), 0, okTCP},
		{"QinQ 802.1ad", LinkTypeEthernet, eth(etherTypeIPv4, tcp4, [2]uint16{etherTypeQinQ, 10}, [2]uint16{etherTypeVLAN, 20}), 0, okTCP},
		{"QinQ 0x9100", LinkTypeEthernet, eth(etherTypeIPv6, udp6, [2]uint16{etherTypeQinQ91, 10}, [2]uint16{etherTypeVLAN, 20}), 0, okUDP6},
		{"802.3 SNAP", LinkTypeEthernet, append(append(append([]byte{}, macB...), macA...), append([]byte{0, byte(len(tcp4) + 8), 0xaa, 0xaa, 3, 0, 0, 0, 8, 0}, tcp4...)...), 0, okTCP},
		{"linux sll", LinkTypeLinuxSLL, sll(etherTypeIPv4, tcp4), 0, okTCP},
		{"linux sll vlan", LinkTypeLinuxSLL, sll(etherTypeVLAN, append([]byte{0, 5, 0x08, 0x00}, tcp4...)), 0, okTCP},
		{"linux sll2", LinkTypeSLL2, sll2(etherTypeIPv6, 3, udp6), 0, okUDP6},
		{"raw 101 v4", LinkTypeRaw, tcp4, 0, okTCP},
		{"raw 101 v6", LinkTypeRaw, udp6, 0, okUDP6},
		{"raw dlt 12", LinkTypeRawDLT12, tcp4, 0, okTCP},
		{"raw dlt 14", LinkTypeRawDLT14, udp6, 0, okUDP6},
		{"ipv4 228", LinkTypeIPv4, tcp4, 0, okTCP},
		{"ipv6 229", LinkTypeIPv6, udp6, 0, okUDP6},
		{"null little-endian", LinkTypeNull, null(binary.LittleEndian, afInet, tcp4), 0, okTCP},
		{"null big-endian", LinkTypeNull, null(binary.BigEndian, afInet, tcp4), 0, okTCP},
		{"null darwin ipv6", LinkTypeNull, null(binary.LittleEndian, afInet6Darw, udp6), 0, okUDP6},
		{"null freebsd ipv6 big-endian", LinkTypeNull, null(binary.BigEndian, afInet6Free, udp6), 0, okUDP6},
		{"loop", LinkTypeLoop, null(binary.BigEndian, afInet, tcp4), 0, okTCP},
		{"ipv4 options", LinkTypeRaw, v4opts, 0, want{status: StatusOK, ipv: 4, src: "10.0.0.1", dst: "10.0.0.2", proto: ProtoUDP,
			sport: 1, dport: 2, ipid: 7, ttl: 3, payload: []byte("opts"), payloadLen: 4}},
		{"ipv6 extension headers", LinkTypeRaw, v6ext, 0, want{status: StatusOK, ipv: 6, src: "2001:db8::1", dst: "2001:db8::2",
			proto: ProtoTCP, sport: 443, dport: 50000, seq: 5, ack: 6, flags: FlagSYN | FlagACK, ttl: 9, payload: []byte{}}},
		{"ipv6 first fragment", LinkTypeRaw, frag1, 0, want{status: StatusOK, ipv: 6, src: "2001:db8::1", dst: "2001:db8::2",
			proto: ProtoUDP, sport: 7, dport: 8, ipid: 0xabcdef, mf: true, ttl: 9, payload: bytes.Repeat([]byte{1}, 16), payloadLen: 16}},
		{"ipv6 later fragment", LinkTypeRaw, frag2, 0, want{status: StatusOK, ipv: 6, src: "2001:db8::1", dst: "2001:db8::2",
			proto: ProtoUDP, ipid: 0xabcdef, fragOff: 24, ttl: 9, payload: []byte("rest of it"), payloadLen: 10}},
		{"ipv4 later fragment", LinkTypeRaw, v4frag2, 0, want{status: StatusOK, ipv: 4, src: "10.0.0.1", dst: "10.0.0.2",
			proto: ProtoUDP, ipid: 99, fragOff: 1480, ttl: 64, payload: []byte("tail"), payloadLen: 4}},
		{"icmp passes through", LinkTypeRaw, icmp, 0, want{status: StatusOK, ipv: 4, src: "10.0.0.1", dst: "10.0.0.2",
			proto: ProtoICMP, ipid: 5, ttl: 64, payload: []byte{8, 0, 0xf7, 0xfe, 0, 1, 0, 1}, payloadLen: 8}},
		{"snaplen cut payload", LinkTypeEthernet, cut, 14 + len(tcp4), want{status: StatusOK, ipv: 4, src: "10.0.0.1", dst: "10.0.0.2",
			proto: ProtoTCP, sport: 40000, dport: 80, seq: 1000, ack: 2000, flags: FlagACK | FlagPSH, ipid: 0x1234, df: true, ttl: 64,
			payload: tcpPayload[:10], payloadLen: len(tcpPayload), truncated: true}},
		{"snaplen cut tcp header", LinkTypeEthernet, cutHdr, 14 + len(tcp4), want{status: StatusUndecodable, ipv: 4, src: "10.0.0.1", dst: "10.0.0.2",
			proto: ProtoTCP, ipid: 0x1234, df: true, ttl: 64, truncated: true}},
		{"ethernet padding", LinkTypeEthernet, padded, 0, want{status: StatusOK, ipv: 4, src: "10.0.0.1", dst: "10.0.0.2",
			proto: ProtoUDP, sport: 1, dport: 2, ttl: 1, payload: []byte("x"), payloadLen: 1}},
		{"arp", LinkTypeEthernet, eth(0x0806, make([]byte, 28)), 0, want{status: StatusNonIP}},
		{"802.3 llc", LinkTypeEthernet, append(append(append([]byte{}, macB...), macA...), 0, 3, 0x42, 0x42, 3), 0, want{status: StatusNonIP}},
		{"null unknown family", LinkTypeNull, null(binary.LittleEndian, 7, tcp4), 0, want{status: StatusNonIP}},
		{"unknown link type", 4242, tcp4, 0, want{status: StatusUndecodable}},
		{"short ethernet", LinkTypeEthernet, []byte{1, 2, 3}, 0, want{status: StatusUndecodable}},
		{"bad ihl", LinkTypeRaw, badIHL, 0, want{status: StatusUndecodable, ipv: 4}},
		{"bad data offset", LinkTypeRaw, badDoff, 0, want{status: StatusUndecodable, ipv: 4, src: "10.0.0.1", dst: "10.0.0.2",
			proto: ProtoTCP, ipid: 0x1234, df: true, ttl: 64}},
		{"raw version 5", LinkTypeRaw, append([]byte{0x50}, tcp4[1:]...), 0, want{status: StatusUndecodable}},
		{"vlan tag cut", LinkTypeEthernet, eth(etherTypeVLAN, nil)[:14], 0, want{status: StatusUndecodable}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wire := c.wire
			if wire == 0 {
				wire = len(c.frame)
			}
			var p Packet
			Decode(&p, c.lt, c.frame, wire)
			w := c.want
			if p.Status != w.status {
				t.Fatalf("status %v, want %v", p.Status, w.status)
			}
			if len(p.Obs) != 1 || p.Obs[0].TTL != w.ttl {
				t.Errorf("obs %+v, want one with TTL %d", p.Obs, w.ttl)
			}
			if p.WireKey == 0 {
				t.Errorf("no wire key")
			}
			if (p.BodyKey != 0) != (p.Status == StatusOK) {
				t.Errorf("body key %x with status %v", p.BodyKey, p.Status)
			}
			if p.LinkType != c.lt || &p.Frame[0] != &c.frame[0] || p.WireLen != wire {
				t.Errorf("frame fields %d %d", p.LinkType, p.WireLen)
			}
			if w.status == StatusNonIP || w.status == StatusUndecodable && w.src == "" {
				return
			}
			addr := func(s string) netip.Addr {
				if s == "" {
					return netip.Addr{}
				}
				return netip.MustParseAddr(s)
			}
			got := want{status: p.Status, ipv: p.IPVersion, src: "", dst: "", proto: p.Proto, sport: p.SrcPort, dport: p.DstPort,
				seq: p.Seq, ack: p.Ack, flags: p.TCPFlags, ipid: p.IPID, fragOff: p.FragOffset, mf: p.MoreFragments, df: p.DontFragment,
				ttl: p.Obs[0].TTL, payloadLen: p.PayloadLen, truncated: p.Truncated}
			if p.Src != addr(w.src) || p.Dst != addr(w.dst) {
				t.Errorf("addresses %v > %v, want %s > %s", p.Src, p.Dst, w.src, w.dst)
			}
			if !bytes.Equal(p.Payload, w.payload) {
				t.Errorf("payload %q, want %q", p.Payload, w.payload)
			}
			w.src, w.dst, w.payload = "", "", nil
			if !equalWant(got, w) {
				t.Errorf("got  %+v\nwant %+v", got, w)
			}
		})
	}
}

// TestDecodeAgreesWithGopacket decodes the same frames with gopacket's
// layer decoders and compares what both found.
func TestDecodeAgreesWithGopacket(t *testing.T) {
	frames := []struct {
		lt    uint16
		frame []byte
	}{
		{LinkTypeEthernet, eth(etherTypeIPv4, tcp4)},
		{LinkTypeEthernet, eth(etherTypeIPv6, udp6, [2]uint16{etherTypeVLAN, 7})},
		{LinkTypeEthernet, eth(etherTypeIPv4, tcp4, [2]uint16{etherTypeQinQ, 1}, [2]uint16{etherTypeVLAN, 2})},
		{LinkTypeLinuxSLL, sll(etherTypeIPv4, tcp4)},
		{LinkTypeSLL2, sll2(etherTypeIPv6, 2, udp6)},
		{LinkTypeRaw, tcp4},
		{LinkTypeRaw, udp6},
		{LinkTypeNull, null(binary.LittleEndian, afInet, tcp4)},
		{LinkTypeLoop, null(binary.BigEndian, afInet6BSD, udp6)},
	}
	for _, f := range frames {
		var p Packet
		Decode(&p, f.lt, f.frame, len(f.frame))
		checkAgainstGopacket(t, &p, f.lt, f.frame)
	}
}

// checkAgainstGopacket compares a StatusOK packet with gopacket's view.
func checkAgainstGopacket(t *testing.T, p *Packet, lt uint16, frame []byte) {
	t.Helper()
	gp := gopacket.NewPacket(frame, layers.LinkType(lt), gopacket.DecodeOptions{NoCopy: true, Lazy: true})
	var src, dst []byte
	switch l := gp.NetworkLayer().(type) {
	case *layers.IPv4:
		src, dst = l.SrcIP, l.DstIP
		if p.IPID != uint32(l.Id) || p.Obs[0].TTL != l.TTL {
			t.Errorf("%s: id/ttl %d/%d, gopacket %d/%d", LinkTypeName(lt), p.IPID, p.Obs[0].TTL, l.Id, l.TTL)
		}
	case *layers.IPv6:
		src, dst = l.SrcIP, l.DstIP
	default:
		t.Errorf("%s: gopacket found no IP layer", LinkTypeName(lt))
		return
	}
	if s, _ := netip.AddrFromSlice(src); s.Unmap() != p.Src.Unmap() {
		t.Errorf("%s: src %v, gopacket %v", LinkTypeName(lt), p.Src, s)
	}
	if d, _ := netip.AddrFromSlice(dst); d.Unmap() != p.Dst.Unmap() {
		t.Errorf("%s: dst %v, gopacket %v", LinkTypeName(lt), p.Dst, d)
	}
	switch l := gp.TransportLayer().(type) {
	case *layers.TCP:
		if uint16(l.SrcPort) != p.SrcPort || uint16(l.DstPort) != p.DstPort || l.Seq != p.Seq || l.Ack != p.Ack || !bytes.Equal(l.Payload, p.Payload) {
			t.Errorf("%s: tcp fields differ from gopacket", LinkTypeName(lt))
		}
	case *layers.UDP:
		if uint16(l.SrcPort) != p.SrcPort || uint16(l.DstPort) != p.DstPort || !bytes.Equal(l.Payload, p.Payload) {
			t.Errorf("%s: udp fields differ from gopacket", LinkTypeName(lt))
		}
	}
}

func TestWireKeyInvariants(t *testing.T) {
	key := func(lt uint16, frame []byte, wire int) *Packet {
		var p Packet
		Decode(&p, lt, frame, wire)
		return &p
	}
	long := bytes.Repeat([]byte("0123456789"), 20)
	base := v4{src: "10.0.0.1", dst: "10.0.0.2", ttl: 64, id: 1, df: true, proto: ProtoTCP}
	seg := tcpSeg(1, 2, 3, 4, FlagACK, 5, []byte{1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2}, long)
	ref := key(LinkTypeEthernet, eth(etherTypeIPv4, ipv4(base, seg)), 0)

	hop := base
	hop.ttl = 63
	hop.tos = 2 // ECN set on the way
	segCsum := bytes.Clone(seg)
	segCsum[16] ^= 0xff // an offloaded, unfinished checksum
	fullHop := ipv4(hop, segCsum)
	same := map[string]*Packet{
		"another hop, TOS, checksum": key(LinkTypeEthernet, eth(etherTypeIPv4, fullHop), 0),
		"vlan tagged":                key(LinkTypeEthernet, eth(etherTypeIPv4, ipv4(base, seg), [2]uint16{etherTypeVLAN, 42}), 0),
		"sll2":                       key(LinkTypeSLL2, sll2(etherTypeIPv4, 9, ipv4(base, seg)), 0),
		"raw":                        key(LinkTypeRaw, ipv4(base, seg), 0),
		"snaplen 160":                key(LinkTypeRaw, ipv4(base, seg)[:160], len(ipv4(base, seg))),
	}
	for name, p := range same {
		if p.WireKey != ref.WireKey {
			t.Errorf("%s: wire key differs", name)
		}
		if p.BodyKey != ref.BodyKey {
			t.Errorf("%s: body key differs", name)
		}
	}

	nat := base
	nat.src = "192.168.1.1"
	nat.ttl = 12
	natSeg := bytes.Clone(seg)
	binary.BigEndian.PutUint16(natSeg[0:], 55555)
	natted := key(LinkTypeRaw, ipv4(nat, natSeg), 0)
	if natted.BodyKey != ref.BodyKey {
		t.Errorf("NAT changed the body key")
	}
	if natted.WireKey == ref.WireKey {
		t.Errorf("NAT left the wire key unchanged")
	}

	mod := func(f func(h *v4, s []byte)) *Packet {
		h := base
		s := bytes.Clone(seg)
		f(&h, s)
		return key(LinkTypeRaw, ipv4(h, s), 0)
	}
	differ := map[string]*Packet{
		"ip id":          mod(func(h *v4, s []byte) { h.id = 2 }),
		"seq":            mod(func(h *v4, s []byte) { s[7]++ }),
		"ack":            mod(func(h *v4, s []byte) { s[11]++ }),
		"flags":          mod(func(h *v4, s []byte) { s[13] |= FlagFIN }),
		"tcp timestamp":  mod(func(h *v4, s []byte) { s[27]++ }),
		"payload byte 0": mod(func(h *v4, s []byte) { s[32]++ }),
		"payload byte 63": mod(func(h *v4, s []byte) {
			s[32+KeyPayloadBytes-1]++
		}),
	}
	for name, p := range differ {
		if p.WireKey == ref.WireKey {
			t.Errorf("%s: wire key unchanged", name)
		}
		if p.BodyKey == ref.BodyKey {
			t.Errorf("%s: body key unchanged", name)
		}
	}
	// Beyond the covered prefix, bytes do not count.
	if p := mod(func(h *v4, s []byte) { s[32+KeyPayloadBytes]++ }); p.WireKey != ref.WireKey {
		t.Errorf("a byte past KeyPayloadBytes changed the wire key")
	}
	// Ports change the wire key, not the body key.
	if p := mod(func(h *v4, s []byte) { s[3]++ }); p.WireKey == ref.WireKey || p.BodyKey != ref.BodyKey {
		t.Errorf("destination port: keys wrong")
	}
	// IPv6: hop limit and a changed routing header are outside the key.
	mk6 := func(hop uint8, segsLeft byte) uint64 {
		return key(LinkTypeRaw, ipv6(v6{src: "2001:db8::1", dst: "2001:db8::2", hop: hop, proto: ProtoUDP,
			exts: []ext6{{typ: ipv6Routing, body: []byte{0, segsLeft, 0, 0, 0, 0}}}}, udpDgram(1, 2, []byte("x"))), 0).WireKey
	}
	if mk6(64, 0) != mk6(3, 1) {
		t.Errorf("ipv6 hop limit or routing header changed the wire key")
	}
}

func TestDecodeNoAllocs(t *testing.T) {
	frames := [][]byte{eth(etherTypeIPv4, tcp4), eth(etherTypeIPv6, udp6), eth(0x0806, make([]byte, 28))}
	var p Packet
	Decode(&p, LinkTypeEthernet, frames[0], len(frames[0]))
	for _, f := range frames {
		if n := testing.AllocsPerRun(100, func() { Decode(&p, LinkTypeEthernet, f, len(f)) }); n != 0 {
			t.Errorf("Decode allocates %v times per packet", n)
		}
	}
}

func TestClone(t *testing.T) {
	var p Packet
	f := eth(etherTypeIPv4, tcp4)
	Decode(&p, LinkTypeEthernet, f, len(f))
	c := p.Clone()
	f[len(f)-1] = 'X'
	if c.Payload[len(c.Payload)-1] != '\n' || &c.Payload[0] != &c.Frame[len(c.Frame)-len(c.Payload)] {
		t.Errorf("clone shares the frame or lost the payload alias")
	}
}

func equalWant(a, b want) bool {
	a.payload, b.payload = nil, nil
	type flat struct {
		status                 Status
		ipv, proto, flags, ttl uint8
		sport, dport, fragOff  uint16
		seq, ack, ipid         uint32
		mf, df, truncated      bool
		payloadLen             int
		src, dst               string
	}
	f := func(w want) flat {
		return flat{w.status, w.ipv, w.proto, w.flags, w.ttl, w.sport, w.dport, w.fragOff, w.seq, w.ack, w.ipid, w.mf, w.df, w.truncated, w.payloadLen, w.src, w.dst}
	}
	return f(a) == f(b)
}
