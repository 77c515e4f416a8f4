// Package servertest starts real servers (Redis, memcached, PostgreSQL,
// MariaDB) on loopback through internal/realserver, and records both
// directions of the connections a client makes through a loopback proxy,
// so that decoders are tested on what the real servers send. A test whose
// server binary is missing (or that needs root to drop privileges and has
// none) is skipped.
package servertest

import (
	"bytes"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/wirepath/wirepath/internal/realserver"
	"github.com/wirepath/wirepath/proto"
	"github.com/wirepath/wirepath/proto/internal/dectest"
)

// Server is a server process started by a test.
type Server = realserver.Server

// Redis starts redis-server (see realserver.Redis).
func Redis(t testing.TB) *Server { return realserver.Redis(t) }

// Memcached starts memcached (see realserver.Memcached).
func Memcached(t testing.TB) *Server { return realserver.Memcached(t) }

// Postgres starts PostgreSQL (see realserver.Postgres).
func Postgres(t testing.TB) *Server { return realserver.Postgres(t) }

// MariaDB starts MariaDB (see realserver.MariaDB).
func MariaDB(t testing.TB) *Server { return realserver.MariaDB(t) }

// Command runs a client program (see realserver.Command).
func Command(t testing.TB, stdin []byte, argv ...string) []byte {
	t.Helper()
	return realserver.Command(t, stdin, argv...)
}

// Output runs a client program (see realserver.Output).
func Output(t testing.TB, stdin []byte, argv ...string) ([]byte, error) {
	t.Helper()
	return realserver.Output(t, stdin, argv...)
}

// Proxy forwards loopback connections to a server and records, per
// connection, both directions' bytes in the order they were read.
type Proxy struct {
	Addr   string
	target string
	ln     net.Listener
	mu     sync.Mutex
	conns  []*conn
	wg     sync.WaitGroup
}

type conn struct {
	mu    sync.Mutex
	steps []dectest.Step
	ended int // pumps finished
}

// NewProxy starts a recording proxy to target; it stops when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, ln: ln}
	go p.serve()
	t.Cleanup(func() { ln.Close() })
	return p
}

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		rec := &conn{}
		p.mu.Lock()
		p.conns = append(p.conns, rec)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pump(rec, proto.FromClient, c, s)
		go p.pump(rec, proto.FromServer, s, c)
	}
}

// pump copies src to dst, recording each read.
func (p *Proxy) pump(rec *conn, dir proto.Dir, src, dst net.Conn) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			rec.mu.Lock()
			rec.steps = append(rec.steps, dectest.Step{Dir: dir, Data: bytes.Clone(buf[:n])})
			rec.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	// Pass the end on as a half close; the second pump to end closes both.
	_ = dst.(*net.TCPConn).CloseWrite()
	rec.mu.Lock()
	rec.ended++
	last := rec.ended == 2
	rec.mu.Unlock()
	if last {
		src.Close()
		dst.Close()
	}
}

// Conns waits (up to 10 s) until every proxied connection has ended in both
// directions and returns their recordings, in the order they were opened.
func (p *Proxy) Conns(t testing.TB) [][]dectest.Step {
	t.Helper()
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("proxied connections did not end")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([][]dectest.Step, len(p.conns))
	for i, c := range p.conns {
		out[i] = c.steps
	}
	return out
}

// Host returns the proxy's host and port as separate strings, for clients
// that take them apart.
func (p *Proxy) Host() (string, string) {
	h, port, _ := net.SplitHostPort(p.Addr)
	return h, port
}

// Decode feeds a recorded connection to d and returns its Units, checked
// with dectest.Check.
func Decode(t testing.TB, d proto.Decoder, steps []dectest.Step, serial bool) []proto.Unit {
	t.Helper()
	units := dectest.Run(d, steps, nil)
	dectest.Check(t, units, serial)
	return units
}

// Count tallies Units by kind and by label.
type Count struct {
	Kinds  map[proto.Kind]int
	Labels map[string]int
}

// Tally counts units.
func Tally(units []proto.Unit) Count {
	c := Count{Kinds: map[proto.Kind]int{}, Labels: map[string]int{}}
	for _, u := range units {
		c.Kinds[u.Kind]++
		if u.Kind == proto.KindRequest || u.Kind == proto.KindOneWay {
			c.Labels[u.Label]++
		}
	}
	return c
}

// String describes the count.
func (c Count) String() string {
	return fmt.Sprintf("%v %v", c.Kinds, c.Labels)
}
