package reconcile

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/wirepath/wirepath/flows"
	"github.com/wirepath/wirepath/preload"
	"github.com/wirepath/wirepath/trace"
)

// benchSystem makes the sniffed messages of clients x requests through a
// web tier (10.0.1.1:80, traced when traced is set) that calls a database
// (10.0.2.1:5432) per request; a sniffer on the clients' side of a router
// (s0) and one on the servers' (s1). Four messages per request.
func benchSystem(clients, requests int, traced bool) ([]*flows.Message, *preload.Table) {
	var msgs []*flows.Message
	var tab *preload.Table
	if traced {
		tab = preload.NewTable()
		tab.AddHeader(&preload.Header{Version: 1, Host: "web", PID: 10, Process: "web"})
	}
	rec := func(ts int64, call preload.Call, fd int, ret int64, mod func(*preload.Record)) {
		if tab == nil {
			return
		}
		r := &preload.Record{Host: "web", PID: 10, TS: ts, Dur: 1000, Call: call, FD: fd, FD2: -1, Ret: ret, HasRet: true}
		if mod != nil {
			mod(r)
		}
		tab.Add(r)
	}
	const web, db = "10.0.1.1:80", "10.0.2.1:5432"
	conn := uint64(0)
	t := int64(1_700_000_000_000_000_000)
	for c := range clients {
		cl := fmt.Sprintf("10.9.%d.%d:%d", c/250, c%250+1, 40000+c)
		wdb := fmt.Sprintf("10.0.1.1:%d", 50000+c)
		conn += 2
		cc, dc := conn-1, conn
		rec(t, preload.CallAccept, 3, int64(4+2*c), func(r *preload.Record) { r.Sock, r.Local, r.Remote = preload.SockTCP, web, cl })
		rec(t, preload.CallConnect, 5+2*c, 0, func(r *preload.Record) { r.Sock, r.Local, r.Remote = preload.SockTCP, wdb, db })
		for q := range requests {
			t += 100_000
			n := uint32(q)
			msgs = append(msgs,
				fmsg(cc, 2*n, cl, web, 1+120*n, 120, trace.KindCall, n, sn{0, 64, t, t + 10, false}, sn{1, 63, t + 30, t + 40, false}),
				fmsg(dc, 2*n, wdb, db, 1+40*n, 40, trace.KindCall, n, sn{1, 64, t + 1000, t + 1005, false}),
				fmsg(dc, 2*n+1, db, wdb, 1+200*n, 200, trace.KindReturn, n, sn{1, 64, t + 5000, t + 5005, false}),
				fmsg(cc, 2*n+1, web, cl, 1+290*n, 290, trace.KindReturn, n, sn{1, 64, t + 6000, t + 6010, false}, sn{0, 63, t + 6030, t + 6040, false}))
			rec(t+35, preload.CallRead, 4+2*c, 120, nil)
			rec(t+990, preload.CallWrite, 5+2*c, 40, nil)
			rec(t+5010, preload.CallRead, 5+2*c, 200, nil)
			rec(t+5990, preload.CallWrite, 4+2*c, 90, nil)
			rec(t+5995, preload.CallWrite, 4+2*c, 200, nil)
		}
	}
	return msgs, tab
}

func benchmarkReconcile(b *testing.B, traced bool) {
	benchmarkReconcileOf(b, 200, 25, traced)
}

func benchmarkReconcileOf(b *testing.B, clients, requests int, traced bool) {
	msgs, tab := benchSystem(clients, requests, traced)
	var bytes int64
	for _, m := range msgs {
		bytes += m.Bytes
	}
	opts := Options{Sniffers: sniffers(2), Preload: tab, Naming: NameRole}
	if traced {
		opts.Naming = NameProcess
	}
	b.SetBytes(bytes)
	b.ReportAllocs()
	var rep *Report
	for b.Loop() {
		r, err := New(opts)
		if err != nil {
			b.Fatal(err)
		}
		for _, m := range msgs {
			r.AddMessage(m)
		}
		_, rep, err = r.Finish()
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(msgs))*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	if err := rep.Check(); err != nil || rep.Messages != int64(len(msgs)) || rep.BothEnds != rep.Messages {
		b.Fatalf("report %+v: %v", rep, err)
	}
	if traced && rep.Calls["matched"] != rep.PreloadCalls {
		b.Fatalf("calls %v of %d", rep.Calls, rep.PreloadCalls)
	}
}

// BenchmarkReconcile: 20,000 sniffed messages (200 clients, 5,000
// requests through two tiers, two sniffers).
func BenchmarkReconcile(b *testing.B) { benchmarkReconcile(b, false) }

// BenchmarkReconcilePreload: the same with the web tier traced: every
// message of it matched with its calls.
func BenchmarkReconcilePreload(b *testing.B) { benchmarkReconcile(b, true) }

// BenchmarkReconcileLongConns: 20,000 sniffed messages over few long
// connections (4 clients of 2,500 requests: 2,500 messages per
// connection direction, as multiplexed gRPC makes them), where the
// per-message searches of a direction's spans and the per-run work show.
func BenchmarkReconcileLongConns(b *testing.B) { benchmarkReconcileOf(b, 4, 2500, false) }

// AddMessage copies a message without allocating once its endpoints and
// capture points are known and the reconciler's arrays have room.
func TestAddMessageNoAllocs(t *testing.T) {
	r, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := fmsg(1, 0, "10.0.0.1:1000", "10.0.0.2:80", 1, 100, trace.KindCall, 0, sn{0, 64, 1, 2, false}, sn{1, 63, 3, 4, false})
	r.AddMessage(m)
	r.msgs = make([]smsg, 0, 2000)
	r.sights = make([]sight, 0, 4000)
	if n := testing.AllocsPerRun(1000, func() { r.AddMessage(m) }); n != 0 {
		t.Errorf("%v allocations per message", n)
	}
}

// The benchmark's system checks out: the homes, the web tier's processes
// and its clock.
func TestBenchSystem(t *testing.T) {
	msgs, tab := benchSystem(3, 4, true)
	tr, rep := run(t, Options{Sniffers: sniffers(2), Preload: tab, Naming: NameProcess}, msgs)
	if rep.Messages != 48 || rep.BothEnds != 48 || rep.Calls["matched"] != rep.PreloadCalls || rep.Merged != 48 {
		t.Fatalf("report %+v", rep)
	}
	for i := range tr.Messages {
		m := &tr.Messages[i]
		s, d := tr.Str(m.SrcNode), tr.Str(m.DstNode)
		if s != "web[10]@web" && d != "web[10]@web" {
			t.Errorf("message %s -> %s does not involve the web process", s, d)
		}
		if h, _ := trace.SplitEndpoint(tr.Str(m.Src)); netip.MustParseAddr(h).IsUnspecified() {
			t.Errorf("endpoint %s", tr.Str(m.Src))
		}
	}
}
