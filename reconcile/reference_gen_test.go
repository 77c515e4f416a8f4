package reconcile_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/clock"
	"github.com/wirepath/wirepath/flows"
	"github.com/wirepath/wirepath/pcapio"
	"github.com/wirepath/wirepath/pipeline"
	"github.com/wirepath/wirepath/preload"
	"github.com/wirepath/wirepath/proto"
	"github.com/wirepath/wirepath/reconcile"
	"github.com/wirepath/wirepath/trace"
)

// genHost is one machine of a generated run.
type genHost struct {
	addr   netip.Addr
	site   int
	port   uint16 // a server's fixed port, 0 for a client
	ttl    uint8
	traced string // traced host name, "" if untraced
	pid    int
	clock  int64 // the host's clock minus true time
	nextFD int
}

// gen makes a run: hosts at sites joined by one router, sniffers at some
// sites (each sees the traffic of its site, with the TTLs of its side of
// the router), some hosts traced, request/response connections between
// them and UNIX-socket logging on traced hosts.
type gen struct {
	rng      *rand.Rand
	snSite   []int
	snClock  []int64 // for sniffers pcapio did not correct
	hosts    []*genHost
	tab      *preload.Table
	msgs     []*flows.Message
	conns    []flows.ConnStats
	nextConn uint64
	nextPort uint16
}

func genRun(seed uint64) refInput {
	rng := rand.New(rand.NewPCG(seed, 0x7ec0))
	g := &gen{rng: rng, tab: preload.NewTable(), nextConn: 1, nextPort: 40000}
	sites := 2 + rng.IntN(2)
	var opts reconcile.Options
	for k := range 1 + rng.IntN(3) {
		g.snSite = append(g.snSite, rng.IntN(sites))
		sn := reconcile.Sniffer{Name: fmt.Sprintf("s%d.pcap", k), Known: true, Reference: k == 0, Method: "reference"}
		var clock int64
		if k > 0 {
			if rng.IntN(3) > 0 { // corrected by pcapio
				sn.Method, sn.OffsetNS = "symmetric", rng.Int64N(2e9)-1e9
				sn.UncertaintyNS, sn.Samples = 1000+rng.Int64N(50_000), 1+rng.IntN(100)
			} else {
				sn.Known, sn.Method = false, "unknown"
				clock = rng.Int64N(20e6) - 10e6
			}
		}
		g.snClock = append(g.snClock, clock)
		opts.Sniffers = append(opts.Sniffers, sn)
	}
	if rng.IntN(8) == 0 { // sightings of sniffers the options do not describe
		opts.Sniffers = opts.Sniffers[:rng.IntN(len(opts.Sniffers)+1)]
	}
	ports := []uint16{80, 5432, 7000, 8080, 53}
	nSrv := 1 + rng.IntN(3)
	var roles strings.Builder
	for i := range nSrv + 1 + rng.IntN(4) {
		h := &genHost{site: rng.IntN(sites), ttl: 64, nextFD: 3}
		if rng.IntN(6) == 0 {
			h.ttl = 128
		}
		if i < nSrv {
			h.addr = netip.AddrFrom4([4]byte{10, byte(h.site), 1, byte(i + 1)})
			h.port = ports[rng.IntN(len(ports))]
			if rng.IntN(4) == 0 {
				fmt.Fprintf(&roles, "%s role%d\n", netip.AddrPortFrom(h.addr, h.port), i)
			}
		} else {
			h.addr = netip.AddrFrom4([4]byte{10, byte(h.site), 9, byte(i + 1)})
		}
		if rng.IntN(5) == 0 {
			fmt.Fprintf(&roles, "%s host%d\n", h.addr, i)
		}
		if rng.IntN(2) == 0 {
			h.traced, h.pid, h.clock = fmt.Sprintf("h%d", i), 100+i, rng.Int64N(10e6)-5e6
			g.tab.AddHeader(&preload.Header{Version: 1, Host: h.traced, PID: h.pid, Process: fmt.Sprintf("p%d", i)})
		}
		g.hosts = append(g.hosts, h)
	}
	t := int64(1_800_000_000_000_000_000) + rng.Int64N(1e9)
	for range 1 + rng.IntN(8) {
		t += rng.Int64N(5e6)
		cli := g.hosts[rng.IntN(len(g.hosts))]
		srv := g.hosts[rng.IntN(nSrv)]
		if cli == srv {
			continue
		}
		if srv.port == 53 {
			g.datagrams(cli, srv, t)
		} else {
			g.stream(cli, srv, t)
		}
	}
	for i, h := range g.hosts {
		if h.traced != "" && rng.IntN(3) == 0 {
			g.logging(h, i, t+rng.Int64N(5e6))
		}
	}
	if rng.IntN(2) == 0 {
		rng.Shuffle(len(g.msgs), func(i, j int) { g.msgs[i], g.msgs[j] = g.msgs[j], g.msgs[i] })
	}
	opts.Naming = reconcile.Naming(rng.IntN(3))
	opts.Boundaries = reconcile.Boundaries(rng.IntN(2))
	opts.NoWellKnown = rng.IntN(4) == 0
	opts.MinPeers = rng.IntN(3)
	if len(g.tab.Conns) > 0 {
		opts.Preload = g.tab
	}
	if roles.Len() > 0 {
		m, err := reconcile.ParseRoles(strings.NewReader(roles.String()), "gen")
		if err != nil {
			panic(err)
		}
		opts.Roles = m
	}
	// What protocol decoders would say, from a generator of its own so
	// that the rest of the run stays as it was.
	erng := rand.New(rand.NewPCG(seed, 0xe71d))
	for _, m := range g.msgs {
		decorate(erng, m)
	}
	opts.MaxTokens = []int{0, 0, -1, 3}[erng.IntN(4)]
	return refInput{opts: opts, msgs: g.msgs, conns: g.conns}
}

