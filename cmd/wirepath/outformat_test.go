package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutputFormatFromExtension: every command that writes a report
// takes its format from the -o file's extension when --format is not
// given (-o report.html used to write text into report.html), and refuses
// a --format the extension contradicts, writing nothing (issue 12).
func TestOutputFormatFromExtension(t *testing.T) {
	dir := t.TempDir()
	tr := "testdata/traces/rpc-small.tsv"
	res := filepath.Join(dir, "result.json")
	var stderr bytes.Buffer
	if code := runArgs(io.Discard, &stderr, "link", "-q", tr, "-o", res); code != 0 {
		t.Fatalf("link -o result.json: exit %d: %s", code, stderr.String())
	}
	if data, _ := os.ReadFile(res); !bytes.HasPrefix(data, []byte("{")) {
		t.Fatalf("link -o result.json wrote %.40q, not JSON", data)
	}
	capture := "../../testdata/captures/client.pcap"
	for _, tc := range []struct {
		name string
		args []string // OUT stands for the output file
		ext  string
		want string // prefix of the output; "" for a usage error
	}{
		{"analyze html", []string{"analyze", "-q", capture, "-o", "OUT"}, ".html", "<!DOCTYPE html>"},
		{"link html", []string{"link", "-q", tr, "-o", "OUT"}, ".html", "<!DOCTYPE html>"},
		{"nest dot", []string{"nest", "-q", tr, "-o", "OUT"}, ".dot", "digraph"},
		{"convolve json", []string{"convolve", "-q", tr, "-o", "OUT"}, ".json", "{"},
		{"report html", []string{"report", res, "-o", "OUT"}, ".html", "<!DOCTYPE html>"},
		{"report gv", []string{"report", res, "-o", "OUT"}, ".gv", "digraph"},
		{"report otlp into .json", []string{"report", res, "--format", "otlp", "-o", "OUT"}, ".json", "{"},
		{"whatif json", []string{"whatif", res, "-o", "OUT"}, ".json", "{"},
		{"analyze mismatch", []string{"analyze", "-q", capture, "--format", "text", "-o", "OUT"}, ".html", ""},
		{"link mismatch", []string{"link", "-q", tr, "--format", "json", "-o", "OUT"}, ".dot", ""},
		{"report mismatch", []string{"report", res, "--format", "dot", "-o", "OUT"}, ".html", ""},
		{"whatif cannot write html", []string{"whatif", res, "-o", "OUT"}, ".html", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out"+tc.ext)
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				args[i] = strings.ReplaceAll(a, "OUT", out)
			}
			var stderr bytes.Buffer
			code := runArgs(io.Discard, &stderr, args...)
			if tc.want == "" {
				if code != 2 {
					t.Fatalf("exit %d, want 2 (usage): %s", code, stderr.String())
				}
				if _, err := os.Stat(out); !os.IsNotExist(err) {
					t.Errorf("%s written after a usage error", out)
				}
				return
			}
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(bytes.TrimSpace(data), []byte(tc.want)) {
				t.Errorf("output starts %.60q, want %q", data, tc.want)
			}
		})
	}
}

// TestDOTHonoursTop: --top limits the patterns the DOT output draws, as it
// does for text and HTML (engine commands and analyze used to draw every
// pattern whatever --top said); without --top DOT draws them all.
func TestDOTHonoursTop(t *testing.T) {
	tr := "testdata/traces/rpc-small.tsv"
	capture := "../../testdata/captures/client.pcap"
	clusters := func(args ...string) int {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := runArgs(&stdout, &stderr, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
		}
		return strings.Count(stdout.String(), "subgraph cluster_p")
	}
	all := clusters("link", "-q", tr, "--format", "dot")
	if all < 3 {
		t.Fatalf("link draws %d patterns, want at least 3 for the test to mean something", all)
	}
	for _, args := range [][]string{
		{"link", "-q", tr, "--format", "dot", "--top", "2"},
		{"nest", "-q", tr, "--format", "dot", "--top", "2"},
		{"analyze", "-q", capture, "--format", "dot", "--top", "2", "--engine", "linking"},
	} {
		if n := clusters(args...); n > 2 || n == 0 {
			t.Errorf("%v: %d patterns drawn, want at most 2", args, n)
		}
	}
}
