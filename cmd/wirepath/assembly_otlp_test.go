package main

import (
	"bytes"
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// assemblyDemo runs `analyze --engine assembly` on the demo's captures and
// returns the result, the trace and the merged capture it wrote.
func assemblyDemo(t *testing.T) (result, tr, merged string) {
	t.Helper()
	demo := filepath.Join("..", "..", "testdata", "demo")
	dir := t.TempDir()
	result, tr, merged = filepath.Join(dir, "asm.json"), filepath.Join(dir, "trace.tsv"), filepath.Join(dir, "merged.pcapng")
	var stdout, stderr bytes.Buffer
	if code := runArgs(&stdout, &stderr, "analyze", "-q",
		filepath.Join(demo, "outside.pcapng"), filepath.Join(demo, "inside.pcapng.gz"), filepath.Join(demo, "lb-any.pcap.gz"),
		"--roles", filepath.Join(demo, "roles.txt"), "--no-aggregate-clients", "--engine", "assembly",
		"--format", "json", "-o", result, "--save-trace", tr, "--pcap-out", merged); code != 0 {
		t.Fatalf("analyze --engine assembly: exit %d: %s", code, stderr.String())
	}
	return result, tr, merged
}

// otlpSpanAttrs is a span of an OTLP/JSON file with its kind and the
// string, int and double values of its attributes.
type otlpSpanAttrs struct {
	TraceID, SpanID, ParentSpanID string
	Kind                          int
	Attributes                    []struct {
		Key   string
		Value struct {
			S *string  `json:"stringValue"`
			I *string  `json:"intValue"`
			D *float64 `json:"doubleValue"`
			B *bool    `json:"boolValue"`
		}
	}
}

func (s *otlpSpanAttrs) attr(k string) (string, bool) {
	for _, a := range s.Attributes {
		if a.Key != k {
			continue
		}
		switch v := a.Value; {
		case v.S != nil:
			return *v.S, true
		case v.I != nil:
			return *v.I, true
		case v.D != nil:
			b, _ := json.Marshal(*v.D)
			return string(b), true
		case v.B != nil:
			b, _ := json.Marshal(*v.B)
			return string(b), true
		}
	}
	return "", false
}

func readSpans(t *testing.T, path string) []otlpSpanAttrs {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		ResourceSpans []struct {
			ScopeSpans []struct {
				Spans []otlpSpanAttrs
			}
		}
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var out []otlpSpanAttrs
	for _, rs := range doc.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			out = append(out, ss.Spans...)
		}
	}
	return out
}

