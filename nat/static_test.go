package nat

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/internal/fuzzseed"
	"github.com/wirepath/wirepath/pcapio"
)

const textTable = `# a load balancer's port forward and a masquerading box
tcp 192.0.2.100:80 10.1.0.11:8080
udp 192.0.2.100:53 10.1.0.11:5353   # the DNS server
192.0.2.1:* 10.1.0.12:*
[2001:db8::1]:443 [fd00::1]:8443
icmp 198.51.100.7 10.9.0.7
`

func TestParseTableText(t *testing.T) {
	g, err := ParseTable([]byte(textTable), "t.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Rows) != 5 || len(g.Applied) != 5 || g.Ambiguous != 0 || g.PortUnknown != 0 {
		t.Fatalf("rows %d applied %d ambiguous %d port unknown %d", len(g.Rows), len(g.Applied), g.Ambiguous, g.PortUnknown)
	}
	want := []string{"192.0.2.100:80 10.1.0.11:8080", "192.0.2.100:53 10.1.0.11:5353", "192.0.2.1:* 10.1.0.12:*",
		"[2001:db8::1]:443 [fd00::1]:8443", "198.51.100.7 10.9.0.7"}
	for i, m := range g.Rows {
		if got := m.OutsideString() + " " + m.InsideString(); got != want[i] && !(m.Proto == 0 && got == want[i]) {
			t.Errorf("row %d: %s, want %s", i, got, want[i])
		}
	}
}

func TestParseTableErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in   string
		line       int
		offset     int64
		wantSubstr string
	}{
		{"fields", "tcp 1.2.3.4:80\n", 1, 0, "fields"},
		{"second line", "1.2.3.4:80 5.6.7.8:80\n1.2.3.4:80 nonsense\n", 2, 22, "inside name"},
		{"proto", "\n\nsctp 1.2.3.4:1 5.6.7.8:1\n", 3, 2, "unknown protocol"},
		{"port and any", "1.2.3.4:80 5.6.7.8:*\n", 1, 0, "one name has a port"},
		{"family", "1.2.3.4:80 [::1]:80\n", 1, 0, "families"},
		{"icmp port", "icmp 1.2.3.4:5 5.6.7.8:5\n", 1, 0, "no ports"},
		{"json syntax", "{\n  \"version\": 1,\n  \"mappings\": [ {\"proto\": \"tcp\",, } ]\n}", 3, 50, "invalid character ','"},
		{"json mapping", "{\"version\":1,\n\"mappings\":[\n{\"proto\":\"tcp\",\"kind\":\"dnat\",\"outside\":\"x\",\"inside\":\"10.0.0.1:1\"}]}", 3, 27, "mapping 1: outside name"},
		{"json version", "{\"version\": 2, \"mappings\": []}", 1, 1, "version 2"},
		{"json no mappings", "{\"version\": 1}", 1, 0, "no \"mappings\""},
		{"json truncated", "{\"version\": 1, \"mappings\": [", 1, 28, "unexpected end"},
		{"json kind", "{\"mappings\":[{\"proto\":\"tcp\",\"kind\":\"magic\",\"outside\":\"1.2.3.4:1\",\"inside\":\"10.0.0.1:1\"}]}", 1, 13, "unknown kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTable([]byte(tc.in), "table")
			var te *TableError
			if !errors.As(err, &te) {
				t.Fatalf("error %v is not a *TableError", err)
			}
			if te.File != "table" || te.Line != tc.line || te.Offset != tc.offset || !strings.Contains(err.Error(), tc.wantSubstr) {
				t.Errorf("got %q (line %d, offset %d), want line %d offset %d with %q", err, te.Line, te.Offset, tc.line, tc.offset, tc.wantSubstr)
			}
		})
	}
}

