package main

import (
	"bytes"
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// demoRun is analyze's output on the demo's captures (testdata/demo): the
// result with every instance, the trace and the merged capture, made once.
var demoRun struct {
	once                  sync.Once
	result, trace, merged string
	code                  int
	stderr                string
}

func demoOutputs(t *testing.T) (result, tr, merged string) {
	t.Helper()
	demoRun.once.Do(func() {
		dir, err := os.MkdirTemp("", "wirepath-requests-test-")
		if err != nil {
			demoRun.stderr = err.Error()
			demoRun.code = -1
			return
		}
		demo := filepath.Join("..", "..", "testdata", "demo")
		demoRun.result = filepath.Join(dir, "result.json")
		demoRun.trace = filepath.Join(dir, "trace.tsv")
		demoRun.merged = filepath.Join(dir, "merged.pcapng")
		var stdout, stderr bytes.Buffer
		demoRun.code = runArgs(&stdout, &stderr, "analyze", "-q",
			filepath.Join(demo, "outside.pcapng"), filepath.Join(demo, "inside.pcapng.gz"), filepath.Join(demo, "lb-any.pcap.gz"),
			"--roles", filepath.Join(demo, "roles.txt"), "--no-aggregate-clients", "--instances", "-1",
			"--format", "json", "-o", demoRun.result, "--save-trace", demoRun.trace, "--pcap-out", demoRun.merged)
		demoRun.stderr = stderr.String()
	})
	if demoRun.code != 0 {
		t.Fatalf("analyze on the demo: exit %d: %s", demoRun.code, demoRun.stderr)
	}
	return demoRun.result, demoRun.trace, demoRun.merged
}

// TestRequestsGolden lists the demo's requests: filtered by label, latency,
// pattern and time, in the three formats, with their frames.
func TestRequestsGolden(t *testing.T) {
	res, tr, merged := demoOutputs(t)
	runGolden(t, []cliCase{
		{name: "requests-text", args: []string{"requests", res, "--trace", tr, "--limit", "8"}},
		{name: "requests-slow-cart", args: []string{"requests", "-q", res, "--trace", tr, "--pcap", merged, "--label", "^GET /cart", "--min-latency", "80ms", "--slowest"}},
		{name: "requests-jsonl", args: []string{"requests", "-q", res, "--trace", tr, "--pcap", merged, "--pattern", "2,5", "--start", "+1s", "--end", "+1500ms", "--format", "jsonl"}},
		{name: "requests-csv", args: []string{"requests", res, "--trace", tr, "--max-latency", "1ms", "--limit", "4", "--format", "csv"}},
		{name: "requests-no-trace", args: []string{"requests", res}, wantCode: 2},
		{name: "requests-bad-label", args: []string{"requests", res, "--trace", tr, "--label", "("}, wantCode: 2},
		{name: "requests-bad-start", args: []string{"requests", res, "--trace", tr, "--start", "yesterday"}, wantCode: 2},
		{name: "requests-shop", args: []string{"requests", shopResult, "--trace", shopTrace, "--limit", "3"}},
	})
}

// TestRequestsFiltersInTshark takes the Wireshark filter of every listed
// /cart request and checks, with tshark, that it selects the request's
// frames and that they carry its payload.
func TestRequestsFiltersInTshark(t *testing.T) {
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("tshark is not installed (make deps installs it): the filters were not tried")
	}
	res, tr, merged := demoOutputs(t)
	var stdout, stderr bytes.Buffer
	if code := runArgs(&stdout, &stderr, "requests", "-q", res, "--trace", tr, "--pcap", merged, "--label", "cart", "--limit", "3", "--format", "csv"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	recs, err := csv.NewReader(&stdout).ReadAll()
	if err != nil || len(recs) != 4 {
		t.Fatalf("%d records (%v), want a header and 3 requests:\n%s", len(recs), err, stdout.String())
	}
	for _, f := range recs[1:] {
		flt := f[14]
		out, err := exec.Command("tshark", "-r", merged, "-Y", flt, "-T", "fields", "-e", "frame.number", "-e", "tcp.len").Output()
		if err != nil {
			t.Fatalf("tshark -Y %q: %v", flt, err)
		}
		var got []string
		for _, row := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			nl := strings.Split(row, "\t")
			if n, _ := strconv.Atoi(nl[1]); n == 0 {
				t.Errorf("frame %s of a request carries no payload", nl[0])
			}
			got = append(got, nl[0])
		}
		if want := strings.Fields(f[13]); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("tshark -Y %q selects %v, want %v", flt, got, want)
		}
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if demoRun.result != "" {
		os.RemoveAll(filepath.Dir(demoRun.result))
	}
	os.Exit(code)
}
