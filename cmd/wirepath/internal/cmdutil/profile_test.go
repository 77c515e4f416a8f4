package cmdutil

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestProfileMemEvery: with --memprofile-every, heap profiles are written
// while the command runs (FILE.1, ...), and the final one at Stop; none
// is written after Stop.
func TestProfileMemEvery(t *testing.T) {
	mem := filepath.Join(t.TempDir(), "heap.prof")
	p := &Profile{Mem: mem, MemEvery: 10 * time.Millisecond}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(mem + ".2"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no periodic heap profile written")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(mem); err != nil || fi.Size() == 0 {
		t.Fatalf("final heap profile: %v", err)
	}
	before, _ := filepath.Glob(mem + ".*")
	time.Sleep(50 * time.Millisecond)
	after, _ := filepath.Glob(mem + ".*")
	if len(after) != len(before) {
		t.Errorf("%d periodic profiles after Stop, %d at Stop", len(after), len(before))
	}
}
