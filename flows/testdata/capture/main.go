// Command capture makes the real captures the flows tests read: inside a
// network namespace of its own (see ../make-captures.sh) it starts
// tcpdump (pcap, full snap length, nanosecond timestamps) and dumpcap
// (pcapng, 160-byte snap length) on the loopback interface, runs
//
//   - a small HTTP/1.1 server on 127.0.0.3:8080 that writes its responses
//     itself (Content-Length, chunked, a 200 KB body, a body written in two
//     writes 700 ms apart, HEAD), talked to by curl;
//   - a DNS server on 127.0.0.2:53 (UDP and TCP), asked by a Go client;
//   - an unframed request/response server on 127.0.0.4:9000 whose client
//     writes one request in two writes 800 ms apart;
//
// and writes what every program actually sent and when (ground truth) to
// loopback.truth.json, next to loopback.pcap and loopback-snap160.pcapng.
package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Write is one message a program sent: its size and when the sender
// started and finished writing it (or, for a request read by our server
// from curl, when the server had read all of it).
type Write struct {
	Bytes   int   `json:"bytes"`
	Writes  int   `json:"writes,omitempty"`
	StartNS int64 `json:"start_ns,omitempty"`
	EndNS   int64 `json:"end_ns"`
}

// Exchange is one call and its return.
type Exchange struct {
	App    string `json:"app"`   // http, dns, none
	Proto  string `json:"proto"` // tcp, udp
	Client string `json:"client"`
	Server string `json:"server"`
	What   string `json:"what"` // e.g. "GET /a", "A one.test"
	Call   Write  `json:"call"`
	Return Write  `json:"return"`
	// SentByClient is true when the call's times are the sender's own
	// (our Go clients); for curl they are when the server finished reading.
	SentByClient bool `json:"sent_by_client"`
}

type truth struct {
	mu        sync.Mutex
	Exchanges []Exchange `json:"exchanges"`
}

func (t *truth) add(e Exchange) {
	t.mu.Lock()
	t.Exchanges = append(t.Exchanges, e)
	t.mu.Unlock()
}

var gt truth

func now() int64 { return time.Now().UnixNano() }

