package reconcile_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wirepath/wirepath/pcapio"
	"github.com/wirepath/wirepath/pipeline"
	"github.com/wirepath/wirepath/preload"
	"github.com/wirepath/wirepath/reconcile"
	"github.com/wirepath/wirepath/trace"
)

// The test system (testdata/system/make.sh): curl on client (traced) and
// client2 (untraced) → router → web (C, traced) → db (Go, untraced); web
// → cache (traced, unsniffed link) and → logger (traced, UNIX socket).
// Sniffers: clientside.pcapng on the router's client ports (clock +1.5 s,
// the reference), web.pcap on the web host (clock -0.75 s). The traced
// hosts run on the machine's clock.

const (
	webEP   = "10.30.2.11:8080"
	dbEP    = "10.30.2.21:7000"
	cacheEP = "10.30.3.31:7100"
)

// truth is what testdata/system/truth.txt says.
type truth struct {
	shifts map[string]time.Duration
	webPID int
	reqs   []request
	curl   map[string]int // client endpoint -> curl pid (traced clients)
}

type request struct {
	client, path, db, cache string
	body, partial           int
}

func readTruth(t *testing.T, dir string) *truth {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "truth.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := &truth{shifts: map[string]time.Duration{}, curl: map[string]int{}}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		w := strings.Fields(sc.Text())
		switch {
		case w[0] == "shift":
			d, err := time.ParseDuration(strings.TrimPrefix(w[2], "+"))
			if err != nil {
				t.Fatal(err)
			}
			tr.shifts[w[1]] = d
		case w[0] == "web" && w[1] == "pid":
			tr.webPID, _ = strconv.Atoi(w[2])
		case w[0] == "web" && w[1] == "req":
			// web req N CLIENT PATH db DB cache CACHE body B partial P
			b, _ := strconv.Atoi(w[10])
			p, _ := strconv.Atoi(w[12])
			tr.reqs = append(tr.reqs, request{client: w[3], path: w[4], db: w[6], cache: w[8], body: b, partial: p})
		case w[0] == "curl" && w[1] == "client":
			pid, _ := strconv.Atoi(w[2])
			tr.curl[w[3]] = pid
		}
	}
	if len(tr.reqs) == 0 || tr.webPID == 0 || len(tr.shifts) != 2 {
		t.Fatalf("truth.txt: incomplete: %+v", tr)
	}
	return tr
}

// packetTimes returns, per (source, destination) endpoint pair, the
// timestamps at which a capture saw TCP segments with data.
func packetTimes(t *testing.T, path string) map[[2]string]map[int64]bool {
	t.Helper()
	r, err := pcapio.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out := map[[2]string]map[int64]bool{}
	var rec pcapio.Record
	var p pcapio.Packet
	for {
		err := r.ReadRecord(&rec)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		pcapio.Decode(&p, rec.LinkType, rec.Data, rec.WireLen)
		if p.Status != pcapio.StatusOK || p.Proto != pcapio.ProtoTCP || p.PayloadLen == 0 {
			continue
		}
		k := [2]string{netip.AddrPortFrom(p.Src, p.SrcPort).String(), netip.AddrPortFrom(p.Dst, p.DstPort).String()}
		if out[k] == nil {
			out[k] = map[int64]bool{}
		}
		out[k][rec.TS] = true
	}
	return out
}

func runSystem(t *testing.T, dir string, naming reconcile.Naming) *pipeline.Result {
	t.Helper()
	cfg := pipeline.Config{
		Captures: []string{filepath.Join(dir, "clientside.pcapng"), filepath.Join(dir, "web.pcap")},
		Preload:  []string{filepath.Join(dir, "traces")},
	}
	cfg.Reconcile.Naming = naming
	res, err := pipeline.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Report.Check(); err != nil {
		t.Fatal(err)
	}
	if err := res.Flows.Check(); err != nil {
		t.Fatal(err)
	}
	return res
}

func TestSystem(t *testing.T) {
	dir := "testdata/system"
	if d := os.Getenv("WIREPATH_SYSTEM_DIR"); d != "" {
		dir = d // another run of make.sh
	}
	checkSystem(t, dir)
}

