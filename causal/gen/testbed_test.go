package gen

import (
	"bytes"
	"math"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	farm "github.com/dgryski/go-farm"
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/wirepath/wirepath/trace"
)

// testbedConfig exercises what the real testbed has: a web tier called by
// clients, an application server with three threads (traced), reached
// over a pool of two connections, a Redis cache and a memcached store
// reached over pools, optional cache misses, failures, parallel fan-out,
// background health checks, propagated ids and content tokens.
const testbedConfig = `
name: testbed
seed: 3
instances: 600
clients: 12
think: 1ms..3ms
names: addr
defaults: {delay: 300us±100us, reply: 1ms±300us, net: 100us±10us}
evidence:
  conns: true
  labels: true
  tokens: {per_request: 3, share: 0.8, noise: 1}
nodes:
  web:   {addr: 10.0.1.1, port: 80, ids: x-request-id}
  app:   {addr: 10.0.2.1, port: 8080, threads: 3, traced: true, pool: 4, ids: traceparent}
  cache: {addr: 10.0.3.1, port: 6379, protocol: redis, pool: 2}
  store: {addr: 10.0.4.1, port: 11211, protocol: memcached, pool: 1}
tracelets:
  - name: page
    weight: 3
    rpc:
      to: web
      calls:
        - to: app
          fail: 0.05
          calls:
            - {to: cache}
            - {to: store, prob: 0.3}
  - name: fanout
    rpc:
      to: web
      parallel: true
      calls: [{to: app}, {to: cache}]
  - name: health
    from: web
    clients: 1
    think: 20ms
    rpc: {to: app, label: GET /health}
`

func testbedOutput(t *testing.T, edit func(*Config)) (*Config, *Output) {
	t.Helper()
	c := mustParse(t, testbedConfig)
	if edit != nil {
		edit(c)
	}
	out := mustGenerate(t, c)
	checkTruth(t, out.Truth)
	return c, out
}

// callOf returns, for each RETURN of the truth, its CALL (by call id).
func callOf(tr *Truth) map[int]int {
	open := map[trace.Sym]int{}
	out := map[int]int{}
	for i, m := range tr.Trace.Messages {
		switch m.Kind {
		case trace.KindCall:
			open[m.CallID] = i
		case trace.KindReturn:
			out[i] = open[m.CallID]
		}
	}
	return out
}

// TestThreadPoolAndTasks checks the application server's three threads:
// the thread ids of the traced node are three, a call and its RETURN are
// read and written by the same thread, and no thread serves two calls at
// once: what one thread sends for one call (its calls and its RETURN) never
// interleaves with what it sends for another. (A call that arrives while
// every thread is busy waits: its CALL arrives before the thread reads it.)
func TestThreadPoolAndTasks(t *testing.T) {
	_, out := testbedOutput(t, nil)
	tr := out.Truth
	ms := tr.Trace.Messages
	for r, c := range callOf(tr) {
		if tr.Trace.Str(ms[c].DstNode) != "10.0.2.1" {
			continue
		}
		if task := ms[c].Receiver; !task.Known() || ms[r].Sender != task {
			t.Fatalf("call %d to app: receiver %v, its return's sender %v", c, task, ms[r].Sender)
		}
	}
	type span struct{ from, to int64 }
	type key struct {
		task trace.Task
		inst int32
	}
	spans := map[key]*span{}
	for i, m := range ms {
		if tr.Trace.Str(m.SrcNode) != "10.0.2.1" {
			if tr.Trace.Str(m.SrcNode) == "10.0.1.1" && m.Sender.Known() {
				t.Fatalf("message %d from the untraced web has a sender task", i)
			}
			continue
		}
		if !m.Sender.Known() {
			t.Fatalf("message %d from the traced app has no sender task", i)
		}
		k := key{m.Sender, tr.Instance[i]}
		if sp := spans[k]; sp == nil {
			spans[k] = &span{int64(m.SendTS), int64(m.SendTS)}
		} else {
			sp.from, sp.to = min(sp.from, int64(m.SendTS)), max(sp.to, int64(m.SendTS))
		}
	}
	byTask := map[trace.Task][]span{}
	for k, sp := range spans {
		byTask[k.task] = append(byTask[k.task], *sp)
	}
	if len(byTask) != 3 {
		t.Fatalf("%d threads at app, want 3", len(byTask))
	}
	for task, ss := range byTask {
		slices.SortFunc(ss, func(a, b span) int { return int(a.from - b.from) })
		for i := 1; i < len(ss); i++ {
			if ss[i].from < ss[i-1].to {
				t.Fatalf("thread %v serves two calls at once: %v and %v", task, ss[i-1], ss[i])
			}
		}
	}
	if out.Stats.ThreadWaits == 0 {
		t.Error("no call waited for a thread at 12 clients")
	}
}

