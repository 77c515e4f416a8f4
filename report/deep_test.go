package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/causal"
)

// chainResult is a result with one pattern: a chain of n hops, each the
// child of the one before (what a reused call id made link build).
func chainResult(n int, name string) *causal.Result {
	p := causal.Pattern{Rank: 1, Count: 1, Expected: 1, MaxProbability: 1}
	var sig strings.Builder
	for i := range n {
		h := causal.Hop{ID: i, From: fmt.Sprintf("%s%d", name, i), To: fmt.Sprintf("%s%d", name, i+1), Kind: "CALL"}
		if i > 0 {
			parent := i - 1
			h.Parent = &parent
		}
		p.Hops = append(p.Hops, h)
		sig.WriteString(h.From + "->")
	}
	p.Signature = sig.String()
	return &causal.Result{Engine: "linking", Patterns: []causal.Pattern{p}}
}

// TestDeepPatternText: the text of a pattern grew with the square of its
// depth (every row indented by its depth and padded to the widest); a
// 2,000-hop chain is now shown to MaxTextDepth hops, with how many were
// left out, in a bounded number of bytes.
func TestDeepPatternText(t *testing.T) {
	var b bytes.Buffer
	if err := WriteText(&b, chainResult(2000, "n"), TextOptions{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if b.Len() > 64<<10 {
		t.Errorf("%d bytes of text for one pattern", b.Len())
	}
	if !strings.Contains(out, "1968 deeper hops not shown") {
		t.Errorf("the elided hops are not said:\n%s", out[:min(len(out), 2000)])
	}
}

// TestTextEscapesControlCharacters: a node name with terminal escape
// sequences is printed escaped, not raw (it could rewrite the terminal).
func TestTextEscapesControlCharacters(t *testing.T) {
	var b bytes.Buffer
	if err := WriteText(&b, chainResult(2, "\x1b]0;owned\x07\x1b[2J\u009b"), TextOptions{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, r := range out {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r < 0xa0 {
			t.Fatalf("control character %U in the text:\n%q", r, out)
		}
	}
	if !strings.Contains(out, `\x1b]0;owned\x07`) {
		t.Errorf("the name is not shown escaped:\n%s", out)
	}
}
