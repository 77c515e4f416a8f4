// Package connkey is the connection key of the stages that group packets
// into connections: a comparable value, usable with == and as a map key,
// with both directions of a connection under the same Key, in the manner
// of Tailscale's flowtrack.Tuple.
//
// Unlike flowtrack.Tuple it keeps the addresses as netip.Addr values
// rather than 16-byte arrays: turning a packet's addresses into their
// 16-byte form costs more per packet (measured: about 14 ns against 10 ns
// for the whole key here) than hashing the shorter key saves in the map
// (about 1.5 ns).
package connkey

import (
	"cmp"
	"net/netip"
)

// Key names a TCP connection or UDP flow by its two endpoints in
// canonical order (the lower address, then the lower port, first) and its
// transport protocol. The zero Key names no connection.
type Key struct {
	a, b   netip.Addr
	pa, pb uint16
	proto  uint8
}

// Of returns the key of a packet from src:sport to dst:dport and its
// direction: 0 when it travels from the key's first endpoint to its
// second, 1 otherwise.
func Of(src, dst netip.Addr, sport, dport uint16, proto uint8) (Key, int) {
	c := src.Compare(dst)
	if c < 0 || (c == 0 && sport <= dport) {
		return Key{a: src, b: dst, pa: sport, pb: dport, proto: proto}, 0
	}
	return Key{a: dst, b: src, pa: dport, pb: sport, proto: proto}, 1
}

// Endpoint returns endpoint i (0 or 1) of the key.
func (k Key) Endpoint(i int) netip.AddrPort {
	if i == 0 {
		return netip.AddrPortFrom(k.a, k.pa)
	}
	return netip.AddrPortFrom(k.b, k.pb)
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
func (k Key) Is6() bool { return k.a.Is6() }

// Compare orders keys by protocol, then the endpoints in order (IPv4
// before IPv6, as netip orders addresses).
func (k Key) Compare(o Key) int {
	return cmp.Or(
		cmp.Compare(k.proto, o.proto),
		k.a.Compare(o.a), cmp.Compare(k.pa, o.pa),
		k.b.Compare(o.b), cmp.Compare(k.pb, o.pb),
	)
}
