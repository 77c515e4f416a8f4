package flows

import "encoding/binary"

// dnsHeader is the part of a DNS message header flows uses.
type dnsHeader struct {
	id       uint16
	response bool
}

// parseDNSHeader reads a DNS header from b and checks that it is plausible
// (RFC 1035 section 4.1.1): 12 bytes, a standard opcode and a small
// question count.
func parseDNSHeader(b []byte) (dnsHeader, bool) {
	if len(b) < 12 {
		return dnsHeader{}, false
	}
	flags := binary.BigEndian.Uint16(b[2:])
	opcode := (flags >> 11) & 0xf
	qd := binary.BigEndian.Uint16(b[4:])
	if opcode > 6 || qd > 8 {
		return dnsHeader{}, false
	}
	return dnsHeader{id: binary.BigEndian.Uint16(b), response: flags&0x8000 != 0}, true
}
