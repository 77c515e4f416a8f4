package golden

import (
	"os"
	"path/filepath"
	"testing"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }
func (r *recorder) Fatal(...any)          { r.failed = true }

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "x.golden")
	for _, tc := range []struct {
		name     string
		update   bool
		got      string
		wantFail bool
		wantFile string
	}{
		{"missing file", false, "a", true, ""},
		{"update writes", true, "a\n", false, "a\n"},
		{"same", false, "a\n", false, "a\n"},
		{"differs", false, "b\n", true, "a\n"},
		{"update rewrites", true, "b\n", false, "b\n"},
	} {
		*update = tc.update
		r := &recorder{TB: t}
		Check(r, path, []byte(tc.got))
		if r.failed != tc.wantFail {
			t.Errorf("%s: failed = %v", tc.name, r.failed)
		}
		if b, _ := os.ReadFile(path); string(b) != tc.wantFile {
			t.Errorf("%s: file holds %q, want %q", tc.name, b, tc.wantFile)
		}
		if Update() != tc.update {
			t.Errorf("%s: Update() = %v", tc.name, Update())
		}
	}
	*update = false
}
