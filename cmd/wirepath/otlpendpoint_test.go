package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// TestOTLPEndpoint sends each command's OTLP export to a receiver that
// reads it as OTLP (protojson into the official types) and counts the
// CLIENT and SERVER spans: an engine command, report and a bad URL.
func TestOTLPEndpoint(t *testing.T) {
	var mu sync.Mutex
	var got []*tracepb.TracesData
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var td tracepb.TracesData
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "not an OTLP/HTTP JSON export", http.StatusBadRequest)
			return
		}
		if err := protojson.Unmarshal(b, &td); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, &td)
		mu.Unlock()
		w.Write([]byte("{}"))
	}))
	defer srv.Close()
	kinds := func(td *tracepb.TracesData) map[tracepb.Span_SpanKind]int {
		k := map[tracepb.Span_SpanKind]int{}
		for _, rs := range td.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					k[s.GetKind()]++
				}
			}
		}
		return k
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"link", []string{"link", "testdata/traces/rpc-small.tsv", "--instances", "-1", "-o", "/dev/null"}},
		{"nest", []string{"nest", "testdata/traces/rpc-small.tsv", "-o", "/dev/null"}},
		{"report", []string{"report", shopResult, "--trace", shopTrace, "-o", "/dev/null"}},
	} {
		got = nil
		var stdout, stderr bytes.Buffer
		if code := runArgs(&stdout, &stderr, append(tc.args, "--otlp-endpoint", srv.URL)...); code != 0 && code != 3 {
			t.Fatalf("%s: exit %d: %s", tc.name, code, stderr.String())
		}
		if len(got) != 1 {
			t.Fatalf("%s: %d export requests, want 1 (stderr %s)", tc.name, len(got), stderr.String())
		}
		k := kinds(got[0])
		if k[tracepb.Span_SPAN_KIND_CLIENT] == 0 || k[tracepb.Span_SPAN_KIND_CLIENT] != k[tracepb.Span_SPAN_KIND_SERVER] {
			t.Errorf("%s: spans by kind %v, want as many CLIENT as SERVER spans", tc.name, k)
		}
		if !strings.Contains(stderr.String(), "OTLP export") {
			t.Errorf("%s: stderr does not say the export was sent: %s", tc.name, stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if code := runArgs(&stdout, &stderr, "report", shopResult, "--otlp-endpoint", "localhost:4318"); code != 2 {
		t.Errorf("a URL without a scheme: exit %d, want 2 (%s)", code, stderr.String())
	}
	if code := runArgs(&stdout, &stderr, "report", shopResult, "-o", "/dev/null", "--otlp-endpoint", srv.URL+"/elsewhere"); code != 1 || !strings.Contains(stderr.String(), "400") {
		t.Errorf("a receiver that refuses: exit %d, want 1 (%s)", code, stderr.String())
	}
}
