package reconcile

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/flows"
	"github.com/wirepath/wirepath/preload"
	"github.com/wirepath/wirepath/trace"

	"github.com/wirepath/wirepath/internal/fuzzseed"
)

// A three-tier system seen by one sniffer: two clients call web:80, which
// calls db:5432; db's host calls cache:6379 and also runs a second
// service, 8000, that a client calls. Each connection is one exchange.
func tiers() []*flows.Message {
	var msgs []*flows.Message
	conn := uint64(0)
	ex := func(src, dst string, t int64) {
		conn++
		msgs = append(msgs,
			fmsg(conn, 0, src, dst, 1, 10, trace.KindCall, 0, sn{0, 64, t, t + 1, false}),
			fmsg(conn, 1, dst, src, 1, 20, trace.KindReturn, 0, sn{0, 64, t + 100, t + 101, false}))
	}
	ex("10.0.0.1:40001", "10.0.1.1:80", 1000)
	ex("10.0.1.1:50001", "10.0.2.1:5432", 2000)
	ex("10.0.0.2:40002", "10.0.1.1:80", 3000)
	ex("10.0.1.1:50002", "10.0.2.1:5432", 4000)
	ex("10.0.2.1:50003", "10.0.2.2:6379", 5000) // db's host calls the cache
	ex("10.0.0.1:40003", "10.0.2.1:8000", 6000) // its second service
	return msgs
}

func TestNaming(t *testing.T) {
	roles, err := ParseRoles(strings.NewReader("10.0.2.2 cache-host\n10.0.2.1:5432 db # the database\n"), "roles")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		naming Naming
		roles  *RoleMap
		// want: "src-node dst-node" of each message, in order.
		want []string
		// servers: nodes with a fixed port (the others are clients).
		servers int
	}{{
		naming:  NameHost,
		servers: 3,
		want: []string{
			"10.0.0.1 10.0.1.1", "10.0.1.1 10.0.0.1",
			"10.0.1.1 10.0.2.1", "10.0.2.1 10.0.1.1",
			"10.0.0.2 10.0.1.1", "10.0.1.1 10.0.0.2",
			"10.0.1.1 10.0.2.1", "10.0.2.1 10.0.1.1",
			"10.0.2.1 10.0.2.2", "10.0.2.2 10.0.2.1",
			"10.0.0.1 10.0.2.1", "10.0.2.1 10.0.0.1",
		},
	}, {
		// web has one role, so its calls out are the role's; db's host
		// has two (5432 and 8000), so its ephemeral port is the host's.
		naming:  NameRole,
		servers: 4,
		want: []string{
			"10.0.0.1 10.0.1.1:80", "10.0.1.1:80 10.0.0.1",
			"10.0.1.1:80 10.0.2.1:5432", "10.0.2.1:5432 10.0.1.1:80",
			"10.0.0.2 10.0.1.1:80", "10.0.1.1:80 10.0.0.2",
			"10.0.1.1:80 10.0.2.1:5432", "10.0.2.1:5432 10.0.1.1:80",
			"10.0.2.1 10.0.2.2:6379", "10.0.2.2:6379 10.0.2.1",
			"10.0.0.1 10.0.2.1:8000", "10.0.2.1:8000 10.0.0.1",
		},
	}, {
		naming:  NameRole,
		roles:   roles,
		servers: 4,
		want: []string{
			"10.0.0.1 10.0.1.1:80", "10.0.1.1:80 10.0.0.1",
			"10.0.1.1:80 db", "db 10.0.1.1:80",
			"10.0.0.2 10.0.1.1:80", "10.0.1.1:80 10.0.0.2",
			"10.0.1.1:80 db", "db 10.0.1.1:80",
			"10.0.2.1 cache-host:6379", "cache-host:6379 10.0.2.1",
			"10.0.0.1 10.0.2.1:8000", "10.0.2.1:8000 10.0.0.1",
		},
	}, {
		naming:  NameHost,
		roles:   roles,
		servers: 3,
		want: []string{
			"10.0.0.1 10.0.1.1", "10.0.1.1 10.0.0.1",
			"10.0.1.1 10.0.2.1", "10.0.2.1 10.0.1.1",
			"10.0.0.2 10.0.1.1", "10.0.1.1 10.0.0.2",
			"10.0.1.1 10.0.2.1", "10.0.2.1 10.0.1.1",
			"10.0.2.1 cache-host", "cache-host 10.0.2.1",
			"10.0.0.1 10.0.2.1", "10.0.2.1 10.0.0.1",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.naming.String(), func(t *testing.T) {
			tr, rep := run(t, Options{Naming: tt.naming, Roles: tt.roles, Sniffers: sniffers(1)}, tiers())
			if len(tr.Messages) != len(tt.want) {
				t.Fatalf("%d messages", len(tr.Messages))
			}
			for i, w := range tt.want {
				m := &tr.Messages[i]
				if got := tr.Str(m.SrcNode) + " " + tr.Str(m.DstNode); got != w {
					t.Errorf("message %d (%s -> %s): %q, want %q", i, tr.Str(m.Src), tr.Str(m.Dst), got, w)
				}
			}
			// Endpoints keep their real ports.
			if tr.Str(tr.Messages[0].Src) != "10.0.0.1:40001" {
				t.Errorf("endpoint %s", tr.Str(tr.Messages[0].Src))
			}
			if rep.Nodes != len(nodeSet(tr)) || rep.Servers != tt.servers {
				t.Errorf("report says %d nodes (%d servers), trace has %d, want %d servers", rep.Nodes, rep.Servers, len(nodeSet(tr)), tt.servers)
			}
		})
	}
}

