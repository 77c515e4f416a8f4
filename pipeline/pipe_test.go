package pipeline

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/wirepath/wirepath/trace"
)

// fifos makes a named pipe of each path's base name in a new directory,
// with a goroutine writing the file into it, and returns their paths.
func fifos(t *testing.T, paths []string) []string {
	t.Helper()
	dir := t.TempDir()
	var out []string
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		fifo := filepath.Join(dir, filepath.Base(p))
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Skip("no FIFOs here:", err)
		}
		go func() {
			f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
			if err != nil {
				return
			}
			defer f.Close()
			f.Write(data)
		}()
		out = append(out, fifo)
	}
	return out
}

// runTSV runs the pipeline and returns the trace as TSV.
func runTSV(t *testing.T, cfg Config) []byte {
	t.Helper()
	res, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := trace.WriteTSV(&b, res.Trace); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestFIFOsGiveTheFilesResult: every input is read once, so captures
// read from named pipes (as from a shell's <(...)) give the trace the
// files give, NAT learned and undone and clocks corrected; they used to
// hang (the NAT pass read each input twice).
func TestFIFOsGiveTheFilesResult(t *testing.T) {
	for name, paths := range map[string][]string{"nat": natPaths(), "demo": demoPaths()} {
		want := runTSV(t, Config{Captures: paths})
		got := runTSV(t, Config{Captures: fifos(t, paths)})
		if !bytes.Equal(got, want) {
			t.Errorf("%s: the trace from FIFOs differs from the files' (%d and %d bytes)", name, len(got), len(want))
		}
	}
}

// TestStdinGivesTheFileResult: "-" reads standard input.
func TestStdinGivesTheFileResult(t *testing.T) {
	paths := natPaths()
	want := runTSV(t, Config{Captures: paths})
	f, err := os.Open(paths[1])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	old := os.Stdin
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	os.Stdin = r
	defer func() { os.Stdin = old; r.Close() }()
	go func() { io.Copy(w, f); w.Close() }()
	in := append([]string{paths[0], "-"}, paths[2:]...)
	got := runTSV(t, Config{Captures: in})
	// The sniffer is called "stdin" in the clocks of the trace's meta;
	// the messages are the same.
	if body(got) != body(want) {
		t.Errorf("the messages from standard input differ from the file's")
	}
	if !bytes.Contains(got, []byte(`"stdin"`)) {
		t.Errorf("no sniffer named stdin in the trace's meta")
	}
}

// body is a TSV trace without its comment lines.
func body(tsv []byte) string {
	var b bytes.Buffer
	for _, l := range bytes.SplitAfter(tsv, []byte("\n")) {
		if !bytes.HasPrefix(l, []byte("#")) {
			b.Write(l)
		}
	}
	return b.String()
}

func demoPaths() []string {
	var out []string
	for _, f := range []string{"outside.pcapng", "inside.pcapng.gz", "lb-any.pcap.gz"} {
		out = append(out, filepath.Join("..", "testdata", "demo", f))
	}
	return out
}
