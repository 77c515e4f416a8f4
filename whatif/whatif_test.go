package whatif

import (
	"fmt"
	"math"
	"testing"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/resultjson"
	"github.com/wirepath/wirepath/trace"
)

// shopFixture is the result of linking on the report package's synthetic
// "shop" system (go test ./report -update writes it): its lookup pattern
// (#2) asks a DNS server whose end of the link was not seen.
const shopFixture = "../report/testdata/shop.result.json"

func shopResult(t testing.TB) *causal.Result {
	t.Helper()
	rs, err := resultjson.ReadResultsFile(shopFixture)
	if err != nil {
		t.Fatal(err)
	}
	return rs[0]
}

// rpcPattern builds one instance, repeated 5 times a second apart, of a
// client calling app (1 ms each way), app making two calls to db (0.5 ms
// each way, db busy 2 ms, app 100 µs before each send) and answering. With
// parallel the two db calls are made at once; otherwise one after the
// other. Calls carry 100 bytes, answers 1000. It returns the aggregated
// pattern.
func rpcPattern(t *testing.T, parallel bool) *causal.Pattern {
	t.Helper()
	res, _ := rpcSystem(t, parallel)
	return &res.Patterns[0]
}

// rpcSystem is rpcPattern's system: the result (its pattern lists its
// instances) and the trace.
func rpcSystem(t *testing.T, parallel bool) (*causal.Result, *trace.Trace) {
	t.Helper()
	tr := &trace.Trace{}
	var insts []causal.Instance
	msg := func(send, recv float64, src, dst string, bytes int64, k trace.Kind) int32 {
		h := func(ep string) string { x, _ := trace.SplitEndpoint(ep); return x }
		tr.Messages = append(tr.Messages, trace.Message{
			SendTS: trace.Timestamp(send * 1e3), RecvTS: trace.Timestamp(recv * 1e3), Bytes: bytes,
			Src: tr.Intern(src), Dst: tr.Intern(dst), SrcNode: tr.Intern(h(src)), DstNode: tr.Intern(h(dst)), Kind: k,
		})
		return int32(len(tr.Messages) - 1)
	}
	for i := 0; i < 5; i++ {
		t0 := float64(i) * 1e6
		c := "10.9.0." + string(rune('1'+i)) + ":40000"
		n := []causal.InstanceNode{{Msg: msg(t0, t0+1000, c, "app:80", 100, trace.KindCall), Parent: -1}}
		a := t0 + 1000
		if parallel {
			s := a + 100
			c1 := msg(s, s+500, "app:5001", "db:5432", 100, trace.KindCall)
			c2 := msg(s, s+500, "app:5002", "db:5432", 100, trace.KindCall)
			r1 := msg(s+2500, s+3000, "db:5432", "app:5001", 1000, trace.KindReturn)
			r2 := msg(s+2500, s+3000, "db:5432", "app:5002", 1000, trace.KindReturn)
			out := msg(s+3100, s+4100, "app:80", c, 1000, trace.KindReturn)
			n = append(n, causal.InstanceNode{Msg: c1, Parent: 0}, causal.InstanceNode{Msg: r1, Parent: 1},
				causal.InstanceNode{Msg: c2, Parent: 0}, causal.InstanceNode{Msg: r2, Parent: 3}, causal.InstanceNode{Msg: out, Parent: 4})
		} else {
			s1 := a + 100
			c1 := msg(s1, s1+500, "app:5001", "db:5432", 100, trace.KindCall)
			r1 := msg(s1+2500, s1+3000, "db:5432", "app:5001", 1000, trace.KindReturn)
			s2 := s1 + 3100
			c2 := msg(s2, s2+500, "app:5002", "db:5432", 100, trace.KindCall)
			r2 := msg(s2+2500, s2+3000, "db:5432", "app:5002", 1000, trace.KindReturn)
			out := msg(s2+3100, s2+4100, "app:80", c, 1000, trace.KindReturn)
			n = append(n, causal.InstanceNode{Msg: c1, Parent: 0}, causal.InstanceNode{Msg: r1, Parent: 1},
				causal.InstanceNode{Msg: c2, Parent: 2}, causal.InstanceNode{Msg: r2, Parent: 3}, causal.InstanceNode{Msg: out, Parent: 4})
		}
		insts = append(insts, causal.Instance{Prob: 1, Nodes: n})
	}
	a := causal.NewAggregator(tr, causal.AggregateOptions{Naming: causal.DefaultNaming(), KeepInstances: true})
	for _, in := range insts {
		if err := a.Add(in); err != nil {
			t.Fatal(err)
		}
	}
	ps := a.Patterns(causal.RankExpected)
	if len(ps) != 1 {
		t.Fatalf("%d patterns, want 1", len(ps))
	}
	ps[0].Rank = 1
	res := &causal.Result{Version: causal.ResultVersion, Engine: "linking", Patterns: ps, Trace: causal.Summarize(tr)}
	return res, tr
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6*math.Max(1, math.Abs(b)) }

