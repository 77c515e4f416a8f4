// Package connkey is the connection key of the stages that group packets
// into connections: a packed value type, comparable with == and cheap to
// hash as a map key, in the manner of Tailscale's flowtrack.Tuple. Both
// directions of a connection have the same Key.
package connkey

import (
	"cmp"
	"encoding/binary"
	"net/netip"
)

// Key names a TCP connection or UDP flow by its two endpoints in
// canonical order (the lower address, then the lower port, first), its
// transport protocol and its IP family. It holds the addresses as 16
// bytes each, so that it has no pointers and no padding: the map hashes
// it as plain memory. The zero Key names no connection.
type Key struct {
	a, b   [16]byte
	pa, pb uint16
	proto  uint8
	v6     bool
}

// Of returns the key of a packet from src:sport to dst:dport and its
// direction: 0 when it travels from the key's first endpoint to its
// second, 1 otherwise. src and dst must be of one family and carry no
// zone (as decoded from a packet's IP header).
func Of(src, dst netip.Addr, sport, dport uint16, proto uint8) (Key, int) {
	s, d := src.As16(), dst.As16()
	k := Key{proto: proto, v6: src.Is6()}
	if c := compare16(&s, &d); c < 0 || c == 0 && sport <= dport {
		k.a, k.b, k.pa, k.pb = s, d, sport, dport
		return k, 0
	}
	k.a, k.b, k.pa, k.pb = d, s, dport, sport
	return k, 1
}

// compare16 orders two addresses as big-endian 128-bit numbers, as
// netip.Addr.Compare orders addresses of one family.
func compare16(a, b *[16]byte) int {
	x, y := binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(b[:8])
	if x == y {
		x, y = binary.BigEndian.Uint64(a[8:]), binary.BigEndian.Uint64(b[8:])
	}
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// addr returns b as an address of the key's family.
func (k Key) addr(b [16]byte) netip.Addr {
	a := netip.AddrFrom16(b)
	if !k.v6 {
		a = a.Unmap()
	}
	return a
}

// Endpoint returns endpoint i (0 or 1) of the key.
func (k Key) Endpoint(i int) netip.AddrPort {
	if i == 0 {
		return netip.AddrPortFrom(k.addr(k.a), k.pa)
	}
	return netip.AddrPortFrom(k.addr(k.b), k.pb)
}

// Port returns the port of endpoint i (0 or 1).
func (k Key) Port(i int) uint16 {
	if i == 0 {
		return k.pa
	}
	return k.pb
}

// Proto returns the transport protocol number.
func (k Key) Proto() uint8 { return k.proto }

// Is6 reports whether the connection is over IPv6.
func (k Key) Is6() bool { return k.v6 }

// Compare orders keys by protocol, family (IPv4 first), then the
// endpoints in order.
func (k Key) Compare(o Key) int {
	if c := cmp.Compare(k.proto, o.proto); c != 0 {
		return c
	}
	if k.v6 != o.v6 {
		if k.v6 {
			return 1
		}
		return -1
	}
	if c := compare16(&k.a, &o.a); c != 0 {
		return c
	}
	if c := cmp.Compare(k.pa, o.pa); c != 0 {
		return c
	}
	if c := compare16(&k.b, &o.b); c != 0 {
		return c
	}
	return cmp.Compare(k.pb, o.pb)
}
