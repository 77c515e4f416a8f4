package report

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/internal/golden"
	"github.com/wirepath/wirepath/trace"
)

// The "shop" system the fixtures simulate: clients call web (10.0.0.1:80),
// which calls a cache (10.0.0.3:11211), a database (10.0.0.2:5432, whose
// clock runs 3 ms ahead) and a DNS server (10.0.0.53:53) that no sniffer
// saw, so its messages have only the web side's timestamp. Every delay is
// fixed per instance so that the figures a report shows can be computed by
// hand. Times are µs.
const (
	shopNetUS      = 200.0 // client <-> web, one way
	shopLANUS      = 100.0 // web <-> cache, web <-> db, one way
	shopWebInUS    = 300.0 // web: request arrival -> first call
	shopCacheUS    = 50.0  // cache: call -> return
	shopWebMidUS   = 200.0 // web: cache return -> db call
	shopWebOutUS   = 500.0 // web: last return -> response
	shopDBFastUS   = 1000.0
	shopDBSlowUS   = 8000.0 // every 4th query goes to disk
	shopDNSTotalUS = 2000.0 // web's send to dns -> web's receipt of the answer
	shopDBSkewNS   = 3_000_000
	shopPageN      = 40
	shopLookupN    = 20
	shopHitN       = 3
)

// shopDBUS is the database delay of page instance i.
func shopDBUS(i int) float64 {
	if i%4 == 3 {
		return shopDBSlowUS
	}
	return shopDBFastUS
}

type fixture struct {
	t     *trace.Trace
	insts []causal.Instance
	now   float64 // µs, start of the next instance
}

var shopNodes = map[string]string{
	"web": "10.0.0.1", "db": "10.0.0.2", "cache": "10.0.0.3", "dns": "10.0.0.53",
}

// msg adds a message sent at send and received at recv (µs of true time,
// -1 = not seen) and returns its index. The db's clock is skewed.
func (f *fixture) msg(send, recv float64, src, dst string, bytes int64, k trace.Kind) int32 {
	host := func(ep string) string { h, _ := trace.SplitEndpoint(ep); return h }
	ts := func(us float64, node string) trace.Timestamp {
		if us < 0 {
			return trace.NoTime
		}
		ns := int64(us*1e3) + 1_700_000_000_000_000_000
		if node == shopNodes["db"] {
			ns += shopDBSkewNS
		}
		return trace.Timestamp(ns)
	}
	sn, dn := host(src), host(dst)
	f.t.Messages = append(f.t.Messages, trace.Message{
		SendTS: ts(send, sn), RecvTS: ts(recv, dn), Bytes: bytes,
		Src: f.t.Intern(src), Dst: f.t.Intern(dst), SrcNode: f.t.Intern(sn), DstNode: f.t.Intern(dn),
		Kind: k, Proto: trace.ProtoTCP,
	})
	return int32(len(f.t.Messages) - 1)
}

func (f *fixture) inst(p float64, nodes ...causal.InstanceNode) {
	f.insts = append(f.insts, causal.Instance{Prob: p, Nodes: nodes})
}

func node(m int32, parent int32) causal.InstanceNode {
	return causal.InstanceNode{Msg: m, Parent: parent}
}