// TestConnectionPools checks the pools: web reaches app over at most four
// connections, each carrying one call at a time and many calls in all,
// with its own connection number, ordinals counting up, and unique call
// ids; clients open a connection per call.
func TestConnectionPools(t *testing.T) {
	_, out := testbedOutput(t, nil)
	tr := out.Truth
	ms := tr.Trace.Messages
	calls := callOf(tr)
	type conn struct {
		id       uint32
		seq      [2]uint32
		lastRecv int64
		n        int
	}
	conns := map[trace.Sym]*conn{}
	ids := map[trace.Sym]bool{}
	for r := range ms {
		c, ok := calls[r]
		if !ok {
			continue
		}
		if ids[ms[c].CallID] {
			t.Fatalf("call id %s used twice", tr.Trace.Str(ms[c].CallID))
		}
		ids[ms[c].CallID] = true
	}
	order := make([]int, 0, len(calls))
	for r := range calls {
		order = append(order, r)
	}
	slices.SortFunc(order, func(a, b int) int { return int(ms[calls[a]].SendTS - ms[calls[b]].SendTS) })
	for _, r := range order {
		c := calls[r]
		from, to := tr.Trace.Str(ms[c].SrcNode), tr.Trace.Str(ms[c].DstNode)
		if ms[c].Conn == 0 || ms[c].Conn != ms[r].Conn {
			t.Fatalf("call %d and its return on connections %d and %d", c, ms[c].Conn, ms[r].Conn)
		}
		if strings.HasPrefix(from, "10.9.") {
			if ms[c].Seq != 1 || ms[r].Seq != 1 {
				t.Fatalf("a client's call on a reused connection")
			}
			continue
		}
		if from != "10.0.1.1" || to != "10.0.2.1" {
			continue
		}
		k := conns[ms[c].Src]
		if k == nil {
			k = &conn{id: ms[c].Conn}
			conns[ms[c].Src] = k
		}
		if k.id != ms[c].Conn || int64(ms[c].SendTS) < k.lastRecv {
			t.Fatalf("pooled connection %s: call %d overlaps the previous one or changes number", tr.Trace.Str(ms[c].Src), c)
		}
		k.seq[0]++
		k.seq[1]++
		if ms[c].Seq != k.seq[0] || ms[r].Seq != k.seq[1] {
			t.Fatalf("call %d: ordinals %d/%d, want %d", c, ms[c].Seq, ms[r].Seq, k.seq[0])
		}
		k.lastRecv = int64(ms[r].RecvTS)
		k.n++
	}
	if len(conns) != 4 {
		t.Fatalf("web uses %d connections to app, want the pool's 4", len(conns))
	}
	for src, k := range conns {
		if k.n < 50 {
			t.Errorf("connection %s carried only %d calls", tr.Trace.Str(src), k.n)
		}
	}
	if out.Stats.PoolWaits == 0 {
		t.Error("no call waited for a pooled connection")
	}
}