// TestAssemblyOTLP exports the assembly engine's requests of the demo:
// analyze writes the same OTLP as report from the saved result; every
// request is one trace, every call a CLIENT span on the caller and a
// SERVER span on the callee (its child), each CLIENT span the child of
// the SERVER span of the call its caller was serving, every span with its
// link's confidence and evidence; the request list names the same
// requests and traces; and, when Jaeger is installed, it takes the
// export and gives every trace back whole.
func TestAssemblyOTLP(t *testing.T) {
	res, tr, _ := assemblyDemo(t)
	var result struct {
		Requests []struct {
			ID       int
			Messages []struct {
				Msg  int
				Call int
			}
		}
	}
	raw, err := os.ReadFile(res)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &result); err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, q := range result.Requests {
		for i, m := range q.Messages {
			if m.Call == i {
				calls++
			}
		}
	}
	// The demo's 150 client requests and its background trees.
	if len(result.Requests) < 150 || calls < 3*150 {
		t.Fatalf("the result has %d requests of %d calls, want at least 150 of 450", len(result.Requests), calls)
	}
	dir := t.TempDir()
	fromReport, fromAnalyze := filepath.Join(dir, "report.otlp.json"), filepath.Join(dir, "analyze.otlp.json")
	var stdout, stderr bytes.Buffer
	if code := runArgs(&stdout, &stderr, "report", "-q", res, "--trace", tr, "--format", "otlp", "-o", fromReport); code != 0 {
		t.Fatalf("report --format otlp: exit %d: %s", code, stderr.String())
	}
	demo := filepath.Join("..", "..", "testdata", "demo")
	if code := runArgs(&stdout, &stderr, "analyze", "-q",
		filepath.Join(demo, "outside.pcapng"), filepath.Join(demo, "inside.pcapng.gz"), filepath.Join(demo, "lb-any.pcap.gz"),
		"--roles", filepath.Join(demo, "roles.txt"), "--no-aggregate-clients", "--engine", "assembly", "--format", "otlp", "-o", fromAnalyze); code != 0 {
		t.Fatalf("analyze --format otlp: exit %d: %s", code, stderr.String())
	}
	a, b := readSpans(t, fromAnalyze), readSpans(t, fromReport)
	if ja, _ := json.Marshal(a); !bytes.Equal(ja, must(json.Marshal(b))) {
		t.Errorf("analyze --format otlp and report --format otlp of its result differ (%d and %d spans)", len(a), len(b))
	}
	checkAssemblySpans(t, b, len(result.Requests), calls)
	// The request list: the same requests, named by the same traces.
	stdout.Reset()
	if code := runArgs(&stdout, &stderr, "requests", "-q", res, "--trace", tr, "--format", "jsonl"); code != 0 {
		t.Fatalf("requests: exit %d: %s", code, stderr.String())
	}
	traces := map[string]int{}
	for _, s := range b {
		traces[s.TraceID]++
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines)-1 != len(result.Requests) {
		t.Errorf("%d requests listed, the result has %d", len(lines)-1, len(result.Requests))
	}
	for _, l := range lines[1:] {
		var row struct {
			Instance int    `json:"instance"`
			TraceID  string `json:"trace_id"`
		}
		if err := json.Unmarshal([]byte(l), &row); err != nil {
			t.Fatal(err)
		}
		if traces[row.TraceID] == 0 || row.Instance != -1 {
			t.Errorf("listed request %s: trace %q not exported, or not the engine's own request", l, row.TraceID)
		}
	}
	// Jaeger, when installed: every trace comes back whole.
	if _, err := os.Stat(jaegerBinary()); err != nil {
		t.Logf("Jaeger is not installed at %s (make tools builds it): the assembly export was NOT checked against Jaeger", jaegerBinary())
		return
	}
	otlp, query := startJaeger(t)
	if code := runArgs(&stdout, &stderr, "report", "-q", res, "--trace", tr, "--format", "otlp", "-o", fromReport, "--otlp-endpoint", otlp); code != 0 {
		t.Fatalf("report --otlp-endpoint: exit %d: %s", code, stderr.String())
	}
	checkJaegerTraces(t, query, readExport(t, fromReport), traces)
	t.Logf("%d requests, %d spans checked in Jaeger", len(traces), len(b))
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// checkAssemblySpans checks the spans of the export of nreq requests of
// ncalls calls.
func checkAssemblySpans(t *testing.T, spans []otlpSpanAttrs, nreq, ncalls int) {
	t.Helper()
	if len(spans) != 2*ncalls {
		t.Errorf("%d spans for %d calls, want 2 per call", len(spans), ncalls)
	}
	byID := map[string]*otlpSpanAttrs{}
	traces := map[string]int{}
	for i := range spans {
		byID[spans[i].SpanID] = &spans[i]
		traces[spans[i].TraceID]++
	}
	if len(traces) != nreq {
		t.Errorf("%d traces for %d requests", len(traces), nreq)
	}
	roots := 0
	for _, s := range spans {
		p := byID[s.ParentSpanID]
		switch {
		case s.ParentSpanID == "" && s.Kind == 3:
			roots++
		case p == nil || p.TraceID != s.TraceID:
			t.Errorf("span %s: parent %q not in its trace", s.SpanID, s.ParentSpanID)
		case s.Kind == 2 && p.Kind != 3, s.Kind == 3 && p.Kind != 2:
			t.Errorf("span %s of kind %d: parent of kind %d (a SERVER span's parent is its CLIENT span, a CLIENT span's a SERVER span)", s.SpanID, s.Kind, p.Kind)
		}
		conf, ok1 := s.attr("wirepath.link.confidence")
		ev, ok2 := s.attr("wirepath.link.evidence")
		if !ok1 || !ok2 || ev == "" || conf == "" {
			t.Errorf("span %s: link confidence %q, evidence %q", s.SpanID, conf, ev)
		}
		if id, ok := s.attr("wirepath.request"); !ok || id == "" {
			t.Errorf("span %s: no wirepath.request", s.SpanID)
		}
	}
	if roots != nreq {
		t.Errorf("%d root spans for %d requests", roots, nreq)
	}
}

