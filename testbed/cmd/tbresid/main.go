// Command tbresid prints where a testbed run's requests were in its
// window, from the testbed's own logs (testbed/README.md): for each tier,
// the mean number of requests in progress there by Little's law (the sum
// of their times there over the window's length). In a closed-loop run at
// saturation the requests queue in front of whatever limits the
// throughput, so a process at its own ceiling (the app's Python threads
// under one interpreter lock, an nginx with one worker) holds most of
// them; a machine whose cores are all busy stretches every tier's own
// time instead (docs/whatif.md, "Which process limits the saturation").
//
//	tbresid [-warmup 2s] RUN...
//
// Each RUN is a testbed output directory (truth.jsonl's meta gives the
// window, logs/ the records). A tier's own time in a request is its span
// (received to answered) less the union of its calls' spans: the app's
// tier2's and the backends' from their records; nginx's is the sum of its requests'
// times (rt, in milliseconds) less the app's spans, over the window. The
// client's column is every request's latency as the load generator
// measured it. A record counts in the window when its request was sent
// (client) or received (servers) within it, less its first -warmup.
// Background jobs and health checks are left out. It prints a Markdown
// table, a row per run.
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wirepath/wirepath/causal/truth"
)

// call is one call a server logged.
type call struct {
	Svc    string `json:"svc"`
	SendNS int64  `json:"send_ns"`
	RecvNS int64  `json:"recv_ns"`
}

// record is a line of the client's, the app's, tier2's or a backend's log.
type record struct {
	T      string `json:"t"`
	Path   string `json:"path"`
	SendNS int64  `json:"send_ns"`
	RecvNS int64  `json:"recv_ns"`
	Calls  []call `json:"calls"`
}

// nginxRec is a line of an nginx's log.
type nginxRec struct {
	Msec string `json:"msec"`
	RT   string `json:"rt"`
}

// resid is one run's requests in progress per tier (the sums of their
// times in seconds, divided by the window's length when printed).
type resid struct {
	run                   string
	window                float64 // seconds
	requests, appRequests int
	client, nginx         float64 // nginx: its requests' rt, the app's spans not yet taken off
	appSpan, appOwn       float64
	appStore, appTier2    float64 // the app's calls to memcached, Redis and DNS; to tier2
	tier2Span, tier2Own   float64
	backOwn, backCalls    float64 // the backends' own time and their calls' (to postgres)
	skipped               int     // lines that are not JSON records
}

func main() {
	warmup := flag.Duration("warmup", 2*time.Second, "leave out each run's first `D` of its window")
	flag.Parse()
	if flag.NArg() == 0 {
		log.Fatal("usage: tbresid [-warmup 2s] RUN...")
	}
	var rs []*resid
	for _, run := range flag.Args() {
		r, err := measure(run, *warmup)
		if err != nil {
			log.Fatal(err)
		}
		rs = append(rs, r)
	}
	writeTable(os.Stdout, rs)
}

