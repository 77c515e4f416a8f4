// Command tbtier is the second tier and the backends of the wirepath testbed
// (docs/testbed.md).
//
// With -mode front it serves /price and /search by calling two or three
// backends in parallel (a parallel fan-out): with -rpc grpc (the default)
// as gRPC-shaped unary calls multiplexed over one HTTP/2 connection per
// backend (testbed/internal/h2rpc), with -rpc http over keep-alive HTTP/1.1
// connection pools; and it checks every backend's health periodically over
// the same connections (background calls caused by no request). With
// -mode backend it answers both, after a short random delay and, with -pg,
// a query to PostgreSQL through a pool of -pgpool connections
// (testbed/internal/pgc).
//
// Each request served and each background check is logged as one JSON line
// with what identifies each message exactly: the connection's endpoints as
// this process sees them, the message's ordinal on its connection (the
// server counts requests per accepted HTTP/1.1 connection; the client
// counts the requests it wrote on each pooled connection, from
// httptrace.GotConn; over HTTP/2 the client logs the stream id and the
// request's and the response's ordinals among the connection's requests
// and responses, which the server cannot see, so it logs -1) and the
// per-hop nonce (X-Hop-Id) it sent or received.
package main

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/wirepath/wirepath/testbed/internal/h2rpc"
	"github.com/wirepath/wirepath/testbed/internal/pgc"
)

type callRec struct {
	Svc    string `json:"svc"`
	Op     string `json:"op"`
	Key    string `json:"key"`
	Proto  string `json:"proto"`
	Local  string `json:"local"`
	Remote string `json:"remote"`
	Ord    int    `json:"ord"`
	// ROrd and Stream, for a call multiplexed over HTTP/2: the response's
	// ordinal among the connection's responses, and the stream id.
	ROrd   *int   `json:"rord,omitempty"`
	Stream uint32 `json:"stream,omitempty"`
	SendNS int64  `json:"send_ns"`
	RecvNS int64  `json:"recv_ns"`
	Hop    string `json:"hop"`
	Status int    `json:"status"`
}

type reqRec struct {
	T      string    `json:"t"`
	Job    string    `json:"job,omitempty"`
	Local  string    `json:"local,omitempty"`
	Peer   string    `json:"peer,omitempty"`
	Ord    int       `json:"ord"`
	RecvNS int64     `json:"recv_ns,omitempty"`
	SendNS int64     `json:"send_ns,omitempty"`
	Hop    string    `json:"hop,omitempty"`
	RID    string    `json:"rid,omitempty"`
	Path   string    `json:"path,omitempty"`
	Status int       `json:"status,omitempty"`
	Calls  []callRec `json:"calls"`
}

// logger writes one JSON line per record.
type logger struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *logger) put(r any) {
	b, err := json.Marshal(r)
	if err != nil {
		log.Fatal(err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w == nil {
		return // closed at shutdown
	}
	if _, err := l.w.Write(append(b, '\n')); err != nil {
		log.Fatal(err)
	}
}

// connCount is the per-connection request counter of a server connection.
type connCount struct{ n int }

type ctxKey struct{}

// server returns an http.Server whose handlers find their connection's
// counter in the request context.
func server(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr:    addr,
		Handler: h,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, ctxKey{}, &connCount{})
		},
		ReadHeaderTimeout: 10 * time.Second,
	}
}

// served fills the server-side fields of a request record.
func served(r *http.Request, t0 int64) reqRec {
	cc := r.Context().Value(ctxKey{}).(*connCount)
	ord := cc.n
	cc.n++
	local := r.Context().Value(http.LocalAddrContextKey).(net.Addr).String()
	return reqRec{T: "req", Local: local, Peer: r.RemoteAddr, Ord: ord, RecvNS: t0,
		Hop: r.Header.Get("X-Hop-Id"), RID: r.Header.Get("X-Request-ID"), Path: r.URL.RequestURI()}
}

// pool is the front's client: keep-alive pools with per-connection ordinals.
type pool struct {
	client *http.Client
	mu     sync.Mutex
	ords   map[string]int // local endpoint of a pooled connection -> requests written
	rng    *rand.Rand
}

