package clientlog

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		want     []Request
		answered int
		skipped  int
	}{
		{"empty", "", nil, 0, 0},
		{"answered and failed", `{"id":1,"send_ns":10,"recv_ns":25}
{"id":2,"send_ns":12,"recv_ns":40,"err":"timeout"}
`, []Request{{1, 10, 25, ""}, {2, 12, 40, "timeout"}}, 1, 0},
		{"blank lines and a line cut short", `{"id":1,"send_ns":10,"recv_ns":25}

{"id":2,"send_ns":12,"re`, []Request{{1, 10, 25, ""}}, 1, 1},
		{"other fields ignored", `{"t":"req","id":7,"kind":"cart","send_ns":5,"recv_ns":9}`, []Request{{7, 5, 9, ""}}, 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Parse(strings.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(l.Requests, tc.want) {
				t.Errorf("requests %+v, want %+v", l.Requests, tc.want)
			}
			if got := len(l.Answered()); got != tc.answered {
				t.Errorf("answered %d, want %d", got, tc.answered)
			}
			if l.Skipped != tc.skipped {
				t.Errorf("skipped %d, want %d", l.Skipped, tc.skipped)
			}
		})
	}
}

func TestSpanAndLatency(t *testing.T) {
	rs := []Request{{1, 30, 70, ""}, {2, 20, 50, ""}, {3, 40, 90, ""}}
	if f, l := Span(rs); f != 20 || l != 90 {
		t.Errorf("span %d..%d, want 20..90", f, l)
	}
	if f, l := Span(nil); f != 0 || l != 0 {
		t.Errorf("empty span %d..%d", f, l)
	}
	if got := rs[0].Latency(); got != 40 {
		t.Errorf("latency %d, want 40", got)
	}
}

func TestReadNamesTheFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), "client.jsonl") {
		t.Fatalf("missing log: error %v, want one naming client.jsonl", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(Path(dir), []byte(`{"id":3,"send_ns":1,"recv_ns":2}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := Read(dir)
	if err != nil || len(l.Requests) != 1 || l.Requests[0].ID != 3 {
		t.Fatalf("Read = %+v, %v", l, err)
	}
}
