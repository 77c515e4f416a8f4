package engines_test

import (
	"context"
	"fmt"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/engines"
	"github.com/wirepath/wirepath/trace"
)

// Example runs the engine that suits a trace (auto), as
// `wirepath analyze` does, on two client requests through web to db.
func Example() {
	t := &trace.Trace{}
	msg := func(send, recv int64, src, dst string, kind trace.Kind, id string) {
		t.Messages = append(t.Messages, trace.Message{
			SendTS: trace.Timestamp(send * 1000), RecvTS: trace.Timestamp(recv * 1000),
			SrcNode: t.Intern(src), DstNode: t.Intern(dst), Kind: kind, CallID: t.Intern(id)})
	}
	for i, at := range []int64{0, 50_000} { // µs
		id := fmt.Sprint(i)
		msg(at, at+100, "client", "web", trace.KindCall, "c"+id)
		msg(at+300, at+400, "web", "db", trace.KindCall, "d"+id)
		msg(at+900, at+1000, "db", "web", trace.KindReturn, "d"+id)
		msg(at+1200, at+1300, "web", "client", trace.KindReturn, "c"+id)
	}
	names, why, err := engines.Resolve(engines.Auto, t)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(names, "because", why)
	opts := engines.DefaultOptions()
	opts.Nesting.Aggregate.Naming.AggregateClients = false
	var engs []causal.Engine
	for _, n := range names {
		e, err := opts.New(n)
		if err != nil {
			fmt.Println(err)
			return
		}
		engs = append(engs, e)
	}
	results, err := causal.InferAll(context.Background(), t, engs, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range results[0].Patterns {
		fmt.Println(p.Count, p.Signature)
	}
	// Output:
	// [assembly] because 100% of the messages are paired calls and returns
	// 2 client->web(web->db(db->web(web->client)))
}
