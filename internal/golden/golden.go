// Package golden is the tests' one golden-file helper: it compares output
// with a file under testdata and, when the tests run with -update,
// rewrites the file instead. It registers the -update flag, so only test
// binaries import it, and a test package must not define its own.
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files and generated fixtures under testdata/")

// Update reports whether the tests run with -update, for tests that
// regenerate fixtures of their own.
func Update() bool { return *update }

// Check compares got with the golden file at path. With -update it writes
// got to path (creating its directory) and passes.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
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
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
