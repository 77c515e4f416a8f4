package gen

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

// mustBuiltin loads a shipped config and shortens it for tests.
func mustBuiltin(t testing.TB, name string, dur time.Duration) *Config {
	t.Helper()
	c, err := LoadConfig(name)
	if err != nil {
		t.Fatal(err)
	}
	if dur > 0 {
		c.Duration = Duration(dur)
	}
	return c
}

func mustGenerate(t testing.TB, c *Config) *Output {
	t.Helper()
	out, err := Generate(c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkTruth verifies the causal invariants every generated truth must
// satisfy, independently of how the generator builds it.
func checkTruth(t *testing.T, tr *Truth) {
	t.Helper()
	if err := tr.check(); err != nil {
		t.Fatal(err)
	}
	ms := tr.Trace.Messages
	for i := range ms {
		m := &ms[i]
		if m.RecvTS < m.SendTS {
			t.Fatalf("message %d arrives before it is sent", i)
		}
		if i > 0 && ms[i-1].SendTS > m.SendTS {
			t.Fatalf("truth not in send order at %d", i)
		}
		p := tr.Parent[i]
		if p < 0 {
			continue
		}
		pm := &ms[p]
		if pm.DstNode != m.SrcNode {
			t.Fatalf("message %d from %s is caused by message %d to %s", i, tr.Trace.Str(m.SrcNode), p, tr.Trace.Str(pm.DstNode))
		}
		if m.SendTS < pm.RecvTS {
			t.Fatalf("message %d is sent before its cause %d arrives", i, p)
		}
	}
	// Every CALL has exactly one RETURN with the same call id, in reverse.
	calls := make(map[trace.Sym]int)
	for i := range ms {
		m := &ms[i]
		switch m.Kind {
		case trace.KindCall:
			calls[m.CallID]++
		case trace.KindReturn:
			calls[m.CallID]--
		}
	}
	for id, n := range calls {
		if n != 0 {
			t.Fatalf("call id %s: %d more calls than returns", tr.Trace.Str(id), n)
		}
	}
}

func TestBuiltinsGenerateConsistentTruth(t *testing.T) {
	for _, b := range Builtins() {
		t.Run(b.Name, func(t *testing.T) {
			c := mustBuiltin(t, b.Name, 20*time.Second)
			out := mustGenerate(t, c)
			if out.Stats.Instances == 0 || out.Stats.Messages != len(out.Truth.Trace.Messages) || out.Stats.Observed != len(out.Trace.Messages) {
				t.Fatalf("stats %+v", out.Stats)
			}
			checkTruth(t, out.Truth)
			ps, err := out.Truth.Patterns(causal.AggregateOptions{Naming: causal.DefaultNaming()})
			if err != nil {
				t.Fatal(err)
			}
			total := 0
			for _, p := range ps {
				total += p.Count
				if !strings.HasPrefix(p.Signature, "CLIENT->") {
					t.Errorf("pattern %s does not start at CLIENT", p.Signature)
				}
			}
			if total != out.Stats.Instances {
				t.Errorf("patterns hold %d instances, generated %d", total, out.Stats.Instances)
			}
		})
	}
}

func TestShippedConfigsMatchTestdata(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "gen")
	for _, b := range Builtins() {
		got, err := os.ReadFile(filepath.Join(dir, b.Name+".yaml"))
		if err != nil {
			t.Fatalf("%v (testdata/gen must hold a copy of every shipped config)", err)
		}
		if !bytes.Equal(got, b.Source) {
			t.Errorf("testdata/gen/%s.yaml differs from causal/gen/configs/%s.yaml", b.Name, b.Name)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != len(Builtins()) {
		t.Errorf("testdata/gen has %d files, %d configs are shipped", len(ents), len(Builtins()))
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	c := mustBuiltin(t, "multitier", 5*time.Second)
	a, b := mustGenerate(t, c), mustGenerate(t, c)
	var ba, bb bytes.Buffer
	if err := trace.WriteTSV(&ba, a.Trace); err != nil {
		t.Fatal(err)
	}
	trace.WriteTSV(&bb, b.Trace)
	if !bytes.Equal(ba.Bytes(), bb.Bytes()) {
		t.Fatal("two runs of one config differ")
	}
	c.Seed++
	d := mustGenerate(t, c)
	var bd bytes.Buffer
	trace.WriteTSV(&bd, d.Trace)
	if bytes.Equal(ba.Bytes(), bd.Bytes()) {
		t.Fatal("another seed gives the same trace")
	}
}

// TestTruthDelaysMatchConfig checks the generated delays against the
// configuration: the per-hop node delays of the true patterns are the
// configured means, and the added delay at WS2 is there.
func TestTruthDelaysMatchConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  string
		want float64 // µs, WS2 between AUTH's return and the AP call
	}{
		{"multitier", 50e3},
		{"multitier-delay", 250e3},
	} {
		c := mustBuiltin(t, tc.cfg, 30*time.Second)
		c.Clients = 64
		out := mustGenerate(t, c)
		ps, err := out.Truth.Patterns(causal.AggregateOptions{Naming: causal.DefaultNaming()})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range ps {
			for _, h := range p.Hops {
				if h.Parent == nil || h.NodeDelay == nil || h.NodeDelay.N < 100 {
					continue
				}
				want := 50e3 // a call
				if h.Kind == "RETURN" {
					want = 10e3
					if strings.HasPrefix(p.Signature, "CLIENT->WS1(WS1->CLIENT)") || strings.HasPrefix(p.Signature, "CLIENT->WS2(WS2->CLIENT)") {
						want = 5e3
					}
				}
				if h.From == "WS2" && strings.HasPrefix(h.To, "AP") {
					want = tc.want
					n++
				}
				if math.Abs(h.NodeDelay.Mean-want) > 0.05*want {
					t.Errorf("%s: %s hop %s->%s node delay %.0f µs, want %.0f", tc.cfg, p.Signature, h.From, h.To, h.NodeDelay.Mean, want)
				}
				if h.NetDelay == nil || math.Abs(h.NetDelay.Mean-100) > 10 {
					t.Errorf("%s: net delay %v, want 100 µs", tc.cfg, h.NetDelay)
				}
			}
		}
		if n == 0 {
			t.Errorf("%s: no WS2->AP hop", tc.cfg)
		}
	}
}

func TestSkewShiftsTimestamps(t *testing.T) {
	c := mustBuiltin(t, "multitier", 5*time.Second)
	c.Skew = map[string]Duration{"WS2": Duration(30 * time.Millisecond), "CLIENT": Duration(-2 * time.Second)}
	out := mustGenerate(t, c)
	tr := out.Truth
	shift := func(node string) int64 {
		switch {
		case node == "WS2":
			return int64(30 * time.Millisecond)
		case strings.HasPrefix(node, "10.9."):
			return int64(-2 * time.Second)
		}
		return 0
	}
	for i, o := range tr.Observed {
		if o < 0 {
			t.Fatal("lost a message without a loss model")
		}
		tm, om := tr.Trace.Messages[i], out.Trace.Messages[o]
		if int64(om.SendTS-tm.SendTS) != shift(tr.Trace.Str(tm.SrcNode)) || int64(om.RecvTS-tm.RecvTS) != shift(tr.Trace.Str(tm.DstNode)) {
			t.Fatalf("message %d: observed %d/%d, true %d/%d", i, om.SendTS, om.RecvTS, tm.SendTS, tm.RecvTS)
		}
		if om.Src != tm.Src || om.Dst != tm.Dst || out.Trace.Str(om.Src) != tr.Trace.Str(tm.Src) {
			t.Fatalf("message %d: endpoints differ", i)
		}
	}
	for i := 1; i < len(out.Trace.Messages); i++ {
		if out.Trace.Messages[i].Time() < out.Trace.Messages[i-1].Time() {
			t.Fatal("observed trace not sorted by observed time")
		}
	}
	if tr.Meta.SkewNS["WS2"] != int64(30*time.Millisecond) {
		t.Errorf("truth meta skew %v", tr.Meta.SkewNS)
	}
}

func TestSingleTimestamp(t *testing.T) {
	c := mustBuiltin(t, "children-d-cc", 5*time.Second)
	c.Timestamps = "single"
	c.Skew = map[string]Duration{"B": Duration(time.Millisecond)}
	out := mustGenerate(t, c)
	for i, o := range out.Truth.Observed {
		tm, om := out.Truth.Trace.Messages[i], out.Trace.Messages[o]
		want := tm.SendTS
		if out.Truth.Trace.Str(tm.SrcNode) == "B" {
			want += trace.Timestamp(time.Millisecond)
		}
		if om.SendTS != want || om.RecvTS != want {
			t.Fatalf("message %d: %d/%d, want %d for both", i, om.SendTS, om.RecvTS, want)
		}
	}
}

// TestSnifferQueueLoss checks the sniffer model: no loss when the capture
// rate is high, more loss as it falls, losses in bursts, and the paths of
// the trace unchanged by the loss settings.
func TestSnifferQueueLoss(t *testing.T) {
	c64 := func() *Config {
		c := mustBuiltin(t, "multitier", 20*time.Second)
		c.Clients = 64 // about 600 messages/s
		return c
	}
	base := mustGenerate(t, c64())
	prev := -1.0
	for _, rate := range []float64{100000, 600, 450, 300, 150} { // 600 loses about 2%
		c := c64()
		c.Drop = Drop{Rate: rate, Queue: 64}
		out := mustGenerate(t, c)
		if out.Stats.Messages != base.Stats.Messages || out.Stats.LostRandom != 0 {
			t.Fatalf("rate %v: %+v", rate, out.Stats)
		}
		if !reflect.DeepEqual(out.Truth.Parent, base.Truth.Parent) {
			t.Fatal("the loss settings changed the paths")
		}
		loss := out.Stats.LossRate()
		if rate == 100000 && loss != 0 {
			t.Errorf("loss %v at a high capture rate", loss)
		}
		if loss < prev {
			t.Errorf("loss %v at rate %v is lower than %v at a higher rate", loss, rate, prev)
		}
		prev = loss
		if out.Stats.Observed+out.Stats.LostQueue != out.Stats.Messages {
			t.Errorf("accounting: %+v", out.Stats)
		}
		if rate == 600 {
			// Bursty: a lost message is followed by another lost one far
			// more often than the loss rate.
			lost, runs := 0, 0
			for i, o := range out.Truth.Observed {
				if o < 0 {
					lost++
					if i > 0 && out.Truth.Observed[i-1] < 0 {
						runs++
					}
				}
			}
			if lost == 0 || float64(runs)/float64(lost) < 2*loss {
				t.Errorf("losses not bursty: %d lost, %d follow a loss, rate %.3f", lost, runs, loss)
			}
		}
	}
	if prev < 0.05 {
		t.Errorf("loss %v at 150 msg/s; the model is not dropping", prev)
	}
	c := mustBuiltin(t, "multitier", 20*time.Second)
	c.Drop = Drop{Random: 0.1}
	out := mustGenerate(t, c)
	if l := out.Stats.LossRate(); math.Abs(l-0.1) > 0.01 {
		t.Errorf("random loss %v, want 0.1", l)
	}
}

func TestTruthRoundTrip(t *testing.T) {
	c := mustBuiltin(t, "multitier", 3*time.Second)
	c.Drop = Drop{Random: 0.05}
	c.Skew = map[string]Duration{"AP1": Duration(time.Second)}
	out := mustGenerate(t, c)
	var buf bytes.Buffer
	if err := WriteTruth(&buf, out.Truth); err != nil {
		t.Fatal(err)
	}
	got, err := ReadTruth(bytes.NewReader(buf.Bytes()), "x.truth")
	if err != nil {
		t.Fatal(err)
	}
	want := out.Truth
	if !reflect.DeepEqual(got.Instance, want.Instance) || !reflect.DeepEqual(got.Parent, want.Parent) ||
		!reflect.DeepEqual(got.Observed, want.Observed) || !reflect.DeepEqual(got.Tracelet, want.Tracelet) ||
		!reflect.DeepEqual(got.Meta, want.Meta) {
		t.Fatalf("truth columns or meta changed in a round trip:\n%+v\n%+v", got.Meta, want.Meta)
	}
	if len(got.Trace.Messages) != len(want.Trace.Messages) || got.Trace.Meta.Source != want.Trace.Meta.Source {
		t.Fatal("truth messages changed in a round trip")
	}
	for i := range got.Trace.Messages {
		a := trace.AppendTSV(nil, got.Trace, &got.Trace.Messages[i])
		b := trace.AppendTSV(nil, want.Trace, &want.Trace.Messages[i])
		if !bytes.Equal(a, b) {
			t.Fatalf("message %d: %q became %q", i, b, a)
		}
	}
	var again bytes.Buffer
	WriteTruth(&again, got)
	if !bytes.Equal(again.Bytes(), buf.Bytes()) {
		t.Fatal("writing a read truth gives other bytes")
	}
	// A truth file is also a trace file (of the true timestamps).
	tr, err := trace.ReadTSV(bytes.NewReader(buf.Bytes()), "x", trace.ReadOptions{Strict: true})
	if err != nil || len(tr.Messages) != len(want.Trace.Messages) {
		t.Fatalf("reading the truth as a trace: %v", err)
	}
}

func TestReadTruthErrors(t *testing.T) {
	out := mustGenerate(t, mustBuiltin(t, "children-0-2", time.Second))
	var buf bytes.Buffer
	WriteTruth(&buf, out.Truth)
	good := buf.String()
	lines := strings.Split(good, "\n")
	// lines: 0 magic, 1 #truth, 2 #meta, 3 header, 4.. rows
	nonRoot := 1
	for out.Truth.Parent[nonRoot] < 0 {
		nonRoot++
	}
	row := func(i int, col int, val string) string {
		ls := append([]string(nil), lines...)
		f := strings.Split(ls[4+i], "\t")
		f[col] = val
		ls[4+i] = strings.Join(f, "\t")
		return strings.Join(ls, "\n")
	}
	for _, tc := range []struct {
		name, in, want string
	}{
		{"magic", strings.Replace(good, TruthMagic, "# something", 1), "first line"},
		{"no meta", strings.Replace(good, "#truth ", "#other ", 1), "no #truth line"},
		{"unknown tracelet", row(0, 4, "zzz"), "not in the #truth"},
		{"bad meta", strings.Replace(good, `#truth {"version":1`, `#truth {"version":3`, 1), "version 3"},
		{"id order", row(1, 0, "5"), "ids must count"},
		{"bad parent", row(1, 2, "x"), "column parent"},
		{"parent range", row(1, 2, "99999"), "out of range"},
		{"self parent", row(1, 2, "1"), "out of range"},
		{"two roots", row(nonRoot, 2, "-"), "roots"},
		{"dup observed", row(1, 3, "0"), "used twice"},
		{"missing column", strings.Replace(good, "id\tinstance", "idx\tinstance", 1), "id column"},
		{"bad trace field", row(2, 5+0, "abc"), "send_ts"},
		{"short row", strings.Join(append(append([]string(nil), lines[:5]...), "1\t0"), "\n"), "fields"},
	} {
		_, err := ReadTruth(strings.NewReader(tc.in), "t.truth")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
		var pe *trace.ParseError
		if err != nil && !errorsAs(err, &pe) {
			t.Errorf("%s: %T is not a *trace.ParseError", tc.name, err)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "t.truth") {
			t.Errorf("%s: error %q does not name the file", tc.name, err)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	const head = "duration: 1s\nnodes:\n  B: {port: 80}\n"
	for _, tc := range []struct {
		name, in, want string
	}{
		{"empty", "", "empty"},
		{"syntax", "nodes: [", "did not find"},
		{"unknown top field", "duratoin: 1s\n", "c.yaml:1: bad generator config: field duratoin not found"},
		{"unknown tracelet field", head + "tracelets:\n  - name: x\n    rpx: {to: B}\n", `c.yaml:6: bad generator config: unknown field "rpx"`},
		{"unknown call field", head + "tracelets:\n  - name: x\n    rpc: {to: B, dela: 1ms}\n", `unknown field "dela" in call`},
		{"unknown node", head + "tracelets:\n  - name: x\n    rpc: {to: C}\n", `6: bad generator config: tracelet "x": unknown node "C"`},
		{"bad duration", head + "tracelets:\n  - name: x\n    rpc: {to: B, delay: 5}\n", "bad duration"},
		{"negative delay", head + "tracelets:\n  - name: x\n    rpc: {to: B, reply: -5ms}\n", "must not be negative"},
		{"bad weight", head + "tracelets:\n  - name: x\n    rpc: {to: 'B:0'}\n", "bad weight"},
		{"both forms", head + "tracelets:\n  - name: x\n    rpc: {to: B}\n    messages: [{to: B}]\n", "exactly one of rpc and messages"},
		{"no length", "nodes: {B: {}}\ntracelets: [{name: x, rpc: {to: B}}]\n", "set duration or instances"},
		{"no tracelets", head, "no tracelets"},
		{"dup tracelet", head + "tracelets:\n  - {name: x, rpc: {to: B}}\n  - {name: x, rpc: {to: B}}\n", "defined twice"},
		{"bad after", head + "tracelets:\n  - name: x\n    messages:\n      - {id: a, to: B}\n      - {id: b, after: c, to: B}\n", "earlier message id"},
		{"bad from", head + "  C: {}\ntracelets:\n  - name: x\n    messages:\n      - {id: a, to: B}\n      - {id: b, after: a, from: C, to: B}\n", "must be the receiver"},
		{"call client", head + "tracelets:\n  - name: x\n    rpc: {to: CLIENT}\n", "CLIENT cannot be called"},
		{"client net", "duration: 1s\nclient_net: 10.0.0.0/8\nnodes: {B: {addr: 10.1.1.1}}\ntracelets: [{name: x, rpc: {to: B}}]\n", "inside client_net"},
		{"too many clients", "duration: 1s\nclients: 300\nclient_net: 10.9.0.0/24\nnodes: {B: {}}\ntracelets: [{name: x, rpc: {to: B}}]\n", "room for 254"},
		{"skew node", head + "skew: {X: 1ms}\ntracelets: [{name: x, rpc: {to: B}}]\n", `skew: unknown node "X"`},
		{"drop", head + "drop: {random: 1.5}\ntracelets: [{name: x, rpc: {to: B}}]\n", "drop:"},
		{"dup endpoint", "duration: 1s\nnodes: {B: {addr: 10.0.0.1}, C: {addr: 10.0.0.1}}\ntracelets: [{name: x, rpc: {to: B}}]\n", "share the endpoint"},
		{"bad name", "duration: 1s\nnodes: {'B C': {}}\ntracelets: [{name: x, rpc: {to: B}}]\n", "use letters"},
		{"two docs", head + "tracelets: [{name: x, rpc: {to: B}}]\n---\nx: 1\n", "more than one"},
		{"timestamps", head + "timestamps: three\ntracelets: [{name: x, rpc: {to: B}}]\n", "timestamps must be"},
		{"derive without values", head + "evidence: {tokens: {per_request: 2}}\ntracelets: [{name: x, rpc: {to: B, calls: [{to: B, derive: true}]}}]\n", "want evidence tokens with values"},
		{"bad values", head + "evidence: {tokens: {values: -1}}\ntracelets: [{name: x, rpc: {to: B}}]\n", "want vocabulary and values"},
		{"depth", head + "tracelets: [{name: x, rpc: " + strings.Repeat("{to: B, calls: [", 70) + "{to: B}" + strings.Repeat("]}", 70) + "}]\n", "deeper than"},
	} {
		_, err := ParseConfig(strings.NewReader(tc.in), "c.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
			continue
		}
		if !strings.HasPrefix(err.Error(), "c.yaml") {
			t.Errorf("%s: error %q does not name the file", tc.name, err)
		}
	}
}

func TestConfigJSONAndForms(t *testing.T) {
	js := `{"duration": "2s", "clients": 3, "think": {"min": "10ms", "max": "20ms"},
	  "nodes": {"B": {"port": 8080}, "C": {}},
	  "defaults": {"delay": {"mean": "5ms", "sd": "1ms"}},
	  "tracelets": [
	    {"name": "r", "rpc": {"to": "B", "calls": [{"to": "C", "delay": "7ms+-1ms"}]}},
	    {"name": "m", "weight": 2, "messages": [{"id": "a", "to": "B"}, {"id": "b", "after": "a", "to": "C:1|B:3"}, {"after": "b", "to": "CLIENT"}]}
	  ]}`
	c, err := ParseConfig(strings.NewReader(js), "c.json")
	if err != nil {
		t.Fatal(err)
	}
	if c.Think != (Range{10 * time.Millisecond, 20 * time.Millisecond}) || *c.Tracelets[0].RPC.Calls[0].Delay != (Gauss{Mean: 7 * time.Millisecond, SD: time.Millisecond}) {
		t.Errorf("parsed %+v", c)
	}
	if got := c.Tracelets[1].Messages[1].To.String(); got != "C:1|B:3" {
		t.Errorf("choice %q", got)
	}
	out := mustGenerate(t, c)
	checkTruth(t, out.Truth)
	sawClientReply := false
	for _, m := range out.Trace.Messages {
		if out.Trace.Str(m.DstNode) != "B" && out.Trace.Str(m.DstNode) != "C" {
			sawClientReply = true
		}
		if m.Kind != trace.KindReturn && out.Trace.Str(m.DstNode) == "B" && !strings.HasSuffix(out.Trace.Str(m.Dst), ":8080") {
			t.Fatalf("B's endpoint %s", out.Trace.Str(m.Dst))
		}
	}
	if !sawClientReply {
		t.Error("no message to CLIENT")
	}
}

// TestClientAggregation checks that the endpoints the generator writes let
// the role classifier tell clients (ephemeral ports only) from servers.
func TestClientAggregation(t *testing.T) {
	out := mustGenerate(t, mustBuiltin(t, "multitier", 5*time.Second))
	roles := trace.ClassifyRoles(out.Trace, trace.DefaultRoleOptions())
	for i := range out.Trace.Messages {
		m := &out.Trace.Messages[i]
		for _, n := range []trace.Sym{m.SrcNode, m.DstNode} {
			isClient := strings.HasPrefix(out.Trace.Str(n), "10.9.")
			if roles.Client(n) != isClient {
				t.Fatalf("node %s: client %v", out.Trace.Str(n), roles.Client(n))
			}
		}
		if m.Kind == trace.KindCall && !roles.Fixed(m.Dst) {
			t.Fatalf("server endpoint %s not fixed", out.Trace.Str(m.Dst))
		}
		if m.Kind == trace.KindCall && roles.Fixed(m.Src) {
			t.Fatalf("ephemeral endpoint %s taken as fixed", out.Trace.Str(m.Src))
		}
	}
}

func TestNamesAddr(t *testing.T) {
	c := mustBuiltin(t, "children-d-cc", 2*time.Second)
	c.Names = "addr"
	out := mustGenerate(t, c)
	ps, _ := out.Truth.Patterns(causal.AggregateOptions{Naming: causal.DefaultNaming()})
	if len(ps) == 0 || !strings.Contains(ps[0].Signature, "10.0.0.2") {
		t.Errorf("signature %v", ps)
	}
	if out.Truth.Meta.Names != "addr" {
		t.Error("meta")
	}
}

func TestMaxMessages(t *testing.T) {
	c := mustBuiltin(t, "multitier", 0)
	if _, err := Generate(c, Options{MaxMessages: 1000}); err == nil || !strings.Contains(err.Error(), "1000") {
		t.Errorf("error %v", err)
	}
	// A config whose instances take no time must still end.
	z := "duration: 10ms\ndefaults: {net: 0}\nnodes: {B: {}}\ntracelets: [{name: x, rpc: {to: B}}]\n"
	zc, err := ParseConfig(strings.NewReader(z), "z")
	if err != nil {
		t.Fatal(err)
	}
	out, err := Generate(zc, Options{})
	if err != nil || out.Stats.Instances == 0 || out.Stats.Instances > 10001 {
		t.Errorf("zero-time instances: %v, %+v", err, out.Stats)
	}
}

func TestCallParallelism(t *testing.T) {
	lo := mustBuiltin(t, "multitier", 10*time.Second)
	lo.Clients = 8
	hi := mustBuiltin(t, "multitier", 10*time.Second)
	hi.Clients = 128
	a, b := mustGenerate(t, lo).Stats, mustGenerate(t, hi).Stats
	if a.CallParallelism < 1 || b.CallParallelism < 4*a.CallParallelism {
		t.Errorf("call parallelism %v with 8 clients, %v with 128", a.CallParallelism, b.CallParallelism)
	}
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }
