package pcapio

import "strconv"

// Link types (pcap LINKTYPE_ values) this package decodes. The DLT_RAW
// values 12 and 14 appear in old files written on BSDs; they mean raw IP
// like LinkTypeRaw.
const (
	LinkTypeNull     = 0   // BSD loopback: 4-byte address family in the capturing host's byte order
	LinkTypeEthernet = 1   // Ethernet II / 802.3, with any number of 802.1Q/802.1ad tags
	LinkTypeRawDLT12 = 12  // raw IPv4 or IPv6 (DLT_RAW on most BSDs)
	LinkTypeRawDLT14 = 14  // raw IPv4 or IPv6 (DLT_RAW on OpenBSD)
	LinkTypeRaw      = 101 // raw IPv4 or IPv6, version from the first nibble
	LinkTypeLoop     = 108 // OpenBSD loopback: address family in network byte order
	LinkTypeLinuxSLL = 113 // Linux cooked capture v1 (tcpdump -i any before libpcap 1.10)
	LinkTypeIPv4     = 228 // raw IPv4
	LinkTypeIPv6     = 229 // raw IPv6
	LinkTypeSLL2     = 276 // Linux cooked capture v2 (tcpdump -i any)
)

// LinkTypeSupported reports whether Decode understands frames of link type lt.
func LinkTypeSupported(lt uint16) bool {
	switch lt {
	case LinkTypeNull, LinkTypeEthernet, LinkTypeRawDLT12, LinkTypeRawDLT14, LinkTypeRaw,
		LinkTypeLoop, LinkTypeLinuxSLL, LinkTypeIPv4, LinkTypeIPv6, LinkTypeSLL2:
		return true
	}
	return false
}

// LinkTypeName returns the conventional name of a link type, as tcpdump
// and Wireshark print it, or its number.
func LinkTypeName(lt uint16) string {
	switch lt {
	case LinkTypeNull:
		return "NULL"
	case LinkTypeEthernet:
		return "EN10MB"
	case LinkTypeRawDLT12, LinkTypeRawDLT14, LinkTypeRaw:
		return "RAW"
	case LinkTypeLoop:
		return "LOOP"
	case LinkTypeLinuxSLL:
		return "LINUX_SLL"
	case LinkTypeIPv4:
		return "IPV4"
	case LinkTypeIPv6:
		return "IPV6"
	case LinkTypeSLL2:
		return "LINUX_SLL2"
	}
	return "LINKTYPE_" + strconv.Itoa(int(lt))
}
