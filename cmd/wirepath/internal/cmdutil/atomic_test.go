package cmdutil

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestOutputOfAFailedRun: the output of a run that failed is not put in
// place: the file -o names keeps what it had (it used to be replaced by
// a stub), and no temporary file is left; a run that succeeds replaces
// it, with the mode it had.
func TestOutputOfAFailedRun(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.txt")
	if err := os.WriteFile(path, []byte("previous\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	ios := &IOStreams{Out: io.Discard, ErrOut: io.Discard}
	out, err := OpenOutput(ios, path)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(out, "half a rep")
	boom := errors.New("boom")
	if err := out.Finish(boom); err != boom {
		t.Errorf("Finish returned %v", err)
	}
	checkDir(t, dir, "previous\n")

	out, _ = OpenOutput(ios, path)
	io.WriteString(out, "new\n")
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	checkDir(t, dir, "new\n")
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want the replaced file's 0640", fi.Mode().Perm())
	}
}

func checkDir(t *testing.T, dir, want string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%d files in the directory, want 1", len(entries))
	}
	got, _ := os.ReadFile(filepath.Join(dir, "report.txt"))
	if string(got) != want {
		t.Errorf("the file holds %q, want %q", got, want)
	}
}

// TestRemoveTemporaries: after an interruption the outputs in progress
// are gone and none can be put in place any more.
func TestRemoveTemporaries(t *testing.T) {
	dir := t.TempDir()
	a, err := CreateAtomic(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	RemoveTemporaries()
	defer func() { temporaries.Lock(); temporaries.closed = false; temporaries.Unlock() }()
	if err := a.Commit(); !errors.Is(err, ErrInterrupted) {
		t.Errorf("commit after the interruption: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("%d files left", len(entries))
	}
}

// TestOutputToADevice: an output that names no regular file (a FIFO here,
// /dev/null in practice) is written in place, never replaced by a renamed
// file (which turned /dev/null into a regular file for the whole machine).
func TestOutputToADevice(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	got := make(chan []byte)
	go func() {
		b, _ := os.ReadFile(fifo)
		got <- b
	}()
	ios := &IOStreams{Out: io.Discard, ErrOut: io.Discard}
	out, err := OpenOutput(ios, fifo)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(out, "through the pipe\n")
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	if b := <-got; string(b) != "through the pipe\n" {
		t.Errorf("read %q", b)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v %v", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("files left: %v", entries)
	}
}
