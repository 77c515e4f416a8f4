package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Captures made by testdata/captures/make.sh at the repository root, and
// small broken files in testdata/captures here.
const (
	realCaps = "../../testdata/captures/"
	badCaps  = "testdata/captures/"
)

func TestCaptureCommandsGolden(t *testing.T) {
	runGolden(t, []cliCase{
		{name: "stats", args: []string{"stats", realCaps + "client.pcap", realCaps + "server.pcapng", realCaps + "router-any.pcap.zst"}, wantCode: 0},
		{name: "stats-json", args: []string{"stats", "--json", realCaps + "client.pcap", realCaps + "server.pcapng"}, wantCode: 0},
		{name: "stats-split", args: []string{"stats", "--split-interfaces", realCaps + "router-multi.pcapng.gz"}, wantCode: 0},
		{name: "stats-given-offset", args: []string{"stats", "--offset", "server.pcapng=2m17.25s", realCaps + "client.pcap", realCaps + "server.pcapng"}, wantCode: 0},
		{name: "stats-bad-input", args: []string{"stats", realCaps + "client.pcap", badCaps + "empty.pcap", badCaps + "notes.pcap", badCaps + "cut.pcap"}, wantCode: 3},
		{name: "stats-all-bad", args: []string{"stats", badCaps + "empty.pcap", badCaps + "notes.pcap"}, wantCode: 1},
		{name: "stats-bad-offset", args: []string{"stats", "--offset", "server.pcapng", realCaps + "client.pcap"}, wantCode: 2},
		{name: "stats-bad-reference", args: []string{"stats", "--reference", "nope", realCaps + "client.pcap"}, wantCode: 2},
		{name: "merge-no-output", args: []string{"merge", realCaps + "client.pcap"}, wantCode: 2},
	})
}

// TestMergeCommand runs merge on the real captures and checks the report
// and that tshark reads what it wrote.
func TestMergeCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "merged.pcapng")
	var stdout, stderr bytes.Buffer
	code := runArgs(&stdout, &stderr, "merge", realCaps+"client.pcap", realCaps+"server.pcapng", realCaps+"router-any.pcap.zst", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"offset +2m17.25", "412 records read = 108 packets + 304 duplicates grouped", "wrote 108 packets to " + out} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, stdout.String())
		}
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr: %s", stderr.String())
	}
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark not installed (make deps installs it)")
	}
	res, err := exec.Command(tshark, "-r", out, "-T", "fields", "-e", "frame.comment").Output()
	if err != nil {
		t.Fatalf("tshark cannot read the merged capture: %v", err)
	}
	if n := strings.Count(string(res), "\n"); n != 108 {
		t.Errorf("tshark read %d packets, want 108", n)
	}

	// -o - writes the capture to stdout and the report to stderr.
	stdout.Reset()
	stderr.Reset()
	if code := runArgs(&stdout, &stderr, "merge", "--json", "--no-comments", realCaps+"client.pcap", "-o", "-"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !bytes.HasPrefix(stdout.Bytes(), []byte{0x0a, 0x0d, 0x0d, 0x0a}) || !strings.Contains(stderr.String(), `"packets": 102`) {
		t.Errorf("stdout %d bytes, stderr %s", stdout.Len(), stderr.String())
	}

	// The output must not overwrite an input.
	in := filepath.Join(t.TempDir(), "in.pcap")
	data, _ := os.ReadFile(realCaps + "client.pcap")
	os.WriteFile(in, data, 0o644)
	if code := runArgs(&stdout, &stderr, "merge", in, "-o", in); code != 2 {
		t.Errorf("merge onto its input: exit %d", code)
	}
}
