package pcapio

import (
	"encoding/binary"

	farm "github.com/dgryski/go-farm"
)

// KeyPayloadBytes is how many leading payload bytes WireKey and BodyKey
// cover. The headers (IP ID, lengths, TCP sequence numbers and options)
// already make a packet's key nearly unique; covering only a prefix of the
// payload keeps the keys equal between sniffers whose snapshot lengths
// differ, as long as each captured at least this many payload bytes.
const KeyPayloadBytes = 64

// keyBufLen holds the largest key input: IPv4 with 40 bytes of options or
// IPv6 with a full extension chain, TCP with 40 bytes of options, and the
// payload prefix.
const keyBufLen = 256

// keyScratch is where the key inputs are assembled. It lives with the
// Packet, not on the stack, because farm's assembly Fingerprint64 is not
// marked noescape and a stack buffer passed to it would be moved to the
// heap on every call.
type keyScratch struct {
	w, b  [keyBufLen]byte
	other [16]byte
}

// keys computes WireKey and BodyKey of a decoded IP packet (d.transport
// has run). What each covers is the contract documented on Packet and in
// docs/pcapio.md; change it only with a note there.
func (d *decoder) keys() {
	p := d.p
	ip := d.ip
	seg := ip[d.ipHdr:]
	w := append(p.keyBuf.w[:0], 'W', p.IPVersion, p.Proto)
	b := append(p.keyBuf.b[:0], 'B', p.Proto)
	if p.IPVersion == 4 {
		// Not covered: version/IHL (implied), TOS (ECN and DSCP may be
		// rewritten on the path), TTL, header checksum.
		w = append(w, ip[2:8]...)        // total length, ID, flags and fragment offset
		w = append(w, ip[12:20]...)      // source and destination
		w = append(w, ip[20:d.ipHdr]...) // options
		b = append(b, ip[4:8]...)        // ID, flags and fragment offset
		b = append(b, ip[20:d.ipHdr]...) // options
	} else {
		// Not covered: traffic class, hop limit, the contents of
		// extension headers other than the fragment header (hop-by-hop
		// and routing headers change on the way).
		w = append(w, ip[1]&0x0f, ip[2], ip[3]) // flow label
		w = append(w, ip[4:6]...)               // payload length
		w = append(w, ip[8:40]...)              // source and destination
		w = append(w, d.exts[:d.nExts]...)
		b = append(b, d.exts[:d.nExts]...)
		if p.IsFragment() || hasFragHeader(d.exts[:d.nExts]) {
			w = binary.BigEndian.AppendUint32(w, p.IPID)
			w = binary.BigEndian.AppendUint16(w, p.FragOffset)
			b = binary.BigEndian.AppendUint32(b, p.IPID)
			b = binary.BigEndian.AppendUint16(b, p.FragOffset)
			if p.MoreFragments {
				w = append(w, 1)
				b = append(b, 1)
			}
		}
	}
	b = binary.BigEndian.AppendUint16(b, uint16(d.ipLen-d.ipHdr)) // transport length
	switch {
	case d.l4Hdr == 0:
	case p.Proto == ProtoTCP:
		// Not covered: the checksum (offloaded: a sender's own capture
		// shows a partial one). The body key drops the ports too.
		w = append(w, seg[0:16]...)       // ports, seq, ack, offset and flags, window
		w = append(w, seg[18:d.l4Hdr]...) // urgent pointer, options
		b = append(b, seg[4:16]...)
		b = append(b, seg[18:d.l4Hdr]...)
	case p.Proto == ProtoUDP:
		w = append(w, seg[0:6]...) // ports, length
		b = append(b, seg[4:6]...)
	}
	pl := p.Payload[:min(len(p.Payload), KeyPayloadBytes)]
	w = append(w, pl...)
	n := len(b)
	b = append(b, pl...)
	if (p.Proto == ProtoICMP || p.Proto == ProtoICMPv6) && p.FragOffset == 0 && len(pl) >= 6 {
		// NAT rewrites the echo identifier and so the checksum.
		clear(b[n+2 : n+6])
	}
	p.WireKey = farm.Fingerprint64(w)
	p.BodyKey = farm.Fingerprint64(b)
}

func hasFragHeader(exts []uint8) bool {
	for _, e := range exts {
		if e == ipv6Fragment {
			return true
		}
	}
	return false
}

// otherKey gives a packet that is not decoded IP a wire key over its
// bytes, so that copies of one ARP frame or one malformed frame seen by
// several sniffers are still grouped. tag separates the kinds.
func (d *decoder) otherKey(tag byte, data []byte) {
	k := append(d.p.keyBuf.other[:0], tag)
	k = binary.BigEndian.AppendUint16(k, d.etype)
	if tag == 'U' {
		k = binary.BigEndian.AppendUint16(k, d.p.LinkType)
	}
	k = binary.BigEndian.AppendUint64(k, farm.Fingerprint64(data))
	d.p.WireKey = farm.Fingerprint64(k)
	d.p.BodyKey = 0
}
