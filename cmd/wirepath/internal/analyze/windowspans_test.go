package analyze

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/assembly"
)

// otlpSpan is what the windowed OTLP tests compare of a span: where and
// when it ran, and the trace and request it belongs to.
type otlpSpan struct {
	service, name  string
	kind           int
	start, end     string
	trace, rootID  string
	parent, spanID string
}

// readOTLPLines returns the spans of OTLP/JSON export requests, one per
// line, and how many lines there were.
func readOTLPLines(t *testing.T, r io.Reader) ([]otlpSpan, int) {
	t.Helper()
	var spans []otlpSpan
	lines := 0
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		lines++
		spans = append(spans, otlpSpans(t, sc.Bytes())...)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return spans, lines
}

// otlpSpans decodes one OTLP/JSON export request.
func otlpSpans(t *testing.T, body []byte) []otlpSpan {
	t.Helper()
	type kv struct {
		Key   string
		Value struct {
			StringValue *string
			IntValue    *string
		}
	}
	var doc struct {
		ResourceSpans []struct {
			Resource   struct{ Attributes []kv }
			ScopeSpans []struct {
				Spans []struct {
					TraceID, SpanID, ParentSpanID, Name string
					Kind                                int
					StartTimeUnixNano, EndTimeUnixNano  string
					Attributes                          []kv
				}
			}
		}
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("an export request is not OTLP/JSON: %v", err)
	}
	var out []otlpSpan
	for _, rs := range doc.ResourceSpans {
		service := ""
		for _, a := range rs.Resource.Attributes {
			if a.Key == "service.name" && a.Value.StringValue != nil {
				service = *a.Value.StringValue
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				sp := otlpSpan{service: service, name: s.Name, kind: s.Kind, start: s.StartTimeUnixNano, end: s.EndTimeUnixNano,
					trace: s.TraceID, parent: s.ParentSpanID, spanID: s.SpanID}
				for _, a := range s.Attributes {
					if a.Key == "wirepath.request.root_id" && a.Value.IntValue != nil {
						sp.rootID = *a.Value.IntValue
					}
				}
				out = append(out, sp)
			}
		}
	}
	return out
}

// checkWindowedOTLP checks analyze --windowed --format otlp against the
// windowed JSON result and the whole run: one export request per window
// with requests, each windowed request one trace named by its first
// message's msg_id (the attribute wirepath.request.root_id, one per
// trace, no two traces with the same), every span in a trace of its own
// request, nearly all spans the whole run's; and that --otlp-endpoint
// receives the same spans, a POST per window.
func checkWindowedOTLP(t *testing.T, caps []string, whole, windowed *causal.Result) {
	t.Helper()
	f, err := os.Open(analyzeWindowed(t, caps, "otlp"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	spans, lines := readOTLPLines(t, f)
	windows := map[int]bool{}
	for _, q := range windowed.Requests {
		windows[*q.Window] = true
	}
	if lines != len(windows) {
		t.Errorf("%d export requests, want one per window with requests (%d)", lines, len(windows))
	}
	rootOf := map[string]string{}
	for _, s := range spans {
		if s.rootID == "" {
			t.Fatalf("span %s of trace %s has no wirepath.request.root_id", s.spanID, s.trace)
		}
		if r, ok := rootOf[s.trace]; ok && r != s.rootID {
			t.Errorf("trace %s holds requests %s and %s", s.trace, r, s.rootID)
		}
		rootOf[s.trace] = s.rootID
	}
	traceOf := map[string]string{}
	for tr, r := range rootOf {
		if o, dup := traceOf[r]; dup {
			t.Errorf("request %s has traces %s and %s", r, o, tr)
		}
		traceOf[r] = tr
	}
	if len(rootOf) != len(windowed.Requests) {
		t.Errorf("%d traces, want one per windowed request (%d)", len(rootOf), len(windowed.Requests))
	}
	checkSpansAsWhole(t, caps, spans, whole)
	checkWindowedEndpoint(t, caps, spans)
}

// checkSpansAsWhole checks that nearly every windowed span (where, when,
// what) is one the whole run's export has too.
func checkSpansAsWhole(t *testing.T, caps []string, spans []otlpSpan, whole *causal.Result) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "whole.otlp")
	if _, stderr, code := runAnalyze(t, append(caps, "--engine", assembly.Name, "--format", "otlp", "-o", out)...); code != 0 {
		t.Fatalf("analyze --format otlp exited %d:\n%s", code, stderr)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	wspans, _ := readOTLPLines(t, f)
	type key struct {
		service, name, start, end string
		kind                      int
	}
	have := map[key]int{}
	for _, s := range wspans {
		have[key{s.service, s.name, s.start, s.end, s.kind}]++
	}
	same := 0
	for _, s := range spans {
		k := key{s.service, s.name, s.start, s.end, s.kind}
		if have[k] > 0 {
			have[k]--
			same++
		}
	}
	t.Logf("windowed OTLP: %d spans, %d of them the whole run's (%d spans, %d requests)", len(spans), same, len(wspans), len(whole.Requests))
	if same < len(wspans)*95/100 {
		t.Errorf("%d of the whole run's %d spans exported windowed, want 95 %%", same, len(wspans))
	}
}

// checkWindowedEndpoint checks that --otlp-endpoint with --windowed sends
// a POST per window with requests, together the spans of the file.
func checkWindowedEndpoint(t *testing.T, caps []string, want []otlpSpan) {
	t.Helper()
	var mu sync.Mutex
	var got []otlpSpan
	posts := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil || r.URL.Path != "/v1/traces" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		mu.Lock()
		posts++
		got = append(got, otlpSpans(t, body)...)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("{}"))
	}))
	defer srv.Close()
	_, stderr, code := runAnalyze(t, append(caps, "--engine", assembly.Name, "--windowed", "5s", "--windowed-margin", "3s",
		"--otlp-endpoint", srv.URL, "-o", filepath.Join(t.TempDir(), "report.txt"))...)
	if code != 0 {
		t.Fatalf("analyze --windowed --otlp-endpoint exited %d:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "export requests sent to") {
		t.Errorf("stderr does not say what was sent:\n%s", stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(want) {
		t.Errorf("the endpoint got %d spans in %d POSTs, the file has %d", len(got), posts, len(want))
	}
	ids := map[string]bool{}
	for _, s := range want {
		ids[s.trace+s.spanID] = true
	}
	for _, s := range got {
		if !ids[s.trace+s.spanID] {
			t.Errorf("span %s of trace %s sent but not in the file", s.spanID, s.trace)
			break
		}
	}
}
