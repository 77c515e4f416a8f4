package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestManPages: a page per command, each with its name and flags.
func TestManPages(t *testing.T) {
	dir := t.TempDir()
	if err := run(dir); err != nil {
		t.Fatal(err)
	}
	for _, page := range []string{"wirepath.1", "wirepath-analyze.1", "wirepath-preload-strace.1", "wirepath-completion-bash.1"} {
		data, err := os.ReadFile(filepath.Join(dir, page))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), ".TH \"WIREPATH\"") {
			t.Errorf("%s: no title header", page)
		}
	}
	a, _ := os.ReadFile(filepath.Join(dir, "wirepath-analyze.1"))
	if !strings.Contains(string(a), "dedupe-window") || strings.Contains(string(a), "\\-\\-window") {
		t.Error("analyze's page does not list its flags as they are named (or lists a hidden alias)")
	}
}
