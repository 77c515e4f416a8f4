package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMessagesGolden runs "wirepath messages" on the flows test captures.
func TestMessagesGolden(t *testing.T) {
	capDir := filepath.Join("..", "..", "flows", "testdata")
	full := filepath.Join(capDir, "loopback.pcap")
	snap := filepath.Join(capDir, "loopback-snap160.pcapng")
	garbage := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(garbage, []byte("not a capture\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runGolden(t, []cliCase{
		{name: "messages-tsv", args: []string{"messages", full}, wantCode: 0},
		{name: "messages-jsonl-two-sniffers", args: []string{"messages", "--format", "jsonl", "-q", full, snap}, wantCode: 0},
		{name: "messages-conns", args: []string{"messages", "--conns", "-q", full}, wantCode: 0},
		{name: "messages-conns-jsonl", args: []string{"messages", "--conns", "--format", "jsonl", "-q", full}, wantCode: 0},
		{name: "messages-json-accounting", args: []string{"messages", "--json", snap}, wantCode: 0},
		{name: "messages-no-split", args: []string{"messages", "-q", "--split-pause", "0", "--no-framing", full}, wantCode: 0},
		{name: "messages-bad-format", args: []string{"messages", "--format", "xml", full}, wantCode: 2},
		{name: "messages-bad-fingerprint", args: []string{"messages", "--fingerprint-len", "0", full}, wantCode: 2},
		{name: "messages-no-args", args: []string{"messages"}, wantCode: 2},
	})
	// A file that is not a capture: reported, the others are read, exit 3.
	var stdout, stderr bytes.Buffer
	code := runArgs(&stdout, &stderr, "messages", "-q", full, garbage)
	if code != 3 || !strings.Contains(stderr.String(), "notes.txt") || strings.Count(stdout.String(), "\n") != 29 {
		t.Errorf("exit %d, %d lines out; stderr:\n%s", code, strings.Count(stdout.String(), "\n"), stderr.String())
	}
	// -o FILE with --json: messages to the file, accounting to stdout.
	stdout.Reset()
	stderr.Reset()
	out := filepath.Join(t.TempDir(), "m.tsv")
	if code := runArgs(&stdout, &stderr, "messages", "--json", "-o", out, full); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil || !bytes.HasPrefix(b, []byte("# wirepath-messages v2\n")) || !strings.Contains(stdout.String(), `"stream_bytes": 204624`) {
		t.Errorf("file %q..., stdout %q...", b[:min(len(b), 40)], stdout.String()[:min(stdout.Len(), 80)])
	}
}