// decorate gives a sniffed message what a protocol decoder might say
// about it: an ordinal, a stream, a label, request ids of several sources
// in any order, content tokens; with labels and ids the trace cannot hold
// (too long, not printable) among them, and more tokens than the cap.
func decorate(rng *rand.Rand, m *flows.Message) {
	if rng.IntN(3) == 0 {
		return
	}
	pick := func(p float64) bool { return rng.Float64() < p }
	if pick(0.7) {
		m.Ordinal = uint32(1 + rng.IntN(9))
	}
	if pick(0.1) {
		m.Stream = uint64(1 + rng.IntN(7))
	}
	if pick(0.6) {
		m.Label = []string{"GET /item/{id}", "200", "redis GET", "SELECT users", strings.Repeat("L", trace.MaxLabel+1), "bad\x01label", "\xff\xfe", "ünïcode"}[rng.IntN(8)]
	}
	if !pick(0.7) {
		return
	}
	ev := &proto.Evidence{}
	sources := []string{"traceparent", "b3", "x-request-id", "x-correlation-id", "header:x-trace", "sw8", "uber-trace-id", "x-amzn-trace-id"}
	for range rng.IntN(4) {
		v := fmt.Sprintf("%016x", rng.Uint64N(4))
		switch rng.IntN(8) {
		case 0:
			v = strings.Repeat("a", trace.MaxReqID)
		case 1:
			v = "has space"
		}
		ev.IDs = append(ev.IDs, proto.ID{Source: sources[rng.IntN(len(sources))], Value: v})
	}
	set := map[uint64]bool{}
	for range rng.IntN(40) {
		set[rng.Uint64N(50)] = true
	}
	for h := range set {
		ev.Tokens = append(ev.Tokens, h)
	}
	slices.Sort(ev.Tokens)
	m.Evidence = ev
}

// visible returns the sniffers that see traffic between sites a and b,
// each with its distance from a (0: a's side of the router).
func (g *gen) visible(a, b int) (sn []int, dist []uint8) {
	for k, s := range g.snSite {
		if s == a || s == b {
			sn = append(sn, k)
			d := uint8(1)
			if s == a {
				d = 0
			}
			dist = append(dist, d)
		}
	}
	return sn, dist
}

