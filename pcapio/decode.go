package pcapio

import (
	"encoding/binary"
	"net/netip"
)

// EtherTypes the link decoders recognise.
const (
	etherTypeIPv4   = 0x0800
	etherTypeIPv6   = 0x86dd
	etherTypeVLAN   = 0x8100 // 802.1Q
	etherTypeQinQ   = 0x88a8 // 802.1ad service tag
	etherTypeQinQ91 = 0x9100 // pre-standard QinQ
	etherTypeQinQ92 = 0x9200
)

// Address families of BSD loopback headers.
const (
	afInet       = 2
	afInet6Linux = 10
	afInet6BSD   = 24 // NetBSD, OpenBSD, BSD/OS
	afInet6Free  = 28 // FreeBSD, DragonFly
	afInet6Darw  = 30 // macOS
)

// maxVLANTags bounds the tag stack walked in one frame.
const maxVLANTags = 8

// maxExtHeaders bounds the IPv6 extension headers walked in one packet, so
// that hostile chains cost little.
const maxExtHeaders = 16

// IPv6 extension header numbers.
const (
	ipv6HopByHop = 0
	ipv6Routing  = 43
	ipv6Fragment = 44
	ipv6AH       = 51
	ipv6NoNext   = 59
	ipv6DestOpts = 60
	ipv6Mobility = 135
	ipv6HIP      = 139
	ipv6Shim6    = 140
	ipv6Exp1     = 253
	ipv6Exp2     = 254
)

var be = binary.BigEndian

// Decode decodes frame, a captured frame of the given link type whose
// length on the wire was wireLen, into p. It resets every field of p,
// makes p.Frame alias frame and p.Payload alias a part of it, and leaves
// exactly one Observation in p.Obs holding the TTL (the caller fills in
// the sniffer and the timestamps). Decode never fails: a frame that is not
// IP gets StatusNonIP, one that is malformed or cut inside its headers
// gets StatusUndecodable (with Truncated set when the capture cut it); the
// fields decoded before the problem stay set. Every packet gets a WireKey;
// only StatusOK packets get a BodyKey. Decode does not allocate once p has
// been decoded into before (it keeps a scratch buffer for the keys).
func Decode(p *Packet, linkType uint16, frame []byte, wireLen int) {
	obs, buf, kb := p.Obs[:0], p.buf, p.keyBuf
	if kb == nil {
		kb = new(keyScratch)
	}
	*p = Packet{Obs: obs, LinkType: linkType, Frame: frame, WireLen: max(wireLen, len(frame)), buf: buf, keyBuf: kb}
	var d decoder
	d.p = p
	d.decode()
	p.Obs = append(p.Obs, Observation{TTL: d.ttl})
}

// decoder holds the state of one Decode call.
type decoder struct {
	p       *Packet
	ttl     uint8
	linkLen int // bytes of link-layer header (and tags) before l3
	etype   uint16
	ip      []byte // captured IP header and payload, cut to the IP length
	ipHdr   int    // length of the IP header including IPv6 extension headers
	ipLen   int    // IP packet length from the headers (>= len(ip) when cut)
	exts    [maxExtHeaders]uint8
	nExts   int
	l4Hdr   int // transport header length (0 when not decoded)
}

func (d *decoder) decode() {
	if !d.link() {
		return
	}
	switch d.etype {
	case etherTypeIPv4:
		d.ipv4()
	case etherTypeIPv6:
		d.ipv6()
	default:
		d.nonIP()
	}
}

// link decodes the link-layer header: it sets d.linkLen and d.etype, or
// sets the packet's status and reports false.
func (d *decoder) link() bool {
	switch d.p.LinkType {
	case LinkTypeEthernet:
		return d.ethernet()
	case LinkTypeLinuxSLL, LinkTypeSLL2:
		return d.cooked()
	case LinkTypeRaw, LinkTypeRawDLT12, LinkTypeRawDLT14:
		return d.rawIP()
	case LinkTypeIPv4:
		d.etype = etherTypeIPv4
		return true
	case LinkTypeIPv6:
		d.etype = etherTypeIPv6
		return true
	case LinkTypeNull, LinkTypeLoop:
		return d.loopback()
	}
	d.undecodable(false)
	return false
}

// ethernet decodes an Ethernet II header, or 802.3 with LLC and SNAP, and
// any VLAN tags.
func (d *decoder) ethernet() bool {
	f := d.p.Frame
	if len(f) < 14 {
		d.undecodable(len(f) < d.p.WireLen)
		return false
	}
	d.linkLen = 14
	d.etype = be.Uint16(f[12:14])
	if d.etype < 0x0600 { // 802.3 length: LLC, maybe SNAP
		if len(f) < 22 || f[14] != 0xaa || f[15] != 0xaa || f[16] != 0x03 {
			d.nonIP()
			return false
		}
		d.etype = be.Uint16(f[20:22])
		d.linkLen = 22
	}
	return d.tags()
}

