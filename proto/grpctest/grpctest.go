// Package grpctest runs gRPC-shaped calls over net/http's HTTP/2 (h2c, or
// TLS with a key log) on loopback and records the client's connection, for
// the tests of the protocol decoders (proto/http2, and proto/tls with
// HTTP/2 inside), of flows and of the command on real captures. It is
// plain HTTP/2 with gRPC's framing (length-prefixed messages, grpc-status
// in the trailers), so the tests need no gRPC library. Only tests import
// it.
package grpctest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/wirepath/wirepath/proto"
)

// Event is one write or read of the client's connection: the client's
// bytes (a write) or the server's (a read), in the order they happened.
type Event struct {
	Dir  proto.Dir
	Data []byte
}

// Recorder keeps the bytes of the connections made through it.
type Recorder struct {
	mu     sync.Mutex
	events []Event
	conns  int
}

func (r *Recorder) add(dir proto.Dir, p []byte) {
	if len(p) == 0 {
		return
	}
	r.mu.Lock()
	r.events = append(r.events, Event{dir, append([]byte(nil), p...)})
	r.mu.Unlock()
}

// Wrap returns c recording what goes through it.
func (r *Recorder) Wrap(c net.Conn) net.Conn {
	r.mu.Lock()
	r.conns++
	r.mu.Unlock()
	return &recConn{Conn: c, r: r}
}

// Events returns what was recorded.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// Conns returns how many connections were recorded.
func (r *Recorder) Conns() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.conns
}

// recConn is a net.Conn whose writes are the client's bytes and whose
// reads are the server's.
type recConn struct {
	net.Conn
	r *Recorder
}

func (c *recConn) Write(p []byte) (int, error) {
	c.r.add(proto.FromClient, p)
	return c.Conn.Write(p)
}

func (c *recConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.r.add(proto.FromServer, p[:n])
	return n, err
}

// Frame returns one length-prefixed gRPC message.
func Frame(msg []byte) []byte {
	b := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	return append(b, msg...)
}

// Status is the grpc-status the Handler answers call n with.
func Status(n int) int {
	if n%7 == 3 {
		return 5 // NOT_FOUND
	}
	return 0
}

// Methods are the calls' methods, by call number modulo their count.
var Methods = []string{"/test.Echo/Unary", "/test.Echo/ServerStream", "/test.Echo/ClientStream"}

// Handler is a gRPC-shaped server: Unary answers one message,
// ServerStream four (flushed one by one), ClientStream reads every
// message and answers one; grpc-status goes in the trailers.
func Handler(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor != 2 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
		http.Error(w, "not grpc", http.StatusBadRequest)
		return
	}
	body, _ := io.ReadAll(r.Body)
	n, _ := strconv.Atoi(strings.TrimPrefix(r.Header.Get("X-Request-Id"), "call-"))
	w.Header().Set("Content-Type", "application/grpc")
	w.Header().Set("Trailer", "Grpc-Status")
	w.WriteHeader(http.StatusOK)
	replies := 1
	if strings.HasSuffix(r.URL.Path, "/ServerStream") {
		replies = 4
	}
	for i := range replies {
		w.Write(Frame(fmt.Appendf(nil, "reply %d of %d to %d bytes", i, replies, len(body))))
		w.(http.Flusher).Flush()
	}
	w.Header().Set("Grpc-Status", strconv.Itoa(Status(n)))
}

// Call makes call n (with x-request-id call-n) and returns its
// grpc-status.
func Call(client *http.Client, base string, n int) (string, error) {
	method := Methods[n%len(Methods)]
	var body io.Reader = bytes.NewReader(Frame([]byte("request")))
	if strings.HasSuffix(method, "/ClientStream") {
		pr, pw := io.Pipe()
		go func() {
			for i := range 3 {
				pw.Write(Frame(fmt.Appendf(nil, "part %d", i)))
			}
			pw.Close()
		}()
		body = pr
	}
	req, err := http.NewRequest("POST", base+method, body)
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("TE", "trailers")
	req.Header.Set("X-Request-Id", fmt.Sprintf("call-%d", n))
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); err != nil {
		return "", err
	}
	return resp.Trailer.Get("Grpc-Status"), nil
}

// Run makes call 0, then calls 1 to calls concurrently, and checks that
// each got its status.
func Run(client *http.Client, base string, calls int) error {
	if st, err := Call(client, base, 0); err != nil || st != "0" {
		return fmt.Errorf("call 0: status %q, %v", st, err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	for n := 1; n <= calls; n++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := Call(client, base, n)
			if err == nil && st != strconv.Itoa(Status(n)) {
				err = fmt.Errorf("call %d: grpc-status %q", n, st)
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// Check checks that the application Units of a decoded connection are
// the calls 0 to calls exactly: one request and one response per call,
// paired by Key, the request labelled with the call's method and carrying
// its x-request-id, the response with the call's status.
func Check(units []proto.Unit, calls int) error {
	type pair struct{ req, resp *proto.Unit }
	byKey := map[uint64]*pair{}
	for i := range units {
		u := &units[i]
		if u.Kind == proto.KindControl {
			continue
		}
		p := byKey[u.Key]
		if p == nil {
			p = &pair{}
			byKey[u.Key] = p
		}
		switch {
		case u.Kind == proto.KindRequest && p.req == nil:
			p.req = u
		case u.Kind == proto.KindResponse && p.resp == nil:
			p.resp = u
		default:
			return fmt.Errorf("unexpected Unit %+v", *u)
		}
	}
	if len(byKey) != calls+1 {
		return fmt.Errorf("%d keys, want %d calls", len(byKey), calls+1)
	}
	seen := map[int]bool{}
	for key, p := range byKey {
		if err := checkPair(key, p.req, p.resp, seen); err != nil {
			return err
		}
	}
	return nil
}

func checkPair(key uint64, req, resp *proto.Unit, seen map[int]bool) error {
	if req == nil || resp == nil {
		return fmt.Errorf("key %d: request %v, response %v", key, req, resp)
	}
	if req.Evidence == nil || len(req.Evidence.IDs) != 1 || req.Evidence.IDs[0].Source != "x-request-id" {
		return fmt.Errorf("key %d: evidence %+v", key, req.Evidence)
	}
	n, err := strconv.Atoi(strings.TrimPrefix(req.Evidence.IDs[0].Value, "call-"))
	if err != nil || seen[n] {
		return fmt.Errorf("key %d: call %q twice or unknown", key, req.Evidence.IDs[0].Value)
	}
	seen[n] = true
	if want := "grpc " + Methods[n%len(Methods)]; req.Label != want {
		return fmt.Errorf("call %d: request label %q, want %q", n, req.Label, want)
	}
	if resp.Status != Status(n) || !strings.HasPrefix(resp.Label, "grpc ") {
		return fmt.Errorf("call %d: response %q %d, want status %d", n, resp.Label, resp.Status, Status(n))
	}
	if req.Start >= req.End || resp.Start >= resp.End || req.Bytes > req.End-req.Start || resp.Bytes > resp.End-resp.Start {
		return fmt.Errorf("call %d: ranges %+v %+v", n, *req, *resp)
	}
	return nil
}
