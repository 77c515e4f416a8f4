// Command db is the database of the reconcile test system: a Go server
// (so no LD_PRELOAD library can trace it) answering "GET key N" lines with
// "VAL <size>\n" and the value, in one write.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"log"
	"net"
	"strings"
)

func main() {
	addr := flag.String("listen", "10.30.2.21:7000", "address to listen on")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go serve(c)
	}
}

func serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		var n int
		fmt.Sscanf(strings.TrimSpace(line), "GET key %d", &n)
		size := 100 + (n*37)%900
		var b bytes.Buffer
		fmt.Fprintf(&b, "VAL %d\n", size)
		b.Write(bytes.Repeat([]byte{'v'}, size))
		if _, err := c.Write(b.Bytes()); err != nil {
			return
		}
	}
}
