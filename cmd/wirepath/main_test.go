package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

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
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it)\n--- got\n%s\n--- want\n%s", name, got, want)
	}
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