// TestOptionalFailedBackground checks optional calls, failures and
// background instances against the truth's trees.
func TestOptionalFailedBackground(t *testing.T) {
	_, out := testbedOutput(t, nil)
	tr := out.Truth
	ms := tr.Trace.Messages
	str := func(s trace.Sym) string { return tr.Trace.Str(s) }
	calls := callOf(tr)
	kids := map[int][]int{} // CALL -> calls made for it
	for i, m := range ms {
		if m.Kind != trace.KindCall || tr.Parent[i] < 0 {
			continue
		}
		p := int(tr.Parent[i])
		if ms[p].Kind == trace.KindReturn {
			p = int(tr.Parent[calls[p]]) // a series: the call the previous child was made for
			for ms[p].Kind == trace.KindReturn {
				p = int(tr.Parent[calls[p]])
			}
		}
		kids[p] = append(kids[p], i)
	}
	appCalls, withStore, failed := 0, 0, 0
	for r, c := range calls {
		if str(ms[c].DstNode) != "10.0.2.1" || str(ms[c].SrcNode) != "10.0.1.1" || tr.Meta.Tracelets[tr.Tracelet[c]] != "page" {
			continue
		}
		appCalls++
		if str(ms[r].Label) == "500" {
			failed++
			if len(kids[c]) != 0 {
				t.Fatalf("failed call %d made %d calls", c, len(kids[c]))
			}
			continue
		}
		if str(ms[r].Label) != "200" {
			t.Fatalf("return label %q", str(ms[r].Label))
		}
		for _, k := range kids[c] {
			if str(ms[k].DstNode) == "10.0.4.1" {
				withStore++
			}
		}
	}
	if f := float64(failed) / float64(appCalls); f < 0.02 || f > 0.09 {
		t.Errorf("%d of %d app calls failed, want about 5%%", failed, appCalls)
	}
	if f := float64(withStore) / float64(appCalls-failed); f < 0.22 || f > 0.38 {
		t.Errorf("%d of %d app calls went on to the store, want about 30%%", withStore, appCalls-failed)
	}
	// A failure propagates: the root's return fails too, and only then.
	failedInst := map[int32]bool{}
	for r, c := range calls {
		if str(ms[c].DstNode) == "10.0.2.1" && str(ms[r].Label) == "500" {
			failedInst[tr.Instance[c]] = true
		}
	}
	for r, c := range calls {
		if tr.Parent[c] == -1 && str(ms[c].SrcNode) != "10.0.1.1" {
			if want := map[bool]string{true: "500", false: "200"}[failedInst[tr.Instance[c]]]; str(ms[r].Label) != want {
				t.Fatalf("instance %d: root returns %q, want %q", tr.Instance[c], str(ms[r].Label), want)
			}
		}
	}
	if out.Stats.Failed == 0 || out.Stats.Skipped == 0 || out.Stats.Background == 0 {
		t.Errorf("stats %+v", out.Stats)
	}
	if !slices.Equal(tr.Meta.Background, []string{"health"}) {
		t.Errorf("background tracelets %v", tr.Meta.Background)
	}
	bg := 0
	for i, m := range ms {
		if tr.Parent[i] == -1 && tr.Meta.Tracelets[tr.Tracelet[i]] == "health" {
			bg++
			if str(m.SrcNode) != "10.0.1.1" || str(m.Label) != "GET /health" {
				t.Fatalf("background root %s -> %s %q", str(m.SrcNode), str(m.DstNode), str(m.Label))
			}
		}
	}
	if bg != out.Stats.Background {
		t.Errorf("%d background roots, stats say %d", bg, out.Stats.Background)
	}
}

// TestPropagatedIDsAndTokens checks the payload evidence: every call to
// web carries the instance's X-Request-ID and every call to app the same
// value as a traceparent, the cache and the store none; a call's tokens
// are the ones of the call it was made for (thinned) plus noise; labels
// follow the callee's protocol.
func TestPropagatedIDsAndTokens(t *testing.T) {
	_, out := testbedOutput(t, nil)
	tr := out.Truth
	ms := tr.Trace.Messages
	str := func(s trace.Sym) string { return tr.Trace.Str(s) }
	ids := map[int32]string{}
	for i, m := range ms {
		if m.Kind != trace.KindCall {
			continue
		}
		to := str(m.DstNode)
		src, val, _ := strings.Cut(str(m.ReqID), ":")
		switch to {
		case "10.0.1.1":
			if src != "x-request-id" || len(val) != 32 {
				t.Fatalf("call to web carries %q", str(m.ReqID))
			}
		case "10.0.2.1":
			if src != "traceparent" {
				t.Fatalf("call to app carries %q", str(m.ReqID))
			}
		default:
			if m.ReqID != 0 {
				t.Fatalf("call to %s carries %q", to, str(m.ReqID))
			}
			continue
		}
		if prev, ok := ids[tr.Instance[i]]; ok && prev != val {
			t.Fatalf("instance %d carries ids %s and %s", tr.Instance[i], prev, val)
		}
		ids[tr.Instance[i]] = val
		want := map[string]string{"10.0.1.1": "GET /web", "10.0.2.1": "GET /app"}[to]
		if l := str(m.Label); l != want && l != "GET /health" {
			t.Fatalf("call to %s labelled %q", to, l)
		}
	}
	seen := map[string]bool{}
	for _, v := range ids {
		if seen[v] {
			t.Fatal("two instances share a request id")
		}
		seen[v] = true
	}
	// Tokens: the request's reach its calls with the share.
	calls := callOf(tr)
	shared, offered := 0, 0
	for r, c := range calls {
		ct, rt := tr.Trace.Syms.Tokens(ms[c].Tokens), tr.Trace.Syms.Tokens(ms[r].Tokens)
		if len(ct) == 0 || len(rt) == 0 {
			t.Fatalf("call %d or its return without tokens", c)
		}
		for _, h := range rt {
			if !slices.Contains(ct, h) && !noiseHash(h) {
				t.Fatalf("return %d has a token its call has not", r)
			}
		}
		offered += len(ct)
		for _, h := range ct {
			if slices.Contains(rt, h) {
				shared++
			}
		}
		if str(ms[c].DstNode) == "10.0.3.1" && str(ms[c].Label) != "redis GET" {
			t.Fatalf("cache call labelled %q", str(ms[c].Label))
		}
	}
	if f := float64(shared) / float64(offered); f < 0.6 || f > 0.95 {
		t.Errorf("returns share %.2f of their call's tokens", f)
	}
}