func (g *gen) rec(h *genHost, pid int, ts, dur int64, call preload.Call, fd int, ret int64, mod func(*preload.Record)) {
	// a few threads per process, one per call
	r := &preload.Record{Host: h.traced, PID: pid, TID: pid*10 + int(ts/1000%3), TS: ts + h.clock, Dur: dur, Call: call, CallName: call.String(), FD: fd, FD2: -1, Len: ret, Ret: ret, HasRet: true}
	if mod != nil {
		mod(r)
	}
	g.tab.Add(r)
}

// split cuts n bytes into k > 0 parts (fewer if n is small).
func (g *gen) split(n int64, k int) []int64 {
	var out []int64
	for i := k - 1; i > 0 && n > 1; i-- {
		x := 1 + g.rng.Int64N(n-1)
		out = append(out, x)
		n -= x
	}
	return append(out, n)
}

// leg is one direction of a connection.
type leg struct {
	from, to *genHost
	src, dst netip.AddrPort
	fromFD   int
	toFD     int
	seq      uint32
}

// stream is one TCP connection of 1 to 4 requests and responses.
func (g *gen) stream(cli, srv *genHost, t int64) {
	cep := netip.AddrPortFrom(cli.addr, g.nextPort)
	sep := netip.AddrPortFrom(srv.addr, srv.port)
	g.nextPort++
	sn, _ := g.visible(cli.site, srv.site)
	if len(sn) == 0 && cli.traced == "" && srv.traced == "" {
		return
	}
	conn := g.nextConn
	g.nextConn++
	req := leg{from: cli, to: srv, src: cep, dst: sep, seq: g.rng.Uint32()}
	resp := leg{from: srv, to: cli, src: sep, dst: cep, seq: g.rng.Uint32()}
	if cli.traced != "" {
		req.fromFD, resp.toFD = cli.nextFD, cli.nextFD
		cli.nextFD++
		g.rec(cli, cli.pid, t, 1000, preload.CallConnect, req.fromFD, 0, func(r *preload.Record) { r.Sock, r.Local, r.Remote = preload.SockTCP, cep.String(), sep.String() })
	}
	if srv.traced != "" {
		req.toFD, resp.fromFD = srv.nextFD, srv.nextFD
		srv.nextFD++
		g.rec(srv, srv.pid, t+40_000, 1000, preload.CallAccept, 3, int64(req.toFD), func(r *preload.Record) {
			r.Sock, r.Local, r.Remote = preload.SockTCP, sep.String(), cep.String()
		})
	}
	if len(sn) > 0 && g.rng.IntN(2) == 0 {
		g.conns = append(g.conns, flows.ConnStats{Conn: conn, Proto: "tcp", Client: cep, Server: sep, Caller: "syn"})
	}
	framing := g.rng.IntN(10) < 7
	index := uint32(0)
	now := t + 100_000
	for e := range 1 + g.rng.IntN(4) {
		kind, ret := trace.KindUnknown, trace.KindUnknown
		if framing {
			kind, ret = trace.KindCall, trace.KindReturn
		}
		now = g.message(&req, conn, &index, uint32(e), 1+g.rng.Int64N(300), kind, now, e == 0)
		now = g.message(&resp, conn, &index, uint32(e), 1+g.rng.Int64N(3000), ret, now+g.rng.Int64N(2e6), e == 0)
		now += g.rng.Int64N(1e6)
	}
}

