// Command tbload is the load generator of the wirepath testbed
// (testbed/README.md): it keeps -inflight requests in flight (closed-loop
// workers) until -n requests were made or -duration passed, and logs one
// JSON line per request with what identifies its messages exactly: its
// connection's local endpoint (httptrace.GotConn), the request's ordinal on
// that connection, the per-request nonce it sent (X-Hop-Id, which nginx
// must not forward) and its send and receive times.
//
// The requests are a fixed function of -seed and the request's number, so
// every run of one configuration asks the same questions: items (cache hit
// or miss), carts, searches, malformed items that the application rejects
// at once, and static files that nginx serves alone. Each worker keeps its
// connection alive and closes it after a random number of requests.
// With -variant ids the requests carry X-Request-ID and traceparent. With
// an https target it speaks HTTP/1.1 over TLS (server name -sni, the
// testbed's self-signed certificate accepted) and writes the sessions'
// secrets to -keylog in the SSLKEYLOGFILE format, as curl and browsers do.
//
// With -rate R the load is open instead: requests arrive at R per second
// (exponential gaps, a fixed function of -seed), whatever the latency (the
// arrivals of the M/G/1 model, for the what-if validation, docs/whatif.md),
// each taken by the first of the -inflight workers that is free. With
// -toggle D and -rate-high R2 the rate is R2 instead in the odd windows of
// D of the wall clock (Unix time / D odd), so that one run holds both
// loads under the same state of the machine.
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"net/http/httptrace"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

type reqRec struct {
	T      string `json:"t"`
	ID     int    `json:"id"`
	Kind   string `json:"kind"`
	Path   string `json:"path"`
	Worker int    `json:"worker"`
	Local  string `json:"local"`
	Remote string `json:"remote"`
	Ord    int    `json:"ord"`
	SendNS int64  `json:"send_ns"`
	RecvNS int64  `json:"recv_ns"`
	Status int    `json:"status"`
	Hop    string `json:"hop"`
	RID    string `json:"rid,omitempty"`
	Err    string `json:"err,omitempty"`
}

// plan is request i's kind and path: a fixed function of the seed and i.
func plan(seed uint64, i int) (kind, path string, close bool, rng *rand.Rand) {
	rng = rand.New(rand.NewPCG(seed, uint64(i)))
	switch x := rng.Float64(); {
	case x < 0.35:
		// a skewed choice of item, so that some are cached
		n := int(rng.ExpFloat64() * 30)
		kind, path = "item", fmt.Sprintf("/item/%d", n%200)
	case x < 0.60:
		kind, path = "cart", fmt.Sprintf("/cart?user=u%d", rng.IntN(40))
	case x < 0.75:
		words := []string{"lamp", "desk", "chair", "shelf", "rug", "sofa"}
		kind, path = "search", "/search?q="+words[rng.IntN(len(words))]
	case x < 0.85:
		kind, path = "bad", fmt.Sprintf("/item/x%d", rng.IntN(100))
	default:
		kind, path = "static", "/static/logo.txt"
	}
	return kind, path, rng.Float64() < 0.2, rng
}

func main() {
	target := flag.String("target", "http://198.51.100.100", "base URL")
	n := flag.Int("n", 150, "requests to make in all")
	inflight := flag.Int("inflight", 16, "requests in flight (closed-loop workers)")
	duration := flag.Duration("duration", 60*time.Second, "stop starting requests after this long")
	think := flag.Duration("think", time.Millisecond, "mean think time of a worker between requests")
	seed := flag.Uint64("seed", 1, "random seed")
	variant := flag.String("variant", "ids", "ids: send X-Request-ID and traceparent; opaque: neither")
	logPath := flag.String("log", "", "JSON Lines log file (required)")
	rate := flag.Float64("rate", 0, "open loop: requests per second, Poisson arrivals (0: -inflight closed-loop workers)")
	rateHigh := flag.Float64("rate-high", 0, "open loop with -toggle: the rate in the odd windows")
	toggle := flag.Duration("toggle", 0, "open loop: the rate is -rate-high in the odd windows of this length of the wall clock")
	keylog := flag.String("keylog", "", "https: append the TLS secrets to this key log (SSLKEYLOGFILE format)")
	sni := flag.String("sni", "web.tb", "https: the server name to ask for")
	flag.Parse()
	if *logPath == "" || *inflight < 1 || *n < 0 {
		log.Fatal("tbload: -log is required, -inflight must be at least 1")
	}
	f, err := os.Create(*logPath)
	if err != nil {
		log.Fatal(err)
	}
	var mu sync.Mutex
	enc := json.NewEncoder(f)
	emit := func(rec reqRec) {
		mu.Lock()
		defer mu.Unlock()
		if err := enc.Encode(rec); err != nil {
			log.Fatal(err)
		}
	}
	tlsConf := &tls.Config{ServerName: *sni, InsecureSkipVerify: true} // the testbed's own certificate
	if *keylog != "" {
		kf, err := os.OpenFile(*keylog, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			log.Fatal(err)
		}
		defer kf.Close()
		tlsConf.KeyLogWriter = &lockedWriter{w: kf}
	}
	if *rate > 0 {
		rateAt := func(time.Time) float64 { return *rate }
		if *toggle > 0 && *rateHigh > 0 {
			rateAt = func(t time.Time) float64 {
				if (t.UnixNano()/int64(*toggle))%2 == 1 {
					return *rateHigh
				}
				return *rate
			}
		}
		open(tlsConf, *target, *seed, *n, *inflight, rateAt, *duration, *variant, emit)
		if err := f.Close(); err != nil {
			log.Fatal(err)
		}
		return
	}
	var next atomic.Int64
	deadline := time.Now().Add(*duration)
	var wg sync.WaitGroup
	for w := 0; w < *inflight; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			cl := client(tlsConf)
			wrng := rand.New(rand.NewPCG(*seed, uint64(1<<32+w)))
			ord := 0
			for {
				i := int(next.Add(1) - 1)
				if i >= *n || time.Now().After(deadline) {
					return
				}
				time.Sleep(time.Duration(wrng.ExpFloat64() * float64(*think)))
				rec := do(cl, *target, *seed, i, *variant, func(reused bool, _ string) int {
					if reused {
						ord++
					} else {
						ord = 0
					}
					return ord
				})
				rec.Worker = w
				emit(rec)
			}
		}(w)
	}
	wg.Wait()
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
}

