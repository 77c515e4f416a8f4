package nat

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wirepath/wirepath/pcapio"
)

// row is the part of a Mapping the tests pin down exactly.
type row struct {
	proto     string
	kind      string
	outside   string
	inside    string
	direction string
	conns     int
}

func (r row) String() string {
	return fmt.Sprintf("%s %s %s <-> %s %s conns=%d", r.proto, r.kind, r.outside, r.inside, r.direction, r.conns)
}

func rowsOf(ms []Mapping) []row {
	var rs []row
	for i := range ms {
		m := &ms[i]
		rs = append(rs, row{ProtoName(m.Proto), m.Kind.String(), m.OutsideString(), m.InsideString(), m.Direction, m.Conns})
	}
	return rs
}

func sortRows(rs []row) []row {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b row) int { return strings.Compare(a.String(), b.String()) })
	return rs
}

func checkRows(t *testing.T, got []Mapping, want []row) {
	t.Helper()
	g, w := sortRows(rowsOf(got)), sortRows(want)
	if !slices.Equal(g, w) {
		var b strings.Builder
		b.WriteString("mapping table differs\n--- got\n")
		for _, r := range g {
			b.WriteString(r.String() + "\n")
		}
		b.WriteString("--- want\n")
		for _, r := range w {
			b.WriteString(r.String() + "\n")
		}
		t.Error(b.String())
	}
}

// checkStats asserts the accounting identities every run must satisfy.
func checkStats(t *testing.T, tb *Table) {
	t.Helper()
	s := tb.Stats
	if s.Packets != s.NotIP+s.Fragments+s.NotTranslatable+s.Observed {
		t.Errorf("packets %d != skipped %d+%d+%d + observed %d", s.Packets, s.NotIP, s.Fragments, s.NotTranslatable, s.Observed)
	}
	if s.Candidates != s.Matches+s.RejectedAmbiguous+s.RejectedSameCapture+s.RejectedFamily+s.RejectedTTLGap {
		t.Errorf("candidates %d != matches %d + rejected %d+%d+%d+%d", s.Candidates, s.Matches, s.RejectedAmbiguous, s.RejectedSameCapture, s.RejectedFamily, s.RejectedTTLGap)
	}
	if s.LinksApplied+s.LinksConflicted > s.Links || s.Links > s.Matches {
		t.Errorf("links %d: applied %d + conflicted %d, from %d matches", s.Links, s.LinksApplied, s.LinksConflicted, s.Matches)
	}
	if s.LinksApplied > 0 && len(tb.Mappings) == 0 || len(tb.Mappings) > 0 && s.LinksApplied == 0 {
		t.Errorf("%d links applied for %d mappings", s.LinksApplied, len(tb.Mappings))
	}
	if int(s.Mappings) != len(tb.Mappings) || int(s.Rejected) != len(tb.Rejected) {
		t.Errorf("mapping counters %d/%d, table has %d/%d", s.Mappings, s.Rejected, len(tb.Mappings), len(tb.Rejected))
	}
	opts := DefaultOptions()
	for _, m := range tb.Mappings {
		if m.Reason != "" || m.DataMatches < opts.MinData || m.Evidence < opts.MinEvidence || m.Score < opts.MinScore {
			t.Errorf("accepted mapping below the thresholds: %+v", m)
		}
	}
	for _, m := range append(slices.Clone(tb.Mappings), tb.Rejected...) {
		if m.Score < 0 || m.Score > 1 || m.Agreement < 0 || m.Agreement > 1 || m.Coverage < 0 || m.Coverage > 1 {
			t.Errorf("figure out of [0,1]: %+v", m)
		}
		if m.FirstNS > m.LastNS || m.Matches < m.DataMatches || m.Conns < 1 {
			t.Errorf("inconsistent mapping: %+v", m)
		}
		if m.Reason == "" && slices.Contains(tb.Rejected, m) {
			t.Errorf("rejected mapping without a reason: %+v", m)
		}
	}
}

