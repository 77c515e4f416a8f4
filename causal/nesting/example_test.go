package nesting_test

import (
	"context"
	"fmt"

	"github.com/wirepath/wirepath/causal/nesting"
	"github.com/wirepath/wirepath/trace"
)

// The example of Project 5 Figures 2 and 3: A calls B; B calls C and then
// D before returning. Timestamps are the message numbers in milliseconds.
func ExampleEngine_Run() {
	t := &trace.Trace{}
	for _, m := range []struct {
		ms       int64
		from, to string
		kind     trace.Kind
		id       string
	}{
		{1, "A", "B", trace.KindCall, "1"},
		{3, "B", "C", trace.KindCall, "2"},
		{5, "C", "B", trace.KindReturn, "2"},
		{7, "B", "D", trace.KindCall, "3"},
		{9, "D", "B", trace.KindReturn, "3"},
		{11, "B", "A", trace.KindReturn, "1"},
	} {
		t.Messages = append(t.Messages, trace.Message{
			SendTS: trace.Timestamp(m.ms * 1e6), RecvTS: trace.NoTime,
			SrcNode: t.Intern(m.from), DstNode: t.Intern(m.to),
			Kind: m.kind, CallID: t.Intern(m.id),
		})
	}
	e, err := nesting.New(nesting.DefaultOptions())
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := e.Run(context.Background(), t)
	if err != nil {
		fmt.Println(err)
		return
	}
	cp := res.CallPaths[0]
	fmt.Println("call path:", cp.Signature)
	for _, c := range cp.Calls[1:] {
		fmt.Printf("  %s->%s called %.0f ms after its parent, took %.0f ms\n", c.From, c.To, c.CallDelay.Mean/1e3, c.Latency.Mean/1e3)
	}
	fmt.Println("messages:", res.Patterns[0].Signature)
	// Output:
	// call path: A->B(B->C,B->D)
	//   B->C called 2 ms after its parent, took 2 ms
	//   B->D called 6 ms after its parent, took 2 ms
	// messages: A->B(B->C(C->B(B->D(D->B(B->A)))))
}