func nodeSet(tr *trace.Trace) map[trace.Sym]bool {
	s := map[trace.Sym]bool{}
	for _, m := range tr.Messages {
		s[m.SrcNode], s[m.DstNode] = true, true
	}
	return s
}

// A traced host with two addresses is one node under host naming, named
// by the address its sniffed messages use.
func TestNamingMultihomed(t *testing.T) {
	b := newTraceBuilder()
	b.proc("web", 7, "web")
	b.connect("web", 7, 1, 3, preload.SockTCP, "10.0.1.1:50001", "10.0.2.1:5432")
	b.write("web", 7, 1990, 3, 10) // the sniffed call to db: ties web's clock to the sniffer's
	b.read("web", 7, 2100, 10, 3, 20)
	b.connect("web", 7, 1, 4, preload.SockTCP, "10.0.3.1:50002", "10.0.3.9:7000")
	b.write("web", 7, 10, 4, 5)
	tr, _ := run(t, Options{Naming: NameHost, Sniffers: sniffers(1), Preload: b.t}, tiers()[:4])
	ms := find(tr, "10.0.3.1:50002", "10.0.3.9:7000")
	if len(ms) != 1 || tr.Str(ms[0].SrcNode) != "10.0.1.1" {
		t.Fatalf("the second address's messages: %v", ms)
	}
}

func TestParseRoles(t *testing.T) {
	tests := []struct {
		in      string
		hosts   map[string]string
		eps     map[string]string
		err     error
		errLine int
	}{
		{in: "", hosts: map[string]string{}},
		{in: "# only a comment\n\n   \n"},
		{in: "10.0.0.5 web\n10.0.0.6:5432 db  # postgres\n", hosts: map[string]string{"10.0.0.5": "web"}, eps: map[string]string{"10.0.0.6:5432": "db"}},
		{in: "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n", hosts: map[string]string{"127.0.0.1": "localhost", "::1": "localhost"}},
		{in: "[fe80::1]:53 dns\n[2001:db8::1] web6\n", hosts: map[string]string{"2001:db8::1": "web6"}, eps: map[string]string{"[fe80::1]:53": "dns"}},
		{in: "::ffff:10.0.0.5 web\n", hosts: map[string]string{"10.0.0.5": "web"}},
		{in: "10.0.0.5 web\n10.0.0.5 web\n", hosts: map[string]string{"10.0.0.5": "web"}},
		{in: "10.0.0.5 web\n10.0.0.5 app\n", err: ErrRolesDuplicate, errLine: 2},
		{in: "10.0.0.5\n", err: ErrRolesSyntax, errLine: 1},
		{in: "\nweb 10.0.0.5\n", err: ErrRolesAddress, errLine: 2},
		{in: "10.0.0.5:99999 web\n", err: ErrRolesAddress, errLine: 1},
		{in: "10.0.0.5 w\x01b\n", err: ErrRolesName, errLine: 1},
		{in: "10.0.0.5 \xff\n", err: ErrRolesName, errLine: 1},
	}
	for _, tt := range tests {
		m, err := ParseRoles(strings.NewReader(tt.in), "f")
		if tt.err != nil {
			var re *RolesError
			if !errors.Is(err, tt.err) || !errors.As(err, &re) || re.Line != tt.errLine || re.File != "f" {
				t.Errorf("%q: error %v, want %v on line %d", tt.in, err, tt.err, tt.errLine)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.in, err)
			continue
		}
		for a, n := range tt.hosts {
			if got, ok := m.Host(netip.MustParseAddr(a)); !ok || got != n {
				t.Errorf("%q: host %s is %q, want %q", tt.in, a, got, n)
			}
		}
		for e, n := range tt.eps {
			if got, ok := m.Endpoint(netip.MustParseAddrPort(e)); !ok || got != n {
				t.Errorf("%q: endpoint %s is %q, want %q", tt.in, e, got, n)
			}
		}
		if m.Len() != len(tt.hosts)+len(tt.eps) {
			t.Errorf("%q: %d entries, want %d", tt.in, m.Len(), len(tt.hosts)+len(tt.eps))
		}
	}
}

