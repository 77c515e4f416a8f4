package nat

import (
	"net/netip"
	"testing"
)

// TestTranslatableAddr checks the IPv4 octet tests against netip's
// predicates (what translatable asked before) on every first octet with
// interesting second octets, and on IPv6 and invalid addresses.
func TestTranslatableAddr(t *testing.T) {
	slow := func(a netip.Addr) bool {
		return a.IsValid() && !a.IsUnspecified() && !a.IsMulticast() && !a.IsLinkLocalUnicast() &&
			!a.IsLinkLocalMulticast() && !a.IsLoopback() && !(a.Is4() && a.As4() == [4]byte{255, 255, 255, 255})
	}
	addrs := []netip.Addr{{}, netip.MustParseAddr("::"), netip.MustParseAddr("::1"), netip.MustParseAddr("fe80::1"),
		netip.MustParseAddr("ff02::1"), netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("::ffff:127.0.0.1"),
		netip.MustParseAddr("::ffff:10.0.0.1"), netip.MustParseAddr("255.255.255.255"), netip.MustParseAddr("255.255.255.254")}
	for o := range 256 {
		for _, b := range [][3]byte{{0, 0, 0}, {254, 0, 1}, {0, 0, 1}, {255, 255, 255}, {168, 1, 1}} {
			addrs = append(addrs, netip.AddrFrom4([4]byte{byte(o), b[0], b[1], b[2]}))
		}
	}
	for _, a := range addrs {
		if got, want := translatableAddr(a), slow(a); got != want {
			t.Errorf("%v: translatable %v, want %v", a, got, want)
		}
	}
}

// TestConnKeySame: same agrees with == on keys that differ in each
// field alone (each byte of either address, either port, the protocol,
// the family) and on equal keys.
func TestConnKeySame(t *testing.T) {
	base := connKey{ep: [2]endpoint{{port: 1000}, {port: 80}}, proto: 6}
	base.ep[0].ip = netip.MustParseAddr("::ffff:10.0.0.1").As16()
	base.ep[1].ip = netip.MustParseAddr("2001:db8::2").As16()
	keys := []connKey{base}
	for side := range 2 {
		for i := range 16 {
			k := base
			k.ep[side].ip[i] ^= 0x10
			keys = append(keys, k)
		}
		k := base
		k.ep[side].port++
		keys = append(keys, k)
	}
	k := base
	k.proto = 17
	keys = append(keys, k)
	k = base
	k.v6 = true
	keys = append(keys, k)
	for i := range keys {
		for j := range keys {
			if got, want := keys[i].same(&keys[j]), keys[i] == keys[j]; got != want {
				t.Errorf("keys %d and %d: same %v, == %v", i, j, got, want)
			}
		}
	}
}
