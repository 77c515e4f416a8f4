package pcapio

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"
)

// Frame builders for tests. They write headers field by field, independent
// of the decoder, so that the decoder is checked against what the RFCs
// say rather than against itself.

// tcpSeg builds a TCP header (data offset from opts, which must be a
// multiple of 4) followed by payload. The checksum is a fixed marker.
func tcpSeg(sport, dport uint16, seq, ack uint32, flags uint8, win uint16, opts, payload []byte) []byte {
	b := make([]byte, 20, 20+len(opts)+len(payload))
	binary.BigEndian.PutUint16(b[0:], sport)
	binary.BigEndian.PutUint16(b[2:], dport)
	binary.BigEndian.PutUint32(b[4:], seq)
	binary.BigEndian.PutUint32(b[8:], ack)
	b[12] = byte((20+len(opts))/4) << 4
	b[13] = flags
	binary.BigEndian.PutUint16(b[14:], win)
	binary.BigEndian.PutUint16(b[16:], 0xc5c5) // checksum
	b = append(b, opts...)
	return append(b, payload...)
}

// udpDgram builds a UDP header and payload.
func udpDgram(sport, dport uint16, payload []byte) []byte {
	b := make([]byte, 8, 8+len(payload))
	binary.BigEndian.PutUint16(b[0:], sport)
	binary.BigEndian.PutUint16(b[2:], dport)
	binary.BigEndian.PutUint16(b[4:], uint16(8+len(payload)))
	binary.BigEndian.PutUint16(b[6:], 0x5c5c)
	return append(b, payload...)
}

// v4 describes an IPv4 header.
type v4 struct {
	src, dst string
	ttl      uint8
	id       uint16
	df, mf   bool
	fragOff  uint16 // bytes, multiple of 8
	tos      uint8
	options  []byte // multiple of 4
	proto    uint8
}

func ipv4(h v4, l4 []byte) []byte {
	ihl := 20 + len(h.options)
	b := make([]byte, ihl, ihl+len(l4))
	b[0] = 0x40 | byte(ihl/4)
	b[1] = h.tos
	binary.BigEndian.PutUint16(b[2:], uint16(ihl+len(l4)))
	binary.BigEndian.PutUint16(b[4:], h.id)
	ff := h.fragOff >> 3
	if h.df {
		ff |= 0x4000
	}
	if h.mf {
		ff |= 0x2000
	}
	binary.BigEndian.PutUint16(b[6:], ff)
	b[8] = h.ttl
	b[9] = h.proto
	s, d := netip.MustParseAddr(h.src).As4(), netip.MustParseAddr(h.dst).As4()
	copy(b[12:], s[:])
	copy(b[16:], d[:])
	copy(b[20:], h.options)
	var sum uint32
	for i := 0; i < ihl; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(b[10:], ^uint16(sum))
	return append(b, l4...)
}

// v6 describes an IPv6 header and its extension headers.
type v6 struct {
	src, dst  string
	hop       uint8
	tclass    uint8
	flowLabel uint32
	exts      []ext6
	proto     uint8 // of the transport after the extensions
}

// ext6 is one extension header: its type and body (for types other than
// fragment and AH, the body length + 2 must be a multiple of 8).
type ext6 struct {
	typ  uint8
	body []byte
}

// fragExt builds a fragment extension header.
func fragExt(off uint16, more bool, id uint32) ext6 {
	b := make([]byte, 6)
	fo := off
	if more {
		fo |= 1
	}
	binary.BigEndian.PutUint16(b[0:], fo)
	binary.BigEndian.PutUint32(b[2:], id)
	return ext6{typ: ipv6Fragment, body: b}
}

