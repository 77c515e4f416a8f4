package analyze

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
)

// BenchmarkAnalyzeDemo runs the whole command on the demo captures
// (18,733 records of three sniffers, 1,036 messages), text to a discarded
// stdout. SetBytes is the captures' size on disk (two are gzipped).
func BenchmarkAnalyzeDemo(b *testing.B) {
	d := filepath.Join(repo, "testdata/demo")
	caps := []string{filepath.Join(d, "outside.pcapng"), filepath.Join(d, "inside.pcapng.gz"), filepath.Join(d, "lb-any.pcap.gz")}
	var size int64
	for _, c := range caps {
		st, err := os.Stat(c)
		if err != nil {
			b.Fatal(err)
		}
		size += st.Size()
	}
	args := append(caps, "--roles", filepath.Join(d, "roles.txt"))
	b.SetBytes(size)
	b.ReportAllocs()
	var out bytes.Buffer
	for b.Loop() {
		out.Reset()
		ios := &cmdutil.IOStreams{Out: &out, ErrOut: io.Discard, Quiet: true}
		cmd := NewCmd(ios)
		cmd.SetArgs(args)
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		if err := cmd.Execute(); err != nil {
			b.Fatal(err)
		}
	}
	if !bytes.Contains(out.Bytes(), []byte("engine assembly: 1036 messages")) {
		b.Fatalf("unexpected report:\n%s", out.Bytes())
	}
}