// message sends n bytes along l at now: written in one to three writes,
// seen by the sniffers that can see it (the first message each way by one
// at least, whole), read in one or two reads. It returns when the last
// read returned.
func (g *gen) message(l *leg, conn uint64, index *uint32, call uint32, n int64, kind trace.Kind, now int64, first bool) int64 {
	dur := 5_000 + g.rng.Int64N(200_000)
	if l.fromFD > 0 {
		for i, x := range g.split(n, 1+g.rng.IntN(3)) {
			g.rec(l.from, l.from.pid, now+int64(i)*1000, 500, preload.CallWrite, l.fromFD, x, nil)
		}
	}
	leave := now + 2_000
	sn, dist := g.visible(l.from.site, l.to.site)
	var ss []flows.Sighting
	for j, k := range sn {
		if !first && g.rng.IntN(10) == 0 {
			continue
		}
		at := leave + int64(dist[j])*30_000 + g.rng.Int64N(3000)
		s := flows.Sighting{Point: flows.Point{Sniffer: pcapio.SnifferID(k)}, TTL: l.from.ttl - dist[j],
			First: at + g.snClock[k], Last: at + dur + g.snClock[k], Bytes: n, Segments: 1}
		if !first && g.rng.IntN(10) == 0 {
			s.Bytes = n / 2
		}
		ss = append(ss, s)
	}
	if len(ss) > 0 {
		m := &flows.Message{Conn: conn, Index: *index, Proto: trace.ProtoTCP, Src: l.src, Dst: l.dst, Seq: l.seq, Bytes: n, Kind: kind, Sightings: ss}
		if kind != trace.KindUnknown {
			m.Call = flows.CallID{Conn: conn, Index: call}
		}
		*index++
		if n >= 2 && g.rng.IntN(7) == 0 { // flows cut it at a pause
			second := m.Clone()
			cut := 1 + g.rng.Int64N(n-1)
			m.Bytes, second.Bytes, second.Seq = cut, n-cut, l.seq+uint32(cut)
			second.Kind, second.Call, second.Index = trace.KindUnknown, flows.CallID{}, *index
			*index++
			for i := range m.Sightings {
				mid := (m.Sightings[i].First + m.Sightings[i].Last) / 2
				m.Sightings[i].Last, second.Sightings[i].First = mid, mid+1
				m.Sightings[i].Bytes = min(m.Sightings[i].Bytes, cut)
				second.Sightings[i].Bytes = max(0, second.Sightings[i].Bytes-cut)
			}
			g.msgs = append(g.msgs, m, second)
		} else {
			g.msgs = append(g.msgs, m)
		}
	}
	l.seq += uint32(n)
	arrive := leave + 60_000 + dur
	if l.toFD > 0 {
		for i, x := range g.split(n, 1+g.rng.IntN(2)) {
			g.rec(l.to, l.to.pid, arrive+int64(i)*2000-500, 1500, preload.CallRead, l.toFD, x, nil)
		}
	}
	return arrive + 10_000
}

// datagrams is a few requests and responses over UDP, sniffed only.
func (g *gen) datagrams(cli, srv *genHost, t int64) {
	sn, _ := g.visible(cli.site, srv.site)
	if len(sn) == 0 {
		return
	}
	cep := netip.AddrPortFrom(cli.addr, g.nextPort)
	sep := netip.AddrPortFrom(srv.addr, srv.port)
	g.nextPort++
	conn := g.nextConn
	g.nextConn++
	index := uint32(0)
	for e := range 1 + g.rng.IntN(3) {
		for _, l := range []leg{{from: cli, to: srv, src: cep, dst: sep}, {from: srv, to: cli, src: sep, dst: cep}} {
			sn, dist := g.visible(l.from.site, l.to.site)
			var ss []flows.Sighting
			for j, k := range sn {
				at := t + int64(dist[j])*30_000 + g.rng.Int64N(3000)
				ss = append(ss, flows.Sighting{Point: flows.Point{Sniffer: pcapio.SnifferID(k)}, TTL: l.from.ttl - dist[j],
					First: at + g.snClock[k], Last: at + g.snClock[k], Bytes: 40, Segments: 1})
			}
			kind := trace.KindCall
			if l.from == srv {
				kind = trace.KindReturn
			}
			g.msgs = append(g.msgs, &flows.Message{Conn: conn, Index: index, Proto: trace.ProtoUDP, Src: l.src, Dst: l.dst,
				Bytes: 40, Kind: kind, Call: flows.CallID{Conn: conn, Index: uint32(e)}, Sightings: ss})
			index++
			t += 100_000
		}
	}
}

