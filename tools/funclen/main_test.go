package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
)

// TestMeasure measures the functions of testdata/src: a generated file is
// skipped, a test file only when asked, methods and generics are named as
// gocyclo names them, and lengths count the func line to the closing brace.
func TestMeasure(t *testing.T) {
	for _, c := range []struct {
		tests bool
		want  []string
	}{
		{false, []string{"4 src (*T).four", "3 src generic", "1 src one"}},
		{true, []string{"4 src (*T).four", "3 src generic", "2 src inTest", "1 src one"}},
	} {
		fs, err := Measure([]string{filepath.Join("testdata", "src")}, c.tests)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range fs {
			got = append(got, fmt.Sprintf("%d %s %s", f.Lines, f.Pkg, f.Name))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("tests=%v: %q, want %q", c.tests, got, c.want)
		}
	}
	if _, err := Measure([]string{filepath.Join("testdata", "missing")}, false); err == nil {
		t.Error("a missing directory gave no error")
	}
}
