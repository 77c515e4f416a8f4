package causal_test

import (
	"fmt"
	"time"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

// rpcTrace is three requests through web to db, 50 ms apart: the client
// calls web, web queries db, db answers and web answers the client.
func rpcTrace() *trace.Trace {
	t := &trace.Trace{}
	ms := int64(time.Millisecond)
	add := func(at, took int64, src, dst string, k trace.Kind) {
		sh, _ := trace.SplitEndpoint(src)
		dh, _ := trace.SplitEndpoint(dst)
		t.Messages = append(t.Messages, trace.Message{
			SendTS: trace.Timestamp(at), RecvTS: trace.Timestamp(at + took),
			Src: t.Intern(src), Dst: t.Intern(dst), SrcNode: t.Intern(sh), DstNode: t.Intern(dh), Kind: k,
		})
	}
	for i := int64(0); i < 3; i++ {
		at := i * 50 * ms
		add(at, ms, "10.0.9.1:40000", "10.0.0.1:80", trace.KindCall)          // client → web
		add(at+2*ms, ms, "10.0.0.1:50000", "10.0.0.2:5432", trace.KindCall)   // web → db
		add(at+5*ms, ms, "10.0.0.2:5432", "10.0.0.1:50000", trace.KindReturn) // db → web
		add(at+7*ms, ms, "10.0.0.1:80", "10.0.9.1:40000", trace.KindReturn)   // web → client
	}
	return t
}

// Canonical tells whether two signatures name the same pattern, whatever
// the order of siblings.
func ExampleCanonical() {
	a, _ := causal.Canonical("CLIENT->web(web->db,web->cache)")
	b, _ := causal.Canonical("CLIENT->web(web->cache,web->db)")
	fmt.Println(a == b, a)
	// Output:
	// true CLIENT->web(web->cache,web->db)
}

// An Aggregator groups instances of the same shape into patterns; engines
// hand it trees of message indices with probabilities.
func ExampleAggregator() {
	t := rpcTrace()
	agg := causal.NewAggregator(t, causal.DefaultOptions().Aggregate)
	for r := 0; r < len(t.Messages); r += 4 {
		m := int32(r)
		_ = agg.Add(causal.Instance{Prob: 0.5, Nodes: []causal.InstanceNode{
			{Msg: m, Parent: -1}, {Msg: m + 1, Parent: 0}, {Msg: m + 2, Parent: 1}, {Msg: m + 3, Parent: 2},
		}})
	}
	for _, p := range agg.Patterns(causal.RankExpected) {
		fmt.Printf("%d× expected %.1f, db answers after %.0f µs: %s\n", p.Count, p.Expected, p.Hops[2].NodeDelay.Mean, p.Signature)
	}
	// Output:
	// 3× expected 1.5, db answers after 2000 µs: CLIENT->10.0.0.1(10.0.0.1->10.0.0.2(10.0.0.2->10.0.0.1(10.0.0.1->CLIENT)))
}
