package main

import (
	"bytes"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyFile copies src to a new file dst.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func sum(t *testing.T, path string) [32]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(data)
}

// TestOutputIsAnInput: every command refuses to write its output over one
// of its inputs, named as it is, through a symbolic link or as a hard
// link (the same device and inode), with a usage error and the input
// untouched. Only merge used to check; the others overwrote (or, for
// messages, emptied before reading) their input.
func TestOutputIsAnInput(t *testing.T) {
	dir := t.TempDir()
	capPath := filepath.Join(dir, "client.pcap")
	copyFile(t, "../../testdata/captures/client.pcap", capPath)
	tr := filepath.Join(dir, "trace.tsv")
	copyFile(t, "testdata/traces/rpc-small.tsv", tr)
	pre := filepath.Join(dir, "sample.jsonl")
	copyFile(t, "../../preload/testdata/sample.jsonl", pre)
	res := filepath.Join(dir, "result.json")
	var stderr bytes.Buffer
	if code := runArgs(io.Discard, &stderr, "link", "-q", tr, "--format", "json", "-o", res); code != 0 {
		t.Fatalf("making a result: exit %d: %s", code, stderr.String())
	}
	for _, tc := range []struct {
		name  string
		input string
		args  []string // OUT stands for the output
	}{
		{"stats", capPath, []string{"stats", capPath, "-o", "OUT"}},
		{"merge", capPath, []string{"merge", capPath, "-o", "OUT"}},
		{"messages", capPath, []string{"messages", capPath, "-o", "OUT"}},
		{"nat", capPath, []string{"nat", capPath, "-o", "OUT"}},
		{"reconcile", capPath, []string{"reconcile", capPath, "-o", "OUT"}},
		{"reconcile-preload", pre, []string{"reconcile", capPath, "--preload", pre, "-o", "OUT"}},
		{"analyze", capPath, []string{"analyze", capPath, "-o", "OUT"}},
		{"analyze-save-trace", capPath, []string{"analyze", capPath, "--save-trace", "OUT"}},
		{"link", tr, []string{"link", tr, "-o", "OUT"}},
		{"nest", tr, []string{"nest", tr, "-o", "OUT"}},
		{"convolve", tr, []string{"convolve", tr, "-o", "OUT"}},
		{"skew", tr, []string{"skew", tr, "-o", "OUT"}},
		{"report", res, []string{"report", res, "-o", "OUT"}},
		{"whatif", res, []string{"whatif", res, "-o", "OUT"}},
		{"preload-summarize", pre, []string{"preload", "summarize", pre, "-o", "OUT"}},
	} {
		for _, how := range []string{"same", "symlink", "hardlink"} {
			t.Run(tc.name+"-"+how, func(t *testing.T) {
				out := tc.input
				switch how {
				case "symlink":
					out = filepath.Join(t.TempDir(), "link")
					if err := os.Symlink(tc.input, out); err != nil {
						t.Fatal(err)
					}
				case "hardlink":
					out = filepath.Join(filepath.Dir(tc.input), "hard-"+tc.name)
					if err := os.Link(tc.input, out); err != nil {
						t.Fatal(err)
					}
					defer os.Remove(out)
				}
				before := sum(t, tc.input)
				args := append([]string{"-q"}, tc.args...)
				for i, a := range args {
					if a == "OUT" {
						args[i] = out
					}
				}
				var stderr bytes.Buffer
				code := runArgs(io.Discard, &stderr, args...)
				if code != 2 || !strings.Contains(stderr.String(), "is also an input") {
					t.Errorf("exit %d, stderr %q; want 2 and a refusal", code, stderr.String())
				}
				if sum(t, tc.input) != before {
					t.Errorf("the input %s changed", tc.input)
				}
			})
		}
	}
}

// TestCaptureGivenForATrace: a capture given to a command that reads a
// trace or a result says what to do instead of reporting its bytes as a
// bad line.
func TestCaptureGivenForATrace(t *testing.T) {
	for _, c := range []string{"../../testdata/captures/client.pcap", "../../testdata/captures/server.pcapng", "../../testdata/demo/inside.pcapng.gz"} {
		for _, args := range [][]string{{"link", c}, {"nest", c}, {"convolve", c}, {"report", c}, {"whatif", c}, {"skew", c}, {"report", "x.json", "--trace", c}} {
			var stderr bytes.Buffer
			code := runArgs(io.Discard, &stderr, args...)
			if code != 2 || !strings.Contains(stderr.String(), "is a packet capture: run `wirepath analyze` (or `reconcile`) on it first") || stderr.Len() > 300 {
				t.Errorf("%v: exit %d, stderr %q", args, code, stderr.String())
			}
		}
	}
}