// TestRequestsAssemblyGolden lists the assembly engine's own requests of
// the demo: the slowest with their frames, and as CSV.
func TestRequestsAssemblyGolden(t *testing.T) {
	res, tr, merged := assemblyDemo(t)
	runGolden(t, []cliCase{
		{name: "requests-assembly-slowest", args: []string{"requests", "-q", res, "--trace", tr, "--pcap", merged, "--slowest", "--limit", "6"}},
		{name: "requests-assembly-csv", args: []string{"requests", "-q", res, "--trace", tr, "--label", "redis|static", "--format", "csv"}},
	})
}

// TestHTMLRequestFilters checks the HTML report's request list against
// the request list: analyze --format html --pcap-out, and report of the
// saved result with --trace and --pcap, give every request the Wireshark
// filter `wirepath requests --pcap` gives it (by OTLP trace id); --pcap
// without --trace, or for another format, is refused.
func TestHTMLRequestFilters(t *testing.T) {
	res, tr, merged := assemblyDemo(t)
	var stdout, stderr bytes.Buffer
	if code := runArgs(&stdout, &stderr, "requests", "-q", res, "--trace", tr, "--pcap", merged, "--format", "jsonl"); code != 0 {
		t.Fatalf("requests: exit %d: %s", code, stderr.String())
	}
	want := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(stdout.String()), "\n")[1:] {
		var row struct {
			TraceID string `json:"trace_id"`
			Filter  string `json:"filter"`
		}
		if err := json.Unmarshal([]byte(l), &row); err != nil {
			t.Fatal(err)
		}
		want[row.TraceID] = row.Filter
	}
	dir := t.TempDir()
	demo := filepath.Join("..", "..", "testdata", "demo")
	fromAnalyze, fromReport := filepath.Join(dir, "analyze.html"), filepath.Join(dir, "report.html")
	if code := runArgs(&stdout, &stderr, "analyze", "-q",
		filepath.Join(demo, "outside.pcapng"), filepath.Join(demo, "inside.pcapng.gz"), filepath.Join(demo, "lb-any.pcap.gz"),
		"--roles", filepath.Join(demo, "roles.txt"), "--no-aggregate-clients", "--engine", "assembly",
		"-o", fromAnalyze, "--pcap-out", filepath.Join(dir, "merged.pcapng")); code != 0 {
		t.Fatalf("analyze -o report.html: exit %d: %s", code, stderr.String())
	}
	if code := runArgs(&stdout, &stderr, "report", "-q", res, "--trace", tr, "--pcap", merged, "-o", fromReport); code != 0 {
		t.Fatalf("report --pcap: exit %d: %s", code, stderr.String())
	}
	row := regexp.MustCompile(`<td class="tid"><code>([0-9a-f]{32})</code></td><td class="flt"><code class="flt">([^<]*)</code>`)
	for _, page := range []string{fromAnalyze, fromReport} {
		raw, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		got := row.FindAllStringSubmatch(string(raw), -1)
		if len(got) != len(want) {
			t.Errorf("%s: %d requests with a filter, want %d", filepath.Base(page), len(got), len(want))
		}
		for _, g := range got {
			if w := want[g[1]]; html.UnescapeString(g[2]) != w {
				t.Errorf("%s: request %s: filter %q, the request list's %q", filepath.Base(page), g[1], g[2], w)
			}
		}
	}
	for _, args := range [][]string{
		{"report", res, "--pcap", merged, "-o", fromReport},
		{"report", res, "--trace", tr, "--pcap", merged, "--format", "otlp"},
	} {
		if code := runArgs(&stdout, &stderr, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage)", args, code)
		}
	}
}