// checkCanonical applies the table to pkts and checks every packet against
// its ground-truth canonical tuple.
func checkCanonical(t *testing.T, tb *Table, pkts []pcapio.Packet, truth []tuple) {
	t.Helper()
	c := NewCanonicalizer(tb)
	wrong := 0
	for i := range pkts {
		p := pkts[i].Clone()
		payload, seq := string(p.Payload), p.Seq
		c.Rewrite(p)
		got := tuple{p.Proto, netip.AddrPortFrom(p.Src, p.SrcPort), netip.AddrPortFrom(p.Dst, p.DstPort)}
		if got != truth[i] {
			if wrong++; wrong <= 5 {
				t.Errorf("packet %d: canonical %v -> %v, want %v -> %v", i, got.src, got.dst, truth[i].src, truth[i].dst)
			}
		}
		if string(p.Payload) != payload || p.Seq != seq {
			t.Errorf("packet %d: rewrite changed more than the names", i)
		}
	}
	if wrong > 5 {
		t.Errorf("%d packets in all have the wrong canonical names", wrong)
	}
	st := c.Stats()
	if st.Packets != st.Rewritten+st.Canonical+st.Untouched+st.Fragments {
		t.Errorf("apply stats do not add up: %+v", st)
	}
	if st.Rewritten != tb.Stats.PacketsToRewrite {
		t.Errorf("rewrote %d packets, learning predicted %d", st.Rewritten, tb.Stats.PacketsToRewrite)
	}
}

// lbScenario is many clients behind a DNAT load balancer, a UDP service
// behind it, the real servers' outbound traffic masqueraded, and traffic
// that crosses no translation.
func lbScenario(seed uint64, clients int, v6 bool) (*sim, []row) {
	s := newSim(seed)
	addr := func(v4, v6s string) string {
		if v6 {
			return v6s
		}
		return v4
	}
	vip := ap(addr("192.0.2.100:80", "[2001:db8::100]:80"))
	vipUDP := ap(addr("192.0.2.100:53", "[2001:db8::100]:53"))
	reals := []netip.AddrPort{
		ap(addr("10.1.0.11:8080", "[fd00::11]:8080")),
		ap(addr("10.1.0.12:8080", "[fd00::12]:8080")),
		ap(addr("10.1.0.13:8080", "[fd00::13]:8080")),
	}
	natOut := netip.MustParseAddr(addr("192.0.2.1", "2001:db8::1"))
	ext := ap(addr("203.0.113.50:443", "[2001:db8:ff::50]:443"))
	other := ap(addr("198.51.100.200:22", "[2001:db8:aa::200]:22"))

	perReal := make([]int, len(reals))
	next := 0
	ts := int64(1_700_000_000) * 1e9
	udpConns := 0
	for i := 0; i < clients; i++ {
		var cip netip.Addr
		if v6 {
			cip = netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 0xaa, 15: byte(i + 1)})
		} else {
			cip = netip.AddrFrom4([4]byte{198, 51, 100, byte(i + 1)})
		}
		n := 1 + i%3
		for j := 0; j < n; j++ {
			cp := netip.AddrPortFrom(cip, uint16(32768+s.rng.IntN(28000)))
			r := reals[next%len(reals)]
			perReal[next%len(reals)]++
			next++
			c := conn{proto: pcapio.ProtoTCP, client: cp, serverOut: vip, clientOut: cp, server: r}
			start := ts + int64(s.rng.IntN(50_000_000))
			s.tcpConn(&c, start, 100+s.rng.IntN(300), 1+s.rng.IntN(3))
		}
		if i%4 == 0 {
			cp := netip.AddrPortFrom(cip, uint16(32768+s.rng.IntN(28000)))
			c := conn{proto: pcapio.ProtoUDP, client: cp, serverOut: vipUDP, clientOut: cp, server: ap(addr("10.1.0.11:5353", "[fd00::11]:5353"))}
			s.udpExchange(&c, ts+int64(s.rng.IntN(50_000_000)), 3)
			udpConns++
		}
		if i%5 == 0 {
			// Not translated: seen by both sniffers under one name.
			c := conn{proto: pcapio.ProtoTCP, client: netip.AddrPortFrom(cip, 40000), serverOut: other, clientOut: netip.AddrPortFrom(cip, 40000), server: other}
			s.tcpConn(&c, ts+int64(s.rng.IntN(50_000_000)), 50, 1)
		}
		ts += 30_000_000
	}
	// Outbound from the real servers, masqueraded; every other one keeps
	// its port.
	outConns := make([]int, len(reals))
	kept := 0
	for i := 0; i < 2*len(reals); i++ {
		r := reals[i%len(reals)]
		sp := netip.AddrPortFrom(r.Addr(), uint16(40000+i))
		op := sp.Port()
		if i%2 == 1 {
			op = uint16(60000 + i)
		} else {
			kept++
		}
		// The real server is the client here: its real name is on the
		// inside (server-side of the box is the outside world).
		c := conn{proto: pcapio.ProtoTCP, client: sp, serverOut: ext, clientOut: netip.AddrPortFrom(natOut, op), server: ext}
		s.tcpConn(&c, ts+int64(i)*5_000_000, 200, 2)
		outConns[i%len(reals)]++
	}

	want := []row{}
	for i, r := range reals {
		want = append(want, row{"tcp", "dnat", vip.String(), r.String(), "outside->inside", perReal[i]})
	}
	want = append(want, row{"udp", "dnat", vipUDP.String(), ap(addr("10.1.0.11:5353", "[fd00::11]:5353")).String(), "outside->inside", udpConns})
	for i, r := range reals {
		want = append(want, row{"tcp", "snat", endpointString(netip.AddrPortFrom(natOut, 0), true), endpointString(netip.AddrPortFrom(r.Addr(), 0), true), "inside->outside", outConns[i]})
	}
	return s, want
}

