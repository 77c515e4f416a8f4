package convolution_test

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/wirepath/wirepath/causal/convolution"
	"github.com/wirepath/wirepath/trace"
)

// A forwards messages to B; B passes each on to C 30 ms later, and one in
// three to D 200 ms later. The convolution engine finds both delays from
// the timing alone.
func ExampleEngine() {
	rng := rand.New(rand.NewPCG(1, 2))
	t := &trace.Trace{}
	send := func(ns int64, from, to string) {
		t.Messages = append(t.Messages, trace.Message{
			SendTS: trace.Timestamp(ns), RecvTS: trace.NoTime,
			SrcNode: t.Intern(from), DstNode: t.Intern(to),
		})
	}
	for i := 0; i < 1000; i++ {
		at := rng.Int64N(100e9) // over 100 s
		send(at, "A", "B")
		send(at+30e6+rng.Int64N(2e6), "B", "C")
		if i%3 == 0 {
			send(at+200e6+rng.Int64N(2e6), "B", "D")
		}
	}
	// The engine does not need the trace in time order.
	opt := convolution.DefaultOptions()
	opt.Roots = []string{"A"}
	e, err := convolution.New(opt)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := e.Infer(context.Background(), t)
	if err != nil {
		fmt.Println(err)
		return
	}
	p := res.Patterns[0]
	fmt.Println(p.Signature, "from", p.Count, "messages")
	for _, h := range p.Hops[1:] {
		fmt.Printf("  %s->%s: %d messages, delay %.0f ms\n", h.From, h.To, h.Delays[0].Count, h.Delays[0].DelayUS/1e3)
	}
	// Output:
	// A->B(B->C,B->D) from 1000 messages
	//   B->C: 1000 messages, delay 30 ms
	//   B->D: 334 messages, delay 200 ms
}
