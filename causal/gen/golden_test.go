package gen

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/wirepath/wirepath/trace"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// goldenDigests generates every shipped configuration (shortened to 20 s)
// and digests what gen writes: the trace, the truth and the captures of
// --pcap. Equal digests mean byte-identical output, so a change that must
// not alter `wirepath gen` for existing configurations is checked against
// testdata/digests.golden.
func goldenDigests(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	type variant struct {
		name string
		cfg  *Config
	}
	var vs []variant
	for _, bi := range Builtins() {
		vs = append(vs, variant{bi.Name, mustBuiltin(t, bi.Name, 20*time.Second)})
	}
	// The options no shipped configuration uses: skew, both loss models,
	// sniffers with offsets, one timestamp, no call ids, address names.
	c := mustBuiltin(t, "multitier", 20*time.Second)
	c.Skew = map[string]Duration{"WS2": Duration(30 * time.Millisecond), "CLIENT": Duration(-2 * time.Millisecond)}
	c.Drop = Drop{Rate: 60, Queue: 8, Random: 0.01}
	c.Sniffers = []Sniffer{{Name: "edge", Nodes: []string{"CLIENT", "WS1", "WS2"}, Offset: Duration(time.Millisecond)}, {Name: "core", Nodes: []string{"AP1", "AP2", "DB"}, Offset: Duration(-3 * time.Microsecond)}}
	vs = append(vs, variant{"multitier+skew,drop,sniffers", c})
	c = mustBuiltin(t, "multitier", 20*time.Second)
	f := false
	c.Timestamps, c.CallIDs, c.Names = "single", &f, "addr"
	vs = append(vs, variant{"multitier+single,no-ids,addr", c})
	for _, v := range vs {
		c := v.cfg
		out := mustGenerate(t, c)
		digest := func(what string, write func(w io.Writer) error) {
			h := sha256.New()
			if err := write(h); err != nil {
				t.Fatalf("%s %s: %v", v.name, what, err)
			}
			fmt.Fprintf(&b, "%s\t%s\t%s\n", v.name, what, hex.EncodeToString(h.Sum(nil))[:32])
		}
		digest("trace", func(w io.Writer) error { return trace.WriteTSV(w, out.Trace) })
		digest("truth", func(w io.Writer) error { return WriteTruth(w, out.Truth) })
		dir := t.TempDir()
		if _, err := WritePcaps(dir, out, c); err != nil {
			t.Fatal(err)
		}
		ents, _ := os.ReadDir(dir)
		names := make([]string, 0, len(ents))
		for _, e := range ents {
			names = append(names, e.Name())
		}
		sort.Strings(names)
		for _, n := range names {
			data, err := os.ReadFile(filepath.Join(dir, n))
			if err != nil {
				t.Fatal(err)
			}
			digest("pcap "+n, func(w io.Writer) error { _, err := w.Write(data); return err })
		}
	}
	return b.String()
}

// TestGoldenDigests keeps the output of the shipped configurations
// byte-identical across refactorings: same config and seed, same trace,
// truth and captures. Regenerate with -update only for a change meant to
// alter them, and say why in the commit.
func TestGoldenDigests(t *testing.T) {
	if testing.Short() {
		t.Skip("generates every shipped config")
	}
	got := goldenDigests(t)
	path := filepath.Join("testdata", "digests.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(want, []byte(got)) {
		t.Errorf("generated output changed (rerun with -update only if that is intended):\n got:\n%s\nwant:\n%s", got, want)
	}
}
