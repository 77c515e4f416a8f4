package linking_test

import (
	"context"
	"fmt"
	"time"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/linking"
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

// Linking finds the request path and how often it ran. With the default
// options each RETURN belongs to its CALL's instance and the instances of
// one root share its probability, so the expected count is the number of
// requests; PureWAP5Options would give each instance WAP5's product
// 0.952·(1-0.006)·0.952·0.952 = 0.859 (expected 2.58).
func ExampleEngine() {
	l, err := linking.New(linking.DefaultOptions())
	if err != nil {
		panic(err)
	}
	res, err := l.Infer(context.Background(), rpcTrace())
	if err != nil {
		panic(err)
	}
	for _, p := range res.Patterns {
		fmt.Printf("%d× (expected %.2f) %s\n", p.Count, p.Expected, p.Signature)
		for _, h := range p.Hops[1:] {
			fmt.Printf("  %s→%s after %.0f µs at %s\n", h.From, h.To, h.NodeDelay.Mean, h.From)
		}
	}
	// Output:
	// 3× (expected 3.00) CLIENT->10.0.0.1(10.0.0.1->10.0.0.2(10.0.0.2->10.0.0.1(10.0.0.1->CLIENT)))
	//   10.0.0.1→10.0.0.2 after 1000 µs at 10.0.0.1
	//   10.0.0.2→10.0.0.1 after 2000 µs at 10.0.0.2
	//   10.0.0.1→CLIENT after 1000 µs at 10.0.0.1
}

// Link exposes steps 1 and 2: the estimated delay of each sender pair and
// the probability of each possible cause of a message, here with WAP5's
// own options.
func ExampleEngine_Link() {
	t := rpcTrace()
	l, _ := linking.New(linking.PureWAP5Options())
	g, err := l.Link(context.Background(), t, nil)
	if err != nil {
		panic(err)
	}
	for _, d := range g.Delays() {
		fmt.Printf("d(%s→%s) = %v\n", t.Str(d.From), t.Str(d.To), d.Mean)
	}
	// The second web→client answer: d = 1 ms, so db's answer 1 ms before
	// weighs e^-1, the client's call 6 ms before e^-6 and spontaneity e^-4.
	m := 7
	for _, p := range g.Parents(m) {
		fmt.Printf("caused by message %d with p = %.3f\n", p.Msg, p.P)
	}
	fmt.Printf("spontaneous with p = %.3f\n", g.Spontaneous(m))
	// Output:
	// d(10.0.0.1→10.0.0.2) = 1ms
	// d(10.0.0.2→10.0.0.1) = 2ms
	// d(10.0.0.1→10.0.9.1) = 1ms
	// caused by message 6 with p = 0.946
	// caused by message 4 with p = 0.006
	// spontaneous with p = 0.047
}

// Paths builds the path instances from a Graph and hands each to a
// function, here counting them by size.
func ExampleEngine_Paths() {
	t := rpcTrace()
	l, _ := linking.New(linking.DefaultOptions())
	g, _ := l.Link(context.Background(), t, nil)
	sizes := map[int]int{}
	err := l.Paths(context.Background(), g, func(in causal.Instance) error {
		sizes[len(in.Nodes)]++
		return nil
	})
	fmt.Println(sizes, err)
	// Output:
	// map[4:3] <nil>
}