// shopTrace builds the shop trace and the instances a perfect engine finds.
func shopTrace() (*trace.Trace, []causal.Instance) {
	f := &fixture{t: &trace.Trace{}}
	f.t.Meta = trace.Meta{
		Source: "shop.tsv",
		Offsets: []trace.Offset{
			{Node: shopNodes["db"], Reference: shopNodes["web"], Known: true, OffsetNS: shopDBSkewNS, UncertaintyNS: 20_000, Samples: 120},
			{Node: shopNodes["cache"], Reference: shopNodes["web"], Known: true, OffsetNS: 0, UncertaintyNS: 15_000, Samples: 80},
			{Node: shopNodes["dns"], Reference: shopNodes["web"], Known: false},
		},
		Aliases: []trace.Alias{{Outside: "192.0.2.10:80", Inside: "10.0.0.1:80", Kind: "dnat", Direction: "outside->inside", Matches: 126, Score: 0.99,
			FirstNS: 1_700_000_000_000_000_000, LastNS: 1_700_000_001_000_000_000}},
		Accounting: []trace.Count{
			{Stage: "pcapio", Name: "packets_read", Value: 1460},
			{Stage: "pcapio", Name: "duplicates", Value: 380},
			{Stage: "nat", Name: "mappings_applied", Value: 126},
			{Stage: "reconcile", Name: "messages", Value: 0}, // set below
		},
		Warnings: []string{"host 10.0.0.53 seen on one side only: its delays include the network (diamonds)"},
	}
	web, db, cache, dns := shopNodes["web"], shopNodes["db"], shopNodes["cache"], shopNodes["dns"]
	clientEP := func(i int) string { return fmt.Sprintf("10.0.9.%d:%d", 1+i%5, 40000+i) }
	ephem := func(i int) string { return fmt.Sprintf("%s:%d", web, 50000+i) }
	// Pattern "page": client -> web -> cache -> web -> db -> web -> client.
	for i := 0; i < shopPageN; i++ {
		t0 := f.now
		c := clientEP(i)
		a := t0 + shopNetUS
		m0 := f.msg(t0, a, c, web+":80", 420, trace.KindCall)
		s1 := a + shopWebInUS
		m1 := f.msg(s1, s1+shopLANUS, ephem(i), cache+":11211", 60, trace.KindCall)
		s2 := s1 + shopLANUS + shopCacheUS
		m2 := f.msg(s2, s2+shopLANUS, cache+":11211", ephem(i), 20, trace.KindReturn)
		s3 := s2 + shopLANUS + shopWebMidUS
		m3 := f.msg(s3, s3+shopLANUS, ephem(i+1000), db+":5432", 300, trace.KindCall)
		s4 := s3 + shopLANUS + shopDBUS(i)
		m4 := f.msg(s4, s4+shopLANUS, db+":5432", ephem(i+1000), 4000, trace.KindReturn)
		s5 := s4 + shopLANUS + shopWebOutUS
		m5 := f.msg(s5, s5+shopNetUS, web+":80", c, 9000, trace.KindReturn)
		p := 0.9
		if i%10 == 9 {
			p = 0.5
		}
		f.inst(p, node(m0, -1), node(m1, 0), node(m2, 1), node(m3, 2), node(m4, 3), node(m5, 4))
		f.now = s5 + 10_000
	}
	// Pattern "lookup": client -> web -> dns (untraced) -> web -> db -> web -> client.
	for i := 0; i < shopLookupN; i++ {
		t0 := f.now
		c := clientEP(i + 100)
		a := t0 + shopNetUS
		m0 := f.msg(t0, a, c, web+":80", 380, trace.KindCall)
		s1 := a + shopWebInUS
		m1 := f.msg(s1, -1, ephem(i+2000), dns+":53", 40, trace.KindCall)
		r2 := s1 + shopDNSTotalUS
		m2 := f.msg(-1, r2, dns+":53", ephem(i+2000), 120, trace.KindReturn)
		s3 := r2 + shopWebMidUS
		m3 := f.msg(s3, s3+shopLANUS, ephem(i+3000), db+":5432", 300, trace.KindCall)
		s4 := s3 + shopLANUS + shopDBFastUS
		m4 := f.msg(s4, s4+shopLANUS, db+":5432", ephem(i+3000), 2000, trace.KindReturn)
		s5 := s4 + shopLANUS + shopWebOutUS
		m5 := f.msg(s5, s5+shopNetUS, web+":80", c, 3000, trace.KindReturn)
		f.inst(0.6, node(m0, -1), node(m1, 0), node(m2, 1), node(m3, 2), node(m4, 3), node(m5, 4))
		f.now = s5 + 10_000
	}
	// Pattern "hit": client -> web -> client.
	for i := 0; i < shopHitN; i++ {
		t0 := f.now
		c := clientEP(i + 200)
		a := t0 + shopNetUS
		m0 := f.msg(t0, a, c, web+":80", 400, trace.KindCall)
		s1 := a + shopWebOutUS
		m1 := f.msg(s1, s1+shopNetUS, web+":80", c, 9000, trace.KindReturn)
		f.inst(0.3, node(m0, -1), node(m1, 0))
		f.now = s1 + 10_000
	}
	f.t.Meta.Accounting[3].Value = int64(len(f.t.Messages))
	return f.t, f.insts
}

