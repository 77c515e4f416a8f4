// Package fuzzseed gives fuzz targets seed corpora from the repository's
// test data: the captures, traces, results, configurations and syscall
// traces the other tests use, so that fuzzing starts from real input
// rather than from a handful of hand-written bytes. Paths are relative to
// the module root (found from the test's working directory); each seed is
// cut to MaxSeed bytes.
package fuzzseed

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// MaxSeed bounds one seed; MaxFiles the files one pattern adds.
const (
	MaxSeed  = 64 << 10
	MaxFiles = 16
)

// Root returns the module root: the nearest directory up from the
// working directory with a go.mod.
func Root(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			tb.Fatal("fuzzseed: no go.mod above the working directory")
		}
		dir = up
	}
}

// Read returns the contents of the files matching the patterns (globs
// relative to the module root), each cut to MaxSeed bytes, at most
// MaxFiles per pattern, in name order.
func Read(tb testing.TB, patterns ...string) [][]byte {
	tb.Helper()
	root := Root(tb)
	var out [][]byte
	for _, p := range patterns {
		names, err := filepath.Glob(filepath.Join(root, p))
		if err != nil {
			tb.Fatalf("fuzzseed: pattern %q: %v", p, err)
		}
		if len(names) == 0 {
			tb.Fatalf("fuzzseed: no file matches %q", p)
		}
		for i, n := range names {
			if i == MaxFiles {
				break
			}
			data, err := os.ReadFile(n)
			if err != nil {
				tb.Fatal(err)
			}
			out = append(out, data[:min(len(data), MaxSeed)])
		}
	}
	return out
}

// Files adds the files matching the patterns as []byte seeds.
func Files(f *testing.F, patterns ...string) {
	f.Helper()
	for _, d := range Read(f, patterns...) {
		f.Add(d)
	}
}

// Strings adds the files matching the patterns as string seeds.
func Strings(f *testing.F, patterns ...string) {
	f.Helper()
	for _, d := range Read(f, patterns...) {
		f.Add(string(d))
	}
}

// Lines returns up to n non-empty lines of the files matching the
// patterns.
func Lines(tb testing.TB, n int, patterns ...string) [][]byte {
	tb.Helper()
	var out [][]byte
	for _, d := range Read(tb, patterns...) {
		sc := bufio.NewScanner(bytes.NewReader(d))
		sc.Buffer(make([]byte, 0, 64<<10), MaxSeed)
		for sc.Scan() && len(out) < n {
			if l := sc.Bytes(); len(l) > 0 {
				out = append(out, bytes.Clone(l))
			}
		}
	}
	return out
}
