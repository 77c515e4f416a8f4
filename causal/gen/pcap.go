package gen

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	farm "github.com/dgryski/go-farm"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/wirepath/wirepath/trace"
)

// Sniffer is a capture point of the synthetic captures WritePcaps writes:
// it sees every packet to or from its Nodes ("CLIENT" for every client; no
// nodes: every packet, like a switch mirror) and stamps it with its own
// clock: true time + Offset + DriftPPM·1e-6·(true time − the first
// packet's), a clock that gains DriftPPM microseconds a second from the
// start of the captures.
type Sniffer struct {
	Name     string   `yaml:"name" json:"name"`
	Nodes    []string `yaml:"nodes,omitempty" json:"nodes,omitempty"`
	Offset   Duration `yaml:"offset,omitempty" json:"offset_ns,omitempty"`
	DriftPPM float64  `yaml:"drift_ppm,omitempty" json:"drift_ppm,omitempty"`
	// Loss is the probability that the sniffer misses any one packet, on
	// top of the messages the loss model dropped for every sniffer.
	Loss float64 `yaml:"loss,omitempty" json:"loss,omitempty"`
}

// PcapStats counts what WritePcaps wrote per sniffer.
type PcapStats struct {
	Sniffer string `json:"sniffer"`
	File    string `json:"file"`
	Packets int    `json:"packets"`
	// DataSegments carry message bytes; the others are handshakes, pure
	// ACKs and FINs. LostSegments are the data segments of messages the
	// loss model dropped, left out of every capture. Missed are the
	// packets this sniffer missed on its own (Sniffer.Loss).
	DataSegments int `json:"data_segments"`
	LostSegments int `json:"lost_segments"`
	Missed       int `json:"missed,omitempty"`
	// StartNS is the first packet's departure, the time from which a
	// sniffer's drift counts.
	StartNS int64 `json:"start_ns"`
}

// Link-level constants of the synthetic captures.
const (
	pcapMSS     = 1460
	pcapMTU     = 1500
	senderTTL   = 64
	routedTTL   = 63
	segmentGap  = time.Microsecond // between back-to-back segments
	tcpWindow   = 65535
	udpFragData = 1480 // IP payload per fragment, a multiple of 8
)

// pkt is one packet to write: when it leaves and arrives (true time), its
// headers, and which bytes of which message it carries.
type pkt struct {
	depart, arrive int64
	src, dst       netip.AddrPort
	proto          trace.Proto
	flags          uint8 // tcp flags
	seq, ack       uint32
	msg            int32 // truth index of the message whose bytes it carries, -1 none
	off, n         int32 // payload range within the message
	ipID           uint16
	fragOff        uint16 // UDP fragments: offset in 8-byte units
	moreFrags      bool
	lost           bool
	order          int32 // creation order, for stable sorting
}

const (
	tcpFIN = 1 << iota
	tcpSYN
	tcpRST
	tcpPSH
	tcpACK
)

type tcpConn struct {
	seq  [2]uint32 // next sequence number: [0] opener->peer, [1] back
	open bool
}

type pcapBuilder struct {
	t      *Truth
	p      *plan
	tokens [][]tokenID // by truth index (nil: none)
	pkts   []pkt
	conns  map[[2]netip.AddrPort]*tcpConn
	ipID   map[netip.Addr]uint16
	rng    uint64
	start  int64 // the first packet's departure: sniffers drift from it
	// servers maps each node's listening endpoint to the node.
	servers map[netip.AddrPort]int
	// the payload of one message, rendered once for its segments
	payMsg int32
	pay    []byte
}

func (b *pcapBuilder) rand32() uint32 {
	b.rng += 0x9e3779b97f4a7c15
	z := b.rng
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return uint32(z ^ (z >> 31))
}

func (b *pcapBuilder) add(p pkt) {
	p.order = int32(len(b.pkts))
	if p.arrive < p.depart {
		p.arrive = p.depart
	}
	if p.ipID == 0 {
		b.ipID[p.src.Addr()]++
		if b.ipID[p.src.Addr()] == 0 {
			b.ipID[p.src.Addr()]++
		}
		p.ipID = b.ipID[p.src.Addr()]
	}
	b.pkts = append(b.pkts, p)
}