func newPool(seed uint64) *pool {
	tr := &http.Transport{MaxIdleConnsPerHost: 16, IdleConnTimeout: time.Minute,
		DialContext: (&net.Dialer{Timeout: 2 * time.Second}).DialContext}
	// (a stream of its own: tbload draws request i's nonce from stream i)
	return &pool{client: &http.Client{Transport: tr, Timeout: 5 * time.Second},
		ords: make(map[string]int), rng: rand.New(rand.NewPCG(seed, 1<<40+7))}
}

func (p *pool) nonce() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return fmt.Sprintf("%016x", p.rng.Uint64())
}

// get makes one GET on a pooled connection and records it.
func (p *pool) get(svc, base, path string, hdr http.Header) callRec {
	rec := callRec{Svc: svc, Op: "GET", Key: path, Proto: "tcp", Hop: p.nonce()}
	trace := &httptrace.ClientTrace{GotConn: func(ci httptrace.GotConnInfo) {
		rec.Local = ci.Conn.LocalAddr().String()
		rec.Remote = ci.Conn.RemoteAddr().String()
		p.mu.Lock()
		if !ci.Reused {
			p.ords[rec.Local] = 0 // a new connection, perhaps on a reused port
		}
		rec.Ord = p.ords[rec.Local]
		p.ords[rec.Local]++
		p.mu.Unlock()
		rec.SendNS = time.Now().UnixNano()
	}}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", base+path, nil)
	if err != nil {
		log.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("X-Hop-Id", rec.Hop)
	resp, err := p.client.Do(req)
	if err != nil {
		rec.Status = 0
		rec.RecvNS = time.Now().UnixNano()
		return rec
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	rec.RecvNS = time.Now().UnixNano()
	rec.Status = resp.StatusCode
	return rec
}

// rpcClients are the front's HTTP/2 connections, one per backend,
// dialled again after a failure.
type rpcClients struct {
	mu    sync.Mutex
	addrs []string
	conns []*h2rpc.Client
}

// get returns the connection to backend i.
func (r *rpcClients) get(i int) (*h2rpc.Client, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conns[i] != nil {
		return r.conns[i], nil
	}
	var err error
	for try := 0; try < 50; try++ { // the backends may still be starting
		var c *h2rpc.Client
		if c, err = h2rpc.Dial(r.addrs[i], 2*time.Second); err == nil {
			r.conns[i] = c
			return c, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil, err
}

// reset closes every connection: the next calls dial new ones.
func (r *rpcClients) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, c := range r.conns {
		if c != nil {
			c.Close()
			r.conns[i] = nil
		}
	}
}

// drop forgets a failed connection.
func (r *rpcClients) drop(i int, c *h2rpc.Client) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conns[i] == c {
		c.Close()
		r.conns[i] = nil
	}
}

// call makes one gRPC-shaped call to backend i and records it.
func (p *pool) call(rc *rpcClients, i int, method, query string, hdr http.Header) callRec {
	rec := callRec{Svc: "backend", Op: "grpc", Key: method, Proto: "tcp", Hop: p.nonce()}
	if query != "" {
		rec.Key += "?" + query
	}
	fields := [][2]string{{"x-hop-id", rec.Hop}}
	for k := range hdr {
		fields = append(fields, [2]string{strings.ToLower(k), hdr.Get(k)})
	}
	c, err := rc.get(i)
	if err != nil {
		rec.SendNS, rec.RecvNS = time.Now().UnixNano(), time.Now().UnixNano()
		return rec
	}
	_, info, err := c.Call(method, fields, []byte(query), 5*time.Second)
	rec.Local, rec.Remote, rec.Ord, rec.Stream = info.Local, info.Remote, info.ReqOrd, info.Stream
	rec.ROrd = &info.RespOrd
	rec.SendNS, rec.RecvNS = info.SendNS, info.RecvNS
	if err != nil {
		rc.drop(i, c)
		rec.RecvNS = time.Now().UnixNano()
		return rec
	}
	if info.Status == 0 {
		rec.Status = 200
	}
	return rec
}

func front(lg *logger, listen string, backends []string, health time.Duration, variant, rpc string, seed uint64, stop chan struct{}, renew chan os.Signal) *http.Server {
	p := newPool(seed)
	rc := &rpcClients{addrs: backends, conns: make([]*h2rpc.Client, len(backends))}
	go func() {
		for range renew {
			rc.reset()
		}
	}()
	callBackend := func(i int, path, query string, hdr http.Header) callRec {
		if rpc == "grpc" {
			method := "/tb.Backend/Part"
			if path == "/health" {
				method = "/tb.Backend/Health"
			}
			return p.call(rc, i, method, query, hdr)
		}
		if path == "/health" {
			return p.get("backend", "http://"+backends[i], "/health", nil)
		}
		return p.get("backend", "http://"+backends[i], path+"?"+query, hdr)
	}
	fan := func(w http.ResponseWriter, r *http.Request, n int) {
		t0 := time.Now().UnixNano()
		rec := served(r, t0)
		hdr := http.Header{}
		if variant == "ids" {
			if v := r.Header.Get("X-Request-ID"); v != "" {
				hdr.Set("X-Request-ID", v)
			}
			if v := r.Header.Get("traceparent"); len(v) == 55 {
				hdr.Set("traceparent", v[:36]+p.nonce()+v[52:])
			}
		}
		rec.Calls = make([]callRec, n)
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				q := r.URL.RawQuery
				if variant != "ids" {
					q = ""
				}
				rec.Calls[i] = callBackend(i, "/part", q, hdr)
			}(i)
		}
		wg.Wait()
		rec.Status = 200
		for _, c := range rec.Calls {
			if c.Status != 200 {
				rec.Status = 502
			}
		}
		body := strings.Repeat("p", 20+int(t0%150))
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		w.WriteHeader(rec.Status)
		rec.SendNS = time.Now().UnixNano()
		_, _ = io.WriteString(w, body)
		lg.put(rec)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/price", func(w http.ResponseWriter, r *http.Request) { fan(w, r, len(backends)) })
	mux.HandleFunc("/search", func(w http.ResponseWriter, r *http.Request) { fan(w, r, min(2, len(backends))) })
	for i := range backends {
		go func() {
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			for {
				select {
				case <-stop:
					return
				case <-time.After(time.Duration(float64(health) * (0.5 + rng.Float64()))):
				}
				c := callBackend(i, "/health", "", nil)
				lg.put(reqRec{T: "bg", Job: "health", Calls: []callRec{c}})
			}
		}()
	}
	return server(listen, mux)
}

// priceKey is the PostgreSQL key a backend looks a query up by: readable
// ("p" and a number from the query) with -variant ids, hashed otherwise.
func priceKey(query, variant string) string {
	h := sha1.Sum([]byte(query))
	if variant == "ids" {
		return fmt.Sprintf("p%d", binary.BigEndian.Uint16(h[:])%1000)
	}
	return fmt.Sprintf("k%x", h[:10])
}

// backendWork is what a backend does for one part request: a query to
// PostgreSQL (with a pool), then a short random delay; it returns the
// query's record, if one was made, and the response's size.
type backendWork struct {
	mu      sync.Mutex
	rng     *rand.Rand
	pg      *pgc.Pool
	pgAddr  string
	pgSize  int
	variant string
}

// renew opens a new pool in place of the current one.
func (b *backendWork) renew() error {
	p, err := pgPoolRetry(b.pgAddr, b.pgSize)
	if err != nil {
		return err
	}
	b.mu.Lock()
	old := b.pg
	b.pg = p
	b.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return nil
}

func (b *backendWork) part(query string) ([]callRec, int) {
	calls := []callRec{}
	b.mu.Lock()
	pg := b.pg
	b.mu.Unlock()
	if pg != nil {
		q := fmt.Sprintf("SELECT price FROM prices WHERE k = '%s'", priceKey(query, b.variant))
		r, err := pg.Query(q)
		c := callRec{Svc: "postgres", Op: "SELECT", Key: "prices", Proto: "tcp", Local: r.Local, Remote: r.Remote,
			Ord: r.Ord, SendNS: r.SendNS, RecvNS: r.RecvNS, Status: 200}
		if err != nil {
			c.Status = 0
		}
		calls = append(calls, c)
	}
	b.mu.Lock()
	d := time.Duration(300+b.rng.IntN(2500)) * time.Microsecond
	n := 10 + b.rng.IntN(300)
	b.mu.Unlock()
	time.Sleep(d)
	return calls, n
}

func backend(lg *logger, listen string, seed uint64, work *backendWork) *http.Server {
	work.rng = rand.New(rand.NewPCG(seed, 11))
	grpc := h2rpc.Serve(map[string]h2rpc.Handler{
		"/tb.Backend/Part": func(r *http.Request, msg []byte) ([]byte, int) {
			rec := served(r, time.Now().UnixNano())
			rec.Ord = -1 // the stream is the client's to tell
			rec.Path = r.URL.Path + "?" + string(msg)
			calls, n := work.part(string(msg))
			rec.Calls, rec.Status = calls, 200
			rec.SendNS = time.Now().UnixNano()
			lg.put(rec)
			return bytes.Repeat([]byte("b"), n), 0
		},
		"/tb.Backend/Health": func(r *http.Request, msg []byte) ([]byte, int) {
			rec := served(r, time.Now().UnixNano())
			rec.Ord, rec.Calls, rec.Status = -1, []callRec{}, 200
			rec.SendNS = time.Now().UnixNano()
			lg.put(rec)
			return []byte("ok"), 0
		},
	})
	srv := h2rpc.NewServer(listen, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 {
			grpc.ServeHTTP(w, r)
			return
		}
		t0 := time.Now().UnixNano()
		rec := served(r, t0)
		calls, n := []callRec{}, 2
		if r.URL.Path != "/health" {
			calls, n = work.part(r.URL.RawQuery)
		}
		body := strings.Repeat("b", n)
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		rec.Status = 200
		rec.Calls = calls
		rec.SendNS = time.Now().UnixNano()
		_, _ = io.WriteString(w, body)
		lg.put(rec)
	}))
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, ctxKey{}, &connCount{})
	}
	return srv
}

