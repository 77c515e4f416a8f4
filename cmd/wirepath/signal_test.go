package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInterruptLeavesNoPartialOutput: a command interrupted by SIGINT or
// SIGTERM while it writes exits 130, removes its unfinished output and
// leaves the file it would have replaced as it was; a killed merge used
// to leave a cut pcapng in its place.
func TestInterruptLeavesNoPartialOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "wirepath")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	capture, err := os.ReadFile("../../testdata/captures/client.pcap")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sig  syscall.Signal
		args []string
	}{{syscall.SIGINT, []string{"merge"}}, {syscall.SIGTERM, []string{"merge"}}, {syscall.SIGINT, []string{"stats"}}, {syscall.SIGTERM, []string{"reconcile"}}} {
		sig, args := tc.sig, tc.args
		{
			work := t.TempDir()
			fifo := filepath.Join(work, "in.pcap")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Skip("no FIFOs here:", err)
			}
			out := filepath.Join(work, "out")
			old := []byte("the file -o replaces\n")
			if err := os.WriteFile(out, old, 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, append(args, "-q", fifo, "-o", out)...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Feed part of the capture and keep the pipe open: the command
			// is in the middle of its input when the signal comes.
			w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			w.Write(capture[:len(capture)/2])
			time.Sleep(300 * time.Millisecond)
			cmd.Process.Signal(sig)
			err = cmd.Wait()
			w.Close()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 130 {
				t.Errorf("%s, %v: %v, want exit 130; stderr %q", args[0], sig, err, stderr.String())
			}
			if got, _ := os.ReadFile(out); !bytes.Equal(got, old) {
				t.Errorf("%s, %v: the existing output changed", args[0], sig)
			}
			entries, _ := os.ReadDir(work)
			for _, e := range entries {
				if strings.HasSuffix(e.Name(), ".tmp") {
					t.Errorf("%s, %v: temporary file %s left", args[0], sig, e.Name())
				}
			}
		}
	}
}
