package cmdutil

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestTracesURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://localhost:4318", "http://localhost:4318/v1/traces"},
		{"http://localhost:4318/", "http://localhost:4318/v1/traces"},
		{"https://collector:443/otlp/v1/traces", "https://collector:443/otlp/v1/traces"},
		{"localhost:4318", ""},
		{"ftp://x", ""},
		{"http://", ""},
	} {
		got, err := TracesURL(tc.in)
		if tc.want == "" {
			if err == nil {
				t.Errorf("%q: %q, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestSendOTLP(t *testing.T) {
	var got string
	status, answer := http.StatusOK, "{}"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = r.Method + " " + r.URL.Path + " " + r.Header.Get("Content-Type") + " " + string(b)
		w.WriteHeader(status)
		io.WriteString(w, answer)
	}))
	defer srv.Close()
	body := []byte(`{"resourceSpans":[]}`)
	if w, err := SendOTLP(context.Background(), srv.URL, body); err != nil || w != "" {
		t.Fatalf("warning %q, err %v", w, err)
	}
	if want := "POST /v1/traces application/json " + string(body); got != want {
		t.Errorf("the receiver got %q, want %q", got, want)
	}
	answer = `{"partialSuccess":{"rejectedSpans":"2","errorMessage":"bad"}}`
	if w, err := SendOTLP(context.Background(), srv.URL, body); err != nil || !strings.Contains(w, "rejected") {
		t.Errorf("partial success: warning %q, err %v", w, err)
	}
	status, answer = http.StatusBadRequest, "no such thing"
	if _, err := SendOTLP(context.Background(), srv.URL, body); err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "no such thing") {
		t.Errorf("a 400: err %v", err)
	}
}
