package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
)

// The fixed result and its trace live with the report package's tests,
// which make them from the synthetic "shop" system (go test ./report -update).
const (
	shopResult = "../../report/testdata/shop.result.json"
	shopTrace  = "../../report/testdata/shop.tsv"
)

func TestReportCommandGolden(t *testing.T) {
	runGolden(t, []cliCase{
		{name: "report-text", args: []string{"report", shopResult, "--top", "2"}},
		{name: "report-dot", args: []string{"report", shopResult, "--format", "dot"}},
		{name: "report-bad-format", args: []string{"report", shopResult, "--format", "xml"}, wantCode: 2},
		{name: "report-trace-wrong-format", args: []string{"report", shopResult, "--trace", shopTrace}, wantCode: 2},
		{name: "report-missing", args: []string{"report", "testdata/report/nonexistent.json"}, wantCode: 1},
		{name: "report-newer", args: []string{"report", "testdata/report/newer.result.json"}, wantCode: 1},
		{name: "whatif-profile", args: []string{"whatif", shopResult, "--top", "2"}},
		{name: "whatif-rtt", args: []string{"whatif", shopResult, "--link", "10.0.0.1->10.0.0.2", "--rtt", "5ms"}},
		{name: "whatif-bandwidth", args: []string{"whatif", shopResult, "--link", "10.0.0.2->10.0.0.1", "--bandwidth", "10Mbit/s", "--pattern", "1"}},
		// The DNS server's end was not seen: its round trip is missing, and
		// the prediction says so.
		{name: "whatif-untraced", args: []string{"whatif", shopResult, "--link", "10.0.0.1->10.0.0.53", "--rtt", "1ms"}},
		{name: "whatif-untraced-given", args: []string{"whatif", shopResult, "--link", "10.0.0.1->10.0.0.53", "--rtt", "1ms", "--current-rtt", "1.5ms"}},
		{name: "whatif-no-link", args: []string{"whatif", shopResult, "--rtt", "1ms"}, wantCode: 2},
		{name: "whatif-bad-bandwidth", args: []string{"whatif", shopResult, "--link", "a->b", "--bandwidth", "fast"}, wantCode: 2},
		{name: "whatif-unused-link", args: []string{"whatif", shopResult, "--link", "a->b", "--rtt", "1ms"}, wantCode: 1},
		{name: "whatif-requests", args: []string{"whatif", shopResult, "--trace", shopTrace, "--top", "0"}},
		{name: "whatif-several", args: []string{"whatif", shopResult, "--trace", shopTrace, "--link", "10.0.0.1->10.0.0.2 rtt=+5ms",
			"--link", "10.0.0.1->10.0.0.3 bandwidth=10Mbit/s", "--host", "10.0.0.53 rtt=+1ms", "--top", "2"}},
		{name: "whatif-scenarios", args: []string{"whatif", shopResult, "--trace", shopTrace, "--scenario", "testdata/whatif/scenarios.txt", "--by", "pattern"}},
		{name: "whatif-load-json", args: []string{"whatif", shopResult, "--trace", shopTrace, "--load", "2", "--colocate", "10.0.0.1,10.0.0.3", "--json"}},
		{name: "whatif-bad-change", args: []string{"whatif", shopResult, "--link", "10.0.0.1->10.0.0.2 colour=red"}, wantCode: 2},
		{name: "whatif-profile-json", args: []string{"whatif", shopResult, "--top", "2", "--format", "json"}},
		{name: "whatif-ps", args: []string{"whatif", shopResult, "--trace", shopTrace, "--load", "2", "--queue", "ps", "--by", "pattern"}},
		{name: "whatif-bad-queue", args: []string{"whatif", shopResult, "--load", "2", "--queue", "lifo"}, wantCode: 2},
		// Nodes sharing a host's cores: estimated from the work, or with
		// the host's utilisation given; their errors name the file and line.
		{name: "whatif-host-cores", args: []string{"whatif", shopResult, "--trace", shopTrace, "--load", "2", "--host-cores", "10.0.0.1,10.0.0.2,10.0.0.3=1", "--by", "type"}},
		{name: "whatif-placement-json", args: []string{"whatif", shopResult, "--trace", shopTrace, "--load", "2", "--placement", "testdata/whatif/placement.txt", "--json"}},
		{name: "whatif-placement-inputs", args: []string{"whatif", shopResult, "--trace", shopTrace, "--placement", "testdata/whatif/placement.txt", "--top", "1"}},
		{name: "whatif-bad-host-cores", args: []string{"whatif", shopResult, "--load", "2", "--host-cores", "10.0.0.1,10.0.0.2=two"}, wantCode: 2},
		{name: "whatif-bad-placement", args: []string{"whatif", shopResult, "--load", "2", "--placement", "testdata/whatif/bad-placement.txt"}, wantCode: 1},
		{name: "whatif-placement-unknown-node", args: []string{"whatif", shopResult, "--load", "2", "--host-cores", "10.0.0.1,10.9.9.9=2", "--by", "type"}},
		// A CPU profile of the capture (cpu=, beside the placement file)
		// fitted as a line in the request rate; a bad one names its line.
		{name: "whatif-placement-cpu", args: []string{"whatif", shopResult, "--trace", shopTrace, "--load", "2", "--placement", "testdata/whatif/placement-cpu.txt", "--by", "type"}},
		{name: "whatif-placement-cpu-json", args: []string{"whatif", shopResult, "--trace", shopTrace, "--placement", "testdata/whatif/placement-cpu.txt", "--json"}},
		{name: "whatif-placement-cpu-wake", args: []string{"whatif", shopResult, "--trace", shopTrace, "--load", "2", "--placement", "testdata/whatif/placement-cpu-wake.txt", "--by", "type"}},
		{name: "whatif-annotate-cpu", args: []string{"whatif", shopResult, "--trace", shopTrace, "--annotate-cpu", "testdata/whatif/shop.cpu"}},
		{name: "whatif-bad-cpu", args: []string{"whatif", shopResult, "--trace", shopTrace, "--load", "2", "--host-cores", "10.0.0.1,10.0.0.2=2 cpu=testdata/whatif/bad.cpu"}, wantCode: 1},
		{name: "whatif-cpu-and-busy", args: []string{"whatif", shopResult, "--load", "2", "--host-cores", "10.0.0.1,10.0.0.2=2 busy=0.1 cpu=x.cpu"}, wantCode: 2},
		{name: "whatif-cpu-without-times", args: []string{"whatif", shopResult, "--load", "2", "--placement", "testdata/whatif/placement-cpu.txt"}, wantCode: 1},
		{name: "whatif-bad-scenario", args: []string{"whatif", shopResult, "--scenario", "testdata/whatif/nonexistent.txt"}, wantCode: 1},
	})
}

