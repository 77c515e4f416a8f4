package nat

import (
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/wirepath/wirepath/pcapio"
)

// The captures under testdata/nat were made by testdata/nat/make.sh with a
// real iptables NAT between network namespaces; the comments there give the
// topology and the traffic. These are the translations it configured, with
// the connections the traffic opened through each.
var realNATTable = []row{
	{"tcp", "dnat", "192.0.2.100:80", "10.1.0.11:8080", "outside->inside", 2},
	{"tcp", "dnat", "192.0.2.100:80", "10.1.0.12:8080", "outside->inside", 2},
	{"tcp", "dnat", "192.0.2.100:80", "10.1.0.13:8080", "outside->inside", 2},
	{"tcp", "dnat", "192.0.2.100:81", "10.1.0.13:8080", "outside->inside", 2},
	{"tcp", "snat", "10.1.0.1:*", "192.0.2.12:*", "inside->outside", 2},
	{"tcp", "dnat", "[2001:db8:1::100]:80", "[fd00:1::11]:8080", "outside->inside", 1},
	{"tcp", "dnat", "[2001:db8:1::100]:80", "[fd00:1::12]:8080", "outside->inside", 1},
	{"tcp", "snat", "192.0.2.1:*", "10.1.0.12:*", "inside->outside", 2},
	{"tcp", "snat", "[2001:db8:1::1]:*", "[fd00:1::13]:*", "inside->outside", 1},
	{"tcp", "port", "10.1.0.12:8888", "10.1.0.12:8080", "outside->inside", 2},
	{"udp", "dnat", "192.0.2.100:53", "10.1.0.11:5353", "outside->inside", 1},
	{"udp", "snat", "192.0.2.1:*", "10.1.0.13:*", "inside->outside", 1},
}

// outsideOnly are names that exist only outside a translation: after
// canonicalisation no packet of a translated connection may carry them.
var outsideOnly = []netip.AddrPort{
	ap("192.0.2.100:80"), ap("192.0.2.100:81"), ap("192.0.2.100:53"), ap("10.1.0.12:8888"),
	ap("[2001:db8:1::100]:80"),
}

func readCaptures(t *testing.T, dir string) []pcapio.Packet {
	t.Helper()
	return readCapturesIn(t, filepath.Join("..", "testdata", "nat", dir))
}