// logging is a traced process writing log lines to a logger process on
// the same host over a named UNIX socket.
func (g *gen) logging(h *genHost, i int, t int64) {
	lpid := 500 + i
	g.tab.AddHeader(&preload.Header{Version: 1, Host: h.traced, PID: lpid, Process: "logger"})
	path := fmt.Sprintf("unix:/run/log%d.sock", i)
	fd := h.nextFD
	h.nextFD++
	g.rec(h, h.pid, t, 1000, preload.CallConnect, fd, 0, func(r *preload.Record) {
		r.Sock, r.Local, r.Remote, r.PeerPID = preload.SockUnixStream, "unix:", path, lpid
	})
	g.rec(h, lpid, t+5000, 1000, preload.CallAccept, 3, 4, func(r *preload.Record) {
		r.Sock, r.Local, r.Remote, r.PeerPID = preload.SockUnixStream, path, "unix:", h.pid
	})
	for range 1 + g.rng.IntN(4) {
		t += 10_000 + g.rng.Int64N(1e6)
		n := 1 + g.rng.Int64N(200)
		g.rec(h, h.pid, t, 500, preload.CallWrite, fd, n, nil)
		for j, x := range g.split(n, 1+g.rng.IntN(2)) {
			g.rec(h, lpid, t+3000+int64(j)*1000, 500, preload.CallRead, 4, x, nil)
		}
	}
}