func FuzzParseRoles(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	fuzzseed.Strings(f, "testdata/demo/roles.txt")
	f.Add("10.0.0.5 web\n10.0.0.6:5432 db # postgres\n") // hosts and endpoints, a comment
	f.Add("::1 localhost ip6-localhost\n")               // /etc/hosts: IPv6, aliases ignored
	f.Add("[fe80::1%eth0]:53 dns\n")                     // a zone in an endpoint
	f.Add("10.0.0.5 web\n10.0.0.5 app\n")                // a duplicate with another name
	f.Add("web 10.0.0.5\n")                              // the fields swapped
	f.Add("1.2.3.4:0 x\r\n")                             // port 0, CRLF
	f.Fuzz(func(t *testing.T, in string) {
		m, err := ParseRoles(strings.NewReader(in), "fuzz")
		if err != nil {
			var re *RolesError
			if !errors.As(err, &re) || re.Line < 1 || re.File != "fuzz" {
				t.Fatalf("error %v is not a positioned *RolesError", err)
			}
			return
		}
		// What it read, written back and read again, is the same map.
		out := m.String()
		m2, err := ParseRoles(strings.NewReader(out), "again")
		if err != nil {
			t.Fatalf("re-reading %q: %v", out, err)
		}
		if m2.String() != out || m2.Len() != m.Len() {
			t.Fatalf("round trip: %q became %q", out, m2.String())
		}
		// Every name is usable as a node name.
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if f := strings.Fields(line); len(f) == 2 && !validName(f[1]) {
				t.Fatalf("invalid name %q kept", f[1])
			}
		}
	})
}

// A traced host whose clock nothing ties to its sniffer's: its messages no
// sniffer saw cannot be put on its node's clock, so they are dropped and
// counted rather than mixed into it.
func TestUnrelatedClockDropped(t *testing.T) {
	b := newTraceBuilder()
	b.proc("web", 7, "web")
	b.connect("web", 7, 1, 3, preload.SockTCP, "10.0.1.1:50001", "10.0.2.1:5432")
	b.connect("web", 7, 1, 4, preload.SockTCP, "10.0.3.1:50002", "10.0.3.9:7000")
	b.write("web", 7, 10, 4, 5)
	tr, rep := run(t, Options{Naming: NameHost, Sniffers: sniffers(1), Preload: b.t}, tiers()[:4])
	if len(tr.Messages) != 4 || rep.DroppedNoTime != 1 || rep.Calls["only_unsniffed"] != 1 {
		t.Fatalf("%d messages, %d dropped, calls %v", len(tr.Messages), rep.DroppedNoTime, rep.Calls)
	}
}

// A busy client reuses its source port for connections to the two web
// servers behind a NAT load balancer and to a third service: its port has
// three peers, but the client opened every connection (its SYN, or the
// first request on one seen mid-stream), so the port is ephemeral and
// the host a client, not a server (issue 10: one such host was taken for
// a server and half the requests lost their client root).
func TestRolesFromWhatHostsDid(t *testing.T) {
	const cli = "198.51.100.2:40000"
	servers := []string{"203.0.113.11:80", "203.0.113.12:80", "203.0.113.21:8080"}
	for _, tt := range []struct {
		name  string
		kinds bool // flows labelled calls and returns
		syn   bool // flows saw who opened each connection
	}{{"kinds and SYNs", true, true}, {"SYNs only", false, true}, {"kinds only (mid-stream)", true, false}} {
		t.Run(tt.name, func(t *testing.T) {
			var msgs []*flows.Message
			var conns []*flows.ConnStats
			for i := range 6 {
				srv, conn := servers[i%3], uint64(i+1)
				call, ret := trace.KindCall, trace.KindReturn
				if !tt.kinds {
					call, ret = trace.KindUnknown, trace.KindUnknown
				}
				t0 := int64(i) * 1e6
				msgs = append(msgs,
					fmsg(conn, 0, cli, srv, 1, 100, call, 0, sn{0, 64, t0, t0 + 1, false}),
					fmsg(conn, 1, srv, cli, 1, 200, ret, 0, sn{0, 64, t0 + 500, t0 + 501, false}))
				cs := &flows.ConnStats{Conn: conn, Proto: "tcp", Client: netip.MustParseAddrPort(cli), Server: netip.MustParseAddrPort(srv), Caller: "syn"}
				if !tt.syn {
					cs.Caller, cs.MidStream = "", true
				}
				conns = append(conns, cs)
			}
			tr, rep := run(t, Options{Naming: NameRole, Sniffers: sniffers(1)}, msgs, conns...)
			for i := range tr.Messages {
				m := &tr.Messages[i]
				if tr.Str(m.Src) == cli && tr.Str(m.SrcNode) != "198.51.100.2" {
					t.Fatalf("the client's node is %q", tr.Str(m.SrcNode))
				}
			}
			if rep.Servers != 3 {
				t.Errorf("%d servers, want 3", rep.Servers)
			}
		})
	}
}