// resultOf aggregates insts over t as an engine would.
func resultOf(t *trace.Trace, insts []causal.Instance, engine string, hist bool, kept int) *causal.Result {
	opt := causal.AggregateOptions{Naming: causal.DefaultNaming(), Histograms: hist}
	if kept != 0 {
		opt.KeepInstances = true
		if kept > 0 {
			opt.MaxKept = kept
		}
	}
	a := causal.NewAggregator(t, opt)
	for _, in := range insts {
		if err := a.Add(in); err != nil {
			panic(err)
		}
	}
	res := &causal.Result{
		Version:  causal.ResultVersion,
		Engine:   engine,
		Params:   map[string]any{"window": "100ms", "try-both-budget": 20},
		Trace:    causal.Summarize(t),
		Patterns: a.Patterns(causal.RankExpected),
		Accounting: []trace.Count{
			{Stage: engine, Name: "messages_in", Value: int64(len(t.Messages))},
			{Stage: engine, Name: "instances", Value: int64(len(insts))},
		},
		Warnings: []string{engine + ": 2 messages linked to nothing"},
	}
	res.RequestTypes = a.RequestTypes()
	return res
}

// labelledShopResult is shopResult with the labels the protocol decoders
// give: page and hit requests are "GET /page/{id}", lookups "GET
// /search" (every fifth answered 404), the database calls "SELECT items",
// the cache's "memcached get".
func labelledShopResult() *causal.Result {
	t, insts := shopTrace()
	labelShop(t, insts)
	return resultOf(t, insts, "linking", true, -1)
}

// labelShop gives the shop trace's messages the labels of
// labelledShopResult.
func labelShop(t *trace.Trace, insts []causal.Instance) {
	lab := func(i int32, l string) { t.Messages[i].Label = t.Intern(l) }
	for k, in := range insts {
		root, ret := in.Nodes[0].Msg, in.Nodes[len(in.Nodes)-1].Msg
		switch {
		case k < shopPageN:
			lab(root, "GET /page/{id}")
			lab(in.Nodes[1].Msg, "memcached get")
			lab(in.Nodes[3].Msg, "SELECT items")
			lab(ret, "200")
		case k < shopPageN+shopLookupN:
			lab(root, "GET /search")
			lab(in.Nodes[3].Msg, "SELECT items")
			lab(ret, "200")
			if k%5 == 0 {
				lab(ret, "404")
			}
		default:
			lab(root, "GET /page/{id}")
			lab(ret, "200")
		}
	}
}

// shopResult is the shop trace aggregated with histograms.
func shopResult() (*causal.Result, *trace.Trace) {
	t, insts := shopTrace()
	return resultOf(t, insts, "linking", true, -1), t
}

// convResult is what convolution reports for the page path: a linear path
// whose edges carry the delays (spike positions) found for them.
func convResult() *causal.Result {
	t, insts := shopTrace()
	var lin []causal.Instance
	for _, in := range insts[:shopPageN] {
		lin = append(lin, causal.Instance{Prob: 1, Nodes: in.Nodes})
	}
	res := resultOf(t, lin, "convolution", false, 0)
	res.Params = map[string]any{"quantum": "1ms", "spike-sigma": 4}
	p := &res.Patterns[0]
	p.Hops[1].Delays = []causal.DelayPeak{{DelayUS: shopWebInUS, Count: 40, Score: 9.5}}
	p.Hops[2].Delays = []causal.DelayPeak{{DelayUS: shopCacheUS, Count: 40, Score: 8.1}}
	p.Hops[3].Delays = []causal.DelayPeak{{DelayUS: shopWebMidUS, Count: 40, Score: 7.7}}
	p.Hops[4].Delays = []causal.DelayPeak{{DelayUS: shopDBFastUS, Count: 30, Score: 6.2}, {DelayUS: shopDBSlowUS, Count: 10, Score: 4.4}}
	p.Hops[5].Delays = []causal.DelayPeak{{DelayUS: shopWebOutUS, Count: 40, Score: 9.0}}
	return res
}

// fixtureResult loads testdata/<name>.result.json, the fixed result the
// golden tests render; -update rewrites it from the generator first.
func fixtureResult(t *testing.T, name string) *causal.Result {
	t.Helper()
	path := filepath.Join("testdata", name+".result.json")
	if golden.Update() {
		var res *causal.Result
		switch name {
		case "shop":
			var tr *trace.Trace
			res, tr = shopResult()
			// The trace the result came from, for exports of its instances.
			tf, err := os.Create(filepath.Join("testdata", "shop.tsv"))
			if err != nil {
				t.Fatal(err)
			}
			if err := trace.WriteTSV(tf, tr); err != nil {
				t.Fatal(err)
			}
			if err := tf.Close(); err != nil {
				t.Fatal(err)
			}
		case "conv":
			res = convResult()
		default:
			t.Fatalf("no fixture %s", name)
		}
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteJSON(f, res); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	res, err := readJSONFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	return res
}

// readJSONFile reads the one result in the file at path.
func readJSONFile(path string) (*causal.Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readJSON(f, path)
}