// noiseHash reports whether h is the hash of a noise token of the default
// noise vocabulary.
func noiseHash(h uint64) bool {
	for k := range 64 {
		if farm.Fingerprint64([]byte(tokenText(noiseBit|tokenID(k)))) == h {
			return true
		}
	}
	return false
}

// TestEvidenceKeepsPaths checks that asking for evidence changes nothing
// but the evidence and the sizes: the same seed gives the same messages
// at the same times with the same parents.
func TestEvidenceKeepsPaths(t *testing.T) {
	_, with := testbedOutput(t, nil)
	_, without := testbedOutput(t, func(c *Config) {
		c.Evidence = nil
		for n, spec := range c.Nodes {
			spec.IDs, spec.Protocol, spec.Traced = "", "", false
			c.Nodes[n] = spec
		}
	})
	a, b := with.Truth, without.Truth
	if len(a.Parent) != len(b.Parent) {
		t.Fatalf("%d messages with evidence, %d without", len(a.Parent), len(b.Parent))
	}
	for i := range a.Parent {
		ma, mb := a.Trace.Messages[i], b.Trace.Messages[i]
		if ma.SendTS != mb.SendTS || ma.RecvTS != mb.RecvTS || a.Parent[i] != b.Parent[i] || a.Trace.Str(ma.Src) != b.Trace.Str(mb.Src) {
			t.Fatalf("message %d differs", i)
		}
		if mb.Evidence != (trace.Evidence{}) {
			t.Fatalf("message %d has evidence %+v without asking", i, mb.Evidence)
		}
	}
}

// TestPcapPayloadsAndSniffers writes the testbed's captures: requests are
// HTTP, Redis and memcached messages carrying the evidence of the trace,
// pooled connections are opened once and never closed, and a sniffer with
// drift and loss stamps and misses packets as configured.
func TestPcapPayloadsAndSniffers(t *testing.T) {
	c, out := testbedOutput(t, func(c *Config) {
		c.Instances = 150
		c.Sniffers = []Sniffer{{Name: "mirror"}, {Name: "app", Nodes: []string{"app"}, Offset: Duration(2 * time.Millisecond), DriftPPM: 40, Loss: 0.02}}
	})
	dir := t.TempDir()
	stats, err := WritePcaps(dir, out, c)
	if err != nil {
		t.Fatal(err)
	}
	type key struct{ src, dst netip.AddrPort }
	streams := map[key]*bytes.Buffer{}
	syns := map[key]int{}
	fins := map[key]int{}
	stamp := map[string]int64{} // packet bytes -> mirror's time
	for _, cp := range readPcapng(t, filepath.Join(dir, "mirror.pcapng")) {
		p := gopacket.NewPacket(cp.data, layers.LayerTypeEthernet, gopacket.Default)
		ip, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		tcp, _ := p.Layer(layers.LayerTypeTCP).(*layers.TCP)
		if ip == nil || tcp == nil {
			continue
		}
		stamp[string(cp.data[14:])] = cp.ts
		src, _ := netip.AddrFromSlice(ip.SrcIP)
		dst, _ := netip.AddrFromSlice(ip.DstIP)
		k := key{netip.AddrPortFrom(src, uint16(tcp.SrcPort)), netip.AddrPortFrom(dst, uint16(tcp.DstPort))}
		if tcp.SYN && !tcp.ACK {
			syns[k]++
		}
		if tcp.FIN {
			fins[k]++
		}
		if streams[k] == nil {
			streams[k] = &bytes.Buffer{}
		}
		streams[k].Write(tcp.Payload)
	}
	app := netip.MustParseAddrPort("10.0.2.1:8080")
	pooled, toWeb, toCache := 0, 0, 0
	for k, s := range streams {
		switch {
		case k.dst == app && k.src.Addr() == netip.MustParseAddr("10.0.1.1"):
			pooled++
			if syns[k] != 1 || fins[k] != 0 || fins[key{k.dst, k.src}] != 0 {
				t.Errorf("pooled connection %v: %d SYNs, %d FINs", k, syns[k], fins[k])
			}
			if n := strings.Count(s.String(), "traceparent: 00-"); n < 20 {
				t.Errorf("pooled connection %v carried %d requests with a traceparent", k, n)
			}
		case k.dst.Port() == 80:
			toWeb++
			if !strings.HasPrefix(s.String(), "GET /web?t0=") || !strings.Contains(s.String(), "\r\nX-Request-ID: ") {
				t.Fatalf("request to web: %q", s.String())
			}
		case k.dst.Port() == 6379:
			toCache++
			if !strings.HasPrefix(s.String(), "*2\r\n$3\r\nGET\r\n$") {
				t.Fatalf("request to the cache: %q", s.String())
			}
		}
	}
	if pooled != 4 || toWeb == 0 || toCache == 0 || toCache > 4 {
		t.Errorf("%d pooled connections web->app, %d to web, %d to the cache", pooled, toWeb, toCache)
	}
	// Every message's bytes: the streams hold exactly the messages' sizes.
	var want, got int64
	for _, m := range out.Truth.Trace.Messages {
		if m.Proto == trace.ProtoTCP {
			want += m.Bytes
		}
	}
	for _, s := range streams {
		got += int64(s.Len())
	}
	if want != got {
		t.Errorf("streams hold %d bytes, messages %d", got, want)
	}
	// The drifting sniffer: offset plus 40 ppm since the first packet, 2%
	// missed.
	start := stats[1].StartNS
	if start != stats[0].StartNS || start == 0 {
		t.Fatalf("start %d and %d", stats[0].StartNS, stats[1].StartNS)
	}
	n := 0
	for _, cp := range readPcapng(t, filepath.Join(dir, "app.pcapng")) {
		mt, ok := stamp[string(cp.data[14:])]
		if !ok {
			continue // a packet the mirror stamped at the other end (TTL differs)
		}
		want := mt + int64(2*time.Millisecond) + int64(math.Round(40e-6*float64(mt-start)))
		if d := cp.ts - want; d < -1 || d > 1 {
			t.Fatalf("drifting sniffer stamps %d, want %d", cp.ts, want)
		}
		n++
	}
	st := stats[1]
	if n == 0 || st.Missed == 0 {
		t.Fatalf("drift checked on %d packets, %d missed", n, st.Missed)
	}
	if f := float64(st.Missed) / float64(st.Packets+st.Missed); math.Abs(f-0.02) > 0.01 {
		t.Errorf("missed %.3f of the packets, want 0.02", f)
	}
	if out.Truth.Meta.Version != 2 {
		t.Errorf("truth version %d", out.Truth.Meta.Version)
	}
}