func TestLinkProfiles(t *testing.T) {
	for _, c := range []struct {
		parallel bool
		kappa    int
	}{{false, 2}, {true, 1}} {
		p := rpcPattern(t, c.parallel)
		var db, cl *LinkProfile
		ls := LinkProfiles(p)
		for i := range ls {
			switch ls[i].Link {
			case "app->db":
				db = &ls[i]
			case "CLIENT->app":
				cl = &ls[i]
			}
		}
		if db == nil || cl == nil || len(ls) != 2 {
			t.Fatalf("parallel=%v: links %+v", c.parallel, ls)
		}
		// Two calls of 100 bytes and two answers of 1000 bytes.
		if db.Messages != 4 || !near(db.Bytes, 2200) || db.RoundTrips != c.kappa || !db.RTTKnown || !near(db.RTTUS, 1000) {
			t.Errorf("parallel=%v: app->db %+v, want 4 messages, 2200 bytes, κ=%d, γ=1000 µs", c.parallel, *db, c.kappa)
		}
		if cl.Messages != 2 || !near(cl.Bytes, 1100) || cl.RoundTrips != 1 || !near(cl.RTTUS, 2000) {
			t.Errorf("parallel=%v: CLIENT->app %+v, want 2 messages, 1100 bytes, κ=1, γ=2000 µs", c.parallel, *cl)
		}
	}
}

func TestParseBandwidth(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
	}{
		{"100Mbit/s", 100e6}, {"1Gbps", 1e9}, {"10 Mbps", 10e6}, {"12.5MB/s", 100e6},
		{"1e9", 1e9}, {"64kbit/s", 64e3}, {"2.5e6bit/s", 2.5e6}, {"1000B/s", 8000}, {"1 GB/s", 8e9},
	} {
		got, err := ParseBandwidth(c.in)
		if err != nil || !near(got, c.want) {
			t.Errorf("ParseBandwidth(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "fast", "-5Mbit/s", "0", "10 furlongs", "Mbit/s", "1e999"} {
		if v, err := ParseBandwidth(bad); err == nil {
			t.Errorf("ParseBandwidth(%q) = %v, want an error", bad, v)
		}
	}
}

// BenchmarkLinkProfiles profiles the shop's patterns and a 2000-hop chain
// (the shape of an iterative DHT lookup).
func BenchmarkLinkProfiles(b *testing.B) {
	res := shopResult(b)
	pats := res.Patterns
	c := causal.Pattern{Rank: len(pats) + 1, Signature: "chain", Count: 10, Expected: 5, MaxProbability: 0.5}
	for i := 0; i < 2000; i++ {
		h := causal.Hop{ID: i, From: fmt.Sprintf("n%d", i), To: fmt.Sprintf("n%d", i+1), Kind: "-",
			Start: &causal.Dist{N: 1, Weight: 1, Mean: float64(i) * 100}, NetDelay: &causal.Dist{N: 1, Weight: 1, Mean: 40}}
		if i > 0 {
			par := i - 1
			h.Parent = &par
			h.NodeDelay = &causal.Dist{N: 1, Weight: 1, Mean: 60}
		}
		c.Hops = append(c.Hops, h)
	}
	pats = append(pats, c)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		for k := range pats {
			if LinkProfiles(&pats[k]) == nil {
				b.Fatal("no profile")
			}
		}
	}
}

// FuzzParseBandwidth checks that any text parses to a positive finite
// rate or an error, and that what FormatBandwidth writes parses back to
// the same rate within its four significant digits.
func FuzzParseBandwidth(f *testing.F) {
	for _, s := range []string{"100Mbit/s", "1Gbps", "12.5MB/s", "1e9", "2.5e-3kbit/s", "-5Mbit/s", "e", "1e+", "10 furlongs"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseBandwidth(s)
		if err != nil {
			return
		}
		if !(v > 0) || math.IsInf(v, 0) {
			t.Fatalf("ParseBandwidth(%q) = %v", s, v)
		}
		back, err := ParseBandwidth(FormatBandwidth(v))
		if err != nil || math.Abs(back-v) > 1e-3*v {
			t.Fatalf("%q: %v formats as %q, which parses as %v, %v", s, v, FormatBandwidth(v), back, err)
		}
	})
}
