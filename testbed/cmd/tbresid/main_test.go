package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestUnion: overlapping calls (tier2's parallel calls) count once, a call
// with no span not at all.
func TestUnion(t *testing.T) {
	for _, c := range []struct {
		name  string
		calls []call
		want  int64
	}{
		{"none", nil, 0},
		{"sequential", []call{{SendNS: 0, RecvNS: 10}, {SendNS: 20, RecvNS: 25}}, 15},
		{"overlapping, out of order", []call{{SendNS: 5, RecvNS: 30}, {SendNS: 0, RecvNS: 10}}, 30},
		{"nested", []call{{SendNS: 0, RecvNS: 30}, {SendNS: 5, RecvNS: 10}}, 30},
		{"no span", []call{{SendNS: 10, RecvNS: 10}, {SendNS: 20, RecvNS: 5}}, 0},
	} {
		if got := union(c.calls); got != c.want {
			t.Errorf("%s: union = %d, want %d", c.name, got, c.want)
		}
	}
}

// TestMeasure: each tier's time in progress over a small run's window,
// records outside the window, background jobs, health checks and lines
// that are not JSON left out.
func TestMeasure(t *testing.T) {
	// The window is 1000 s to 1003 s (Unix ns); with the 1 s warm-up, from 1001 s.
	dir := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.TrimSpace(text)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("truth.jsonl", `{"wirepath_testbed_truth":2,"meta":{"window_start_ns":1000000000000,"window_end_ns":1003000000000}}
{"type":"conn","id":0}`)
	// Two client requests in the window (10 ms and 30 ms), one in the warm-up.
	write("logs/client.jsonl", `{"t":"req","send_ns":1001500000000,"recv_ns":1001510000000}
{"t":"req","send_ns":1002000000000,"recv_ns":1002030000000}
{"t":"req","send_ns":1000500000000,"recv_ns":1000600000000}
not json`)
	// The app: a 20 ms request with a 4 ms memcached call and an 8 ms call
	// to tier2; a background job.
	write("logs/app.jsonl", `{"t":"req","recv_ns":1002001000000,"send_ns":1002021000000,"calls":[{"svc":"memcached","send_ns":1002002000000,"recv_ns":1002006000000},{"svc":"tier2","send_ns":1002010000000,"recv_ns":1002018000000}]}
{"t":"bg","recv_ns":1002001000000,"send_ns":1002900000000}`)
	// tier2: a 6 ms request with two parallel 4 ms calls overlapping by 2 ms; a health check.
	write("logs/tier2.jsonl", `{"t":"req","path":"/price","recv_ns":1002011000000,"send_ns":1002017000000,"calls":[{"svc":"backend","send_ns":1002011000000,"recv_ns":1002015000000},{"svc":"backend","send_ns":1002013000000,"recv_ns":1002017000000}]}
{"t":"req","path":"/tb.Backend/Health","recv_ns":1002011000000,"send_ns":1002911000000}`)
	// A backend: 4 ms with a 1 ms query.
	write("logs/b1.jsonl", `{"t":"req","path":"/tb.Backend/Part?q=x","recv_ns":1002011000000,"send_ns":1002015000000,"calls":[{"svc":"postgres","send_ns":1002012000000,"recv_ns":1002013000000}]}`)
	// nginx: 25 ms on the proxied request, and a static one out of the window.
	write("logs/web1.jsonl", `{"msec":"1002.025","rt":"0.025"}
{"msec":"1000.100","rt":"0.500"}`)
	write("logs/web2.jsonl", `{"msec":"x","rt":"0.001"}`)

	r, err := measure(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	near := func(x, y float64) bool { return math.Abs(x-y) < 1e-9 }
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"window", r.window, 2},
		{"requests", float64(r.requests), 2},
		{"app requests", float64(r.appRequests), 1},
		{"client", r.client, 0.040},
		{"nginx", r.nginx, 0.025},
		{"app span", r.appSpan, 0.020},
		{"app own", r.appOwn, 0.008},
		{"app store", r.appStore, 0.004},
		{"app tier2", r.appTier2, 0.008},
		{"tier2 span", r.tier2Span, 0.006},
		{"tier2 own", r.tier2Own, 0},
		{"backends own", r.backOwn, 0.003},
		{"backends' calls", r.backCalls, 0.001},
		{"skipped", float64(r.skipped), 2},
	} {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	var b bytes.Buffer
	writeTable(&b, []*resid{r})
	// 40 ms of client requests over 2 s: 0.02 in progress; nginx's own 5 ms: 0.0025.
	if out := b.String(); !strings.Contains(out, "| 1 | 0.02 | 0.00 | 0.00 |") || !strings.Contains(out, "| 8.00 ms |") || !strings.Contains(out, "2 log lines not read") {
		t.Errorf("table:\n%s", out)
	}
	if _, err := measure(dir, 5*time.Second); err == nil {
		t.Error("a warm-up longer than the window: no error")
	}
	if _, err := measure(filepath.Join(dir, "missing"), time.Second); err == nil {
		t.Error("a missing run: no error")
	}
}