func ipv6(h v6, l4 []byte) []byte {
	var exts []byte
	for i, e := range h.exts {
		next := h.proto
		if i+1 < len(h.exts) {
			next = h.exts[i+1].typ
		}
		switch e.typ {
		case ipv6Fragment:
			exts = append(exts, next, 0)
		case ipv6AH:
			exts = append(exts, next, byte((len(e.body)+2)/4-2))
		default:
			exts = append(exts, next, byte((len(e.body)+2)/8-1))
		}
		exts = append(exts, e.body...)
	}
	b := make([]byte, 40, 40+len(exts)+len(l4))
	binary.BigEndian.PutUint32(b[0:], 6<<28|uint32(h.tclass)<<20|h.flowLabel&0xfffff)
	binary.BigEndian.PutUint16(b[4:], uint16(len(exts)+len(l4)))
	b[6] = h.proto
	if len(h.exts) > 0 {
		b[6] = h.exts[0].typ
	}
	b[7] = h.hop
	s, d := netip.MustParseAddr(h.src).As16(), netip.MustParseAddr(h.dst).As16()
	copy(b[8:], s[:])
	copy(b[24:], d[:])
	b = append(b, exts...)
	return append(b, l4...)
}

var (
	macA = []byte{0x02, 0, 0, 0, 0, 0x0a}
	macB = []byte{0x02, 0, 0, 0, 0, 0x0b}
)

// eth builds an Ethernet frame; tags are (TPID, TCI) pairs, outer first.
func eth(etype uint16, l3 []byte, tags ...[2]uint16) []byte {
	b := append(append([]byte{}, macB...), macA...)
	for _, t := range tags {
		b = binary.BigEndian.AppendUint16(b, t[0])
		b = binary.BigEndian.AppendUint16(b, t[1])
	}
	b = binary.BigEndian.AppendUint16(b, etype)
	return append(b, l3...)
}

// sll builds a Linux cooked v1 frame.
func sll(etype uint16, l3 []byte) []byte {
	b := []byte{0, 4, 0, 1, 0, 6}
	b = append(b, macA...)
	b = append(b, 0, 0)
	b = binary.BigEndian.AppendUint16(b, etype)
	return append(b, l3...)
}

// sll2 builds a Linux cooked v2 frame on interface ifindex.
func sll2(etype uint16, ifindex uint32, l3 []byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, etype)
	b = append(b, 0, 0)
	b = binary.BigEndian.AppendUint32(b, ifindex)
	b = append(b, 0, 1, 4, 6)
	b = append(b, macA...)
	b = append(b, 0, 0)
	return append(b, l3...)
}

// null builds a BSD loopback frame with the family in the given order.
func null(order byteOrder, family uint32, l3 []byte) []byte {
	return append(order.AppendUint32(nil, family), l3...)
}

// testPkt is one record for the capture builders.
type testPkt struct {
	ts   int64 // ns
	data []byte
	wire int // 0: len(data)
}

func (p testPkt) wireLen() int {
	if p.wire > 0 {
		return p.wire
	}
	return len(p.data)
}

// pcapFile builds a classic pcap file.
func pcapFile(order byteOrder, nano bool, linkType uint32, snap uint32, pkts []testPkt) []byte {
	var b bytes.Buffer
	magic := uint32(magicPcapMicro)
	if nano {
		magic = magicPcapNano
	}
	w := func(v any) { binary.Write(&b, order, v) }
	w(magic)
	w(uint16(2))
	w(uint16(4))
	w(int32(0))
	w(uint32(0))
	w(snap)
	w(linkType)
	for _, p := range pkts {
		w(uint32(p.ts / 1e9))
		if nano {
			w(uint32(p.ts % 1e9))
		} else {
			w(uint32(p.ts % 1e9 / 1000))
		}
		w(uint32(len(p.data)))
		w(uint32(p.wireLen()))
		b.Write(p.data)
	}
	return b.Bytes()
}

// ngBuilder builds pcapng files block by block.
type ngBuilder struct {
	b     bytes.Buffer
	order byteOrder
}

