package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/internal/golden"
)

// cliCase is one in-process run of the command with golden stdout and stderr
// in testdata/golden/<name>.stdout and .stderr.
type cliCase struct {
	name     string
	args     []string
	wantCode int
}

// runGolden runs each case and compares both streams with the golden files.
func runGolden(t *testing.T, cases []cliCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runArgs(&stdout, &stderr, tc.args...)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tc.wantCode, stderr.String())
			}
			compareGolden(t, tc.name+".stdout", stdout.Bytes())
			compareGolden(t, tc.name+".stderr", stderr.Bytes())
		})
	}
}

func compareGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", "golden", name), got)
}

func TestCLIGolden(t *testing.T) {
	runGolden(t, []cliCase{
		{name: "help", args: []string{"--help"}, wantCode: 0},
		{name: "unknown-command", args: []string{"frobnicate"}, wantCode: 2},
		{name: "unknown-flag", args: []string{"version", "--frob"}, wantCode: 2},
	})
}

func TestVersion(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := runArgs(&stdout, &stderr, "version"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.HasPrefix(stdout.String(), "wirepath ") {
		t.Errorf("version output %q", stdout.String())
	}
}