// measure reads run's window and logs.
func measure(run string, warmup time.Duration) (*resid, error) {
	f, err := readMeta(filepath.Join(run, "truth.jsonl"))
	if err != nil {
		return nil, err
	}
	a, b := f.Meta.WindowStartNS+warmup.Nanoseconds(), f.Meta.WindowEndNS
	if b <= a {
		return nil, fmt.Errorf("%s: the window (%d to %d ns) is shorter than the warm-up %v", run, f.Meta.WindowStartNS, b, warmup)
	}
	r := &resid{run: filepath.Clean(run), window: float64(b-a) / 1e9}
	in := func(t int64) bool { return t >= a && t <= b }
	logs := filepath.Join(run, "logs")
	err = eachLine(filepath.Join(logs, "client.jsonl"), r, func(x *record) {
		if x.T == "req" && in(x.SendNS) {
			r.requests++
			r.client += secs(x.RecvNS - x.SendNS)
		}
	})
	if err != nil {
		return nil, err
	}
	err = eachLine(filepath.Join(logs, "app.jsonl"), r, func(x *record) {
		if x.T != "req" || !in(x.RecvNS) {
			return
		}
		r.appRequests++
		span := secs(x.SendNS - x.RecvNS)
		r.appSpan += span
		r.appOwn += span - secs(union(x.Calls))
		for _, c := range x.Calls {
			if c.Svc == "tier2" {
				r.appTier2 += secs(c.RecvNS - c.SendNS)
			} else {
				r.appStore += secs(c.RecvNS - c.SendNS)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	for _, t := range []string{"tier2", "b1", "b2", "b3"} {
		err = eachLine(filepath.Join(logs, t+".jsonl"), r, func(x *record) {
			if x.T != "req" || !in(x.RecvNS) || strings.HasSuffix(x.Path, "/Health") {
				return
			}
			span := secs(x.SendNS - x.RecvNS)
			if t != "tier2" {
				u := secs(union(x.Calls))
				r.backOwn += span - u
				r.backCalls += u
				return
			}
			r.tier2Span += span
			r.tier2Own += span - secs(union(x.Calls))
		})
		if err != nil && !os.IsNotExist(err) {
			return nil, err
		}
	}
	for _, w := range []string{"web1", "web2"} {
		err = eachLine(filepath.Join(logs, w+".jsonl"), r, func(x *nginxRec) {
			ms, e1 := strconv.ParseFloat(x.Msec, 64)
			rt, e2 := strconv.ParseFloat(x.RT, 64)
			if e1 != nil || e2 != nil {
				r.skipped++
				return
			}
			if in(int64(ms * 1e9)) {
				r.nginx += rt
			}
		})
		if err != nil {
			return nil, err
		}
	}
	return r, nil
}

// readMeta reads the truth file's header line alone (its window).
func readMeta(path string) (*truth.File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	line, err := bufio.NewReaderSize(fh, 64<<10).ReadBytes('\n')
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return truth.Read(bytes.NewReader(line), path)
}

// eachLine calls fn with each JSON line of path; a line that is not one
// is counted in r.skipped.
func eachLine[T any](path string, r *resid, fn func(*T)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var x T
		if json.Unmarshal(sc.Bytes(), &x) != nil {
			r.skipped++
			continue
		}
		fn(&x)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// union is the time (ns) covered by the calls' spans, overlapping calls
// (tier2's parallel calls to the backends) counted once.
func union(cs []call) int64 {
	iv := make([][2]int64, 0, len(cs))
	for _, c := range cs {
		if c.RecvNS > c.SendNS {
			iv = append(iv, [2]int64{c.SendNS, c.RecvNS})
		}
	}
	slices.SortFunc(iv, func(x, y [2]int64) int { return cmp.Compare(x[0], y[0]) })
	var t, end int64
	for i, v := range iv {
		switch {
		case i == 0 || v[0] > end:
			t += v[1] - v[0]
			end = v[1]
		case v[1] > end:
			t += v[1] - end
			end = v[1]
		}
	}
	return t
}

func secs(ns int64) float64 { return float64(ns) / 1e9 }

// writeTable writes the table.
func writeTable(w io.Writer, rs []*resid) {
	fmt.Fprintln(w, "| run | requests/s | in progress: the client's requests | nginx (own) | app (own) | app's calls to memcached, Redis, DNS | app's calls to tier2, less tier2's time | tier2 (own) | backends (own) | backends' calls to postgres | app's own time per request |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rs {
		n := func(x float64) string { return fmt.Sprintf("%.2f", x/r.window) }
		own := "-"
		if r.appRequests > 0 {
			own = fmt.Sprintf("%.2f ms", r.appOwn/float64(r.appRequests)*1e3)
		}
		fmt.Fprintf(w, "| %s | %.0f | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.run, float64(r.requests)/r.window,
			n(r.client), n(r.nginx-r.appSpan), n(r.appOwn), n(r.appStore), n(r.appTier2-r.tier2Span), n(r.tier2Own), n(r.backOwn), n(r.backCalls), own)
		if r.skipped > 0 {
			fmt.Fprintf(w, "\n(%s: %d log lines not read)\n\n", r.run, r.skipped)
		}
	}
}
