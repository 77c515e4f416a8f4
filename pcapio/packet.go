package pcapio

import (
	"net/netip"
	"slices"
)

// SnifferID identifies a capture point: one input file, or one pcapng
// interface when interfaces are treated as sniffers of their own.
type SnifferID uint16

// Observation is one sighting of a wire packet by one sniffer.
type Observation struct {
	// Sniffer is the capture point that saw the packet.
	Sniffer SnifferID
	// Interface is the pcapng interface (0 for classic pcap) it was seen on.
	Interface uint16
	// TTL is the IPv4 TTL or IPv6 hop limit as this sniffer saw it; it
	// differs between capture points on either side of a router.
	TTL uint8
	// TS is the sniffer's own timestamp in nanoseconds since the epoch.
	TS int64
	// Corrected is TS on the reference sniffer's clock (TS minus the
	// sniffer's estimated offset); TS itself when the offset is unknown.
	Corrected int64
}

// TCP flag bits of Packet.TCPFlags.
const (
	FlagFIN = 1 << iota
	FlagSYN
	FlagRST
	FlagPSH
	FlagACK
	FlagURG
	FlagECE
	FlagCWR
)

// IP protocol numbers of Packet.Proto the pipeline cares about.
const (
	ProtoICMP   = 1
	ProtoTCP    = 6
	ProtoUDP    = 17
	ProtoICMPv6 = 58
)

// Status says how far a frame could be decoded.
type Status uint8

// The decode states. Every packet has a WireKey; only StatusOK packets
// have a BodyKey and complete IP and transport fields.
const (
	StatusOK          Status = iota // IPv4/IPv6 decoded (transport fields set for TCP/UDP that are not non-first fragments)
	StatusNonIP                     // a frame that carries no IP (ARP, LLDP, ...): counted, passed through
	StatusUndecodable               // a frame of an unknown link type, or cut or malformed inside its headers: counted, passed through
)

// String returns "ok", "non-ip" or "undecodable".
func (s Status) String() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusNonIP:
		return "non-ip"
	}
	return "undecodable"
}

// Packet is one wire packet with the fields the pipeline needs and every
// observation of it. A Packet returned by a reader's Next is owned by the
// reader and valid until the next call; Clone makes a copy that is not.
type Packet struct {
	// Obs lists every sighting, ordered by Corrected time. Never empty.
	Obs []Observation

	// Status says whether the fields below were decoded.
	Status Status
	// LinkType is the link type of Frame (a pcap LINKTYPE_ value).
	LinkType uint16
	// Frame is the captured frame of the first observation, link layer
	// included, for writing the packet back out.
	Frame []byte
	// WireLen is the frame's length on the wire (may exceed len(Frame)).
	WireLen int

	// IPVersion is 4 or 6.
	IPVersion uint8
	// Src and Dst are the IP addresses.
	Src, Dst netip.Addr
	// Proto is the IP protocol of the transport (after IPv6 extension
	// headers): ProtoTCP, ProtoUDP, ProtoICMP, ...
	Proto uint8
	// IPID is the IPv4 identification, or the IPv6 fragment identification
	// when the packet is a fragment.
	IPID uint32
	// FragOffset is the fragment offset in bytes; MoreFragments is the MF
	// bit. A packet is a fragment when either is set.
	FragOffset    uint16
	MoreFragments bool
	// DontFragment is the IPv4 DF bit.
	DontFragment bool

	// Orig identifies the addresses and ports the packet had on the wire
	// when a later stage renamed them (nat undoing a translation): a hash
	// of the original endpoints, 0 for a packet not renamed. Two copies of
	// one TCP segment at one capture point with different Orig are the
	// two sides of a NAT that capture point sees, not a retransmission.
	Orig uint64

	// SrcPort and DstPort are the TCP or UDP ports.
	SrcPort, DstPort uint16
	// Seq, Ack, TCPFlags and Window are the TCP header fields.
	Seq, Ack uint32
	TCPFlags uint8
	Window   uint16
	// TCPOpts are the TCP options the pipeline reads (maximum segment
	// size, window scale, timestamps), decoded from the header.
	TCPOpts TCPOptions

	// Payload is the captured transport payload (the IP payload for
	// protocols other than TCP and UDP). It may be shorter than PayloadLen
	// when the capture's snaplen cut the frame.
	Payload []byte
	// PayloadLen is the payload length the IP and transport headers give.
	PayloadLen int
	// Truncated is true when the capture's snapshot length cut the
	// packet: Payload is shorter than PayloadLen, or (StatusUndecodable)
	// the headers themselves were cut.
	Truncated bool
	// BadIPLength is true when the IP header claimed more bytes than the
	// frame carried on the wire (a forged or corrupt total or payload
	// length): the lengths were taken from the frame instead.
	BadIPLength bool

	// WireKey fingerprints (go-farm Fingerprint64) the fields that do not
	// change between capture points on one L2/L3 path: IP version,
	// protocol, addresses, IPv4 total length, ID, flags, fragment offset
	// and options, IPv6 flow label, payload length, extension header
	// types and fragment header; the TCP header but its checksum, the UDP
	// ports and length; and the first KeyPayloadBytes of payload. Not
	// covered: link-layer headers, VLAN tags, TOS/traffic class, TTL/hop
	// limit, the IPv4 header checksum and the TCP/UDP checksums (a
	// sender's own capture shows offloaded, unfinished checksums). Frames
	// that are not decoded IP get a key over their bytes instead.
	WireKey uint64
	// BodyKey fingerprints the fields that survive NAT: WireKey's fields
	// without addresses, ports, IP version, total length (the transport
	// length is covered instead), IPv6 flow label and, for ICMP, the
	// checksum and echo identifier. 0 unless Status is StatusOK.
	BodyKey uint64

	// Set by the Merger: own frame storage, record number and input.
	buf    []byte
	num    int64
	stream int32
	keyBuf *keyScratch // Decode's scratch, kept across reuse
}