func TestLoadBalancerManyClients(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		t.Run(fmt.Sprintf("v6=%v", v6), func(t *testing.T) {
			s, want := lbScenario(1, 60, v6)
			pkts, truth := s.sorted()
			tb := learn(pkts, DefaultOptions())
			checkRows(t, tb.Mappings, want)
			checkStats(t, tb)
			if len(tb.Rejected) != 0 {
				t.Errorf("unexpected rejected candidates: %v", rowsOf(tb.Rejected))
			}
			for _, m := range tb.Mappings {
				if m.DecidedBy != "ttl" || m.Agreement != 1 || m.Score < 0.9 {
					t.Errorf("%v: decided by %q, agreement %.2f, score %.2f", rowsOf([]Mapping{m}), m.DecidedBy, m.Agreement, m.Score)
				}
			}
			checkCanonical(t, tb, pkts, truth)
		})
	}
}

// TestDirectionByTime: a NAT that does not decrement the TTL (a bridge)
// leaves only timestamps to order the copies, even when what clock
// correction left of the offset between the two sniffers (skew) is far
// larger than the NAT's 40 µs delay, either way.
func TestDirectionByTime(t *testing.T) {
	for _, skew := range []int64{0, 3e6, -3e6} {
		t.Run(fmt.Sprintf("skew=%dus", skew/1000), func(t *testing.T) {
			s := newSim(2)
			s.noDecrement = true
			s.skewS = skew
			vip, real := ap("192.0.2.100:80"), ap("10.1.0.11:8080")
			ts := int64(1e18)
			for i := 0; i < 4; i++ {
				cp := ap(fmt.Sprintf("198.51.100.%d:%d", i+1, 50000+i))
				c := conn{proto: pcapio.ProtoTCP, client: cp, serverOut: vip, clientOut: cp, server: real}
				ts = s.tcpConn(&c, ts, 300, 3)
			}
			pkts, truth := s.sorted()
			tb := learn(pkts, DefaultOptions())
			checkRows(t, tb.Mappings, []row{{"tcp", "dnat", vip.String(), real.String(), "outside->inside", 4}})
			if len(tb.Mappings) == 1 && (tb.Mappings[0].DecidedBy != "time" || tb.Mappings[0].Agreement != 1) {
				t.Errorf("decided by %q with agreement %.2f, want time and 1", tb.Mappings[0].DecidedBy, tb.Mappings[0].Agreement)
			}
			checkStats(t, tb)
			checkCanonical(t, tb, pkts, truth)
		})
	}
}

// TestOneArm: one sniffer sees both sides of a one-arm load balancer; the
// TTL drop tells the two copies apart.
func TestOneArm(t *testing.T) {
	s := newSim(3)
	s.snifferS = s.snifferC
	vip, real := ap("192.0.2.100:443"), ap("192.0.2.21:8443")
	ts := int64(1e18)
	for i := 0; i < 3; i++ {
		cp := ap(fmt.Sprintf("198.51.100.%d:%d", i+1, 50000+i))
		c := conn{proto: pcapio.ProtoTCP, client: cp, serverOut: vip, clientOut: cp, server: real}
		ts = s.tcpConn(&c, ts, 300, 2)
	}
	pkts, truth := s.sorted()
	tb := learn(pkts, DefaultOptions())
	checkRows(t, tb.Mappings, []row{{"tcp", "dnat", vip.String(), real.String(), "outside->inside", 3}})
	checkStats(t, tb)
	checkCanonical(t, tb, pkts, truth)
}