// cooked decodes a Linux cooked header: v1 is 16 bytes with the protocol
// last, v2 is 20 bytes with the protocol first.
func (d *decoder) cooked() bool {
	f := d.p.Frame
	hdr, proto := 16, 14
	if d.p.LinkType == LinkTypeSLL2 {
		hdr, proto = 20, 0
	}
	if len(f) < hdr {
		d.undecodable(len(f) < d.p.WireLen)
		return false
	}
	d.linkLen = hdr
	d.etype = be.Uint16(f[proto : proto+2])
	return d.tags()
}

// rawIP takes the IP version from the first nibble of a raw IP frame.
func (d *decoder) rawIP() bool {
	f := d.p.Frame
	if len(f) < 1 {
		d.undecodable(len(f) < d.p.WireLen)
		return false
	}
	switch f[0] >> 4 {
	case 4:
		d.etype = etherTypeIPv4
	case 6:
		d.etype = etherTypeIPv6
	default:
		d.undecodable(false)
		return false
	}
	return true
}

// loopback decodes a BSD loopback header's address family: in the
// capturing host's byte order for DLT_NULL, big-endian for DLT_LOOP.
func (d *decoder) loopback() bool {
	f := d.p.Frame
	if len(f) < 4 {
		d.undecodable(len(f) < d.p.WireLen)
		return false
	}
	d.linkLen = 4
	var af uint32
	if d.p.LinkType == LinkTypeLoop {
		af = be.Uint32(f[0:4])
	} else {
		// Host byte order of the capturing machine: a family is a small
		// number, so the order that gives one is the right one.
		af = binary.LittleEndian.Uint32(f[0:4])
		if af > 0xffff {
			af = be.Uint32(f[0:4])
		}
	}
	switch af {
	case afInet:
		d.etype = etherTypeIPv4
	case afInet6Linux, afInet6BSD, afInet6Free, afInet6Darw:
		d.etype = etherTypeIPv6
	default:
		d.nonIP()
		return false
	}
	return true
}

// tags skips 802.1Q and 802.1ad tags (any number, outer first: QinQ keeps
// both), leaving d.etype the inner EtherType. It reports false when the
// frame ended inside the tags.
func (d *decoder) tags() bool {
	f := d.p.Frame
	for i := 0; i < maxVLANTags && isVLAN(d.etype); i++ {
		if len(f) < d.linkLen+4 {
			d.undecodable(len(f) < d.p.WireLen)
			return false
		}
		d.etype = be.Uint16(f[d.linkLen+2 : d.linkLen+4])
		d.linkLen += 4
	}
	if isVLAN(d.etype) {
		d.undecodable(false)
		return false
	}
	return true
}

func isVLAN(et uint16) bool {
	return et == etherTypeVLAN || et == etherTypeQinQ || et == etherTypeQinQ91 || et == etherTypeQinQ92
}

// ipWireLen is the length of the frame from the IP header on, as it was on
// the wire.
func (d *decoder) ipWireLen() int { return d.p.WireLen - d.linkLen }

func (d *decoder) ipv4() {
	p := d.p
	b := p.Frame[d.linkLen:]
	p.IPVersion = 4
	if len(b) < 20 {
		d.undecodable(len(p.Frame) < p.WireLen)
		return
	}
	ihl := int(b[0]&0x0f) * 4
	if b[0]>>4 != 4 || ihl < 20 {
		d.undecodable(false)
		return
	}
	if len(b) < ihl {
		d.undecodable(len(p.Frame) < p.WireLen)
		return
	}
	total := int(be.Uint16(b[2:4]))
	if total == 0 {
		// TCP segmentation offload: the sending host's capture shows the
		// length as 0; the frame length is the truth.
		total = d.ipWireLen()
	}
	if total < ihl {
		d.undecodable(false)
		return
	}
	if w := d.ipWireLen(); total > w && w >= ihl {
		// More than the frame carried on the wire: the header lies (a
		// forged or corrupt length); the captured bytes are the truth.
		p.BadIPLength = true
		total = w
	}
	p.IPID = uint32(be.Uint16(b[4:6]))
	ff := be.Uint16(b[6:8])
	p.DontFragment = ff&0x4000 != 0
	p.MoreFragments = ff&0x2000 != 0
	p.FragOffset = (ff & 0x1fff) << 3
	d.ttl = b[8]
	p.Proto = b[9]
	p.Src = netip.AddrFrom4([4]byte(b[12:16]))
	p.Dst = netip.AddrFrom4([4]byte(b[16:20]))
	d.ip = b[:min(len(b), total)]
	d.ipHdr = ihl
	d.ipLen = total
	d.transport()
}

