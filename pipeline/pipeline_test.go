package pipeline

import (
	"bufio"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wirepath/wirepath/flows"
	"github.com/wirepath/wirepath/nat"
	"github.com/wirepath/wirepath/pcapio"
	"github.com/wirepath/wirepath/preload"
	"github.com/wirepath/wirepath/reconcile"
	"github.com/wirepath/wirepath/trace"
)

// The NAT test network (testdata/nat/make.sh): clients and an outside
// server on one LAN, three real servers behind a NAT load balancer on the
// other, four sniffers (both LANs, a host sniffer on client 1 and on
// server 1).
var natCaptures = []string{"outside.pcap", "inside.pcap", "c1.pcapng", "s1.pcap"}

func natPaths() []string {
	var out []string
	for _, f := range natCaptures {
		out = append(out, filepath.Join("..", "testdata", "nat", f))
	}
	return out
}

// Names that exist only outside a translation: the virtual addresses
// and the masquerading addresses.
var outsideOnly = []string{"192.0.2.100", "192.0.2.1", "2001:db8:1::100", "2001:db8:1::1", "10.1.0.1"}

func outsideName(ep string) bool {
	h, _ := trace.SplitEndpoint(ep)
	return slices.Contains(outsideOnly, h)
}

func TestRunNAT(t *testing.T) {
	res, err := Run(Config{Captures: natPaths()})
	if err != nil {
		t.Fatal(err)
	}
	tr := res.Trace
	if err := res.Report.Check(); err != nil {
		t.Fatal(err)
	}
	if err := res.Flows.Check(); err != nil {
		t.Fatal(err)
	}
	// The translations are in the trace's metadata ...
	want := map[[2]string]bool{
		{"192.0.2.100:80", "10.1.0.11:8080"}: true, {"192.0.2.100:80", "10.1.0.12:8080"}: true,
		{"192.0.2.100:81", "10.1.0.13:8080"}: true, {"192.0.2.100:53", "10.1.0.11:5353"}: true,
	}
	for _, a := range tr.Meta.Aliases {
		delete(want, [2]string{a.Outside, a.Inside})
	}
	if len(want) > 0 {
		t.Errorf("aliases %v lack %v", tr.Meta.Aliases, want)
	}
	// ... and undone in its messages: nothing is named by an outside
	// name, and every message has both ends (a sniffer on each side).
	if len(tr.Messages) == 0 {
		t.Fatal("no messages")
	}
	for i := range tr.Messages {
		m := &tr.Messages[i]
		for _, s := range []trace.Sym{m.Src, m.Dst, m.SrcNode, m.DstNode} {
			if outsideName(tr.Str(s)) {
				t.Errorf("message %d: %s -> %s names %s", i, tr.Str(m.Src), tr.Str(m.Dst), tr.Str(s))
			}
		}
		if !m.SendTS.Known() || !m.RecvTS.Known() {
			t.Errorf("message %d (%s -> %s): one end unknown", i, tr.Str(m.Src), tr.Str(m.Dst))
		}
	}
	// Every sniffer's clock is tied to the reference: inside.pcap only
	// through the translated packets (nat), s1.pcap through inside.pcap.
	for _, c := range tr.Meta.Clocks {
		if !c.Known {
			t.Errorf("clock %s unknown", c.Name)
		}
	}
	if res.Offsets[1].Method != "nat" {
		t.Errorf("inside.pcap's offset: %+v, want one nat found", res.Offsets[1])
	}
	if o := res.Offsets[3]; !o.Known || len(o.Via) == 0 || o.Via[0] != 1 || o.Uncertainty <= res.Offsets[1].Uncertainty {
		t.Errorf("s1.pcap's offset %+v: want it chained through inside.pcap, with more uncertainty than %d", o, res.Offsets[1].Uncertainty)
	}
	// Every stage's accounting is in the metadata.
	stages := map[string]bool{}
	for _, c := range tr.Meta.Accounting {
		stages[c.Stage] = true
	}
	for _, s := range []string{"pcapio", "nat", "flows", "reconcile"} {
		if !stages[s] {
			t.Errorf("no %s accounting", s)
		}
	}
}