// WritePcaps writes synthetic pcapng captures of every message of out's
// truth into dir: one file per sniffer (one mirror seeing everything when
// the config names none). Each TCP message travels on a real connection —
// RPC calls open one per call (SYN, SYN-ACK, ACK), carry the CALL and the
// RETURN in MSS-sized segments with ACKs, and close it (FIN both ways) once
// the RETURN arrived; other TCP messages get a connection each. UDP
// messages are datagrams, IPv4-fragmented past the MTU. A sniffer near the
// sender stamps a packet when it leaves (TTL 64), near the receiver when it
// arrives (TTL 63). The data segments of messages the loss model dropped
// are in no capture. Per-node skew applies to the trace only; the captures
// have the sniffers' offsets instead.
func WritePcaps(dir string, out *Output, cfg *Config) ([]PcapStats, error) {
	p, err := compile(cfg)
	if err != nil {
		return nil, err
	}
	t := out.Truth
	b := &pcapBuilder{t: t, p: p, tokens: out.tokens, conns: make(map[[2]netip.AddrPort]*tcpConn), ipID: make(map[netip.Addr]uint16),
		rng: cfg.Seed ^ 0x5ca1ab1e, servers: make(map[netip.AddrPort]int), payMsg: -1}
	for i, n := range p.nodes {
		b.servers[netip.AddrPortFrom(n.addr, uint16(n.port))] = i
	}
	if err := b.build(); err != nil {
		return nil, err
	}

	sniffers := cfg.Sniffers
	if len(sniffers) == 0 {
		sniffers = []Sniffer{{Name: "mirror"}}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var stats []PcapStats
	for _, sn := range sniffers {
		covers, err := p.coverage(sn)
		if err != nil {
			return nil, err
		}
		st, err := b.write(dir, sn, covers)
		if err != nil {
			return nil, err
		}
		stats = append(stats, st)
	}
	return stats, nil
}

// coverage returns whether sniffer sn sees the host at an address.
func (p *plan) coverage(sn Sniffer) (func(netip.Addr) bool, error) {
	if err := checkName(sn.Name); err != nil {
		return nil, fmt.Errorf("%w: sniffer: %v", ErrConfig, err)
	}
	if len(sn.Nodes) == 0 {
		return func(netip.Addr) bool { return true }, nil
	}
	addrs := make(map[netip.Addr]bool)
	clients := false
	for _, n := range sn.Nodes {
		if n == "CLIENT" {
			clients = true
			continue
		}
		sp, ok := p.lookup(n)
		if !ok {
			return nil, fmt.Errorf("%w: sniffer %s: unknown node %q", ErrConfig, sn.Name, n)
		}
		for i := sp.first; i < sp.first+sp.n; i++ {
			addrs[p.nodes[i].addr] = true
		}
	}
	return func(a netip.Addr) bool { return addrs[a] || clients && p.clientNet.Contains(a) }, nil
}

func parseEP(s string) (netip.AddrPort, error) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("endpoint %q: %w", s, err)
	}
	return ap, nil
}

