// Command benchgen writes the synthetic capture of the flows benchmark
// (see scripts/bench-flows.sh): go run ./tools/benchgen/cmd/benchgen -o big.pcap
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
	flag.Parse()
	f, err := os.Create(*out)
	if err != nil {
		log.Fatal(err)
	}
	st, err := benchgen.Write(f, o)
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %d packets, %d payload bytes, %d connections, %d requests, %d responses\n",
		*out, st.Packets, st.Payload, st.Conns, st.Requests, st.Responses)
}