func readCapturesIn(t *testing.T, dir string) []pcapio.Packet {
	t.Helper()
	var paths []string
	for _, f := range []string{"outside.pcap", "inside.pcap", "c1.pcapng", "s1.pcap"} {
		paths = append(paths, filepath.Join(dir, f))
	}
	m, err := pcapio.Open(paths, pcapio.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var pkts []pcapio.Packet
	for {
		p, err := m.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		pkts = append(pkts, *p.Clone())
	}
	if probs := m.Problems(); len(probs) > 0 {
		t.Fatalf("problems reading the captures: %v", probs)
	}
	return pkts
}

func TestRealNAT(t *testing.T) {
	pkts := readCaptures(t, "")
	tb := learn(pkts, DefaultOptions())
	checkRows(t, tb.Mappings, realNATTable)
	checkStats(t, tb)
	if len(tb.Rejected) != 0 {
		t.Errorf("rejected candidates: %v", rowsOf(tb.Rejected))
	}
	for _, m := range tb.Mappings {
		// Every packet of every translated connection was seen on both
		// sides, and a routing NAT always decrements the TTL.
		if m.Coverage != 1 || m.Agreement != 1 || m.DecidedBy != "ttl" {
			t.Errorf("%s -> %s: coverage %.2f agreement %.2f decided by %s", m.OutsideString(), m.InsideString(), m.Coverage, m.Agreement, m.DecidedBy)
		}
		if m.Matches != 10*m.Conns {
			t.Errorf("%s -> %s: %d matches for %d connections of 10 packets", m.OutsideString(), m.InsideString(), m.Matches, m.Conns)
		}
	}
	checkRealCanonical(t, tb, pkts)
	checkOneClock(t, tb)
}

// checkOneClock: all namespaces share the kernel's clock, so whatever the
// translated packets say about the sniffers' clocks must include 0, within
// a millisecond.
func checkOneClock(t *testing.T, tb *Table) {
	t.Helper()
	known := 0
	for _, c := range tb.Clocks {
		if !c.Known {
			continue
		}
		known++
		if c.Offset > c.Uncertainty || -c.Offset > c.Uncertainty || c.Uncertainty > 1e6 {
			t.Errorf("sniffers %d and %d: offset %d ns ± %d, want 0 within 1 ms", c.A, c.B, c.Offset, c.Uncertainty)
		}
	}
	if known == 0 {
		t.Error("no clock offset from the translated packets")
	}
}

// checkRealCanonical applies the table: no packet may keep an outside-only
// name, and the copies of one body must now share one 4-tuple (the
// contract with flows).
func checkRealCanonical(t *testing.T, tb *Table, pkts []pcapio.Packet) {
	t.Helper()
	c := NewCanonicalizer(tb)
	byBody := map[uint64]tuple{}
	for i := range pkts {
		p := pkts[i].Clone()
		c.Rewrite(p)
		if p.Status != pcapio.StatusOK || (p.Proto != pcapio.ProtoTCP && p.Proto != pcapio.ProtoUDP) {
			continue
		}
		src, dst := netip.AddrPortFrom(p.Src, p.SrcPort), netip.AddrPortFrom(p.Dst, p.DstPort)
		for _, o := range outsideOnly {
			if src == o || dst == o {
				t.Errorf("packet %d still carries the outside name %v: %v -> %v", i, o, src, dst)
			}
		}
		tp := tuple{p.Proto, src, dst}
		if prev, ok := byBody[p.BodyKey]; ok && prev != tp {
			t.Errorf("packet %d: copies of one body carry %v -> %v and %v -> %v", i, prev.src, prev.dst, src, dst)
		}
		byBody[p.BodyKey] = tp
	}
	if st := c.Stats(); st.Rewritten != tb.Stats.PacketsToRewrite || st.Rewritten == 0 {
		t.Errorf("rewrote %d packets, learning predicted %d", st.Rewritten, tb.Stats.PacketsToRewrite)
	}
}

// TestRealNATBridgeNetfilter reads the captures made with bridge
// netfilter on (make.sh BRNF=1): the sniffer on the outside bridge recorded
// client->VIP packets already translated, so for the client without a
// sniffer of its own (c2) the pre-translation copy of those packets exists
// nowhere. Every mapping found must still be a true one, and the IPv4 load
// balancer must still be found.
func TestRealNATBridgeNetfilter(t *testing.T) {
	pkts := readCaptures(t, "brnf")
	tb := learn(pkts, DefaultOptions())
	checkStats(t, tb)
	truth := map[row]bool{}
	for _, r := range realNATTable {
		r.conns = 0
		truth[r] = true
	}
	found := map[row]bool{}
	for _, r := range rowsOf(tb.Mappings) {
		r.conns = 0
		if !truth[r] {
			t.Errorf("false mapping %v", r)
		}
		found[r] = true
	}
	for _, r := range realNATTable[:4] {
		r.conns = 0
		if !found[r] {
			t.Errorf("missing %v", r)
		}
	}
	c := NewCanonicalizer(tb)
	for i := range pkts {
		c.Rewrite(pkts[i].Clone())
	}
	if st := c.Stats(); st.Rewritten != tb.Stats.PacketsToRewrite {
		t.Errorf("rewrote %d packets, learning predicted %d", st.Rewritten, tb.Stats.PacketsToRewrite)
	}
}

// TestFreshRealNAT runs testdata/nat/make.sh on this machine (root, network
// namespaces, iptables, tcpdump, dumpcap, curl; CI installs them with make
// deps) and checks the table of its fresh captures, so that the committed
// ones stay reproducible and the kernel at hand behaves as the test
// expects.
func TestFreshRealNAT(t *testing.T) {
	if testing.Short() {
		t.Skip("builds network namespaces and runs real traffic")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces")
	}
	for _, tool := range []string{"ip", "iptables", "ip6tables", "tcpdump", "dumpcap", "curl", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (make deps installs it)", tool)
		}
	}
	probe := fmt.Sprintf("wpn-probe-%d", os.Getpid())
	if b, err := exec.Command("ip", "netns", "add", probe).CombinedOutput(); err != nil {
		t.Skipf("this machine does not let us create network namespaces: %v: %s", err, b)
	}
	if b, err := exec.Command("ip", "netns", "del", probe).CombinedOutput(); err != nil {
		t.Fatalf("removing the probe namespace %s: %v: %s", probe, err, b)
	}
	out := t.TempDir()
	cmd := exec.Command("bash", filepath.Join("..", "testdata", "nat", "make.sh"))
	cmd.Env = append(os.Environ(), "OUT="+out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make.sh: %v\n%s", err, b)
	}
	pkts := readCapturesIn(t, out)
	tb := learn(pkts, DefaultOptions())
	checkRows(t, tb.Mappings, realNATTable)
	checkStats(t, tb)
	for _, m := range tb.Mappings {
		if m.Coverage < 0.9 || m.Agreement != 1 || m.DecidedBy != "ttl" {
			t.Errorf("%s -> %s: coverage %.2f agreement %.2f decided by %s", m.OutsideString(), m.InsideString(), m.Coverage, m.Agreement, m.DecidedBy)
		}
	}
	checkRealCanonical(t, tb, pkts)
	checkOneClock(t, tb)
}
