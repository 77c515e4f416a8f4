// Command benchgen writes the synthetic captures of the flows benchmarks
// (see scripts/bench-flows.sh): go run ./tools/benchgen/cmd/benchgen -o big.pcap
// for HTTP/1.1, -grpc for gRPC over HTTP/2 (scripts/bench-grpc.sh),
// -synflood N for a SYN flood (docs/performance.md).
package main

import (
	"flag"
	"fmt"
	"log"
	"os"

	"github.com/wirepath/wirepath/tools/benchgen"
)

func main() {
	o := benchgen.DefaultOptions()
	out := flag.String("o", "bench.pcap", "output file")
	flag.IntVar(&o.Packets, "packets", o.Packets, "packets to write")
	flag.IntVar(&o.Concurrent, "concurrent", o.Concurrent, "connections open at once")
	flag.Uint64Var(&o.Seed, "seed", o.Seed, "random seed")
	g := benchgen.DefaultGRPCOptions()
	grpc := flag.Bool("grpc", false, "write gRPC over HTTP/2 (-conns connections of -batches batches of -batch concurrent calls) instead")
	flag.IntVar(&g.Conns, "conns", g.Conns, "gRPC: connections")
	flag.IntVar(&g.Batches, "batches", g.Batches, "gRPC: batches of calls per connection")
	flag.IntVar(&g.Batch, "batch", g.Batch, "gRPC: concurrent calls per batch")
	flood := flag.Int("synflood", 0, "write a SYN flood of `N` half-open connections instead")
	flag.Parse()
	f, err := os.Create(*out)
	if err != nil {
		log.Fatal(err)
	}
	var st benchgen.Stats
	switch {
	case *flood > 0:
		st, err = benchgen.WriteSYNFlood(f, *flood, o.Seed)
	case *grpc:
		g.Seed = o.Seed
		st, err = benchgen.WriteGRPC(f, g)
	default:
		st, err = benchgen.Write(f, o)
	}
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %d packets, %d payload bytes, %d connections, %d requests, %d responses\n",
		*out, st.Packets, st.Payload, st.Conns, st.Requests, st.Responses)
}
