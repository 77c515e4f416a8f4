package reconcile

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/flows"
	"github.com/wirepath/wirepath/pcapio"
	"github.com/wirepath/wirepath/trace"
)

const us = int64(1000)

// half is a HalfRTT of samples (their minimum and count follow).
func half(src string, samples ...int64) flows.HalfRTT {
	h := flows.HalfRTT{N: int64(len(samples)), Samples: samples}
	if len(samples) > 0 {
		h.MinNS = samples[0]
		for _, s := range samples {
			h.MinNS = min(h.MinNS, s)
		}
	}
	switch src {
	case "syn":
		h.Handshake = h.N
	case "ack":
		h.Acks = h.N
	}
	return h
}

// conn is the passive figures of one connection seen by sniffer pt.
func conn(id uint64, client, server string, opened bool, pt int, toClient, toServer flows.HalfRTT) *flows.ConnStats {
	cs := &flows.ConnStats{Conn: id, Proto: "tcp", Client: netip.MustParseAddrPort(client), Server: netip.MustParseAddrPort(server),
		Caller: "ports", ClientWindow: flows.Window{MaxBytes: 65535, Scaled: true}, ServerWindow: flows.Window{MaxBytes: 29200, Scaled: true}}
	if opened {
		cs.Caller = "syn"
		cs.ClientWindow.MSS, cs.ServerWindow.MSS = 1460, 1400
	}
	if toClient.N > 0 || toServer.N > 0 {
		p := flows.Point{Sniffer: pcapio.SnifferID(pt)}
		cs.Points = []flows.PointRTT{{Point: p.String(), At: p, ToClient: toClient, ToServer: toServer}}
	}
	return cs
}