// TCPOptions are the TCP header options passive round-trip and window
// measurements need (RFC 9293 section 3.1, RFC 7323). Options that are
// absent, malformed or cut off by the snap length are left unset; an
// option list that runs past the header stops there.
type TCPOptions struct {
	// MSS is the maximum segment size option (SYN segments), 0 if absent.
	MSS uint16
	// WScale is the window scale shift (SYN segments); HasWScale says
	// whether the option was present.
	WScale    uint8
	HasWScale bool
	// TSVal and TSEcr are the timestamp option's value and echo reply;
	// HasTS says whether the option was present.
	TSVal, TSEcr uint32
	HasTS        bool
}

// TS returns the packet's corrected time: that of its first observation.
func (p *Packet) TS() int64 { return p.Obs[0].Corrected }

// IsFragment reports whether the packet is an IP fragment.
func (p *Packet) IsFragment() bool { return p.FragOffset != 0 || p.MoreFragments }

// Clone returns a deep copy of p that does not share buffers with it.
func (p *Packet) Clone() *Packet {
	c := *p
	c.buf, c.keyBuf = nil, nil
	c.Obs = slices.Clone(p.Obs)
	c.Frame = slices.Clone(p.Frame)
	if p.Payload != nil {
		// Keep Payload pointing into the cloned frame when it did before.
		if off, ok := subsliceOffset(p.Frame, p.Payload); ok {
			c.Payload = c.Frame[off : off+len(p.Payload)]
		} else {
			c.Payload = slices.Clone(p.Payload)
		}
	}
	return &c
}

// subsliceOffset reports where sub starts within buf, if it lies inside
// it: a slice of buf's array ending at buf's capacity has the capacity
// that says where it starts, and one pointer comparison confirms it.
func subsliceOffset(buf, sub []byte) (int, bool) {
	if len(sub) == 0 || len(buf) == 0 {
		return 0, false
	}
	off := cap(buf) - cap(sub)
	if off < 0 || off+len(sub) > len(buf) || &buf[off] != &sub[0] {
		return 0, false
	}
	return off, true
}

// BufferCap is the capacity of the storage p holds its bytes in (CopyTo's
// copy, or the reader's buffer): what it costs in memory besides the
// Packet and its observations, whatever the frame's length.
func (p *Packet) BufferCap() int { return cap(p.buf) }

// CopySize is how many bytes CopyTo copies: the frame, and the payload
// when it does not lie in the frame (a reassembled datagram).
func (p *Packet) CopySize() int {
	if _, in := subsliceOffset(p.Frame, p.Payload); p.Payload != nil && !in {
		return len(p.Frame) + len(p.Payload)
	}
	return len(p.Frame)
}

// CopyTo makes dst a deep copy of p that shares no buffer with it,
// reusing dst's storage: once dst has held a packet as large, it
// allocates nothing (for holding packets back without a Clone each).
func (p *Packet) CopyTo(dst *Packet) {
	obs, buf, kb := dst.Obs[:0], dst.buf[:0], dst.keyBuf
	*dst = *p
	dst.Obs = append(obs, p.Obs...)
	dst.keyBuf = kb
	off, inFrame := subsliceOffset(p.Frame, p.Payload)
	buf = append(buf, p.Frame...)
	if p.Payload != nil && !inFrame {
		off = len(buf)
		buf = append(buf, p.Payload...)
	}
	dst.buf = buf
	// Frame and Payload keep the capacity to the end of buf, so that
	// the Payload is found inside the Frame again (subsliceOffset).
	dst.Frame = buf[:len(p.Frame)]
	if p.Payload != nil {
		dst.Payload = buf[off : off+len(p.Payload)]
	}
}
