package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// jaegerBinary returns the Jaeger all-in-one binary `make tools` builds
// (bin/tools/jaeger, pinned in the Makefile), or $WIREPATH_JAEGER.
func jaegerBinary() string {
	if p := os.Getenv("WIREPATH_JAEGER"); p != "" {
		return p
	}
	return filepath.Join("..", "..", "bin", "tools", "jaeger")
}

// freePorts returns n TCP ports free on loopback now.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

// jaegerConfig is an all-in-one configuration on loopback: an OTLP/HTTP
// receiver, in-memory storage, the query service (no clock skew
// adjustment: the test compares the times it sent).
const jaegerConfig = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_query:
    storage:
      traces: mem
    max_clock_skew_adjust: 0s
    http:
      endpoint: 127.0.0.1:%d
    grpc:
      endpoint: 127.0.0.1:%d
  jaeger_storage:
    backends:
      mem:
        memory:
          max_traces: 100000
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: mem
`

// startJaeger starts Jaeger and returns the URLs of its OTLP receiver and
// of its query API; it is stopped when the test ends.
func startJaeger(t *testing.T) (otlp, query string) {
	t.Helper()
	bin := jaegerBinary()
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("Jaeger is not installed at %s (make tools builds it): the OTLP export was NOT checked against Jaeger", bin)
	}
	ports := freePorts(t, 3)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "jaeger.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, jaegerConfig, ports[0], ports[1], ports[2]), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cmd := exec.Command(bin, "--config", cfg)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("jaeger's log:\n%s", logs.String())
		}
	})
	query = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	otlp = fmt.Sprintf("http://127.0.0.1:%d", ports[2])
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(query + "/api/services")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("jaeger did not start in 60 s: %v\n%s", err, logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	return otlp, query
}

// jaegerTrace is a trace as Jaeger's query API (/api/traces/ID) returns it.
type jaegerTrace struct {
	TraceID string `json:"traceID"`
	Spans   []struct {
		SpanID     string `json:"spanID"`
		Operation  string `json:"operationName"`
		References []struct {
			RefType string `json:"refType"`
			SpanID  string `json:"spanID"`
		} `json:"references"`
		StartTime int64  `json:"startTime"` // µs
		Duration  int64  `json:"duration"`  // µs
		ProcessID string `json:"processID"`
	} `json:"spans"`
	Processes map[string]struct {
		ServiceName string `json:"serviceName"`
	} `json:"processes"`
}

func getJSON(url string, v any) (int, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp.StatusCode, err
	}
	return resp.StatusCode, json.Unmarshal(b, v)
}

// exportedSpan is what the test needs of a span of the OTLP file.
type exportedSpan struct {
	trace, parent, service, name string
	start, end                   int64 // ns
}

// readExport reads an OTLP/JSON export file (one export request, or
// several: OTLP/JSON Lines, as analyze --windowed writes) into its spans
// by span id.
func readExport(t *testing.T, path string) map[string]exportedSpan {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]exportedSpan{}
	for dec := json.NewDecoder(f); ; {
		if err := decodeExport(dec, out); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
}

// decodeExport decodes one export request from dec into out.
func decodeExport(dec *json.Decoder, out map[string]exportedSpan) error {
	var doc struct {
		ResourceSpans []struct {
			Resource struct {
				Attributes []struct {
					Key   string `json:"key"`
					Value struct {
						S string `json:"stringValue"`
					} `json:"value"`
				} `json:"attributes"`
			} `json:"resource"`
			ScopeSpans []struct {
				Spans []struct {
					TraceID, SpanID, ParentSpanID, Name string
					Start                               string `json:"startTimeUnixNano"`
					End                                 string `json:"endTimeUnixNano"`
				} `json:"spans"`
			} `json:"scopeSpans"`
		} `json:"resourceSpans"`
	}
	if err := dec.Decode(&doc); err != nil {
		return err
	}
	for _, rs := range doc.ResourceSpans {
		svc := ""
		for _, a := range rs.Resource.Attributes {
			if a.Key == "service.name" {
				svc = a.Value.S
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				st, _ := strconv.ParseInt(s.Start, 10, 64)
				en, _ := strconv.ParseInt(s.End, 10, 64)
				out[s.SpanID] = exportedSpan{trace: s.TraceID, parent: s.ParentSpanID, service: svc, name: s.Name, start: st, end: en}
			}
		}
	}
	return nil
}

// TestJaeger sends the demo's requests to a real Jaeger (all-in-one,
// in-memory) with --otlp-endpoint and reads them back through its query
// API: every span arrives with its parent, service and duration, and the
// dependency graph Jaeger computes is the demo system's call graph, each
// edge with the number of calls the export made.
func TestJaeger(t *testing.T) {
	otlp, query := startJaeger(t)
	res, tr, _ := demoOutputs(t)
	file := filepath.Join(t.TempDir(), "demo.otlp.json")
	var stdout, stderr bytes.Buffer
	if code := runArgs(&stdout, &stderr, "report", "-q", res, "--trace", tr, "--format", "otlp", "-o", file, "--otlp-endpoint", otlp); code != 0 {
		t.Fatalf("report --otlp-endpoint: exit %d: %s", code, stderr.String())
	}
	want := readExport(t, file)
	traces := map[string]int{}
	wantDeps := map[string]int{}
	var edges []string
	for _, s := range want {
		traces[s.trace]++
		if p, ok := want[s.parent]; ok {
			// Jaeger's in-memory store counts every parent-child pair of
			// spans, a service's calls out of its own requests too.
			e := p.service + "->" + s.service
			if wantDeps[e] == 0 && p.service != s.service {
				edges = append(edges, e)
			}
			wantDeps[e]++
		}
	}
	// The demo system: client → web1|web2 → app → redis, auth.
	slices.Sort(edges)
	if got, want := strings.Join(edges, " "), "app->auth app->redis client->web1 client->web2 web1->app web2->app"; got != want {
		t.Errorf("the export's call graph is %s, want %s", got, want)
	}
	checkJaegerTraces(t, query, want, traces)
	// The request list names each request's trace as Jaeger shows it.
	stdout.Reset()
	if code := runArgs(&stdout, &stderr, "requests", "-q", res, "--trace", tr, "--format", "jsonl"); code != 0 {
		t.Fatalf("requests: exit %d: %s", code, stderr.String())
	}
	listed := 0
	for _, l := range strings.Split(strings.TrimSpace(stdout.String()), "\n")[1:] {
		var row struct {
			TraceID string `json:"trace_id"`
		}
		if err := json.Unmarshal([]byte(l), &row); err != nil {
			t.Fatal(err)
		}
		if traces[row.TraceID] == 0 {
			t.Errorf("the request list names trace %q, which is not in Jaeger", row.TraceID)
		}
		listed++
	}
	if listed != len(traces) {
		t.Errorf("%d requests listed, %d traces in Jaeger", listed, len(traces))
	}
	// Jaeger's dependency graph: one edge per caller and callee, counting
	// the calls.
	var deps struct {
		Data []struct {
			Parent    string `json:"parent"`
			Child     string `json:"child"`
			CallCount int    `json:"callCount"`
		} `json:"data"`
	}
	now := time.Now().UnixMilli()
	if _, err := getJSON(fmt.Sprintf("%s/api/dependencies?endTs=%d&lookback=%d", query, now, now), &deps); err != nil {
		t.Fatal(err)
	}
	gotDeps := map[string]int{}
	for _, d := range deps.Data {
		gotDeps[d.Parent+"->"+d.Child] += d.CallCount
	}
	if fmt.Sprint(gotDeps) != fmt.Sprint(wantDeps) {
		t.Errorf("Jaeger's dependencies %v, want %v", gotDeps, wantDeps)
	}
	t.Logf("%d traces, %d spans, dependencies %v", len(traces), len(want), gotDeps)
}

// TestJaegerWindowed sends the demo analysed in windows of 1 s to a real
// Jaeger: analyze --windowed exports each window's requests when the
// window is done (a POST per window, a line of the OTLP/JSON Lines file
// per window), and every trace comes back whole.
func TestJaegerWindowed(t *testing.T) {
	otlp, query := startJaeger(t)
	demo := filepath.Join("..", "..", "testdata", "demo")
	file := filepath.Join(t.TempDir(), "demo.otlp.jsonl")
	var stdout, stderr bytes.Buffer
	if code := runArgs(&stdout, &stderr, "analyze", "-q",
		filepath.Join(demo, "outside.pcapng"), filepath.Join(demo, "inside.pcapng.gz"), filepath.Join(demo, "lb-any.pcap.gz"),
		"--roles", filepath.Join(demo, "roles.txt"), "--no-aggregate-clients", "--windowed", "1s", "--windowed-margin", "200ms",
		"--format", "otlp", "-o", file, "--otlp-endpoint", otlp); code != 0 {
		t.Fatalf("analyze --windowed --otlp-endpoint: exit %d: %s", code, stderr.String())
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(raw, []byte("\n")); n < 3 {
		t.Errorf("%d export requests, want one per window with requests (at least 3)", n)
	}
	want := readExport(t, file)
	traces := map[string]int{}
	for _, s := range want {
		traces[s.trace]++
	}
	// The demo's 150 client requests and the engine's background trees.
	if len(traces) < 150 {
		t.Errorf("%d traces, want at least the demo's 150 requests", len(traces))
	}
	checkJaegerTraces(t, query, want, traces)
	t.Logf("%d traces, %d spans in %d export requests", len(traces), len(want), bytes.Count(raw, []byte("\n")))
}

// checkJaegerTraces reads every exported trace (traces: its span count by
// trace id) back from Jaeger's query API and checks that each comes back
// whole: every span exported and no other, with its parent, service,
// operation, start and duration.
func checkJaegerTraces(t *testing.T, query string, want map[string]exportedSpan, traces map[string]int) {
	t.Helper()
	got := map[string]bool{}
	for tid, n := range traces {
		var body struct {
			Data []jaegerTrace `json:"data"`
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, err := getJSON(query+"/api/traces/"+tid, &body)
			if err == nil && code == http.StatusOK && len(body.Data) == 1 && len(body.Data[0].Spans) == n {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("trace %s: not in Jaeger with its %d spans after 30 s (status %d, %v, %+v)", tid, n, code, err, body.Data)
			}
			time.Sleep(100 * time.Millisecond)
		}
		jt := body.Data[0]
		for _, s := range jt.Spans {
			w, ok := want[s.SpanID]
			got[s.SpanID] = true
			if !ok {
				t.Errorf("trace %s: Jaeger has span %s, which was not exported", tid, s.SpanID)
				continue
			}
			parent := ""
			for _, r := range s.References {
				if r.RefType == "CHILD_OF" {
					parent = r.SpanID
				}
			}
			if parent != w.parent {
				t.Errorf("span %s: parent %q in Jaeger, %q exported", s.SpanID, parent, w.parent)
			}
			if svc := jt.Processes[s.ProcessID].ServiceName; svc != w.service || s.Operation != w.name {
				t.Errorf("span %s: %s %q in Jaeger, %s %q exported", s.SpanID, svc, s.Operation, w.service, w.name)
			}
			if s.StartTime != w.start/1000 || s.Duration != (w.end-w.start)/1000 && s.Duration != (w.end-w.start)/1000+1 {
				t.Errorf("span %s: start %d µs, duration %d µs in Jaeger; exported %d ns, %d ns", s.SpanID, s.StartTime, s.Duration, w.start, w.end-w.start)
			}
		}
	}
	if len(got) != len(want) {
		t.Errorf("Jaeger returned %d spans, %d were exported", len(got), len(want))
	}
}
