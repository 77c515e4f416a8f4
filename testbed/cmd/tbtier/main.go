// Command tbtier is the second tier and the backends of the wirepath testbed
// (testbed/README.md).
//
// With -mode front it serves /price and /search by calling two or three
// backends in parallel (a parallel fan-out) over keep-alive connection pools,
// and it checks every backend's /health periodically over the same pools
// (background calls caused by no request). With -mode backend it answers
// after a short random delay.
//
// Each request served and each background check is logged as one JSON line
// with what identifies each message exactly: the connection's endpoints as
// this process sees them, the message's ordinal on its connection (the
// server counts requests per accepted connection; the client counts the
// requests it wrote on each pooled connection, from httptrace.GotConn) and
// the per-hop nonce (X-Hop-Id) it sent or received.
package main

import (
	"context"
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
)

type callRec struct {
	Svc    string `json:"svc"`
	Op     string `json:"op"`
	Key    string `json:"key"`
	Proto  string `json:"proto"`
	Local  string `json:"local"`
	Remote string `json:"remote"`
	Ord    int    `json:"ord"`
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
	return &pool{client: &http.Client{Transport: tr, Timeout: 5 * time.Second},
		ords: make(map[string]int), rng: rand.New(rand.NewPCG(seed, 7))}
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

func front(lg *logger, listen string, backends []string, health time.Duration, variant string, seed uint64, stop chan struct{}) *http.Server {
	p := newPool(seed)
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
				rec.Calls[i] = p.get("backend", "http://"+backends[i], "/part?"+q, hdr)
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
	for i, b := range backends {
		go func() {
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			for {
				select {
				case <-stop:
					return
				case <-time.After(time.Duration(float64(health) * (0.5 + rng.Float64()))):
				}
				c := p.get("backend", "http://"+b, "/health", nil)
				lg.put(reqRec{T: "bg", Job: "health", Calls: []callRec{c}})
			}
		}()
	}
	return server(listen, mux)
}

func backend(lg *logger, listen string, seed uint64) *http.Server {
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, 11))
	return server(listen, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t0 := time.Now().UnixNano()
		rec := served(r, t0)
		mu.Lock()
		d := time.Duration(300+rng.IntN(2500)) * time.Microsecond
		n := 10 + rng.IntN(300)
		mu.Unlock()
		if r.URL.Path == "/health" {
			d, n = 0, 2
		}
		time.Sleep(d)
		body := strings.Repeat("b", n)
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		rec.Status = 200
		rec.Calls = []callRec{}
		rec.SendNS = time.Now().UnixNano()
		_, _ = io.WriteString(w, body)
		lg.put(rec)
	}))
}

func main() {
	mode := flag.String("mode", "front", "front (fan-out) or backend")
	listen := flag.String("listen", ":8081", "address to serve on")
	backends := flag.String("backends", "", "front: comma-separated backend addresses (2 or 3)")
	health := flag.Duration("health", 400*time.Millisecond, "front: mean period of each backend's health check")
	variant := flag.String("variant", "ids", "ids: propagate X-Request-ID and traceparent and keep readable queries; opaque: neither")
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
	var srv *http.Server
	switch *mode {
	case "front":
		bs := strings.Split(*backends, ",")
		if len(bs) < 2 || len(bs) > 3 {
			log.Fatal("tbtier: -backends needs 2 or 3 addresses")
		}
		srv = front(lg, *listen, bs, *health, *variant, *seed, stop)
	case "backend":
		srv = backend(lg, *listen, *seed)
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