// TestEventLoop checks event_loop: the traced application server serves
// every call on its one thread, requests interleave on it (one request's
// messages between another's), none waits for a thread, its background
// calls share the thread, and event_loop with threads is refused.
func TestEventLoop(t *testing.T) {
	_, out := testbedOutput(t, func(c *Config) {
		n := c.Nodes["app"]
		n.Threads, n.EventLoop = 0, true
		c.Nodes["app"] = n
		c.Tracelets[2].From = "app"
		c.Tracelets[2].RPC.To = Choice{{Name: "cache", Weight: 1}}
	})
	tr := out.Truth
	ms := tr.Trace.Messages
	tasks := map[trace.Task]bool{}
	interleaved, last := 0, int32(-1)
	for i, m := range ms {
		if tr.Trace.Str(m.SrcNode) == "10.0.2.1" {
			tasks[m.Sender] = true
			if inst := tr.Instance[i]; last >= 0 && inst != last {
				interleaved++
			}
			last = tr.Instance[i]
		}
		if tr.Trace.Str(m.DstNode) == "10.0.2.1" {
			tasks[m.Receiver] = true
		}
	}
	if len(tasks) != 1 {
		t.Fatalf("%d threads at the event loop, want 1: %v", len(tasks), tasks)
	}
	for task := range tasks {
		if !task.Known() {
			t.Fatal("the traced event loop's messages carry no thread")
		}
	}
	if out.Stats.ThreadWaits != 0 {
		t.Errorf("%d calls waited for an event loop", out.Stats.ThreadWaits)
	}
	// Sends switch between instances far more often than one request
	// at a time would (12 clients: requests overlap on the one thread).
	if interleaved < 3*out.Stats.Instances/2 {
		t.Errorf("the event loop's sends switch instance %d times over %d instances", interleaved, out.Stats.Instances)
	}
	c := mustParse(t, testbedConfig)
	n := c.Nodes["app"]
	n.EventLoop = true
	c.Nodes["app"] = n
	if _, err := Generate(c, Options{}); err == nil || !strings.Contains(err.Error(), "event loop") {
		t.Errorf("event_loop with threads: %v", err)
	}
}
