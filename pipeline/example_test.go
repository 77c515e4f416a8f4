package pipeline_test

import (
	"fmt"
	"path/filepath"

	"github.com/wirepath/wirepath/pipeline"
)

// Run takes the captures of a NAT load balancer's two sides (and of two
// hosts) to a trace in which the translations are undone, every clock is
// tied to the reference, and the aliases are kept in the metadata.
func ExampleRun() {
	var caps []string
	for _, f := range []string{"outside.pcap", "inside.pcap", "c1.pcapng", "s1.pcap"} {
		caps = append(caps, filepath.Join("..", "testdata", "nat", f))
	}
	res, err := pipeline.Run(pipeline.Config{Captures: caps})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d messages, %d with both ends, %d NAT aliases\n", res.Report.Messages, res.Report.BothEnds, len(res.Trace.Meta.Aliases))
	for _, c := range res.Trace.Meta.Clocks {
		fmt.Printf("%s %s known=%v\n", c.Kind, c.Name, c.Known)
	}
	// Output:
	// 52 messages, 52 with both ends, 12 NAT aliases
	// sniffer outside.pcap known=true
	// sniffer inside.pcap known=true
	// sniffer c1.pcapng known=true
	// sniffer s1.pcap known=true
}