// build turns the truth's messages into packets.
func (b *pcapBuilder) build() error {
	t := b.t
	tr := t.Trace
	// The RETURN of each CALL, to close the connection after it arrives.
	for i := range tr.Messages {
		m := &tr.Messages[i]
		src, err := parseEP(tr.Str(m.Src))
		if err != nil {
			return err
		}
		dst, err := parseEP(tr.Str(m.Dst))
		if err != nil {
			return err
		}
		send, recv := int64(m.SendTS), int64(m.RecvTS)
		net := recv - send
		lost := t.Observed[i] < 0
		if m.Proto == trace.ProtoUDP {
			b.udp(int32(i), src, dst, send, recv, int(m.Bytes), lost)
			continue
		}
		key := [2]netip.AddrPort{src, dst}
		dir := 0
		c := b.conns[key]
		if c == nil {
			if rc := b.conns[[2]netip.AddrPort{dst, src}]; rc != nil && m.Kind == trace.KindReturn {
				c, dir = rc, 1
			}
		}
		if c == nil {
			// A new connection, opened just before the first byte leaves.
			c = &tcpConn{seq: [2]uint32{b.rand32(), b.rand32()}, open: true}
			b.conns[key] = c
			syn := send - 2*net - 3*int64(segmentGap)
			b.add(pkt{depart: syn, arrive: syn + net, src: src, dst: dst, proto: trace.ProtoTCP, flags: tcpSYN, seq: c.seq[0] - 1, msg: -1})
			b.add(pkt{depart: syn + net + int64(segmentGap), arrive: syn + 2*net + int64(segmentGap), src: dst, dst: src, proto: trace.ProtoTCP, flags: tcpSYN | tcpACK, seq: c.seq[1] - 1, ack: c.seq[0], msg: -1})
			b.add(pkt{depart: send - int64(segmentGap), arrive: send - int64(segmentGap) + net, src: src, dst: dst, proto: trace.ProtoTCP, flags: tcpACK, seq: c.seq[0], ack: c.seq[1], msg: -1})
		}
		// Data segments: the first leaves at send, the last arrives at recv.
		n := max(1, (int(m.Bytes)+pcapMSS-1)/pcapMSS)
		for k := 0; k < n; k++ {
			off := k * pcapMSS
			l := min(pcapMSS, int(m.Bytes)-off)
			if m.Bytes == 0 {
				l = 0
			}
			dep := send + int64(k)*int64(segmentGap)
			arr := recv - int64(n-1-k)*int64(segmentGap)
			flags := uint8(tcpACK)
			if k == n-1 {
				flags |= tcpPSH
			}
			b.add(pkt{depart: dep, arrive: arr, src: src, dst: dst, proto: trace.ProtoTCP, flags: flags,
				seq: c.seq[dir], ack: c.seq[1-dir], msg: int32(i), off: int32(off), n: int32(l), lost: lost})
			c.seq[dir] += uint32(l)
		}
		// The receiver acknowledges the whole message.
		b.add(pkt{depart: recv + int64(segmentGap), arrive: recv + int64(segmentGap) + net, src: dst, dst: src, proto: trace.ProtoTCP, flags: tcpACK,
			seq: c.seq[1-dir], ack: c.seq[dir], msg: -1})
		// Close after a RETURN, or after a one-way message, unless the
		// connection belongs to a pool.
		if m.Kind != trace.KindCall && !b.pooled(src, dst) {
			opener, peer := src, dst
			if dir == 1 {
				opener, peer = dst, src
			}
			o := 0 // the opener's direction
			fin := recv + 2*int64(segmentGap)
			if dir == 0 {
				// A one-way message: the receiver closes.
				opener, peer, o = dst, src, 1
			}
			b.add(pkt{depart: fin, arrive: fin + net, src: opener, dst: peer, proto: trace.ProtoTCP, flags: tcpFIN | tcpACK, seq: c.seq[o], ack: c.seq[1-o], msg: -1})
			b.add(pkt{depart: fin + net + int64(segmentGap), arrive: fin + 2*net + int64(segmentGap), src: peer, dst: opener, proto: trace.ProtoTCP, flags: tcpFIN | tcpACK, seq: c.seq[1-o], ack: c.seq[o] + 1, msg: -1})
			b.add(pkt{depart: fin + 2*net + 2*int64(segmentGap), arrive: fin + 3*net + 2*int64(segmentGap), src: opener, dst: peer, proto: trace.ProtoTCP, flags: tcpACK, seq: c.seq[o] + 1, ack: c.seq[1-o] + 1, msg: -1})
			if dir == 1 {
				delete(b.conns, [2]netip.AddrPort{dst, src})
			} else {
				delete(b.conns, key)
			}
		}
	}
	for i, p := range b.pkts {
		if i == 0 || p.depart < b.start {
			b.start = p.depart
		}
	}
	return nil
}

