package nat

import (
	"cmp"
	"encoding/binary"
	"net/netip"

	"github.com/wirepath/wirepath/pcapio"
)

// endpoint is an address and port packed for map keys: IPv4 addresses are
// stored IPv4-mapped, and a connKey says which family it is.
type endpoint struct {
	ip   [16]byte
	port uint16
}

func (e endpoint) cmp(f endpoint) int {
	if c := cmp.Compare(binary.BigEndian.Uint64(e.ip[:8]), binary.BigEndian.Uint64(f.ip[:8])); c != 0 {
		return c
	}
	if c := cmp.Compare(binary.BigEndian.Uint64(e.ip[8:]), binary.BigEndian.Uint64(f.ip[8:])); c != 0 {
		return c
	}
	return cmp.Compare(e.port, f.port)
}

func (e endpoint) addr(v6 bool) netip.Addr {
	a := netip.AddrFrom16(e.ip)
	if !v6 {
		a = a.Unmap()
	}
	return a
}

func (e endpoint) addrPort(v6 bool) netip.AddrPort {
	return netip.AddrPortFrom(e.addr(v6), e.port)
}

// connKey names one connection seen under one name: its two endpoints in
// ascending order (the slots 0 and 1), the transport and the IP family.
// Both directions of a connection have the same connKey.
type connKey struct {
	ep    [2]endpoint
	proto uint8
	v6    bool
}

// same reports whether k and o are one key: == on connKey, compared a
// word at a time (== calls memequal on the 38 bytes).
func (k *connKey) same(o *connKey) bool {
	le := binary.LittleEndian
	a, b := &k.ep, &o.ep
	return le.Uint64(a[0].ip[8:]) == le.Uint64(b[0].ip[8:]) && le.Uint64(a[1].ip[8:]) == le.Uint64(b[1].ip[8:]) &&
		a[0].port == b[0].port && a[1].port == b[1].port &&
		le.Uint64(a[0].ip[:8]) == le.Uint64(b[0].ip[:8]) && le.Uint64(a[1].ip[:8]) == le.Uint64(b[1].ip[:8]) &&
		k.proto == o.proto && k.v6 == o.v6
}

func (k connKey) cmp(o connKey) int {
	if c := cmp.Compare(k.proto, o.proto); c != 0 {
		return c
	}
	if k.v6 != o.v6 {
		if k.v6 {
			return 1
		}
		return -1
	}
	if c := k.ep[0].cmp(o.ep[0]); c != 0 {
		return c
	}
	return k.ep[1].cmp(o.ep[1])
}

// connOf returns the connection key of p and the slot of its source.
func connOf(p *pcapio.Packet) (connKey, uint8) {
	src := endpoint{p.Src.As16(), p.SrcPort}
	dst := endpoint{p.Dst.As16(), p.DstPort}
	k := connKey{proto: p.Proto, v6: p.IPVersion == 6}
	if dst.cmp(src) < 0 {
		k.ep = [2]endpoint{dst, src}
		return k, 1
	}
	k.ep = [2]endpoint{src, dst}
	return k, 0
}

// translatable reports whether a packet can have crossed a NAT: multicast,
// broadcast, link-local and unspecified addresses never are translated, nor
// is IPv6 neighbour discovery and multicast listener signalling, and their
// bodies repeat across hosts.
func translatable(p *pcapio.Packet) bool {
	if !translatableAddr(p.Src) || !translatableAddr(p.Dst) {
		return false
	}
	if p.Proto == pcapio.ProtoICMPv6 && len(p.Payload) > 0 {
		switch p.Payload[0] {
		case 130, 131, 132, 143, // multicast listener query, report, done, v2 report
			133, 134, 135, 136, 137: // router and neighbour discovery, redirect
			return false
		}
	}
	return true
}

// translatableAddr reports whether a can be a translated address: not
// invalid, unspecified, multicast, link-local, loopback or the IPv4
// broadcast. IPv4 is decided from its octets (every observed packet asks,
// twice).
func translatableAddr(a netip.Addr) bool {
	if a.Is4() {
		b := a.As4()
		switch {
		case b == [4]byte{} || b == [4]byte{255, 255, 255, 255}: // unspecified, broadcast
			return false
		case b[0] == 127 || b[0]&0xf0 == 0xe0 || b[0] == 169 && b[1] == 254: // loopback, multicast, link-local
			return false
		}
		return true
	}
	return a.IsValid() && !a.IsUnspecified() && !a.IsMulticast() &&
		!a.IsLinkLocalUnicast() && !a.IsLinkLocalMulticast() && !a.IsLoopback()
}

// mix64 is the splitmix64 finaliser, used to sign sets of capture points.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// observed summarises a packet's observations: a signature of the set of
// capture points (sniffer and interface) that saw it, independent of their
// order, and the range of TTLs they saw.
func observed(obs []pcapio.Observation) (sig uint64, ttlMin, ttlMax uint8) {
	ttlMin = 255
	for i := range obs {
		o := &obs[i]
		sig += mix64(uint64(o.Sniffer)<<16 | uint64(o.Interface) | 1<<40)
		ttlMin = min(ttlMin, o.TTL)
		ttlMax = max(ttlMax, o.TTL)
	}
	return sig, ttlMin, ttlMax
}