// TestReportCommandFormats re-renders the fixed result in every format
// through the command and checks each output for what it must be.
func TestReportCommandFormats(t *testing.T) {
	dir := t.TempDir()
	want, err := os.ReadFile(shopResult)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"json", "html", "otlp", "perfetto", "dot", "text"} {
		out := filepath.Join(dir, "out."+f)
		args := []string{"report", shopResult, "--format", f, "-o", out}
		if f == "otlp" || f == "perfetto" {
			args = append(args, "--trace", shopTrace)
		}
		var stdout, stderr bytes.Buffer
		if code := runArgs(&stdout, &stderr, args...); code != 0 {
			t.Fatalf("%s: exit %d: %s", f, code, stderr.String())
		}
		if stdout.Len() != 0 {
			t.Errorf("%s: -o given, yet %d bytes went to stdout", f, stdout.Len())
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		switch f {
		case "json":
			if !bytes.Equal(got, want) {
				t.Error("json: re-rendering a result changed it")
			}
		case "html":
			if !bytes.HasPrefix(got, []byte("<!DOCTYPE html>")) || !bytes.Contains(got, []byte(`<svg class="timeline"`)) {
				t.Error("html: not the report page")
			}
		case "otlp":
			var doc struct {
				ResourceSpans []struct {
					ScopeSpans []struct {
						Spans []struct {
							TraceID string `json:"traceId"`
						} `json:"spans"`
					} `json:"scopeSpans"`
				} `json:"resourceSpans"`
			}
			if err := json.Unmarshal(got, &doc); err != nil {
				t.Fatal(err)
			}
			traces := map[string]bool{}
			for _, rs := range doc.ResourceSpans {
				for _, s := range rs.ScopeSpans[0].Spans {
					traces[s.TraceID] = true
				}
			}
			// Every listed instance of the shop result: 40 + 20 + 3.
			if len(traces) != 63 {
				t.Errorf("otlp: %d traces, want one per instance (63)", len(traces))
			}
		case "perfetto":
			if !bytes.Contains(got, []byte(`"traceEvents"`)) {
				t.Error("perfetto: no traceEvents")
			}
		case "dot":
			if !bytes.HasPrefix(got, []byte("digraph wirepath {")) {
				t.Error("dot: not a digraph")
			}
		case "text":
			// --top defaults to 10 for text: all three patterns.
			if !bytes.Contains(got, []byte("#3  count 3")) {
				t.Error("text: pattern #3 missing")
			}
		}
	}
	// "-" reads the result from standard input.
	var stdout, stderr bytes.Buffer
	ios := newTestIO(&stdout, &stderr, bytes.NewReader(want))
	if code := run(context.Background(), ios, []string{"report", "-", "--format", "json"}); code != 0 {
		t.Fatalf("stdin: exit %d: %s", code, stderr.String())
	}
	if !bytes.Equal(stdout.Bytes(), want) {
		t.Error("stdin: the result changed")
	}
	if !strings.Contains(string(want), `"version": 1`) {
		t.Error("fixture lacks its version")
	}
}

func newTestIO(stdout, stderr *bytes.Buffer, in *bytes.Reader) *cmdutil.IOStreams {
	return &cmdutil.IOStreams{In: in, Out: stdout, ErrOut: stderr}
}
