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