// TestFullNAT: the load balancer rewrites both ends (DNAT to the real
// server, SNAT to its own inside address).
func TestFullNAT(t *testing.T) {
	s := newSim(4)
	vip, real := ap("192.0.2.100:81"), ap("10.1.0.13:8080")
	lb := netip.MustParseAddr("10.1.0.1")
	ts := int64(1e18)
	for i := 0; i < 3; i++ {
		cp := ap(fmt.Sprintf("198.51.100.7:%d", 50000+i))
		c := conn{proto: pcapio.ProtoTCP, client: cp, serverOut: vip, clientOut: netip.AddrPortFrom(lb, uint16(30000+i)), server: real}
		ts = s.tcpConn(&c, ts, 300, 2)
	}
	pkts, truth := s.sorted()
	tb := learn(pkts, DefaultOptions())
	checkRows(t, tb.Mappings, []row{
		{"tcp", "dnat", vip.String(), real.String(), "outside->inside", 3},
		{"tcp", "snat", "10.1.0.1:*", "198.51.100.7:*", "inside->outside", 3},
	})
	checkStats(t, tb)
	checkCanonical(t, tb, pkts, truth)
}

// TestPortOnly: a port forward that keeps the address.
func TestPortOnly(t *testing.T) {
	s := newSim(5)
	out, in := ap("10.1.0.12:8888"), ap("10.1.0.12:8080")
	ts := int64(1e18)
	for i := 0; i < 2; i++ {
		cp := ap(fmt.Sprintf("192.0.2.11:%d", 50000+i))
		c := conn{proto: pcapio.ProtoTCP, client: cp, serverOut: out, clientOut: cp, server: in}
		ts = s.tcpConn(&c, ts, 300, 2)
	}
	pkts, truth := s.sorted()
	tb := learn(pkts, DefaultOptions())
	checkRows(t, tb.Mappings, []row{{"tcp", "port", out.String(), in.String(), "outside->inside", 2}})
	checkStats(t, tb)
	checkCanonical(t, tb, pkts, truth)
}

// TestPortReuse: a client reuses its port for a second connection that the
// load balancer sends to another real server; each connection is renamed
// to its own server.
func TestPortReuse(t *testing.T) {
	s := newSim(6)
	vip := ap("192.0.2.100:80")
	r1, r2 := ap("10.1.0.11:8080"), ap("10.1.0.12:8080")
	cp := ap("198.51.100.9:45000")
	ts := int64(1e18)
	c1 := conn{proto: pcapio.ProtoTCP, client: cp, serverOut: vip, clientOut: cp, server: r1}
	ts = s.tcpConn(&c1, ts, 300, 2)
	c2 := conn{proto: pcapio.ProtoTCP, client: cp, serverOut: vip, clientOut: cp, server: r2}
	s.tcpConn(&c2, ts+int64(10e9), 300, 2)
	pkts, truth := s.sorted()
	tb := learn(pkts, DefaultOptions())
	checkRows(t, tb.Mappings, []row{
		{"tcp", "dnat", vip.String(), r1.String(), "outside->inside", 1},
		{"tcp", "dnat", vip.String(), r2.String(), "outside->inside", 1},
	})
	checkStats(t, tb)
	checkCanonical(t, tb, pkts, truth)
}