// runReal reconciles in with the real Reconciler.
func runReal(t *testing.T, in refInput) ([]string, *reconcile.Report) {
	t.Helper()
	// The reference estimates constant offsets from the smallest delays
	// and applies them whatever they are: the real one runs without
	// drifts, steps, outliers and doubts (clock_test.go and package
	// clock's tests check those).
	in.opts.ClockFit = clock.FitOptions{MinDriftSpan: math.MaxInt64, MaxSegments: 1, OutlierFloor: -1}
	in.opts.TrustClockFits = true
	// The reference keeps every node's clock; putting the trace on one
	// clock is trace.ApplyOffsets, tested on its own.
	in.opts.LocalClocks = true
	r, err := reconcile.New(in.opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range in.msgs {
		r.AddMessage(m)
	}
	for i := range in.conns {
		r.AddConn(&in.conns[i])
	}
	tr, rep, err := r.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Check(); err != nil {
		t.Fatal(err)
	}
	checkSources(t, in, tr, rep)
	rep.Sources = nil // the reference does not name them
	lines := make([]string, len(tr.Messages))
	for i := range tr.Messages {
		lines[i] = refLine(tr, &tr.Messages[i])
	}
	return lines, rep
}

// checkSources checks Report.Sources: one per message, each naming a
// distinct flows message of the input, of the message's protocol.
func checkSources(t *testing.T, in refInput, tr *trace.Trace, rep *reconcile.Report) {
	t.Helper()
	if len(rep.Sources) != len(tr.Messages) {
		t.Fatalf("%d sources for %d messages", len(rep.Sources), len(tr.Messages))
	}
	input := map[flows.MessageID]*flows.Message{}
	for _, m := range in.msgs {
		input[m.ID()] = m
	}
	seen := map[flows.MessageID]bool{}
	for i, id := range rep.Sources {
		if id.IsZero() {
			continue
		}
		m := input[id]
		switch {
		case m == nil:
			t.Fatalf("message %d: source %+v is not in the input", i, id)
		case seen[id]:
			t.Fatalf("message %d: source %+v named twice", i, id)
		case m.Proto != tr.Messages[i].Proto:
			t.Fatalf("message %d (%v): source %+v is %v", i, tr.Messages[i].Proto, id, m.Proto)
		}
		seen[id] = true
	}
}

// compareWithReference runs both and reports the first differences.
func compareWithReference(t *testing.T, name string, in refInput) {
	t.Helper()
	want, wantRep, err := refReconcile(in)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	got, gotRep := runReal(t, in)
	if !reflect.DeepEqual(got, want) {
		n := 0
		for i := range max(len(got), len(want)) {
			g, w := "(none)", "(none)"
			if i < len(got) {
				g = got[i]
			}
			if i < len(want) {
				w = want[i]
			}
			if g != w && n < 5 {
				t.Errorf("%s: message %d:\n got %s\nwant %s", name, i, g, w)
				n++
			}
		}
		t.Fatalf("%s: %d messages, reference %d", name, len(got), len(want))
	}
	if !reflect.DeepEqual(gotRep, wantRep) {
		gv, wv := reflect.ValueOf(*gotRep), reflect.ValueOf(*wantRep)
		for i := range gv.NumField() {
			if !reflect.DeepEqual(gv.Field(i).Interface(), wv.Field(i).Interface()) {
				t.Errorf("%s: report %s:\n got %+v\nwant %+v", name, gv.Type().Field(i).Name, gv.Field(i).Interface(), wv.Field(i).Interface())
			}
		}
		t.FailNow()
	}
}

// The Reconciler agrees with the reference on generated runs: several
// sniffers (some with clocks pcapio could not correct), traced and
// untraced hosts with their own clocks, connections sniffed, traced or
// both, flows messages cut inside writes, UDP, UNIX sockets, every naming
// and boundary rule.
func TestReconcileMatchesReference(t *testing.T) {
	n := 600
	if testing.Short() {
		n = 150
	}
	for seed := range n {
		compareWithReference(t, fmt.Sprintf("seed %d", seed), genRun(uint64(seed)))
	}
}

// The reference sees the same as the Reconciler on the real captures of
// the test system (traced and untraced hosts, UNIX sockets, an unsniffed
// link) and of the demo (three sniffers, NAT, no traces).
func TestReconcileMatchesReferenceSystems(t *testing.T) {
	sys := filepath.Join("testdata", "system")
	demo := filepath.Join("..", "testdata", "demo")
	for _, c := range []struct {
		name     string
		captures []string
		traces   []string
	}{
		{"system", []string{filepath.Join(sys, "clientside.pcapng"), filepath.Join(sys, "web.pcap")}, []string{filepath.Join(sys, "traces")}},
		{"demo", []string{filepath.Join(demo, "outside.pcapng"), filepath.Join(demo, "inside.pcapng.gz"), filepath.Join(demo, "lb-any.pcap.gz")}, nil},
	} {
		for _, naming := range []reconcile.Naming{reconcile.NameHost, reconcile.NameRole, reconcile.NameProcess} {
			in := systemInput(t, c.captures, c.traces)
			in.opts.Naming = naming
			compareWithReference(t, fmt.Sprintf("%s, %v naming", c.name, naming), in)
		}
	}
}

// systemInput collects what pipeline.Run hands reconcile: the flows
// messages and connections, the sniffers and the syscall traces.
func systemInput(t *testing.T, captures, traces []string) refInput {
	t.Helper()
	var in refInput
	cfg := pipeline.Config{Captures: captures, Flows: flows.DefaultConfig()}
	cfg.Flows.OnConn = func(cs *flows.ConnStats) { in.conns = append(in.conns, *cs) }
	res, err := pipeline.Messages(cfg, func(m *flows.Message) error {
		in.msgs = append(in.msgs, m.Clone())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range res.Sniffers {
		o := res.Offsets[i]
		in.opts.Sniffers = append(in.opts.Sniffers, reconcile.Sniffer{Name: s.Name, Known: o.Known, Reference: o.Method == "reference",
			OffsetNS: o.Offset, UncertaintyNS: o.Uncertainty, Samples: o.Samples, Method: o.Method})
	}
	if len(traces) > 0 {
		paths, err := preload.ExpandPaths(traces)
		if err != nil {
			t.Fatal(err)
		}
		if in.opts.Preload, err = preload.ReadFiles(preload.Options{}, paths...); err != nil {
			t.Fatal(err)
		}
	}
	if res.NAT != nil && len(res.NAT.Mappings) > 0 && in.opts.Preload != nil {
		t.Fatal("NAT with syscall traces: beyond the reference")
	}
	return in
}
