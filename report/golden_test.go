package report

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/internal/golden"
)

// compareGolden compares got with testdata/<name>; -update rewrites it.
func compareGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name), got)
}

func TestGoldenText(t *testing.T) {
	for _, name := range []string{"shop", "conv"} {
		res := fixtureResult(t, name)
		var buf bytes.Buffer
		if err := WriteText(&buf, res, TextOptions{}); err != nil {
			t.Fatal(err)
		}
		compareGolden(t, name+".txt", buf.Bytes())
	}
}

func TestGoldenDOT(t *testing.T) {
	for _, name := range []string{"shop", "conv"} {
		res := fixtureResult(t, name)
		var buf bytes.Buffer
		if err := WriteDOT(&buf, res, DOTOptions{}); err != nil {
			t.Fatal(err)
		}
		compareGolden(t, name+".dot", buf.Bytes())
	}
}

// TestTextTopAndTrailer checks what the text report must show whatever the
// layout: the count line of every shown pattern, the diamond of the
// untraced DNS server with its combined delay, and the trailer sections.
func TestTextTopAndTrailer(t *testing.T) {
	res, _ := shopResult()
	var buf bytes.Buffer
	if err := WriteText(&buf, res, TextOptions{Top: 2}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"#1  count 40  expected 34.4",
		"#2  count 20  expected 12.0",
		"◇ " + FormatUS(shopDNSTotalUS),
		"◇ 10.0.0.53 was not traced: " + FormatUS(shopDNSTotalUS),
		"(1 more pattern; use --top 0 to show all)",
		"clock offsets", "NAT (outside → inside):", "192.0.2.10:80 → 10.0.0.1:80",
		"accounting:", "packets_read", "warnings:", "linking: 2 messages linked to nothing",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "#3 ") {
		t.Error("--top 2 showed pattern #3")
	}
	// Per-node mean delays are the generator's: web waits 300 µs before its
	// first call, the cache answers in 50 µs.
	for _, want := range []string{"10.0.0.1 → 10.0.0.3:11211 CALL", "300 µs", "50 µs"} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q", want)
		}
	}
}

// TestDOTParses runs Graphviz on the DOT output and checks the graph it
// laid out: a node per call-tree node, an edge per call, the labels.
func TestDOTParses(t *testing.T) {
	dotBin, err := exec.LookPath("dot")
	if err != nil {
		t.Skip("graphviz not installed (make deps installs it); skipping")
	}
	for _, c := range []struct {
		name         string
		nodes, edges int
		labels       []string
	}{
		// shop: 4 + 4 + 2 call-tree nodes; linear conv path: 7 visits.
		{"shop", 10, 7, []string{`\ncount 40\ntotal 4.52 ms"`, `shape=diamond`}},
		{"conv", 7, 6, []string{`"1.00 ms, 8.00 ms\n(40)"`}},
	} {
		res := fixtureResult(t, c.name)
		var buf bytes.Buffer
		if err := WriteDOT(&buf, res, DOTOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, l := range c.labels {
			if !strings.Contains(buf.String(), l) {
				t.Errorf("%s: DOT lacks %s", c.name, l)
			}
		}
		cmd := exec.Command(dotBin, "-Tplain")
		cmd.Stdin = bytes.NewReader(buf.Bytes())
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil || stderr.Len() > 0 {
			t.Fatalf("%s: dot: %v %s", c.name, err, stderr.String())
		}
		nodes, edges := 0, 0
		for _, line := range strings.Split(string(out), "\n") {
			switch {
			case strings.HasPrefix(line, "node "):
				nodes++
			case strings.HasPrefix(line, "edge "):
				edges++
			}
		}
		if nodes != c.nodes || edges != c.edges {
			t.Errorf("%s: dot laid out %d nodes and %d edges, want %d and %d", c.name, nodes, edges, c.nodes, c.edges)
		}
	}
}