// TestLinks reconciles a small system and checks the per-link round trips:
// the web host calls db over a connection whose handshake was seen (both
// halves, and the web host's half is its host half) and another seen from
// its middle whose answers carry the acknowledgements (the db half is
// slow); it calls a cache on the db's host over a connection that shows
// only slow halves (the hosts' halves from the db connections stand in),
// and a DNS server over UDP, which shows none.
func TestLinks(t *testing.T) {
	msgs := []*flows.Message{
		fmsg(1, 0, "10.0.0.10:40000", "10.0.0.20:5432", 1, 100, trace.KindCall, 0, sn{0, 64, 1000 * us, 1000 * us, false}),
		fmsg(1, 1, "10.0.0.20:5432", "10.0.0.10:40000", 1, 900, trace.KindReturn, 0, sn{0, 63, 1300 * us, 1300 * us, false}),
		fmsg(2, 0, "10.0.0.10:40001", "10.0.0.20:5432", 1, 100, trace.KindCall, 0, sn{0, 64, 2000 * us, 2000 * us, false}),
		fmsg(2, 1, "10.0.0.20:5432", "10.0.0.10:40001", 1, 900, trace.KindReturn, 0, sn{0, 63, 2300 * us, 2300 * us, false}),
		fmsg(2, 2, "10.0.0.10:40001", "10.0.0.20:5432", 101, 100, trace.KindCall, 1, sn{0, 64, 3000 * us, 3000 * us, false}),
		fmsg(2, 3, "10.0.0.20:5432", "10.0.0.10:40001", 901, 900, trace.KindReturn, 1, sn{0, 63, 3300 * us, 3300 * us, false}),
		fmsg(3, 0, "10.0.0.10:40002", "10.0.0.20:6379", 1, 30, trace.KindCall, 0, sn{0, 64, 4000 * us, 4000 * us, false}),
		fmsg(3, 1, "10.0.0.20:6379", "10.0.0.10:40002", 1, 10, trace.KindReturn, 0, sn{0, 63, 4500 * us, 4500 * us, false}),
		fmsg(4, 0, "10.0.0.10:40003", "10.0.0.53:53", 0, 40, trace.KindCall, 0, sn{0, 64, 5000 * us, 5000 * us, false}),
		fmsg(4, 1, "10.0.0.53:53", "10.0.0.10:40003", 0, 80, trace.KindReturn, 0, sn{0, 63, 5200 * us, 5200 * us, false}),
	}
	msgs[8].Proto, msgs[9].Proto = trace.ProtoUDP, trace.ProtoUDP
	dns := &flows.ConnStats{Conn: 4, Proto: "udp", Client: netip.MustParseAddrPort("10.0.0.10:40003"), Server: netip.MustParseAddrPort("10.0.0.53:53"), Caller: "dns",
		ClientWindow: flows.Window{MaxBytes: -1}, ServerWindow: flows.Window{MaxBytes: -1}}
	roles, err := ParseRoles(strings.NewReader("10.0.0.10 web\n10.0.0.20 dbhost\n10.0.0.20:5432 db\n10.0.0.20:6379 cache\n10.0.0.53 dns\n"), "roles")
	if err != nil {
		t.Fatal(err)
	}
	tr, _ := run(t, Options{Naming: NameRole, Roles: roles, Sniffers: sniffers(1)}, msgs,
		conn(1, "10.0.0.10:40000", "10.0.0.20:5432", true, 0, half("syn", 2*us), half("syn", 100*us)),
		conn(2, "10.0.0.10:40001", "10.0.0.20:5432", false, 0, half("ack", 3*us, 5*us), half("ack", 400*us, 300*us)),
		conn(3, "10.0.0.10:40002", "10.0.0.20:6379", false, 0, half("ack", 800*us), half("ack", 500*us)),
		dns)
	want := map[string]trace.Link{
		"web db":     {Proto: "tcp", Conns: 2, Opened: 1, Calls: 3, MSS: 1400, WindowA: 65535, WindowB: 29200, RTT: trace.LinkRTT{Known: true, MinNS: 102 * us, Method: "link", Point: "s0"}},
		"web cache":  {Proto: "tcp", Conns: 1, Calls: 1, WindowA: 65535, WindowB: 29200, RTT: trace.LinkRTT{Known: true, MinNS: 102 * us, Method: "hosts", Point: "s0"}},
		"web dns:53": {Proto: "udp", Conns: 1, Calls: 1, WindowA: -1, WindowB: -1},
	}
	if len(tr.Meta.Links) != len(want) {
		t.Fatalf("links %+v", tr.Meta.Links)
	}
	for _, l := range tr.Meta.Links {
		w, ok := want[l.A+" "+l.B]
		if !ok {
			t.Errorf("unexpected link %s-%s", l.A, l.B)
			continue
		}
		if l.Proto != w.Proto || l.Conns != w.Conns || l.Opened != w.Opened || l.Calls != w.Calls || l.MSS != w.MSS || l.WindowA != w.WindowA || l.WindowB != w.WindowB {
			t.Errorf("%s-%s: %+v, want %+v", l.A, l.B, l, w)
		}
		g := l.RTT
		if g.Known != w.RTT.Known || g.MinNS != w.RTT.MinNS || g.Method != w.RTT.Method || g.Point != w.RTT.Point || !g.Known && g.Reason == "" {
			t.Errorf("%s-%s: rtt %+v, want %+v", l.A, l.B, g, w.RTT)
		}
	}
	db, _, _ := trace.FindLink(tr.Meta.Links, "db", "web")
	if db == nil || len(db.Points) != 1 {
		t.Fatalf("web-db points: %+v", db)
	}
	// The db's half: 100 µs (handshake) and 300, 400 µs (answers).
	if p := db.Points[0]; p.ToA.N != 3 || p.ToA.MinNS != 2*us || p.ToB.N != 3 || p.ToB.MinNS != 100*us || p.ToB.P50NS != 300*us || p.ToB.Handshake != 1 || p.ToB.Acks != 2 || p.Position != "A" {
		t.Errorf("web-db point %+v", p)
	}
	if db.RTT.P50NS != 3*us+300*us {
		t.Errorf("web-db median %d, want the halves' medians added", db.RTT.P50NS)
	}
}

