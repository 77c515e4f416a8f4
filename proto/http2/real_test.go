package http2

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/wirepath/wirepath/proto"
)

// This file tests the decoder against a real implementation on loopback:
// net/http's HTTP/2 client and server (x/net's own are deprecated in its
// favour). A recorder below the client's HTTP/2 layer keeps both
// directions' bytes in the order the client wrote and read them.

// recorder keeps the bytes of the connections made through it.
type recorder struct {
	mu     sync.Mutex
	events []event
	conns  int
}

func (r *recorder) add(dir proto.Dir, p []byte) {
	if len(p) == 0 {
		return
	}
	r.mu.Lock()
	r.events = append(r.events, event{dir, append([]byte(nil), p...)})
	r.mu.Unlock()
}

func (r *recorder) wrap(c net.Conn) net.Conn {
	r.mu.Lock()
	r.conns++
	r.mu.Unlock()
	return &recConn{Conn: c, r: r}
}

// recConn is a net.Conn whose writes are the client's bytes and whose
// reads are the server's.
type recConn struct {
	net.Conn
	r *recorder
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

// grpcFrame is one length-prefixed gRPC message.
func grpcFrame(msg []byte) []byte {
	b := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	return append(b, msg...)
}

// callStatus is the grpc-status the test server answers call n with.
func callStatus(n int) int {
	if n%7 == 3 {
		return 5 // NOT_FOUND
	}
	return 0
}

// grpcServer is a gRPC-shaped handler: Unary answers one message,
// ServerStream answers four (flushed one by one), ClientStream reads
// every message and answers one; grpc-status goes in the trailers.
func grpcServer(w http.ResponseWriter, r *http.Request) {
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
		w.Write(grpcFrame(fmt.Appendf(nil, "reply %d of %d to %d bytes", i, replies, len(body))))
		w.(http.Flusher).Flush()
	}
	w.Header().Set("Grpc-Status", strconv.Itoa(callStatus(n)))
}

// grpcMethods are the test calls' methods, by call number.
var grpcMethods = []string{"/test.Echo/Unary", "/test.Echo/ServerStream", "/test.Echo/ClientStream"}