func (d *decoder) ipv6() {
	p := d.p
	b := p.Frame[d.linkLen:]
	p.IPVersion = 6
	if len(b) < 40 {
		d.undecodable(len(p.Frame) < p.WireLen)
		return
	}
	if b[0]>>4 != 6 {
		d.undecodable(false)
		return
	}
	plen := int(be.Uint16(b[4:6]))
	if plen == 0 {
		plen = d.ipWireLen() - 40 // jumbogram or segmentation offload
	}
	total := 40 + max(plen, 0)
	if w := d.ipWireLen(); total > w && w >= 40 {
		p.BadIPLength = true // as for IPv4
		total = w
	}
	d.ttl = b[7]
	p.Src = netip.AddrFrom16([16]byte(b[8:24]))
	p.Dst = netip.AddrFrom16([16]byte(b[24:40]))
	d.ip = b[:min(len(b), total)]
	d.ipLen = total
	nh := b[6]
	off := 40
	ip := d.ip
walk:
	for {
		switch nh {
		case ipv6HopByHop, ipv6Routing, ipv6DestOpts, ipv6Mobility, ipv6HIP, ipv6Shim6, ipv6Exp1, ipv6Exp2, ipv6AH, ipv6Fragment:
		default:
			break walk
		}
		if d.nExts == maxExtHeaders {
			d.undecodable(false)
			return
		}
		if len(ip) < off+8 { // every extension header is at least 8 bytes
			d.undecodable(len(ip) < total || len(p.Frame) < p.WireLen)
			return
		}
		d.exts[d.nExts] = nh
		d.nExts++
		var n int
		switch nh {
		case ipv6Fragment:
			n = 8
			fo := be.Uint16(ip[off+2 : off+4])
			p.FragOffset = fo &^ 7
			p.MoreFragments = fo&1 != 0
			p.IPID = be.Uint32(ip[off+4 : off+8])
		case ipv6AH:
			n = (int(ip[off+1]) + 2) * 4
		default:
			n = (int(ip[off+1]) + 1) * 8
		}
		nh = ip[off]
		off += n
		if off > total {
			d.undecodable(false)
			return
		}
	}
	if off > len(ip) {
		d.undecodable(true)
		return
	}
	p.Proto = nh
	d.ipHdr = off
	d.transport()
}

// transport decodes TCP or UDP in an IP packet that is not a non-first
// fragment; other protocols and fragments get the IP payload as Payload.
func (d *decoder) transport() {
	p := d.p
	seg := d.ip[d.ipHdr:]
	segLen := d.ipLen - d.ipHdr
	cut := len(d.ip) < d.ipLen
	p.Status = StatusOK
	if p.FragOffset == 0 {
		switch p.Proto {
		case ProtoTCP:
			if segLen < 20 {
				d.undecodable(false)
				return
			}
			if len(seg) < 20 {
				d.undecodable(cut)
				return
			}
			doff := int(seg[12]>>4) * 4
			if doff < 20 || doff > segLen {
				d.undecodable(false)
				return
			}
			if len(seg) < doff {
				d.undecodable(cut)
				return
			}
			p.SrcPort = be.Uint16(seg[0:2])
			p.DstPort = be.Uint16(seg[2:4])
			p.Seq = be.Uint32(seg[4:8])
			p.Ack = be.Uint32(seg[8:12])
			p.TCPFlags = seg[13]
			p.Window = be.Uint16(seg[14:16])
			p.TCPOpts = ParseTCPOptions(seg[20:doff])
			d.l4Hdr = doff
		case ProtoUDP:
			if segLen < 8 {
				d.undecodable(false)
				return
			}
			if len(seg) < 8 {
				d.undecodable(cut)
				return
			}
			p.SrcPort = be.Uint16(seg[0:2])
			p.DstPort = be.Uint16(seg[2:4])
			d.l4Hdr = 8
			if ul := int(be.Uint16(seg[4:6])); ul >= 8 && ul < segLen {
				// The datagram is shorter than what IP carried: the rest
				// is padding, or the IP length lies (BadIPLength). UDP's
				// own length says where the datagram ends.
				segLen, seg = ul, seg[:min(len(seg), ul)]
			}
		}
	}
	p.Payload = seg[d.l4Hdr:]
	p.PayloadLen = segLen - d.l4Hdr
	p.Truncated = len(p.Payload) < p.PayloadLen
	d.keys()
}

func (d *decoder) undecodable(truncated bool) {
	d.p.Status = StatusUndecodable
	d.p.Truncated = truncated
	d.p.Payload = nil
	d.p.PayloadLen = 0
	d.otherKey('U', d.p.Frame)
}

func (d *decoder) nonIP() {
	d.p.Status = StatusNonIP
	d.otherKey('N', d.p.Frame[min(d.linkLen, len(d.p.Frame)):])
}