// TestSystemFresh runs the system again on this machine (as root, with the
// tools) and checks the new captures and traces the same way.
func TestSystemFresh(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: not running the test system")
	}
	if os.Geteuid() != 0 {
		t.Skip("not root: cannot create network namespaces")
	}
	for _, tool := range []string{"ip", "tc", "iptables", "gcc", "curl", "tcpdump", "dumpcap", "editcap", "make"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	// The run is kept for inspection if the test fails.
	dir, err := os.MkdirTemp("", "wirepath-system-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the captures and traces are kept in %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	out, err := exec.Command("testdata/system/make.sh", dir).CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "Operation not permitted") {
			t.Skipf("cannot create network namespaces here:\n%s", out)
		}
		t.Fatalf("make.sh: %v\n%s", err, out)
	}
	checkSystem(t, dir)
}

func checkSystem(t *testing.T, dir string) {
	tr := readTruth(t, dir)
	res := runSystem(t, dir, reconcile.NameProcess)
	tc := res.Trace
	rep := res.Report

	// Clocks: the sniffers' as editcap shifted them, the traced hosts'
	// (the machine's) against the reference.
	refShift := tr.shifts["clientside.pcapng"]
	clocks := map[string]trace.Clock{}
	for _, c := range tc.Meta.Clocks {
		clocks[c.Name] = c
	}
	near := func(what string, c trace.Clock, want time.Duration, slack time.Duration) {
		t.Helper()
		if !c.Known {
			t.Errorf("%s: clock unknown", what)
			return
		}
		err := time.Duration(c.OffsetNS) - want
		if err < 0 {
			err = -err
		}
		if err > time.Duration(c.UncertaintyNS)+slack {
			t.Errorf("%s: offset %v, want %v within ±%v (+%v)", what, time.Duration(c.OffsetNS), want, time.Duration(c.UncertaintyNS), slack)
		}
		if c.UncertaintyNS > int64(time.Millisecond) {
			t.Errorf("%s: uncertainty %v, want under 1ms", what, time.Duration(c.UncertaintyNS))
		}
		t.Logf("%s: %v ± %v (applied %v)", what, time.Duration(c.OffsetNS), time.Duration(c.UncertaintyNS), want)
	}
	webShift := tr.shifts["web.pcap"]
	near("sniffer web.pcap", clocks["web.pcap"], webShift-refShift, 10*time.Microsecond)
	for _, h := range []string{"client", "web", "cache"} {
		near("host "+h, clocks[h], -refShift, 10*time.Microsecond)
	}
	// Node offsets against the reference node (a client process, on the
	// reference sniffer's clock): the cache, which no sniffer saw, keeps
	// its host's clock; every other node the clock of its sniffer.
	nodeOff := map[string]trace.Offset{}
	for _, o := range tc.Meta.Offsets {
		nodeOff[o.Node] = o
	}
	cacheNode := nodeFor(t, res.Preload, "cache", "cache")
	webNode := fmt.Sprintf("web[%d]@web", tr.webPID)
	for node, want := range map[string]time.Duration{cacheNode: -refShift, webNode: 0, dbEP: 0, "10.30.1.3": 0} {
		o, ok := nodeOff[node]
		if !ok {
			t.Errorf("node %s has no offset; offsets %+v", node, tc.Meta.Offsets)
			continue
		}
		// The trace is on the reference clock: the offset was applied to
		// the node's timestamps, and the trace keeps it (AppliedNS).
		if o.Known && o.OffsetNS != 0 {
			t.Errorf("node %s: offset %v left after reconcile put the trace on one clock", node, time.Duration(o.OffsetNS))
		}
		near("node "+node, trace.Clock{Known: o.Known, OffsetNS: o.OffsetNS + o.AppliedNS, UncertaintyNS: o.UncertaintyNS}, want, 10*time.Microsecond)
	}

	// Message by message. The requests on one connection come in order.
	s1 := packetTimes(t, filepath.Join(dir, "clientside.pcapng"))
	s2 := packetTimes(t, filepath.Join(dir, "web.pcap"))
	// The web side's capture times on the reference clock: its offset,
	// with the drift pcapio fitted (the model every packet is corrected by).
	webModel := res.Offsets[1].Model
	for _, times := range s2 {
		local := make(map[int64]bool, len(times))
		for ts := range times {
			local[webModel.Local(ts)] = true
		}
		clear(times)
		maps.Copy(times, local)
	}
	inS1 := func(src, dst string, ts trace.Timestamp) bool { return s1[[2]string{src, dst}][int64(ts)] }
	inS2 := func(src, dst string, ts trace.Timestamp) bool { return s2[[2]string{src, dst}][int64(ts)] }
	byPair := map[[2]string][]*trace.Message{}
	for i := range tc.Messages {
		m := &tc.Messages[i]
		k := [2]string{tc.Str(m.Src), tc.Str(m.Dst)}
		byPair[k] = append(byPair[k], m)
	}
	next := func(src, dst string) *trace.Message {
		k := [2]string{src, dst}
		if len(byPair[k]) == 0 {
			t.Fatalf("no more messages %s -> %s", src, dst)
		}
		m := byPair[k][0]
		byPair[k] = byPair[k][1:]
		return m
	}
	check := func(m *trace.Message, srcNode, dstNode string, kind trace.Kind, bytes int64) {
		t.Helper()
		if got := tc.Str(m.SrcNode); got != srcNode {
			t.Errorf("%s -> %s: sender %q, want %q", tc.Str(m.Src), tc.Str(m.Dst), got, srcNode)
		}
		if got := tc.Str(m.DstNode); got != dstNode {
			t.Errorf("%s -> %s: receiver %q, want %q", tc.Str(m.Src), tc.Str(m.Dst), got, dstNode)
		}
		if m.Kind != kind || (bytes >= 0 && m.Bytes != bytes) {
			t.Errorf("%s -> %s: %v of %d bytes, want %v of %d", tc.Str(m.Src), tc.Str(m.Dst), m.Kind, m.Bytes, kind, bytes)
		}
		if !m.SendTS.Known() || !m.RecvTS.Known() {
			t.Errorf("%s -> %s: timestamps %v %v, want both", tc.Str(m.Src), tc.Str(m.Dst), m.SendTS, m.RecvTS)
		}
	}
	loggerNode := nodeFor(t, res.Preload, "web", "logger")
	var reqFixed int64
	for i, q := range tr.reqs {
		client := "10.30.1.3"
		if pid, ok := tr.curl[q.client]; ok {
			client = fmt.Sprintf("curl[%d]@client", pid)
		}
		// client -> web: the request, sent where the client's sniffer saw
		// it, received where the web host's saw it; the answer back, whole
		// (header and body writes, partial writes and all, coalesced).
		call := next(q.client, webEP)
		check(call, client, webNode, trace.KindCall, -1)
		// Every request is the same but for its path.
		if fixed := call.Bytes - int64(len(q.path)); reqFixed == 0 {
			reqFixed = fixed
		} else if fixed != reqFixed {
			t.Errorf("request %d: %d bytes, want %d", i+1, call.Bytes, reqFixed+int64(len(q.path)))
		}
		if !inS1(q.client, webEP, call.SendTS) || !inS2(q.client, webEP, call.RecvTS) {
			t.Errorf("request %d: send %d not a client-side capture time or receive %d not a web-side one", i+1, call.SendTS, call.RecvTS)
		}
		hdr := len(fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", q.body))
		ret := next(webEP, q.client)
		check(ret, webNode, client, trace.KindReturn, int64(hdr+q.body))
		if tc.Str(ret.CallID) != tc.Str(call.CallID) || call.CallID == 0 {
			t.Errorf("request %d: return's call id %q, call's %q", i+1, tc.Str(ret.CallID), tc.Str(call.CallID))
		}
		if !inS2(webEP, q.client, ret.SendTS) || !inS1(webEP, q.client, ret.RecvTS) {
			t.Errorf("request %d: answer sent %d not a web-side capture time or received %d not a client-side one", i+1, ret.SendTS, ret.RecvTS)
		}
		if ret.RecvTS < call.SendTS {
			t.Errorf("request %d: answer received before the request was sent", i+1)
		}
		// web -> db, two writes coalesced into one message, both times
		// from the web host's sniffer (db's home too).
		n := 0
		fmt.Sscanf(q.path[strings.LastIndexByte(q.path, '/')+1:], "%d", &n)
		dbq := next(q.db, dbEP)
		check(dbq, webNode, dbEP, trace.KindCall, int64(len(fmt.Sprintf("GET key %d\n", n))))
		val := 100 + (n*37)%900
		dbr := next(dbEP, q.db)
		check(dbr, dbEP, webNode, trace.KindReturn, int64(len(fmt.Sprintf("VAL %d\n", val))+val))
		for _, m := range []*trace.Message{dbq, dbr} {
			if !inS2(tc.Str(m.Src), tc.Str(m.Dst), m.SendTS) || !inS2(tc.Str(m.Src), tc.Str(m.Dst), m.RecvTS) {
				t.Errorf("request %d: db message times %d %d are not web-side capture times", i+1, m.SendTS, m.RecvTS)
			}
		}
		// web -> cache and web -> logger: traced only, process names at
		// both ends.
		check(next(q.cache, cacheEP), webNode, cacheNode, trace.KindCall, int64(len(fmt.Sprintf("PUT %d %d\n", n, val))))
		check(next(cacheEP, q.cache), cacheNode, webNode, trace.KindReturn, 3)
	}
	for k, ms := range byPair {
		if strings.HasPrefix(k[0], "unix:") || strings.HasPrefix(k[1], "unix:") {
			for _, m := range ms {
				if m.Proto != trace.ProtoUnix {
					t.Errorf("%v: proto %v", k, m.Proto)
				}
				want := [2]string{webNode, loggerNode}
				if strings.HasPrefix(k[0], "unix:/") {
					want = [2]string{loggerNode, webNode}
				}
				if tc.Str(m.SrcNode) != want[0] || tc.Str(m.DstNode) != want[1] {
					t.Errorf("unix message %s -> %s, want %s -> %s", tc.Str(m.SrcNode), tc.Str(m.DstNode), want[0], want[1])
				}
			}
			if len(ms) != len(tr.reqs) {
				t.Errorf("%d unix messages %v, want %d", len(ms), k, len(tr.reqs))
			}
			delete(byPair, k)
		}
	}
	for k, ms := range byPair {
		if len(ms) > 0 {
			t.Errorf("%d unexpected messages %s -> %s", len(ms), k[0], k[1])
		}
	}
	checkSystemEvidence(t, tc, webNode)

	// Accounting: every sniffed message used, every traced call accounted
	// for, the cache link and the UNIX socket traced only.
	if rep.FlowsIn != rep.FlowsUsed || rep.Calls["matched"] == 0 || rep.Calls["only_unix"] == 0 || rep.Calls["only_unsniffed"] == 0 {
		t.Errorf("accounting: %+v", rep)
	}
	if want := int64(len(tr.reqs)) * 8; rep.Messages != want || rep.BothEnds != want {
		t.Errorf("%d messages (%d with both ends), want %d with both ends", rep.Messages, rep.BothEnds, want)
	}
}

// checkSystemEvidence checks the evidence of the test system's trace:
// every message a traced process wrote carries that process and a thread
// as its sender, every one it read as its receiver, and no other message
// does (all the traced calls of the system are matched or traced only);
// the web tier, one thread, reads and writes on its main thread. Both
// directions of a connection share a number that no other connection has.
func checkSystemEvidence(t *testing.T, tc *trace.Trace, webNode string) {
	t.Helper()
	pidOf := func(node string) int32 {
		i, j := strings.IndexByte(node, '['), strings.IndexByte(node, ']')
		if i < 0 || j < i {
			return 0
		}
		pid, _ := strconv.Atoi(node[i+1 : j])
		return int32(pid)
	}
	conns := map[[2]string]uint32{}
	for i := range tc.Messages {
		m := &tc.Messages[i]
		for _, end := range []struct {
			node string
			task trace.Task
		}{{tc.Str(m.SrcNode), m.Sender}, {tc.Str(m.DstNode), m.Receiver}} {
			pid := pidOf(end.node)
			if end.task.PID != pid || (pid != 0) != (end.task.TID != 0) {
				t.Errorf("%s -> %s: task %v at %s", tc.Str(m.Src), tc.Str(m.Dst), end.task, end.node)
			}
			if end.node == webNode && end.task.TID != pid {
				t.Errorf("%s -> %s: web's thread %d, want its main thread %d", tc.Str(m.Src), tc.Str(m.Dst), end.task.TID, pid)
			}
		}
		k := [2]string{tc.Str(m.Src), tc.Str(m.Dst)}
		if k[0] > k[1] {
			k[0], k[1] = k[1], k[0]
		}
		if c, ok := conns[k]; ok && c != m.Conn || m.Conn == 0 {
			t.Errorf("%s -> %s: connection %d, earlier %d", tc.Str(m.Src), tc.Str(m.Dst), m.Conn, c)
		}
		conns[k] = m.Conn
	}
	seen := map[uint32][2]string{}
	for k, c := range conns {
		if o, ok := seen[c]; ok {
			t.Errorf("connection %d is both %v and %v", c, o, k)
		}
		seen[c] = k
	}
}

// nodeFor returns the process name of the traced process called proc on
// host.
func nodeFor(t *testing.T, tab *preload.Table, host, proc string) string {
	t.Helper()
	for _, p := range tab.Processes() {
		if p.Host == host && p.Name == proc {
			return fmt.Sprintf("%s[%d]@%s", p.Name, p.PID, p.Host)
		}
	}
	t.Fatalf("no traced process %s on %s", proc, host)
	return ""
}
