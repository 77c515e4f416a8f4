// Command auth is the auth service of the wirepath demo system: a
// line-based TCP server that answers "CHECK user" with "OK" after a short
// lookup delay (20 ms, the slow step the demo should expose). It is only used
// by make.sh to produce the demo captures.
package main

import (
	"bufio"
	"flag"
	"log"
	"net"
	"time"
)

func main() {
	listen := flag.String("listen", ":9000", "address to serve on")
	delay := flag.Duration("delay", 20*time.Millisecond, "lookup delay")
	flag.Parse()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go func(c net.Conn) {
			defer c.Close()
			r := bufio.NewReader(c)
			for {
				if _, err := r.ReadString('\n'); err != nil {
					return
				}
				time.Sleep(*delay)
				if _, err := c.Write([]byte("OK\n")); err != nil {
					return
				}
			}
		}(c)
	}
}