// Without NAT, the same captures keep the outside names: the messages
// of one translated connection are two connections.
func TestMessagesNoNAT(t *testing.T) {
	count := func(noNAT bool) (outside, total int) {
		_, err := Messages(Config{Captures: natPaths(), NoNAT: noNAT}, func(m *flows.Message) error {
			total++
			if outsideName(m.Src.String()) || outsideName(m.Dst.String()) {
				outside++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	o1, n1 := count(false)
	o2, n2 := count(true)
	if o1 != 0 || o2 == 0 || n2 <= n1 {
		t.Errorf("with NAT undone: %d of %d messages name an outside address; without: %d of %d", o1, n1, o2, n2)
	}
}

func TestCompleteOffsets(t *testing.T) {
	offs := []pcapio.Offset{
		{Sniffer: 0, Known: true, Method: "reference"},
		{Sniffer: 1, Known: true, Offset: 1000, Uncertainty: 10, Method: "symmetric"},
		{Sniffer: 2},
		{Sniffer: 3},
		{Sniffer: 4},
	}
	clocks := []nat.ClockOffset{
		{A: 2, B: 3, Known: true, Offset: 7, Uncertainty: 3, SamplesAB: 4, SamplesBA: 5}, // chained after 1-2
		{A: 1, B: 2, Known: true, Offset: -500, Uncertainty: 20, SamplesAB: 9, SamplesBA: 8},
		{A: 0, B: 4, Known: false},
	}
	if !completeOffsets(offs, clocks) {
		t.Fatal("nothing completed")
	}
	if o := offs[2]; !o.Known || o.Offset != 500 || o.Uncertainty != 30 || o.Method != "nat" || o.Samples != 8 || !slices.Equal(o.Via, []pcapio.SnifferID{1}) {
		t.Errorf("sniffer 2: %+v", o)
	}
	if o := offs[3]; !o.Known || o.Offset != 507 || o.Uncertainty != 33 || o.Samples != 4 || !slices.Equal(o.Via, []pcapio.SnifferID{1, 2}) {
		t.Errorf("sniffer 3: %+v", o)
	}
	if offs[4].Known || completeOffsets(offs, clocks) {
		t.Errorf("sniffer 4 known, or a second pass changed something: %+v", offs[4])
	}
}

// With two sniffers pcapio knows tied to an unknown one, the offset
// comes through the one with the least summed uncertainty, its own
// included.
func TestCompleteOffsetsLeastUncertainty(t *testing.T) {
	offs := []pcapio.Offset{
		{Sniffer: 0, Known: true, Method: "reference"},
		{Sniffer: 1, Known: true, Offset: 1000, Uncertainty: 500, Method: "one-way", Via: []pcapio.SnifferID{3}},
		{Sniffer: 2},
	}
	clocks := []nat.ClockOffset{
		{A: 0, B: 2, Known: true, Offset: 40, Uncertainty: 300, SamplesAB: 2, SamplesBA: 3},
		{A: 1, B: 2, Known: true, Offset: -950, Uncertainty: 10, SamplesAB: 9, SamplesBA: 8},
	}
	completeOffsets(offs, clocks)
	if o := offs[2]; o.Offset != 40 || o.Uncertainty != 300 || o.Samples != 2 || !slices.Equal(o.Via, []pcapio.SnifferID{0}) {
		t.Errorf("sniffer 2: %+v", o)
	}
	offs[1].Uncertainty, offs[2] = 100, pcapio.Offset{Sniffer: 2}
	completeOffsets(offs, clocks)
	if o := offs[2]; o.Offset != 50 || o.Uncertainty != 110 || o.Samples != 8 || !slices.Equal(o.Via, []pcapio.SnifferID{3, 1}) {
		t.Errorf("sniffer 2: %+v", o)
	}
}

// LearnNAT is Run's learning pass alone: the same table, the offsets
// completed, the learning pass's accounting.
func TestLearnNAT(t *testing.T) {
	res, err := LearnNAT(Config{Captures: natPaths(), NoNAT: true})
	if err != nil {
		t.Fatal(err)
	}
	run, err := Run(Config{Captures: natPaths()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Trace != nil || res.Flows != nil || res.NAT == nil {
		t.Fatalf("result: %+v", res)
	}
	// Run learns while it renames, on clocks already completed across the
	// translation (from the read-ahead): the same mappings, but the times
	// of their matches on the translated sniffer's side move by the
	// offset nat measured, and what is left of that offset is about 0.
	if len(res.NAT.Mappings) != len(run.NAT.Mappings) || res.NAT.Stats != run.NAT.Stats {
		t.Fatalf("learned %d mappings, Run %d; stats %+v, Run %+v", len(res.NAT.Mappings), len(run.NAT.Mappings), res.NAT.Stats, run.NAT.Stats)
	}
	for i, m := range res.NAT.Mappings {
		r := run.NAT.Mappings[i]
		if d := m.FirstNS - r.FirstNS; d < -5000 || d > 5000 {
			t.Errorf("mapping %d first match moved %d ns", i, d)
		}
		m.FirstNS, m.LastNS = r.FirstNS, r.LastNS
		if m != r {
			t.Errorf("mapping %d: %+v, Run %+v", i, m, r)
		}
	}
	for _, c := range run.NAT.Clocks {
		if c.Known && (c.Offset < -c.Uncertainty || c.Offset > c.Uncertainty) {
			t.Errorf("Run's residual clock offset %+v: the completed offset was not applied", c)
		}
	}
	// Run may estimate more; what the learning knew it keeps.
	nats := 0
	for i, o := range res.Offsets {
		if o.Known && (o.Offset != run.Offsets[i].Offset || o.Method != run.Offsets[i].Method) {
			t.Errorf("sniffer %d: %+v, Run %+v", i, o, run.Offsets[i])
		}
		if o.Method == "nat" {
			nats++
		}
	}
	if nats == 0 {
		t.Errorf("no offset completed by nat: %+v", res.Offsets)
	}
	if res.Capture.Packets == 0 || len(res.Accounting) == 0 || res.Accounting[0].Stage != "pcapio" {
		t.Errorf("accounting: %+v", res.Accounting)
	}
	if _, err := LearnNAT(Config{Captures: natPaths(), NAT: nat.Options{Window: -1}}); err == nil {
		t.Error("bad NAT options accepted")
	}
}

// The IP protocol numbers stages without packets use are pcapio's.
func TestIPProtoNumbers(t *testing.T) {
	if trace.IPProtoTCP != pcapio.ProtoTCP || trace.IPProtoUDP != pcapio.ProtoUDP {
		t.Fatalf("trace %d/%d, pcapio %d/%d", trace.IPProtoTCP, trace.IPProtoUDP, pcapio.ProtoTCP, pcapio.ProtoUDP)
	}
}

func TestExpandPaths(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"b.jsonl", "a.jsonl.gz", "c.txt"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := preload.ExpandPaths([]string{dir, filepath.Join(dir, "c.txt")})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "a.jsonl.gz"), filepath.Join(dir, "b.jsonl"), filepath.Join(dir, "c.txt")}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	empty := t.TempDir()
	if _, err := preload.ExpandPaths([]string{empty}); err == nil || !strings.Contains(err.Error(), empty) {
		t.Errorf("empty directory: %v", err)
	}
}

// TestProgress checks the stages report in order and finish.
func TestProgress(t *testing.T) {
	var stages []Stage
	last := map[Stage][2]int64{}
	_, err := Run(Config{Captures: natPaths(), Progress: func(s Stage, done, total int64) {
		if len(stages) == 0 || stages[len(stages)-1] != s {
			stages = append(stages, s)
		}
		last[s] = [2]int64{done, total}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(stages, []Stage{StageMessages, StageReconcile}) {
		t.Errorf("stages %v", stages)
	}
	for s, dt := range last {
		if dt[0] != dt[1] {
			t.Errorf("%v ended at %d of %d", s, dt[0], dt[1])
		}
	}
}

// TestDemo checks the whole front half on the demo system (testdata/demo,
// from the demo branch: a client behind a NAT load balancer, two nginx, an
// app, Redis and an auth service, three sniffers with shifted clocks). It
// runs where the demo's files are (or WIREPATH_DEMO_DIR points to them).
func TestDemo(t *testing.T) {
	dir := os.Getenv("WIREPATH_DEMO_DIR")
	if dir == "" {
		dir = filepath.Join("..", "testdata", "demo")
	}
	caps := []string{filepath.Join(dir, "outside.pcapng"), filepath.Join(dir, "inside.pcapng.gz"), filepath.Join(dir, "lb-any.pcap.gz")}
	for _, c := range caps {
		if _, err := os.Stat(c); err != nil {
			t.Skipf("no demo captures: %v", err)
		}
	}
	cfg := Config{Captures: caps}
	cfg.Reconcile.Naming = reconcile.NameRole
	res, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tr := res.Trace
	if err := res.Report.Check(); err != nil {
		t.Fatal(err)
	}
	// The sniffers' clocks as editcap shifted them.
	for _, w := range []struct {
		name  string
		shift time.Duration
	}{{"inside.pcapng.gz", 83250 * time.Millisecond}, {"lb-any.pcap.gz", -12500 * time.Millisecond}} {
		i := slices.IndexFunc(tr.Meta.Clocks, func(c trace.Clock) bool { return c.Name == w.name })
		if i < 0 {
			t.Fatalf("no clock %s", w.name)
		}
		c := tr.Meta.Clocks[i]
		if d := time.Duration(c.OffsetNS) - w.shift; !c.Known || d < -100*time.Microsecond || d > 100*time.Microsecond {
			t.Errorf("%s: offset %v ± %v, applied %v", w.name, time.Duration(c.OffsetNS), time.Duration(c.UncertaintyNS), w.shift)
		}
	}
	// tcpdump -i any on the balancer sees each segment of the balanced
	// connections on both sides of the NAT: those twins are copies, not
	// retransmissions (tshark finds none; 450 segments and 450 SYNs were
	// counted as retransmitted before, issue 12).
	if st := res.Flows; st.RetransSegments != 0 || st.SYNRetrans != 0 || st.CopySegments == 0 {
		t.Errorf("%d retransmitted segments, %d retransmitted SYNs, %d copies: want 0, 0 and the NAT twins", st.RetransSegments, st.SYNRetrans, st.CopySegments)
	}
	// The trace is on one clock: no message arrives before it was sent
	// (150 did, by up to 15 µs, before reconcile applied the node
	// offsets; issue 12).
	for i := range tr.Messages {
		if m := &tr.Messages[i]; m.SendTS.Known() && m.RecvTS.Known() && m.RecvTS < m.SendTS {
			t.Fatalf("message %d received %v before it was sent", i, time.Duration(m.SendTS-m.RecvTS))
		}
	}
	for _, o := range tr.Meta.Offsets {
		if o.Known && o.OffsetNS != 0 {
			t.Errorf("node %s: offset %v not applied", o.Node, time.Duration(o.OffsetNS))
		}
	}
	// The load balancer's translations.
	aliases := map[string]bool{}
	for _, a := range tr.Meta.Aliases {
		aliases[a.Kind+" "+a.Outside+" "+a.Inside] = true
	}
	for _, a := range []string{"dnat 10.10.0.100:80 10.20.0.11:80", "dnat 10.10.0.100:80 10.20.0.12:80", "snat 10.20.0.1:* 10.10.0.2:*"} {
		if !aliases[a] {
			t.Errorf("no alias %q in %v", a, aliases)
		}
	}
	// Every request the client made is one CALL from the client to a web
	// server, sent when the client's log says it was in flight, whose
	// RETURN came back before the client finished.
	type req struct{ start, end int64 }
	var reqs []req
	f, err := os.Open(filepath.Join(dir, "ground-truth.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan()
	for sc.Scan() {
		w := strings.Split(sc.Text(), "\t")
		start, _ := strconv.ParseInt(w[0], 10, 64)
		d, err := time.ParseDuration(w[4])
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, req{start, start + int64(d)})
	}
	calls := map[string]*trace.Message{}
	var n int
	for i := range tr.Messages {
		m := &tr.Messages[i]
		if tr.Str(m.SrcNode) != "10.10.0.2" {
			continue
		}
		n++
		if dst := tr.Str(m.DstNode); m.Kind != trace.KindCall || (dst != "10.20.0.11:80" && dst != "10.20.0.12:80") {
			t.Errorf("client message to %s, kind %v", dst, m.Kind)
		}
		if !m.SendTS.Known() || !m.RecvTS.Known() {
			t.Errorf("client call with one end: %v %v", m.SendTS, m.RecvTS)
		}
		if !slices.ContainsFunc(reqs, func(q req) bool { return q.start <= int64(m.SendTS) && int64(m.SendTS) <= q.end }) {
			t.Errorf("a call sent at %d, when no request was in flight", m.SendTS)
		}
		calls[tr.Str(m.CallID)] = m
	}
	if n != len(reqs) {
		t.Errorf("%d client calls, %d requests in the ground truth", n, len(reqs))
	}
	for i := range tr.Messages {
		m := &tr.Messages[i]
		c := calls[tr.Str(m.CallID)]
		if m.Kind != trace.KindReturn || c == nil {
			continue
		}
		if !slices.ContainsFunc(reqs, func(q req) bool {
			return q.start <= int64(c.SendTS) && int64(m.RecvTS) <= q.end+int64(time.Millisecond)
		}) {
			t.Errorf("call at %d returned at %d, after its request ended", c.SendTS, m.RecvTS)
		}
		delete(calls, tr.Str(m.CallID))
	}
	if len(calls) > 0 {
		t.Errorf("%d client calls without a return", len(calls))
	}
	if addr := netip.MustParseAddr("10.10.0.100"); slices.ContainsFunc(tr.Messages, func(m trace.Message) bool {
		h, _ := trace.SplitEndpoint(tr.Str(m.Dst))
		return h == addr.String()
	}) {
		t.Error("a message still goes to the virtual address")
	}
}