// TestParseTableJSON reads back what `wirepath nat --format json` wrote
// for the real NAT captures: the round-robin DNAT and the masquerading
// to two clients give outside names with several inside names, which only
// learning can tell apart (TCP to 192.0.2.100:80 over IPv4 and IPv6);
// the rest is applied.
func TestParseTableJSON(t *testing.T) {
	path := filepath.Join(fuzzseed.Root(t), "cmd/wirepath/testdata/golden/nat-json.stdout")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := ParseTable(data, path)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Rows) != 12 || len(g.Applied) != 7 || g.Ambiguous != 5 || g.PortUnknown != 0 {
		t.Fatalf("rows %d applied %d ambiguous %d port unknown %d", len(g.Rows), len(g.Applied), g.Ambiguous, g.PortUnknown)
	}
	var applied []string
	for _, m := range g.Applied {
		applied = append(applied, m.OutsideString()+"="+m.InsideString())
	}
	want := "192.0.2.100:81=10.1.0.13:8080 10.1.0.1:*=192.0.2.12:* 192.0.2.1:*=10.1.0.12:* [2001:db8:1::1]:*=[fd00:1::13]:* " +
		"10.1.0.12:8888=10.1.0.12:8080 192.0.2.100:53=10.1.0.11:5353 192.0.2.1:*=10.1.0.13:*"
	if got := strings.Join(applied, " "); got != want {
		t.Errorf("applied %s\nwant    %s", got, want)
	}
	// A masquerading row whose box changed a port cannot say the inside
	// port of that connection.
	js := `{"version":1,"mappings":[{"proto":"tcp","kind":"snat","outside":"192.0.2.1:*","inside":"10.0.0.5:*","conns":3,"ports_kept":2}]}`
	if g, err = ParseTable([]byte(js), "j"); err != nil || g.PortUnknown != 1 || len(g.Applied) != 0 {
		t.Errorf("port unknown: %v, %+v", err, g)
	}
}

func TestGivenRewrite(t *testing.T) {
	g, err := ParseTable([]byte(textTable+"tcp 192.0.2.100:8443 10.1.0.14:443\ntcp 192.0.2.100:8443 10.1.0.15:443\n"), "t")
	if err != nil {
		t.Fatal(err)
	}
	if g.Ambiguous != 2 {
		t.Fatalf("ambiguous %d, want 2", g.Ambiguous)
	}
	ap := netip.MustParseAddrPort
	for _, tc := range []struct {
		proto            uint8
		src, dst         string
		wantSrc, wantDst string
		renamed          bool
	}{
		{pcapio.ProtoTCP, "10.0.0.5:40000", "192.0.2.100:80", "10.0.0.5:40000", "10.1.0.11:8080", true},
		{pcapio.ProtoTCP, "192.0.2.100:80", "10.0.0.5:40000", "10.1.0.11:8080", "10.0.0.5:40000", true},
		{pcapio.ProtoUDP, "192.0.2.100:80", "10.0.0.5:40000", "192.0.2.100:80", "10.0.0.5:40000", false}, // tcp row only
		{pcapio.ProtoUDP, "10.0.0.5:40000", "192.0.2.100:53", "10.0.0.5:40000", "10.1.0.11:5353", true},
		{pcapio.ProtoTCP, "192.0.2.1:50000", "10.1.0.11:8080", "10.1.0.12:50000", "10.1.0.11:8080", true}, // snat, port kept
		{pcapio.ProtoUDP, "192.0.2.1:50000", "10.1.0.11:53", "10.1.0.12:50000", "10.1.0.11:53", true},     // no proto: any
		{pcapio.ProtoTCP, "192.0.2.100:80", "192.0.2.1:50000", "10.1.0.11:8080", "10.1.0.12:50000", true}, // full NAT
		{pcapio.ProtoTCP, "10.0.0.5:1", "192.0.2.100:8443", "10.0.0.5:1", "192.0.2.100:8443", false},      // ambiguous
		{pcapio.ProtoICMP, "10.0.0.5:0", "198.51.100.7:0", "10.0.0.5:0", "10.9.0.7:0", true},
		{pcapio.ProtoTCP, "10.0.0.5:0", "198.51.100.7:80", "10.0.0.5:0", "198.51.100.7:80", false}, // icmp row only
		{pcapio.ProtoTCP, "[::ffff:10.0.0.5]:1", "[::ffff:192.0.2.100]:80", "[::ffff:10.0.0.5]:1", "[::ffff:192.0.2.100]:80", false},
	} {
		tab := NewGivenTable(g)
		c := NewCanonicalizer(tab)
		s := seg{proto: tc.proto, src: ap(tc.src), dst: ap(tc.dst)}
		p := mkPacket(&s, sight{ttl: 64, ts: 1e18})
		got := c.Rewrite(&p)
		gs, gd := netip.AddrPortFrom(p.Src, p.SrcPort).String(), netip.AddrPortFrom(p.Dst, p.DstPort).String()
		if got != tc.renamed || gs != tc.wantSrc || gd != tc.wantDst {
			t.Errorf("%s->%s: renamed %v to %s->%s, want %v %s->%s", tc.src, tc.dst, got, gs, gd, tc.renamed, tc.wantSrc, tc.wantDst)
		}
		st := c.Stats()
		if st.Packets != st.Rewritten+st.Canonical+st.Untouched+st.Fragments || (st.ByTable == 1) != tc.renamed {
			t.Errorf("%s->%s: counters %+v", tc.src, tc.dst, st)
		}
		ls, ld, ok := tab.Lookup(tc.proto, ap(tc.src), ap(tc.dst), 1e18)
		if ok != tc.renamed || ls.String() != tc.wantSrc || ld.String() != tc.wantDst {
			t.Errorf("Lookup %s->%s: %s->%s %v", tc.src, tc.dst, ls, ld, ok)
		}
	}
	tab := NewGivenTable(g)
	if n := len(tab.Aliases()); n != 5 {
		t.Errorf("%d aliases, want the 5 rows applied", n)
	}
	acc := map[string]int64{}
	for _, c := range tab.Accounting() {
		acc[c.Name] = c.Value
	}
	if acc["table_rows"] != 7 || acc["table_rows_applied"] != 5 || acc["table_rows_ambiguous"] != 2 || acc["table_rows_port_unknown"] != 0 {
		t.Errorf("accounting %v", acc)
	}
}