// TestRetransmissionsThroughNAT: repeated bodies of a real translation
// count nothing but do not hurt the mapping.
func TestRetransmissionsThroughNAT(t *testing.T) {
	s := newSim(7)
	vip, real := ap("192.0.2.100:80"), ap("10.1.0.11:8080")
	ts := int64(1e18)
	for i := 0; i < 3; i++ {
		cp := ap(fmt.Sprintf("198.51.100.%d:%d", i+1, 50000+i))
		c := conn{proto: pcapio.ProtoTCP, client: cp, serverOut: vip, clientOut: cp, server: real}
		ts = s.tcpConn(&c, ts, 300, 2)
	}
	// Send every other packet again 100 ms later, on both sides (a
	// retransmission with the same IP ID, as an IP-ID-0 stack sends it).
	// The packets were emitted in pairs: before and after the NAT.
	n := len(s.pkts)
	for i := 0; i+1 < n; i += 4 {
		for _, j := range []int{i, i + 1} {
			p := s.pkts[j]
			p.Obs = []pcapio.Observation{p.Obs[0]}
			p.Obs[0].TS += 100e6
			p.Obs[0].Corrected += 100e6
			s.pkts = append(s.pkts, p)
			s.truth = append(s.truth, s.truth[j])
		}
	}
	pkts, truth := s.sorted()
	tb := learn(pkts, DefaultOptions())
	checkRows(t, tb.Mappings, []row{{"tcp", "dnat", vip.String(), real.String(), "outside->inside", 3}})
	if tb.Stats.RepeatedBodies == 0 {
		t.Error("no repeated bodies counted")
	}
	checkStats(t, tb)
	checkCanonical(t, tb, pkts, truth)
}

// TestStatusesAndFragments: what cannot be matched is skipped and counted.
func TestSkippedPackets(t *testing.T) {
	sg := seg{proto: pcapio.ProtoUDP, src: ap("10.0.0.1:53"), dst: ap("10.0.0.2:53"), payload: []byte("x")}
	ok := mkPacket(&sg, sight{ttl: 64, ts: 1})
	nonIP := ok
	nonIP.Status = pcapio.StatusNonIP
	frag := ok
	frag.MoreFragments = true
	mc := ok
	mc.Dst = netip.MustParseAddr("224.0.0.251")
	ll := ok
	ll.Src, ll.Dst = netip.MustParseAddr("fe80::1"), netip.MustParseAddr("fe80::2")
	noObs := ok
	noObs.Obs = nil
	pkts := []pcapio.Packet{ok, nonIP, frag, mc, ll, noObs}
	tb := learn(pkts, DefaultOptions())
	s := tb.Stats
	if s.Packets != 6 || s.Observed != 1 || s.NotIP != 2 || s.Fragments != 1 || s.NotTranslatable != 2 {
		t.Errorf("stats %+v", s)
	}
	checkStats(t, tb)
}

// TestAnsweredTimeout: views of lookups answered one for one (a query and
// its answer, each lookup on a port of its own, one a second) end after
// AnsweredTimeout, so a minute of them does not hold a minute of views;
// with a negative AnsweredTimeout they live IdleTimeout, as does a flow
// asked twice and answered once.
func TestAnsweredTimeout(t *testing.T) {
	lookups := func(answers int) []pcapio.Packet {
		var pkts []pcapio.Packet
		srv := ap("10.0.0.53:53")
		for i := range 60 {
			cli := ap(fmt.Sprintf("10.0.1.1:%d", 20000+i))
			ts := int64(1e18) + int64(i)*1e9
			q := seg{proto: pcapio.ProtoUDP, src: cli, dst: srv, payload: fmt.Appendf(nil, "query %d", i)}
			pkts = append(pkts, mkPacket(&q, sight{ttl: 64, ts: ts}), mkPacket(&q, sight{ttl: 64, ts: ts + 1e6}))
			pkts[len(pkts)-1].Payload = fmt.Appendf(nil, "again %d", i)
			for range answers {
				a := seg{proto: pcapio.ProtoUDP, src: srv, dst: cli, payload: fmt.Appendf(nil, "answer %d", i)}
				pkts = append(pkts, mkPacket(&a, sight{ttl: 64, ts: ts + 2e6}))
			}
		}
		return pkts
	}
	for _, tt := range []struct {
		name     string
		answers  int
		answered time.Duration
		maxPeak  int
	}{
		{"answered", 2, 0, 8},
		{"answered, no shorter timeout", 2, -1, 60},
		{"asked twice, answered once", 1, 0, 60},
	} {
		o := DefaultOptions()
		o.AnsweredTimeout = tt.answered
		l := NewLearner(o)
		for _, p := range lookups(tt.answers) {
			l.Observe(&p)
		}
		if peak := l.Finish().Stats.PeakConnections; peak > tt.maxPeak || tt.maxPeak == 60 && peak != 60 {
			t.Errorf("%s: %d connections at once, want at most %d", tt.name, peak, tt.maxPeak)
		}
	}
}
