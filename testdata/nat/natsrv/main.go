// Command natsrv is the traffic program of testdata/nat/make.sh: a tiny HTTP
// server and UDP echo server, and a UDP client that sends numbered
// datagrams and waits for each echo. It is not part of wirepath.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"time"
)

func main() {
	name := flag.String("name", "", "server name put in every answer")
	httpAddr := flag.String("http", "", "serve HTTP on `ADDR`")
	udpAddr := flag.String("udp", "", "echo UDP datagrams on `ADDR`")
	to := flag.String("to", "", "client mode: send datagrams to `ADDR`")
	n := flag.Int("n", 5, "client mode: datagrams to send")
	flag.Parse()
	if *to != "" {
		if err := client(*to, *n, *name); err != nil {
			log.Fatal(err)
		}
		return
	}
	if *udpAddr != "" {
		pc, err := net.ListenPacket("udp", *udpAddr)
		if err != nil {
			log.Fatal(err)
		}
		go echo(pc, *name)
	}
	if *httpAddr != "" {
		http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "hello from %s, you asked for %s\n", *name, r.URL.Path)
		})
		log.Fatal(http.ListenAndServe(*httpAddr, nil))
	}
	select {}
}

func echo(pc net.PacketConn, name string) {
	buf := make([]byte, 2048)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			log.Print(err)
			return
		}
		pc.WriteTo(append([]byte(name+" echoes "), buf[:n]...), from)
	}
}

func client(to string, n int, name string) error {
	c, err := net.Dial("udp", to)
	if err != nil {
		return err
	}
	defer c.Close()
	buf := make([]byte, 2048)
	for i := 1; i <= n; i++ {
		if _, err := fmt.Fprintf(c, "datagram %d of %d from %s pid %d", i, n, name, os.Getpid()); err != nil {
			return err
		}
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Read(buf); err != nil {
			return fmt.Errorf("datagram %d: %w", i, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}