// pooled reports whether a connection between src and dst is one of a
// pool's: one end is a node with a pool, the other a node.
func (b *pcapBuilder) pooled(src, dst netip.AddrPort) bool {
	for _, e := range [2][2]netip.AddrPort{{src, dst}, {dst, src}} {
		if n, ok := b.servers[e[1]]; ok && b.p.nodes[n].pool > 0 && !b.p.clientNet.Contains(e[0].Addr()) {
			return true
		}
	}
	return false
}

// payloadOf fills buf with the bytes [off, off+len(buf)) of message i:
// its protocol payload when the configuration asks for them, else
// pseudo-random bytes.
func (b *pcapBuilder) payloadOf(buf []byte, i int32, off int32) {
	m := &b.t.Trace.Messages[i]
	if !b.p.ev.payloads || m.Proto == trace.ProtoUDP {
		payload(buf, i, off)
		return
	}
	if b.payMsg != i {
		b.pay = b.render(b.pay[:0], i)
		b.payMsg = i
	}
	n := copy(buf, b.pay[min(int(off), len(b.pay)):])
	clear(buf[n:])
}

// render renders the protocol payload of message i, of its size.
func (b *pcapBuilder) render(buf []byte, i int32) []byte {
	tr := b.t.Trace
	m := &tr.Messages[i]
	server := -1
	if ep, err := parseEP(tr.Str(m.Dst)); err == nil && m.Kind != trace.KindReturn {
		server = b.servers[ep]
	} else if ep, err := parseEP(tr.Str(m.Src)); err == nil {
		server = b.servers[ep]
	}
	ps := payloadSpec{kind: m.Kind, protocol: "http", label: tr.Str(m.Label)}
	if server >= 0 && b.p.nodes[server].protocol != "" {
		ps.protocol = b.p.nodes[server].protocol
	}
	if m.ReqID != 0 {
		ps.idSource, ps.idValue, _ = strings.Cut(tr.Str(m.ReqID), ":")
	}
	if b.tokens != nil {
		for _, t := range b.tokens[i] {
			ps.tokens = append(ps.tokens, tokenText(t))
		}
	}
	return render(buf, &ps, int(m.Bytes))
}

// udp adds the datagram of message i, fragmented past the MTU.
func (b *pcapBuilder) udp(i int32, src, dst netip.AddrPort, send, recv int64, size int, lost bool) {
	b.ipID[src.Addr()]++
	if b.ipID[src.Addr()] == 0 {
		b.ipID[src.Addr()]++
	}
	id := b.ipID[src.Addr()]
	total := 8 + size // UDP header + data
	if total <= pcapMTU-20 {
		b.add(pkt{depart: send, arrive: recv, src: src, dst: dst, proto: trace.ProtoUDP, msg: i, n: int32(size), ipID: id, lost: lost})
		return
	}
	n := (total + udpFragData - 1) / udpFragData
	for k := 0; k < n; k++ {
		off := k * udpFragData
		l := min(udpFragData, total-off)
		b.add(pkt{depart: send + int64(k)*int64(segmentGap), arrive: recv - int64(n-1-k)*int64(segmentGap), src: src, dst: dst, proto: trace.ProtoUDP,
			msg: i, off: int32(off), n: int32(l), ipID: id, fragOff: uint16(off / 8), moreFrags: k < n-1, lost: lost})
	}
}

// payload fills buf with the deterministic bytes [off, off+len(buf)) of
// message i: unique per message, so that bodies match across sniffers and
// NAT, and differ between messages.
func payload(buf []byte, i int32, off int32) {
	word := func(w uint64) uint64 {
		z := uint64(i)*0x9e3779b97f4a7c15 + w*0xbf58476d1ce4e5b9 + 0x1234567
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		return z ^ (z >> 31)
	}
	pos := uint64(off)
	k := 0
	for k < len(buf) {
		w := word(pos / 8)
		for shift := pos % 8; shift < 8 && k < len(buf); shift++ {
			buf[k] = byte(w >> (8 * shift))
			k++
			pos++
		}
	}
}