// grpcCall makes call n and returns its grpc-status.
func grpcCall(client *http.Client, base string, n int) (string, error) {
	method := grpcMethods[n%len(grpcMethods)]
	var body io.Reader = bytes.NewReader(grpcFrame([]byte("request")))
	if strings.HasSuffix(method, "/ClientStream") {
		pr, pw := io.Pipe()
		go func() {
			for i := range 3 {
				pw.Write(grpcFrame(fmt.Appendf(nil, "part %d", i)))
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

// runCalls makes one call, then calls concurrent ones, all over one
// connection of client, and returns the recorded bytes.
func runCalls(t *testing.T, client *http.Client, base string, rec *recorder, calls int) []event {
	t.Helper()
	if st, err := grpcCall(client, base, 0); err != nil || st != "0" {
		t.Fatalf("first call: %q %v", st, err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	for n := 1; n <= calls; n++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := grpcCall(client, base, n)
			if err == nil && st != strconv.Itoa(callStatus(n)) {
				err = fmt.Errorf("call %d: grpc-status %q", n, st)
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	client.CloseIdleConnections()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.conns != 1 {
		t.Fatalf("%d connections, want the calls multiplexed over 1", rec.conns)
	}
	return rec.events
}

// checkCalls decodes the recorded connection and checks that its
// requests and responses are the calls exactly.
func checkCalls(t *testing.T, mode Mode, events []event, calls int) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Mode = mode
	cfg.Evidence = true
	units, st := decode(t, cfg, events, 0)
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
			t.Fatalf("unexpected %s", format([]proto.Unit{*u}))
		}
	}
	if len(byKey) != calls+1 {
		t.Fatalf("%d streams, want %d calls:\n%s", len(byKey), calls+1, format(appUnits(units)))
	}
	seen := map[int]bool{}
	for key, p := range byKey {
		if p.req == nil || p.resp == nil {
			t.Fatalf("stream %d: request %v, response %v", key, p.req, p.resp)
		}
		if p.req.Evidence == nil || len(p.req.Evidence.IDs) != 1 || p.req.Evidence.IDs[0].Source != "x-request-id" {
			t.Fatalf("stream %d: evidence %+v", key, p.req.Evidence)
		}
		n, _ := strconv.Atoi(strings.TrimPrefix(p.req.Evidence.IDs[0].Value, "call-"))
		if seen[n] {
			t.Fatalf("call %d twice", n)
		}
		seen[n] = true
		if want := "grpc " + grpcMethods[n%len(grpcMethods)]; p.req.Label != want {
			t.Errorf("call %d: request label %q, want %q", n, p.req.Label, want)
		}
		code := callStatus(n)
		if p.resp.Status != code || p.resp.Label != grpcLabels[code] {
			t.Errorf("call %d: response %q %d, want %q %d", n, p.resp.Label, p.resp.Status, grpcLabels[code], code)
		}
		if p.req.Start >= p.req.End || p.resp.Start >= p.resp.End || p.req.Bytes > p.req.End-p.req.Start {
			t.Errorf("call %d: ranges %s", n, format([]proto.Unit{*p.req, *p.resp}))
		}
	}
	if st.Framed != st.In || st.FramesLost != 0 || st.HPACKPoisoned != 0 || st.Streams != int64(calls+1) {
		t.Errorf("stats: %+v", st)
	}
	t.Logf("%d bytes, %d frames by type %v, %d control Units", st.In, sum(st.Frames[:]), st.Frames, st.Controls)
}

func sum(x []int64) (s int64) {
	for _, v := range x {
		s += v
	}
	return s
}

// h2cClient returns a net/http client speaking unencrypted HTTP/2 by
// prior knowledge through rec.
func h2cClient(rec *recorder) (*http.Client, *http.Transport) {
	tr := &http.Transport{Protocols: new(http.Protocols),
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return rec.wrap(c), nil
		}}
	tr.Protocols.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: tr}, tr
}

// h2cServer starts net/http's server speaking unencrypted HTTP/2.
func h2cServer(h http.Handler) *httptest.Server {
	srv := httptest.NewUnstartedServer(h)
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	return srv
}

// TestGRPCh2c: 32 concurrent gRPC-shaped calls over one h2c connection
// between net/http's client and server. (proto/tls runs the same over
// TLS, decrypting with the key log.)
func TestGRPCh2c(t *testing.T) {
	srv := h2cServer(http.HandlerFunc(grpcServer))
	defer srv.Close()
	rec := &recorder{}
	client, tr := h2cClient(rec)
	defer tr.CloseIdleConnections()
	events := runCalls(t, client, srv.URL, rec, 32)
	checkCalls(t, Detect, events, 32)
}

// TestPlainRequests: plain HTTP requests, one after the other, over one
// h2c connection.
func TestPlainRequests(t *testing.T) {
	srv := h2cServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/7") {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, "item %s\n", r.URL.Path)
	}))
	defer srv.Close()
	rec := &recorder{}
	client, tr := h2cClient(rec)
	defer tr.CloseIdleConnections()
	for i := range 10 {
		resp, err := client.Get(fmt.Sprintf("%s/item/%d", srv.URL, i))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	tr.CloseIdleConnections()
	units, _ := decode(t, DefaultConfig(), rec.events, 0)
	status := map[uint64]int{}
	reqs := 0
	for _, u := range appUnits(units) {
		switch u.Kind {
		case proto.KindRequest:
			reqs++
			if u.Label != "GET /item/{id}" {
				t.Errorf("request label %q", u.Label)
			}
		case proto.KindResponse:
			status[u.Key] = u.Status
		}
	}
	if reqs != 10 || len(status) != 10 || status[15] != 404 || status[13] != 200 {
		t.Fatalf("%d requests, statuses %v\n%s", reqs, status, format(units))
	}
}
