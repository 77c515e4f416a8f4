package nat

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/wirepath/wirepath/pcapio"
	"github.com/wirepath/wirepath/trace"
)

func TestTTLOrder(t *testing.T) {
	cases := []struct {
		name                   string
		aMin, aMax, bMin, bMax uint8
		want                   int
	}{
		{"apart", 64, 64, 63, 63, 1},
		{"apart reversed", 62, 63, 64, 64, -1},
		{"equal", 64, 64, 64, 64, 0},
		{"one end shared (bridge netfilter)", 64, 64, 63, 64, 1},
		{"one end shared, other side", 63, 64, 64, 64, -1},
		{"nested ranges", 62, 65, 63, 64, 0},
		{"overlapping, a higher", 63, 65, 62, 64, 1},
	}
	for _, tc := range cases {
		a := &copyRec{ttlMin: tc.aMin, ttlMax: tc.aMax}
		b := &copyRec{ttlMin: tc.bMin, ttlMax: tc.bMax}
		if got := ttlOrder(a, b); got != tc.want {
			t.Errorf("%s: ttlOrder = %d, want %d", tc.name, got, tc.want)
		}
		if got := ttlOrder(b, a); got != -tc.want {
			t.Errorf("%s: ttlOrder reversed = %d, want %d", tc.name, got, -tc.want)
		}
	}
}

func TestAliasesAndLookup(t *testing.T) {
	s := newSim(41)
	vip, real := ap("192.0.2.100:80"), ap("10.1.0.11:8080")
	cp := ap("198.51.100.1:50000")
	c := conn{proto: pcapio.ProtoTCP, client: cp, serverOut: vip, clientOut: cp, server: real}
	start := int64(1e18)
	end := s.tcpConn(&c, start, 300, 3)
	c2 := conn{proto: pcapio.ProtoTCP, client: ap("198.51.100.2:50001"), serverOut: vip, clientOut: ap("198.51.100.2:50001"), server: real}
	s.tcpConn(&c2, end, 300, 3)
	pkts, _ := s.sorted()
	tb := learn(pkts, DefaultOptions())

	al := tb.Aliases()
	want := trace.Alias{Outside: "192.0.2.100:80", Inside: "10.1.0.11:8080", Kind: "dnat", Direction: "outside->inside"}
	if len(al) != 1 || al[0].Outside != want.Outside || al[0].Inside != want.Inside || al[0].Kind != want.Kind ||
		al[0].Direction != want.Direction || al[0].Matches != tb.Mappings[0].Matches || al[0].Score != tb.Mappings[0].Score ||
		al[0].FirstNS == 0 || al[0].LastNS < al[0].FirstNS {
		t.Fatalf("aliases %+v", al)
	}

	cases := []struct {
		name             string
		src, dst         netip.AddrPort
		ts               int64
		wantSrc, wantDst netip.AddrPort
		ok               bool
	}{
		{"request, outside name", cp, vip, start + 1e6, cp, real, true},
		{"reply, outside name", vip, cp, start + 1e6, real, cp, true},
		{"inside name is already canonical", cp, real, start + 1e6, cp, real, true},
		{"long after the connection", cp, vip, end + 1e12, cp, vip, false},
		{"another client", ap("198.51.100.9:1"), vip, start + 1e6, ap("198.51.100.9:1"), vip, false},
	}
	for _, tc := range cases {
		gs, gd, ok := tb.Lookup(pcapio.ProtoTCP, tc.src, tc.dst, tc.ts)
		if gs != tc.wantSrc || gd != tc.wantDst || ok != tc.ok {
			t.Errorf("%s: Lookup = %v %v %v, want %v %v %v", tc.name, gs, gd, ok, tc.wantSrc, tc.wantDst, tc.ok)
		}
	}
	if _, _, ok := tb.Lookup(pcapio.ProtoUDP, cp, vip, start+1e6); ok {
		t.Error("Lookup matched another protocol")
	}

	// A fragment is left for flows to reassemble.
	frag := pkts[0].Clone()
	frag.MoreFragments = true
	cz := NewCanonicalizer(tb)
	if cz.Rewrite(frag) || cz.Stats().Fragments != 1 {
		t.Errorf("fragment rewritten or not counted: %+v", cz.Stats())
	}
}

// TestICMPEchoThroughMasquerade: pings are matched too (the echo
// identifier a NAT may change is not in the body key), the echo request
// says who opened the exchange, and the names have no ports.
func TestICMPEchoThroughMasquerade(t *testing.T) {
	s := newSim(42)
	in, ext := netip.AddrPortFrom(netip.MustParseAddr("10.1.0.13"), 0), netip.AddrPortFrom(netip.MustParseAddr("192.0.2.50"), 0)
	c := conn{proto: pcapio.ProtoICMP, client: in, serverOut: ext, clientOut: netip.AddrPortFrom(netip.MustParseAddr("192.0.2.1"), 0), server: ext}
	ts := int64(1e18)
	for i := 0; i < 5; i++ {
		ts += 1e9
		echo := append([]byte{8, 0, 0, 0, 0x12, 0x34, 0, byte(i)}, s.payload(56)...)
		s.send(&c, true, ts, 0, 0, 0, echo)
		reply := append([]byte{0}, echo[1:]...)
		s.send(&c, false, ts+300_000, 0, 0, 0, reply)
	}
	pkts, truth := s.sorted()
	tb := learn(pkts, DefaultOptions())
	checkRows(t, tb.Mappings, []row{{"icmp", "snat", "192.0.2.1", "10.1.0.13", "inside->outside", 1}})
	checkStats(t, tb)
	checkCanonical(t, tb, pkts, truth)
}

// TestClockOffsetFromTranslations: the copies of translated packets relate
// the clocks of the sniffers on either side, which share no untranslated
// packet for pcapio to estimate from.
func TestClockOffsetFromTranslations(t *testing.T) {
	for _, skew := range []int64{0, 3e6, -7e6} {
		s := newSim(43)
		s.skewS = skew
		vip, real := ap("192.0.2.100:80"), ap("10.1.0.11:8080")
		ts := int64(1e18)
		for i := 0; i < 3; i++ {
			cp := ap(fmt.Sprintf("198.51.100.%d:%d", i+1, 50000+i))
			c := conn{proto: pcapio.ProtoTCP, client: cp, serverOut: vip, clientOut: cp, server: real}
			ts = s.tcpConn(&c, ts, 300, 2)
		}
		pkts, _ := s.sorted()
		tb := learn(pkts, DefaultOptions())
		want := ClockOffset{A: 0, B: 1, Known: true, Offset: skew, Uncertainty: s.delay,
			MinAB: s.delay + skew, MinBA: s.delay - skew, SamplesAB: 3 * 6, SamplesBA: 3 * 5} // per connection 6 packets from the client, 5 from the server
		if len(tb.Clocks) != 1 || tb.Clocks[0] != want {
			t.Errorf("skew %d: clocks %+v, want %+v", skew, tb.Clocks, want)
		}
	}
}
