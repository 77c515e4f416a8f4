package connkey

import (
	"math/rand/v2"
	"net/netip"
	"testing"
)

// refKey is a plain reference: netip values ordered by
// netip.Addr.Compare, which Of must agree with.
type refKey struct {
	a, b   netip.Addr
	pa, pb uint16
	proto  uint8
}

func refOf(src, dst netip.Addr, sport, dport uint16, proto uint8) (refKey, int) {
	c := src.Compare(dst)
	if c < 0 || (c == 0 && sport <= dport) {
		return refKey{a: src, b: dst, pa: sport, pb: dport, proto: proto}, 0
	}
	return refKey{a: dst, b: src, pa: dport, pb: sport, proto: proto}, 1
}

func randAddr(rng *rand.Rand, v6 bool) netip.Addr {
	if !v6 {
		return netip.AddrFrom4([4]byte{10, 0, byte(rng.IntN(3)), byte(rng.IntN(4))})
	}
	var b [16]byte
	b[0], b[15] = 0xfd, byte(rng.IntN(4))
	if rng.IntN(4) == 0 { // an IPv4-mapped address in an IPv6 packet
		b = netip.AddrFrom4([4]byte{10, 0, 0, byte(rng.IntN(4))}).As16()
	}
	return netip.AddrFrom16(b)
}

// TestAgainstReference checks Of on random packets against the netip
// reference: the same direction, the same endpoints back, both directions
// one key, and equal keys exactly for equal reference keys.
func TestAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	type pair struct {
		k Key
		r refKey
	}
	var seen []pair
	for i := 0; i < 5000; i++ {
		v6 := rng.IntN(2) == 0
		src, dst := randAddr(rng, v6), randAddr(rng, v6)
		sp, dp := uint16(rng.IntN(3)), uint16(rng.IntN(3))
		proto := uint8(6 + 11*rng.IntN(2))
		k, d := Of(src, dst, sp, dp, proto)
		r, rd := refOf(src, dst, sp, dp, proto)
		if d != rd {
			t.Fatalf("%v:%d -> %v:%d: direction %d, reference %d", src, sp, dst, dp, d, rd)
		}
		if k.Endpoint(0) != netip.AddrPortFrom(r.a, r.pa) || k.Endpoint(1) != netip.AddrPortFrom(r.b, r.pb) {
			t.Fatalf("endpoints %v %v, reference %+v", k.Endpoint(0), k.Endpoint(1), r)
		}
		if k.Port(0) != r.pa || k.Port(1) != r.pb || k.Proto() != proto || k.Is6() != v6 {
			t.Fatalf("key %+v, reference %+v", k, r)
		}
		back, bd := Of(dst, src, dp, sp, proto)
		if back != k || (bd == d && (src != dst || sp != dp)) {
			t.Fatalf("the reverse direction has key %+v dir %d, want %+v dir %d", back, bd, k, 1-d)
		}
		for _, p := range seen[max(0, len(seen)-50):] {
			if (p.k == k) != (p.r == r) {
				t.Fatalf("keys %+v and %+v equal %v, references %v", p.k, k, p.k == k, p.r == r)
			}
			if (p.k.Compare(k) == 0) != (p.k == k) || p.k.Compare(k) != -k.Compare(p.k) {
				t.Fatalf("Compare(%+v, %+v) = %d", p.k, k, p.k.Compare(k))
			}
		}
		seen = append(seen, pair{k, r})
	}
}

func TestNoAllocs(t *testing.T) {
	src, dst := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	m := map[Key]int{}
	k, _ := Of(src, dst, 1, 2, 6)
	m[k] = 1
	if n := testing.AllocsPerRun(100, func() {
		k, _ := Of(dst, src, 2, 1, 6)
		_ = m[k]
		_ = k.Endpoint(1)
	}); n != 0 {
		t.Errorf("%v allocations, want 0", n)
	}
}

func BenchmarkMapLookup(b *testing.B) {
	m := map[Key]int{}
	var addrs []netip.Addr
	for i := 0; i < 256; i++ {
		addrs = append(addrs, netip.AddrFrom4([4]byte{10, 0, byte(i >> 4), byte(i)}))
	}
	for i, a := range addrs {
		k, _ := Of(a, addrs[0], uint16(40000+i), 80, 6)
		m[k] = i
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		a := addrs[i&255]
		k, _ := Of(addrs[0], a, 80, uint16(40000+i&255), 6)
		if m[k] != i&255 {
			b.Fatal("lookup missed")
		}
		i++
	}
}