// TestLinksSameHost checks that a link between two addresses of one host
// (the loopback) is marked as the host's own.
func TestLinksSameHost(t *testing.T) {
	msgs := []*flows.Message{
		fmsg(1, 0, "127.0.0.1:40000", "127.0.0.1:8080", 1, 100, trace.KindCall, 0, sn{0, 64, 1000 * us, 1000 * us, false}),
		fmsg(1, 1, "127.0.0.1:8080", "127.0.0.1:40000", 1, 100, trace.KindReturn, 0, sn{0, 64, 1100 * us, 1100 * us, false}),
	}
	tr, _ := run(t, Options{Sniffers: sniffers(1)}, msgs, conn(1, "127.0.0.1:40000", "127.0.0.1:8080", true, 0, half("syn", 5*us), half("syn", 6*us)))
	if len(tr.Meta.Links) != 1 || !tr.Meta.Links[0].SameHost {
		t.Errorf("links %+v", tr.Meta.Links)
	}
}

func TestSamplePool(t *testing.T) {
	var p samplePool[int64]
	for i := int64(maxPooled + 10); i > 0; i-- {
		p.add(i)
	}
	if p.n != maxPooled+10 || p.min != 1 || len(p.samples) != maxPooled {
		t.Errorf("pool n %d min %d kept %d", p.n, p.min, len(p.samples))
	}
	var q samplePool[int64]
	q.add(500)
	q.merge(&p)
	if q.n != maxPooled+11 || q.min != 1 {
		t.Errorf("merged n %d min %d", q.n, q.min)
	}
	var empty samplePool[int64]
	q.merge(&empty)
	empty.merge(&q)
	if empty.n != q.n || empty.min != 1 {
		t.Errorf("merge into empty: n %d min %d", empty.n, empty.min)
	}
}

// TestLinksSides checks that a link between two nodes that each open
// connections to the other is oriented by the side that opened most of
// them (the lower name on a tie), the same in every run whatever order
// the pools are met in.
func TestLinksSides(t *testing.T) {
	const a, b = "10.0.0.1", "10.0.0.2"
	tests := []struct {
		name   string
		aConns int // connections a opens to b (b opens one to a)
		want   string
	}{
		{"a opens most", 2, a + " " + b},
		{"b opens most", 0, b + " " + a},
		{"a tie", 1, a + " " + b},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var msgs []*flows.Message
			var conns []*flows.ConnStats
			add := func(cli, srv string) {
				id := uint64(len(conns) + 1)
				ts := int64(id) * 1000 * us
				msgs = append(msgs, fmsg(id, 0, cli, srv, 1, 100, trace.KindCall, 0, sn{0, 64, ts, ts, false}),
					fmsg(id, 1, srv, cli, 1, 100, trace.KindReturn, 0, sn{0, 64, ts + 100*us, ts + 100*us, false}))
				conns = append(conns, conn(id, cli, srv, true, 0, half("syn", 5*us), half("syn", 6*us)))
			}
			for i := range tc.aConns {
				add(fmt.Sprintf("%s:%d", a, 40000+i), b+":8080")
			}
			add(b+":40000", a+":9000")
			var first string
			for range 20 {
				tr, _ := run(t, Options{Sniffers: sniffers(1)}, msgs, conns...)
				if len(tr.Meta.Links) != 1 {
					t.Fatalf("links %+v", tr.Meta.Links)
				}
				l := tr.Meta.Links[0]
				got := fmt.Sprintf("%s %s conns %d calls %d", l.A, l.B, l.Conns, l.Calls)
				if !strings.HasPrefix(got, tc.want+" ") {
					t.Errorf("link %s, want it from %s", got, tc.want)
				}
				if first == "" {
					first = got
				} else if got != first {
					t.Fatalf("runs differ: %s, then %s", first, got)
				}
			}
		})
	}
}