func mac(a netip.Addr) []byte {
	b := a.As16()
	return []byte{0x02, 0x00, b[12], b[13], b[14], b[15]}
}

type capture struct {
	ts    int64
	order int32
	p     *pkt
	ttl   uint8
}

// write writes the packets sniffer sn sees into dir/NAME.pcapng.
func (b *pcapBuilder) write(dir string, sn Sniffer, covers func(netip.Addr) bool) (PcapStats, error) {
	st := PcapStats{Sniffer: sn.Name, File: filepath.Join(dir, sn.Name+".pcapng"), StartNS: b.start}
	var caps []capture
	miss := snifferLoss(b.t.Meta.Seed, sn)
	for k := range b.pkts {
		p := &b.pkts[k]
		switch {
		case covers(p.src.Addr()):
			caps = append(caps, capture{ts: p.depart, order: p.order, p: p, ttl: senderTTL})
		case covers(p.dst.Addr()):
			caps = append(caps, capture{ts: p.arrive, order: p.order, p: p, ttl: routedTTL})
		default:
			continue
		}
		switch {
		case p.lost:
			st.LostSegments++
			caps = caps[:len(caps)-1]
		case miss != nil && miss():
			st.Missed++
			caps = caps[:len(caps)-1]
		}
	}
	slices.SortStableFunc(caps, func(x, y capture) int {
		if x.ts != y.ts {
			return cmpI64(x.ts, y.ts)
		}
		return int(x.order - y.order)
	})
	f, err := os.Create(st.File)
	if err != nil {
		return st, err
	}
	w, err := pcapgo.NewNgWriterInterface(f, pcapgo.NgInterface{
		Name:                sn.Name,
		Description:         "wirepath gen synthetic capture",
		LinkType:            layers.LinkTypeEthernet,
		TimestampResolution: 9,
		SnapLength:          65535,
	}, pcapgo.NgWriterOptions{SectionInfo: pcapgo.NgSectionInfo{Application: "wirepath gen", Comment: "config " + b.t.Meta.Config}})
	if err != nil {
		f.Close()
		return st, err
	}
	sbuf := gopacket.NewSerializeBuffer()
	var data []byte
	for _, c := range caps {
		frame, err := b.frame(sbuf, c.p, c.ttl, &data)
		if err != nil {
			f.Close()
			return st, err
		}
		ts := time.Unix(0, b.stamp(sn, c.ts))
		if err := w.WritePacket(gopacket.CaptureInfo{Timestamp: ts, CaptureLength: len(frame), Length: len(frame)}, frame); err != nil {
			f.Close()
			return st, err
		}
		st.Packets++
		if c.p.msg >= 0 {
			st.DataSegments++
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return st, err
	}
	return st, f.Close()
}

// stamp returns the time sniffer sn writes on a packet it sees at true
// time t: its offset plus its drift since the first packet.
func (b *pcapBuilder) stamp(sn Sniffer, t int64) int64 {
	return t + int64(sn.Offset) + int64(math.Round(sn.DriftPPM*1e-6*float64(t-b.start)))
}

// snifferLoss returns a function that reports, packet after packet,
// whether sniffer sn misses it, from a random stream of the sniffer's own
// (nil when it misses nothing).
func snifferLoss(seed uint64, sn Sniffer) func() bool {
	if sn.Loss <= 0 {
		return nil
	}
	r := rand.New(rand.NewPCG(seed, farm.Fingerprint64([]byte("sniffer loss "+sn.Name))))
	return func() bool { return r.Float64() < sn.Loss }
}

// frame serializes packet p as an Ethernet frame.
func (b *pcapBuilder) frame(sbuf gopacket.SerializeBuffer, p *pkt, ttl uint8, data *[]byte) ([]byte, error) {
	eth := &layers.Ethernet{SrcMAC: mac(p.src.Addr()), DstMAC: mac(p.dst.Addr()), EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: ttl, Id: p.ipID, SrcIP: p.src.Addr().AsSlice(), DstIP: p.dst.Addr().AsSlice()}
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if p.msg >= 0 {
		*data = slices.Grow((*data)[:0], int(p.n))[:p.n]
	} else {
		*data = (*data)[:0]
	}
	switch p.proto {
	case trace.ProtoUDP:
		ip.Protocol = layers.IPProtocolUDP
		m := &b.t.Trace.Messages[p.msg]
		size := int(m.Bytes)
		if 8+size <= pcapMTU-20 {
			payload(*data, p.msg, 0)
			udp := &layers.UDP{SrcPort: layers.UDPPort(p.src.Port()), DstPort: layers.UDPPort(p.dst.Port())}
			udp.SetNetworkLayerForChecksum(ip)
			if err := gopacket.SerializeLayers(sbuf, opts, eth, ip, udp, gopacket.Payload(*data)); err != nil {
				return nil, err
			}
			return sbuf.Bytes(), nil
		}
		// A fragment: build the whole datagram's UDP bytes, then cut.
		whole := make([]byte, 8+size)
		payload(whole[8:], p.msg, 0)
		binary.BigEndian.PutUint16(whole[0:], p.src.Port())
		binary.BigEndian.PutUint16(whole[2:], p.dst.Port())
		binary.BigEndian.PutUint16(whole[4:], uint16(8+size))
		binary.BigEndian.PutUint16(whole[6:], udpChecksum(p.src.Addr(), p.dst.Addr(), whole))
		if p.moreFrags {
			ip.Flags = layers.IPv4MoreFragments
		}
		ip.FragOffset = p.fragOff
		if err := gopacket.SerializeLayers(sbuf, opts, eth, ip, gopacket.Payload(whole[p.off:p.off+p.n])); err != nil {
			return nil, err
		}
		return sbuf.Bytes(), nil
	default:
		ip.Protocol = layers.IPProtocolTCP
		ip.Flags = layers.IPv4DontFragment
		if p.msg >= 0 {
			b.payloadOf(*data, p.msg, p.off)
		}
		tcp := &layers.TCP{
			SrcPort: layers.TCPPort(p.src.Port()), DstPort: layers.TCPPort(p.dst.Port()),
			Seq: p.seq, Ack: p.ack, Window: tcpWindow,
			SYN: p.flags&tcpSYN != 0, ACK: p.flags&tcpACK != 0, FIN: p.flags&tcpFIN != 0, PSH: p.flags&tcpPSH != 0,
		}
		if tcp.SYN {
			tcp.Options = []layers.TCPOption{{OptionType: layers.TCPOptionKindMSS, OptionLength: 4, OptionData: []byte{pcapMSS >> 8, pcapMSS & 0xff}}}
		}
		tcp.SetNetworkLayerForChecksum(ip)
		if err := gopacket.SerializeLayers(sbuf, opts, eth, ip, tcp, gopacket.Payload(*data)); err != nil {
			return nil, err
		}
		return sbuf.Bytes(), nil
	}
}

// udpChecksum computes the UDP checksum of seg (header with a zero
// checksum, then data) over the IPv4 pseudo-header.
func udpChecksum(src, dst netip.Addr, seg []byte) uint16 {
	var sum uint32
	s, d := src.As4(), dst.As4()
	sum += uint32(s[0])<<8 | uint32(s[1])
	sum += uint32(s[2])<<8 | uint32(s[3])
	sum += uint32(d[0])<<8 | uint32(d[1])
	sum += uint32(d[2])<<8 | uint32(d[3])
	sum += uint32(layers.IPProtocolUDP)
	sum += uint32(len(seg))
	for i := 0; i+1 < len(seg); i += 2 {
		sum += uint32(seg[i])<<8 | uint32(seg[i+1])
	}
	if len(seg)%2 == 1 {
		sum += uint32(seg[len(seg)-1]) << 8
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	c := ^uint16(sum)
	if c == 0 {
		c = 0xffff
	}
	return c
}
