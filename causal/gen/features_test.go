package gen

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/wirepath/wirepath/trace"
)

func mustParse(t testing.TB, yml string) *Config {
	t.Helper()
	c, err := ParseConfig(strings.NewReader(yml), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestGaussForms(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Gauss
	}{
		{"delay: 1ms", Gauss{Mean: time.Millisecond}},
		{"delay: 1ms±100us", Gauss{Mean: time.Millisecond, SD: 100 * time.Microsecond}},
		{"delay: 1ms+exp(2ms)", Gauss{Mean: time.Millisecond, Exp: 2 * time.Millisecond}},
		{"delay: 1ms+-100us+exp(2ms)", Gauss{Mean: time.Millisecond, SD: 100 * time.Microsecond, Exp: 2 * time.Millisecond}},
		{"delay: {mean: 1ms, exp: 3ms}", Gauss{Mean: time.Millisecond, Exp: 3 * time.Millisecond}},
	} {
		c := mustParse(t, "duration: 1s\ndefaults: {"+tc.in+"}\nnodes: {B: {}}\ntracelets: [{name: x, rpc: {to: B}}]\n")
		if got := *c.Defaults.Delay; got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.in, got, tc.want)
		}
		var back Gauss
		c2 := mustParse(t, "duration: 1s\ndefaults: {delay: '"+tc.want.String()+"'}\nnodes: {B: {}}\ntracelets: [{name: x, rpc: {to: B}}]\n")
		if back = *c2.Defaults.Delay; back != tc.want {
			t.Errorf("%s: String %q reads back as %+v", tc.in, tc.want.String(), back)
		}
	}
	for _, bad := range []string{"1ms+exp(2ms", "1ms+exp(-2ms)", "1ms+exp(x)"} {
		_, err := ParseConfig(strings.NewReader("duration: 1s\ndefaults: {delay: '"+bad+"'}\nnodes: {B: {}}\ntracelets: [{name: x, rpc: {to: B}}]\n"), "c.yaml")
		if err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestExpTail checks that a delay with an exponential tail has the mean
// of its two parts.
func TestExpTail(t *testing.T) {
	c := mustParse(t, "instances: 4000\nclients: 1\ndefaults: {net: 0}\nnodes: {B: {}}\ntracelets: [{name: x, rpc: {to: B, reply: '1ms+exp(2ms)'}}]\n")
	out := mustGenerate(t, c)
	ms := out.Truth.Trace.Messages
	var sum float64
	n := 0
	for i, m := range ms {
		if m.Kind == trace.KindReturn {
			sum += float64(m.SendTS - ms[out.Truth.Parent[i]].RecvTS)
			n++
		}
	}
	if mean := sum / float64(n); math.Abs(mean-3e6) > 0.1e6 {
		t.Errorf("mean reply delay %.0f ns, want 3 ms", mean)
	}
}

const openLoop = `instances: 2000
rate: 100
clients: 50
defaults: {delay: 2ms±1ms, reply: 1ms+exp(1ms), net: 100us±10us}
nodes: {A: {}, B: {}}
tracelets:
  - {name: x, weight: 2, rpc: {to: A, calls: [{to: B}]}}
  - {name: y, rpc: {to: B}}
`

// TestOpenLoop checks the Poisson arrivals: the rate is kept, clients are
// picked among the hosts, and compression gives the same instances with
// the times between their starts divided.
func TestOpenLoop(t *testing.T) {
	c := mustParse(t, openLoop)
	a := mustGenerate(t, c)
	if a.Stats.Instances != 2000 {
		t.Fatalf("%d instances", a.Stats.Instances)
	}
	roots := func(out *Output) (starts []int64, shapes []string) {
		tr := out.Truth
		var b strings.Builder
		for i, m := range tr.Trace.Messages {
			if tr.Parent[i] < 0 {
				starts = append(starts, int64(m.SendTS))
			}
		}
		for inst := range tr.NumInstances() {
			b.Reset()
			var first int64 = -1
			for i, m := range tr.Trace.Messages {
				if tr.Instance[i] != int32(inst) {
					continue
				}
				if first < 0 {
					first = int64(m.SendTS)
				}
				b.WriteString(tr.Trace.Str(m.SrcNode) + ">" + tr.Trace.Str(m.DstNode))
				b.WriteString("@" + time.Duration(int64(m.SendTS)-first).String() + " ")
			}
			shapes = append(shapes, b.String())
		}
		return starts, shapes
	}
	sa, pa := roots(a)
	span := float64(sa[len(sa)-1] - sa[0])
	if rate := float64(len(sa)-1) / (span / 1e9); math.Abs(rate-100) > 8 {
		t.Errorf("arrival rate %.1f/s, want 100", rate)
	}
	hosts := map[trace.Sym]bool{}
	for _, m := range a.Trace.Messages {
		if strings.HasPrefix(a.Trace.Str(m.SrcNode), "10.9.") {
			hosts[m.SrcNode] = true
		}
	}
	if len(hosts) < 45 || len(hosts) > 50 {
		t.Errorf("%d client hosts, want about 50", len(hosts))
	}
	c.Compress = 4
	b := mustGenerate(t, c)
	sb, pb := roots(b)
	if len(pb) != len(pa) {
		t.Fatalf("%d instances compressed, %d not", len(pb), len(pa))
	}
	for i := range pa {
		if pa[i] != pb[i] {
			t.Fatalf("instance %d differs when compressed:\n%s\n%s", i, pa[i], pb[i])
		}
	}
	for i := 1; i < len(sa); i++ {
		ga, gb := sa[i]-sa[i-1], sb[i]-sb[i-1]
		if math.Abs(float64(ga)/4-float64(gb)) > 2 {
			t.Fatalf("gap %d: %d ns, compressed %d", i, ga, gb)
		}
	}
	if b.Truth.Meta.Compress != 4 || b.Truth.Meta.Rate != 100 {
		t.Errorf("meta %+v", b.Truth.Meta)
	}
}

func TestMessagesLimit(t *testing.T) {
	c := mustParse(t, "messages: 1000\nclients: 3\nnodes: {A: {}, B: {}}\ntracelets: [{name: x, rpc: {to: A, calls: [{to: B}]}}]\n")
	out := mustGenerate(t, c)
	if n := out.Stats.Messages; n < 1000 || n >= 1004 {
		t.Errorf("%d messages for a limit of 1000 (instances of 4)", n)
	}
}

// TestReplicas checks replica groups: names and addresses, a call to the
// group reaches every replica but never the caller, and skew and delay_by
// on the group's name reach every replica.
func TestReplicas(t *testing.T) {
	c := mustParse(t, `instances: 3000
clients: 4
skew: {proxy: 1ms}
nodes:
  proxy: {addr: 10.0.5.1, port: 3128, replicas: 3}
  origin: {port: 80}
tracelets:
  - name: miss
    rpc:
      to: proxy
      calls:
        - to: proxy
          delay_by: {proxy: 5ms}
          calls: [{to: origin}]
`)
	out := mustGenerate(t, c)
	tr := out.Truth.Trace
	seen := map[string]int{}
	for i, m := range tr.Messages {
		from, to := tr.Str(m.SrcNode), tr.Str(m.DstNode)
		if m.Kind == trace.KindCall && strings.HasPrefix(to, "proxy") {
			seen[to]++
			if from == to {
				t.Fatalf("%s calls itself", from)
			}
			if strings.HasPrefix(from, "proxy") {
				if d := m.SendTS - tr.Messages[out.Truth.Parent[i]].RecvTS; d != trace.Timestamp(5*time.Millisecond) {
					t.Fatalf("delay_by on the group: %v", d)
				}
			}
		}
		if m.Kind == trace.KindCall && strings.HasPrefix(tr.Str(m.Dst), "10.0.5.") {
			want := map[string]string{"proxy-1": "10.0.5.1:3128", "proxy-2": "10.0.5.2:3128", "proxy-3": "10.0.5.3:3128"}[to]
			if tr.Str(m.Dst) != want {
				t.Fatalf("%s at %s", to, tr.Str(m.Dst))
			}
		}
	}
	for _, r := range []string{"proxy-1", "proxy-2", "proxy-3"} {
		if seen[r] < 1500 {
			t.Errorf("%s called %d times of 6000", r, seen[r])
		}
		if out.Truth.Meta.SkewNS[r] != int64(time.Millisecond) {
			t.Errorf("skew of %s: %v", r, out.Truth.Meta.SkewNS)
		}
	}
}

// TestUntracedSpreadResolution checks the observation options: untraced
// nodes' timestamps are unknown, every node's clock has its own offset
// within the spread, and timestamps are truncated to the resolution.
func TestUntracedSpreadResolution(t *testing.T) {
	c := mustBuiltin(t, "multitier", 10*time.Second)
	c.Untraced = []string{"CLIENT", "DB"}
	c.ClockSpread = Duration(5 * time.Millisecond)
	out := mustGenerate(t, c)
	tr := out.Truth
	off := map[trace.Sym]int64{}
	clock := func(node trace.Sym, obs, truth trace.Timestamp) {
		d := int64(obs - truth)
		if d < -int64(5*time.Millisecond) || d > int64(5*time.Millisecond) {
			t.Fatalf("offset %d beyond the spread", d)
		}
		if o, ok := off[node]; ok && o != d {
			t.Fatalf("node %s: offsets %d and %d", tr.Trace.Str(node), o, d)
		}
		off[node] = d
	}
	for i, o := range tr.Observed {
		tm, om := tr.Trace.Messages[i], out.Trace.Messages[o]
		from, to := tr.Trace.Str(tm.SrcNode), tr.Trace.Str(tm.DstNode)
		if untr := from == "DB" || strings.HasPrefix(from, "10.9."); untr != !om.SendTS.Known() {
			t.Fatalf("message from %s: send time %v", from, om.SendTS)
		} else if !untr {
			clock(tm.SrcNode, om.SendTS, tm.SendTS)
		}
		if untr := to == "DB" || strings.HasPrefix(to, "10.9."); untr != !om.RecvTS.Known() {
			t.Fatalf("message to %s: receive time %v", to, om.RecvTS)
		} else if !untr {
			clock(tm.DstNode, om.RecvTS, tm.RecvTS)
		}
	}
	if len(off) != 5 || tr.Meta.SkewNS["WS1"] != off[tr.Trace.Intern("WS1")] {
		t.Errorf("offsets %v, meta %v", off, tr.Meta.SkewNS)
	}
	var buf bytes.Buffer
	if err := WriteTruth(&buf, tr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `#truth {"version":2`) {
		t.Error("a truth with version 2 fields not written as version 2")
	}
	back, err := ReadTruth(&buf, "t")
	if err != nil || back.Meta.ClockSpreadNS != int64(5*time.Millisecond) || len(back.Meta.Untraced) != 2 {
		t.Fatalf("read back: %v %+v", err, back.Meta)
	}

	c.Resolution = Duration(time.Millisecond)
	out = mustGenerate(t, c)
	for _, m := range out.Trace.Messages {
		for _, ts := range []trace.Timestamp{m.SendTS, m.RecvTS} {
			if ts.Known() && ts%trace.Timestamp(time.Millisecond) != 0 {
				t.Fatalf("timestamp %d not in milliseconds", ts)
			}
		}
	}
}

func TestNewConfigErrors(t *testing.T) {
	const tl = "tracelets: [{name: x, rpc: {to: B}}]\n"
	for _, tc := range []struct{ name, in, want string }{
		{"compress without rate", "duration: 1s\ncompress: 2\nnodes: {B: {}}\n" + tl, "compress needs"},
		{"bad rate", "duration: 1s\nrate: -1\nnodes: {B: {}}\n" + tl, "rate must be"},
		{"replicas", "duration: 1s\nnodes: {B: {replicas: -1}}\n" + tl, "replicas out of range"},
		{"replica names", "duration: 1s\nnodes: {B: {replicas: 2}, B-1: {}}\n" + tl, "named twice"},
		{"untraced", "duration: 1s\nuntraced: [X]\nnodes: {B: {}}\n" + tl, `untraced: unknown node "X"`},
		{"untraced single", "duration: 1s\ntimestamps: single\nuntraced: [B]\nnodes: {B: {}}\n" + tl, "two timestamps"},
		{"spread", "duration: 1s\nclock_spread: -1ms\nnodes: {B: {}}\n" + tl, "must not be negative"},
		{"messages", "messages: -1\nnodes: {B: {}}\n" + tl, "must not be negative"},
	} {
		_, err := ParseConfig(strings.NewReader(tc.in), "c.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}