// TestStreamerGiven: with learning, the given table renames what was not
// learned, and those packets are neither late nor provisional.
func TestStreamerGiven(t *testing.T) {
	g, err := ParseTable([]byte("tcp 192.0.2.100:80 10.1.0.11:8080\n"), "t")
	if err != nil {
		t.Fatal(err)
	}
	s := NewStreamer(StreamOptions{Given: g})
	ap := netip.MustParseAddrPort
	n := 0
	for i := range 10 {
		sg := seg{proto: pcapio.ProtoTCP, src: ap("10.0.0.5:40000"), dst: ap("192.0.2.100:80"), seq: uint32(i), flags: pcapio.FlagACK}
		p := mkPacket(&sg, sight{ttl: 64, ts: 1e18 + int64(i)*1e9})
		s.Push(&p)
		for q := s.Pop(false); q != nil; q = s.Pop(false) {
			if q.Dst != netip.MustParseAddr("10.1.0.11") {
				t.Errorf("packet to %s", q.Dst)
			}
			n++
		}
	}
	for q := s.Pop(true); q != nil; q = s.Pop(true) {
		if q.Dst != netip.MustParseAddr("10.1.0.11") || q.DstPort != 8080 {
			t.Errorf("packet to %s:%d", q.Dst, q.DstPort)
		}
		n++
	}
	s.Finish()
	st := s.Stats()
	if n != 10 || st.ByTable != 10 || st.Rewritten != 10 || st.Late != 0 || st.Provisional != 0 {
		t.Errorf("%d packets, %+v", n, st)
	}
}

func FuzzParseTable(f *testing.F) {
	f.Add([]byte(textTable))
	f.Add([]byte("{\"version\":1,\"mappings\":[{\"proto\":\"tcp\",\"kind\":\"snat\",\"outside\":\"192.0.2.1:*\",\"inside\":\"10.0.0.5:*\",\"conns\":3,\"ports_kept\":2}]}"))
	f.Add([]byte("1.2.3.4:80 5.6.7.8:80\n1.2.3.4:80 5.6.7.9:80\n"))
	fuzzseed.Files(f, "cmd/wirepath/testdata/golden/nat-json.stdout")
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := ParseTable(data, "f")
		if err != nil {
			var te *TableError
			if !errors.As(err, &te) || te.File != "f" || te.Line < 1 || te.Offset < 0 || te.Offset > int64(len(data)) {
				t.Fatalf("error %v: not a positioned *TableError", err)
			}
			return
		}
		if len(g.Rows) != len(g.Applied)+g.Ambiguous+g.PortUnknown {
			t.Fatalf("rows %d != applied %d + ambiguous %d + port unknown %d", len(g.Rows), len(g.Applied), g.Ambiguous, g.PortUnknown)
		}
		// Every row applied renames its outside name to its inside name.
		for _, m := range g.Applied {
			proto := m.Proto
			if proto == 0 {
				proto = pcapio.ProtoTCP
			}
			out := m.Outside
			if m.AnyPort && hasPorts(proto) {
				out = netip.AddrPortFrom(out.Addr(), 4321)
			}
			s, _, ok := g.Lookup(proto, out, netip.AddrPortFrom(out.Addr(), 1))
			if !ok || s.Addr() != m.Inside.Addr() {
				t.Fatalf("row %s -> %s: %s renamed to %s (%v)", m.OutsideString(), m.InsideString(), out, s, ok)
			}
		}
	})
}