func pad4(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// block appends a block of type typ with the given body.
func (n *ngBuilder) block(typ uint32, body []byte) *ngBuilder {
	body = pad4(body)
	l := uint32(12 + len(body))
	var h [8]byte
	n.order.PutUint32(h[0:], typ)
	n.order.PutUint32(h[4:], l)
	n.b.Write(h[:])
	n.b.Write(body)
	n.order.PutUint32(h[0:], l)
	n.b.Write(h[:4])
	return n
}

// option encodes one option.
func (n *ngBuilder) option(code uint16, v []byte) []byte {
	b := n.order.AppendUint16(nil, code)
	b = n.order.AppendUint16(b, uint16(len(v)))
	return pad4(append(b, v...))
}

func (n *ngBuilder) shb() *ngBuilder {
	body := n.order.AppendUint32(nil, magicNgByteOrder)
	body = n.order.AppendUint16(body, 1)
	body = n.order.AppendUint16(body, 0)
	body = n.order.AppendUint64(body, ^uint64(0))
	return n.block(ngBlockSHB, body)
}

// idb appends an interface; tsresol < 0 omits the option.
func (n *ngBuilder) idb(linkType uint16, snap uint32, name string, tsresol int, tsoffset int64) *ngBuilder {
	body := n.order.AppendUint16(nil, linkType)
	body = n.order.AppendUint16(body, 0)
	body = n.order.AppendUint32(body, snap)
	if name != "" {
		body = append(body, n.option(ngOptIfName, []byte(name))...)
	}
	if tsresol >= 0 {
		body = append(body, n.option(ngOptIfTSResol, []byte{byte(tsresol)})...)
	}
	if tsoffset != 0 {
		body = append(body, n.option(ngOptIfTSOffset, n.order.AppendUint64(nil, uint64(tsoffset)))...)
	}
	body = append(body, 0, 0, 0, 0) // opt_endofopt
	return n.block(ngBlockIDB, body)
}

// epb appends an Enhanced Packet Block with a raw timestamp in the
// interface's units.
func (n *ngBuilder) epb(iface uint32, ts uint64, data []byte, wire int) *ngBuilder {
	body := n.order.AppendUint32(nil, iface)
	body = n.order.AppendUint32(body, uint32(ts>>32))
	body = n.order.AppendUint32(body, uint32(ts))
	body = n.order.AppendUint32(body, uint32(len(data)))
	body = n.order.AppendUint32(body, uint32(wire))
	body = pad4(append(body, data...))
	body = append(body, n.option(ngOptComment, []byte("a comment"))...)
	body = append(body, 0, 0, 0, 0)
	return n.block(ngBlockEPB, body)
}

// spb appends a Simple Packet Block.
func (n *ngBuilder) spb(data []byte, wire int) *ngBuilder {
	body := n.order.AppendUint32(nil, uint32(wire))
	return n.block(ngBlockSPB, append(body, data...))
}

// pb appends an obsolete Packet Block.
func (n *ngBuilder) pb(iface uint16, ts uint64, data []byte, wire int) *ngBuilder {
	body := n.order.AppendUint16(nil, iface)
	body = n.order.AppendUint16(body, 0)
	body = n.order.AppendUint32(body, uint32(ts>>32))
	body = n.order.AppendUint32(body, uint32(ts))
	body = n.order.AppendUint32(body, uint32(len(data)))
	body = n.order.AppendUint32(body, uint32(wire))
	return n.block(ngBlockPB, append(body, data...))
}

func (n *ngBuilder) bytes() []byte { return n.b.Bytes() }

// sampleTCP4 is an Ethernet IPv4 TCP frame used where any valid frame will do.
func sampleTCP4(seq uint32, payload string) []byte {
	return eth(etherTypeIPv4, ipv4(v4{src: "10.0.0.1", dst: "10.0.0.2", ttl: 64, id: uint16(seq), df: true, proto: ProtoTCP},
		tcpSeg(40000, 80, seq, 1, FlagACK|FlagPSH, 512, nil, []byte(payload))))
}

// readAll reads every record of data and returns copies, the non-fatal
// errors and the final error (io.EOF on a clean end).
func readAll(t testing.TB, data []byte) (recs []Record, soft []error, final error) {
	t.Helper()
	r, err := NewReader(bytes.NewReader(data), "test")
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	for {
		var rec Record
		err := r.ReadRecord(&rec)
		if err != nil {
			if IsFatal(err) || err.Error() == "EOF" {
				return recs, soft, err
			}
			soft = append(soft, err)
			continue
		}
		rec.Data = bytes.Clone(rec.Data)
		recs = append(recs, rec)
	}
}

// byteOrder is binary.LittleEndian or binary.BigEndian.
type byteOrder interface {
	binary.ByteOrder
	binary.AppendByteOrder
}
