package nat_test

import (
	"fmt"
	"io"
	"log"

	"github.com/wirepath/wirepath/nat"
	"github.com/wirepath/wirepath/pcapio"
)

// Learn the translations between the sniffers on either side of a NAT load
// balancer, then rename a second pass of the packets to their real names.
func Example() {
	files := []string{"../testdata/nat/outside.pcap", "../testdata/nat/inside.pcap"}
	pass := func(f func(*pcapio.Packet)) {
		m, err := pcapio.Open(files, pcapio.Options{})
		if err != nil {
			log.Fatal(err)
		}
		defer m.Close()
		for {
			p, err := m.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				log.Fatal(err)
			}
			f(p)
		}
	}

	l := nat.NewLearner(nat.DefaultOptions())
	pass(l.Observe)
	table := l.Finish()
	for _, a := range table.Aliases()[:4] {
		fmt.Printf("%s %s <-> %s (%d matches)\n", a.Kind, a.Outside, a.Inside, a.Matches)
	}

	c := nat.NewCanonicalizer(table)
	pass(func(p *pcapio.Packet) { c.Rewrite(p) })
	fmt.Println("renamed", c.Stats().Rewritten, "packets")
	// Output:
	// dnat 192.0.2.100:80 <-> 10.1.0.11:8080 (20 matches)
	// dnat 192.0.2.100:80 <-> 10.1.0.12:8080 (20 matches)
	// dnat 192.0.2.100:80 <-> 10.1.0.13:8080 (20 matches)
	// dnat 192.0.2.100:81 <-> 10.1.0.13:8080 (20 matches)
	// renamed 190 packets
}