func main() {
	mode := flag.String("mode", "front", "front (fan-out) or backend")
	listen := flag.String("listen", ":8081", "address to serve on")
	backends := flag.String("backends", "", "front: comma-separated backend addresses (2 or 3)")
	health := flag.Duration("health", 400*time.Millisecond, "front: mean period of each backend's health check")
	variant := flag.String("variant", "ids", "ids: propagate X-Request-ID and traceparent and keep readable queries; opaque: neither")
	rpc := flag.String("rpc", "grpc", "front: call the backends with grpc (multiplexed over HTTP/2) or http (HTTP/1.1 pools)")
	pgAddr := flag.String("pg", "", "backend: PostgreSQL address to query for each part (none: no query)")
	pgPool := flag.Int("pgpool", 2, "backend: connections in the PostgreSQL pool")
	seed := flag.Uint64("seed", 1, "random seed")
	logPath := flag.String("log", "", "JSON Lines log file (required)")
	flag.Parse()
	if *logPath == "" {
		log.Fatal("tbtier: -log is required")
	}
	f, err := os.OpenFile(*logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		log.Fatal(err)
	}
	lg := &logger{w: f}
	stop := make(chan struct{})
	// SIGUSR1 renews the front's HTTP/2 connections and the backends'
	// PostgreSQL pools, so that a capture started since sees them begin.
	renew := make(chan os.Signal, 1)
	signal.Notify(renew, syscall.SIGUSR1)
	var srv *http.Server
	switch *mode {
	case "front":
		bs := strings.Split(*backends, ",")
		if len(bs) < 2 || len(bs) > 3 {
			log.Fatal("tbtier: -backends needs 2 or 3 addresses")
		}
		if *rpc != "grpc" && *rpc != "http" {
			log.Fatalf("tbtier: -rpc must be grpc or http, not %q", *rpc)
		}
		srv = front(lg, *listen, bs, *health, *variant, *rpc, *seed, stop, renew)
	case "backend":
		work := &backendWork{variant: *variant, pgAddr: *pgAddr, pgSize: *pgPool}
		if *pgAddr != "" {
			if err := work.renew(); err != nil {
				log.Fatalf("tbtier: PostgreSQL: %v", err)
			}
			go func() {
				for range renew {
					if err := work.renew(); err != nil {
						log.Printf("tbtier: PostgreSQL: %v", err)
					}
				}
			}()
		}
		srv = backend(lg, *listen, *seed, work)
	default:
		log.Fatalf("tbtier: unknown -mode %q", *mode)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	done := make(chan struct{})
	go func() {
		<-sig
		close(stop)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		close(done)
	}()
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		log.Fatal(err)
	}
	<-done
	lg.mu.Lock()
	lg.w = nil
	lg.mu.Unlock()
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
}

// pgPoolRetry opens the pool, waiting for PostgreSQL to accept
// connections (it may still be starting).
func pgPoolRetry(addr string, n int) (*pgc.Pool, error) {
	var err error
	for try := 0; try < 100; try++ {
		var p *pgc.Pool
		if p, err = pgc.NewPool(addr, "postgres", "postgres", n); err == nil {
			return p, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil, err
}