func main() {
	out := flag.String("out", ".", "directory for the captures and the ground truth")
	flag.Parse()
	log.SetFlags(0)

	pcapPath := filepath.Join(*out, "loopback.pcap")
	ngPath := filepath.Join(*out, "loopback-snap160.pcapng")
	filter := "host 127.0.0.2 or host 127.0.0.3 or host 127.0.0.4"
	td := exec.Command("tcpdump", "-i", "lo", "-U", "-n", "--time-stamp-precision=nano", "-w", pcapPath, filter)
	dc := exec.Command("dumpcap", "-q", "-i", "lo", "-s", "160", "-w", ngPath, "-f", filter)
	for _, c := range []*exec.Cmd{td, dc} {
		c.Stderr = os.Stderr
		if err := c.Start(); err != nil {
			log.Fatal(err)
		}
	}
	time.Sleep(2 * time.Second) // let both start capturing

	httpLn := listen("127.0.0.3:8080")
	go serveHTTP(httpLn)
	dnsUDP, err := net.ListenPacket("udp", "127.0.0.2:53")
	check(err)
	go serveDNSUDP(dnsUDP)
	dnsTCP := listen("127.0.0.2:53")
	go serveDNSTCP(dnsTCP)
	chatLn := listen("127.0.0.4:9000")
	go serveChat(chatLn)

	base := "http://127.0.0.3:8080"
	curl("-s", "-o", "/dev/null", base+"/a", base+"/b") // two requests, one connection
	curl("-s", "-o", "/dev/null", "-X", "POST", "--data-binary", strings.Repeat("p", 3000), base+"/post")
	curl("-s", "-o", "/dev/null", base+"/chunked")
	curl("-s", "-o", "/dev/null", base+"/big")
	curl("-s", "-o", "/dev/null", "-I", base+"/head")
	curl("-s", "-o", "/dev/null", base+"/slow")

	dnsClientUDP("one.test", 0x1001)
	dnsClientUDP("two.test", 0x1002)
	dnsClientTCP([]string{"three.test", "four.test"}, 0x2001)
	chatClient()

	time.Sleep(1 * time.Second)
	for _, c := range []*exec.Cmd{td, dc} {
		_ = c.Process.Signal(syscall.SIGINT)
		_ = c.Wait()
	}
	gt.mu.Lock()
	defer gt.mu.Unlock()
	b, err := json.MarshalIndent(&gt, "", "  ")
	check(err)
	check(os.WriteFile(filepath.Join(*out, "loopback.truth.json"), append(b, '\n'), 0o644))
	log.Printf("wrote %s, %s and the ground truth (%d exchanges)", pcapPath, ngPath, len(gt.Exchanges))
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

func listen(addr string) net.Listener {
	ln, err := net.Listen("tcp", addr)
	check(err)
	return ln
}

func curl(args ...string) {
	cmd := exec.Command("curl", append([]string{"--http1.1", "--max-time", "10"}, args...)...)
	cmd.Stderr = os.Stderr
	check(cmd.Run())
	time.Sleep(100 * time.Millisecond)
}

// serveHTTP answers HTTP/1.1 requests, writing every response itself so
// that its exact bytes and write times are known.
func serveHTTP(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func(c net.Conn) {
			defer c.Close()
			br := bufio.NewReader(c)
			for {
				method, path, n, err := readRequest(br)
				if err != nil {
					return
				}
				readDone := now()
				var writes [][]byte
				switch path {
				case "/chunked":
					writes = [][]byte{[]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n" +
						"7\r\nchunked\r\n5\r\n body\r\n0\r\n\r\n")}
				case "/big":
					body := bytes.Repeat([]byte("0123456789abcdef"), 200_000/16)
					writes = [][]byte{append([]byte(fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", len(body))), body...)}
				case "/slow":
					writes = [][]byte{[]byte("HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\nfirst half"), []byte("second hal")}
				default:
					body := "hello from " + path + "\n"
					if method == "HEAD" {
						writes = [][]byte{[]byte(fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", len(body)))}
					} else {
						writes = [][]byte{[]byte(fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body))}
					}
				}
				ret := Write{StartNS: now(), Writes: len(writes)}
				for i, w := range writes {
					if i > 0 {
						time.Sleep(700 * time.Millisecond)
					}
					if _, err := c.Write(w); err != nil {
						return
					}
					ret.Bytes += len(w)
				}
				ret.EndNS = now()
				gt.add(Exchange{App: "http", Proto: "tcp", Client: c.RemoteAddr().String(), Server: c.LocalAddr().String(),
					What: method + " " + path, Call: Write{Bytes: n, EndNS: readDone}, Return: ret})
			}
		}(c)
	}
}

// readRequest reads one request and returns its method, path and size in
// bytes (start line, headers and Content-Length body).
func readRequest(br *bufio.Reader) (method, path string, n int, err error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return "", "", 0, err
	}
	n += len(line)
	f := strings.Fields(line)
	if len(f) < 2 {
		return "", "", 0, errors.New("bad request line")
	}
	method, path = f[0], f[1]
	cl := 0
	for {
		h, err := br.ReadString('\n')
		if err != nil {
			return "", "", 0, err
		}
		n += len(h)
		if h == "\r\n" {
			break
		}
		if k, v, ok := strings.Cut(h, ":"); ok && strings.EqualFold(k, "content-length") {
			cl, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	if _, err := io.CopyN(io.Discard, br, int64(cl)); err != nil {
		return "", "", 0, err
	}
	return method, path, n + cl, nil
}

// dnsQuery builds a DNS query for an A record.
func dnsQuery(id uint16, name string) []byte {
	b := []byte{byte(id >> 8), byte(id), 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0}
	for _, l := range strings.Split(name, ".") {
		b = append(b, byte(len(l)))
		b = append(b, l...)
	}
	return append(b, 0, 0, 1, 0, 1)
}

// dnsAnswer answers a query with one A record 192.0.2.<len(name)>.
func dnsAnswer(q []byte) []byte {
	if len(q) < 12 {
		return nil
	}
	r := append([]byte(nil), q...)
	r[2] |= 0x80 // response
	r[3] = 0x80  // recursion available, no error
	r[7] = 1     // one answer
	r = append(r, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, byte(len(q)))
	return r
}

func serveDNSUDP(pc net.PacketConn) {
	buf := make([]byte, 1500)
	for {
		n, addr, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		if _, err := pc.WriteTo(dnsAnswer(buf[:n]), addr); err != nil {
			return
		}
	}
}

func serveDNSTCP(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func(c net.Conn) {
			defer c.Close()
			for {
				var l [2]byte
				if _, err := io.ReadFull(c, l[:]); err != nil {
					return
				}
				q := make([]byte, binary.BigEndian.Uint16(l[:]))
				if _, err := io.ReadFull(c, q); err != nil {
					return
				}
				a := dnsAnswer(q)
				if _, err := c.Write(append([]byte{byte(len(a) >> 8), byte(len(a))}, a...)); err != nil {
					return
				}
			}
		}(c)
	}
}

func dnsClientUDP(name string, id uint16) {
	c, err := net.Dial("udp", "127.0.0.2:53")
	check(err)
	defer c.Close()
	q := dnsQuery(id, name)
	call := Write{Bytes: len(q), Writes: 1, StartNS: now()}
	_, err = c.Write(q)
	check(err)
	call.EndNS = now()
	buf := make([]byte, 1500)
	n, err := c.Read(buf)
	check(err)
	ret := Write{Bytes: n, EndNS: now()}
	gt.add(Exchange{App: "dns", Proto: "udp", Client: c.LocalAddr().String(), Server: c.RemoteAddr().String(),
		What: "A " + name, Call: call, Return: ret, SentByClient: true})
	time.Sleep(50 * time.Millisecond)
}

// dnsClientTCP sends its queries back to back on one connection, then
// reads the answers.
func dnsClientTCP(names []string, id uint16) {
	c, err := net.Dial("tcp", "127.0.0.2:53")
	check(err)
	defer c.Close()
	var calls []Write
	for i, name := range names {
		q := dnsQuery(id+uint16(i), name)
		w := Write{Bytes: len(q) + 2, Writes: 1, StartNS: now()}
		_, err := c.Write(append([]byte{byte(len(q) >> 8), byte(len(q))}, q...))
		check(err)
		w.EndNS = now()
		calls = append(calls, w)
		time.Sleep(20 * time.Millisecond)
	}
	for i, name := range names {
		var l [2]byte
		_, err := io.ReadFull(c, l[:])
		check(err)
		a := make([]byte, binary.BigEndian.Uint16(l[:]))
		_, err = io.ReadFull(c, a)
		check(err)
		gt.add(Exchange{App: "dns", Proto: "tcp", Client: c.LocalAddr().String(), Server: c.RemoteAddr().String(),
			What: "A " + name, Call: calls[i], Return: Write{Bytes: len(a) + 2, EndNS: now()}, SentByClient: true})
	}
}

// serveChat reads requests of a fixed size (the client writes them in two
// parts) and answers "ack".
func serveChat(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func(c net.Conn) {
			defer c.Close()
			req := make([]byte, 200)
			for {
				if _, err := io.ReadFull(c, req); err != nil {
					return
				}
				if _, err := c.Write([]byte("ack: 200 bytes")); err != nil {
					return
				}
			}
		}(c)
	}
}

// chatClient sends two 200-byte requests; the first in two writes 800 ms
// apart (a pause longer than the default split pause, so flows cuts it
// in two), the second at once.
func chatClient() {
	c, err := net.Dial("tcp", "127.0.0.4:9000")
	check(err)
	defer c.Close()
	resp := make([]byte, len("ack: 200 bytes"))
	for i, parts := range [][]int{{120, 80}, {200}} {
		call := Write{Writes: len(parts), StartNS: now()}
		for j, k := range parts {
			if j > 0 {
				time.Sleep(800 * time.Millisecond)
			}
			_, err := c.Write(bytes.Repeat([]byte{byte('a' + i)}, k))
			check(err)
			call.Bytes += k
		}
		call.EndNS = now()
		_, err := io.ReadFull(c, resp)
		check(err)
		gt.add(Exchange{App: "none", Proto: "tcp", Client: c.LocalAddr().String(), Server: c.RemoteAddr().String(),
			What: fmt.Sprintf("chat %d", i), Call: call, Return: Write{Bytes: len(resp), EndNS: now()}, SentByClient: true})
	}
}
