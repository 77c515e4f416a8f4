// Command load is the client of the wirepath demo system: it sends a mix of
// HTTP requests to the load balancer's virtual address with exponential
// think times, one connection per request, from several client processes'
// worth of concurrency. It logs one line per request (the ground truth of
// what was asked) to stdout. It is only used by make.sh.
package main

import (
	"flag"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"sync"
	"time"
)

func main() {
	target := flag.String("target", "http://10.10.0.100", "base URL")
	n := flag.Int("n", 300, "requests per worker")
	workers := flag.Int("workers", 3, "concurrent clients")
	think := flag.Duration("think", 40*time.Millisecond, "mean think time")
	seed := flag.Int64("seed", 1, "random seed")
	flag.Parse()
	var wg sync.WaitGroup
	var mu sync.Mutex
	for w := 0; w < *workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(*seed + int64(w)))
			tr := &http.Transport{DisableKeepAlives: true}
			cl := &http.Client{Transport: tr, Timeout: 5 * time.Second}
			for i := 0; i < *n; i++ {
				time.Sleep(time.Duration(rng.ExpFloat64() * float64(*think)))
				var path string
				switch x := rng.Float64(); {
				case x < 0.55:
					path = fmt.Sprintf("/item/%d", rng.Intn(50))
				case x < 0.85:
					path = fmt.Sprintf("/cart?user=u%d", rng.Intn(20))
				default:
					path = "/static/logo.txt"
				}
				start := time.Now()
				resp, err := cl.Get(*target + path)
				status := 0
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					status = resp.StatusCode
				}
				mu.Lock()
				fmt.Printf("%d\t%d\t%s\t%d\t%v\n", start.UnixNano(), w, path, status, time.Since(start))
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
}