// open makes n requests arriving at rateAt(t) per second at time t
// (exponential gaps from seed) until duration passed. Each arrival goes to the first of workers
// keep-alive clients that is free (a request waits for one only when all
// are busy); it returns when all were answered.
func open(tlsConf *tls.Config, target string, seed uint64, n, workers int, rateAt func(time.Time) float64, duration time.Duration, variant string, emit func(reqRec)) {
	arrivals := make(chan int, n)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			cl := client(tlsConf)
			ord := 0
			for i := range arrivals {
				rec := do(cl, target, seed, i, variant, func(reused bool, _ string) int {
					if reused {
						ord++
					} else {
						ord = 0
					}
					return ord
				})
				rec.Worker = w
				emit(rec)
			}
		}(w)
	}
	arr := rand.New(rand.NewPCG(seed, 1<<40))
	start := time.Now()
	next := start
	for i := 0; i < n && time.Since(start) < duration; i++ {
		next = next.Add(time.Duration(arr.ExpFloat64() / rateAt(next) * 1e9))
		time.Sleep(time.Until(next))
		arrivals <- i
	}
	close(arrivals)
	wg.Wait()
}

// client is one worker's keep-alive client: one connection, HTTP/1.1
// (over TLS with tlsConf for an https target).
func client(tlsConf *tls.Config) *http.Client {
	tr := &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1, DisableCompression: true,
		TLSClientConfig: tlsConf, Protocols: new(http.Protocols)}
	tr.Protocols.SetHTTP1(true)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// do makes request i; ordinal gives the request's ordinal on the
// connection it got (reused or not, and its local endpoint).
func do(cl *http.Client, target string, seed uint64, i int, variant string, ordinal func(reused bool, local string) int) reqRec {
	kind, path, closeAfter, rng := plan(seed, i)
	rec := reqRec{T: "req", ID: i, Kind: kind, Path: path, Hop: fmt.Sprintf("%016x", rng.Uint64())}
	trace := &httptrace.ClientTrace{GotConn: func(ci httptrace.GotConnInfo) {
		rec.Local = ci.Conn.LocalAddr().String()
		rec.Remote = ci.Conn.RemoteAddr().String()
		rec.Ord = ordinal(ci.Reused, rec.Local)
		rec.SendNS = time.Now().UnixNano()
	}}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", target+path, nil)
	if err != nil {
		log.Fatal(err)
	}
	req.Header.Set("X-Hop-Id", rec.Hop)
	if variant == "ids" {
		rec.RID = fmt.Sprintf("req-%d-%08x", i, rng.Uint32())
		req.Header.Set("X-Request-ID", rec.RID)
		req.Header.Set("traceparent", fmt.Sprintf("00-%016x%016x-%016x-01", rng.Uint64(), rng.Uint64(), rng.Uint64()))
	}
	req.Close = closeAfter
	resp, err := cl.Do(req)
	if err != nil {
		rec.Err = err.Error()
		rec.RecvNS = time.Now().UnixNano()
		return rec
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	rec.RecvNS = time.Now().UnixNano()
	rec.Status = resp.StatusCode
	return rec
}

// lockedWriter serialises the workers' key log lines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
