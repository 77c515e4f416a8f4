package gen_test

import (
	"fmt"
	"strings"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/gen"
)

func ExampleGenerate() {
	cfg, err := gen.ParseConfig(strings.NewReader(`
instances: 100
clients: 4
think: 10ms..50ms
nodes:
  WEB: {addr: 10.0.0.1, port: 80}
  DB:  {addr: 10.0.0.2, port: 5432}
tracelets:
  - name: page
    rpc:
      to: WEB
      calls:
        - {to: DB, delay: 2ms±500us, reply: 1ms}
`), "example.yaml")
	if err != nil {
		panic(err)
	}
	out, err := gen.Generate(cfg, gen.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Stats.Instances, "instances,", len(out.Trace.Messages), "messages")
	patterns, _ := out.Truth.Patterns(causal.AggregateOptions{Naming: causal.DefaultNaming()})
	for _, p := range patterns {
		fmt.Println(p.Count, p.Signature)
	}
	// Output:
	// 100 instances, 400 messages
	// 100 CLIENT->WEB(WEB->DB(DB->WEB(WEB->CLIENT)))
}
