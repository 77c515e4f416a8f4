package causal

import (
	"bytes"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/internal/fuzzseed"
)

// FuzzParseSignature checks the signature parser's properties on any
// input: it never panics; what it accepts renders back to text that parses
// to the same tree (String is an exact inverse); every child starts at its
// parent's receiver; and Canonical is idempotent and does not change the
// number of hops.
func FuzzParseSignature(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	for _, l := range fuzzseed.Lines(f, 256, "report/testdata/*.result.json") {
		if _, sig, ok := bytes.Cut(l, []byte(`"signature": "`)); ok {
			f.Add(strings.TrimSuffix(string(sig), `",`))
		}
	}
	for _, s := range []string{
		"A->B",                   // one hop
		"A->B(B->C(C->B(B->A)))", // a chain
		"CLIENT->web(web->db,web->cache,web->CLIENT)", // siblings
		`CLIENT->"web 1"("web 1"->"x->y")`,            // quoted names
		`"\u00e9"->"\x00"`,                            // escapes
		"A->B(",                                       // unterminated
		"A->B(C->D)",                                  // child not at the receiver
		"->B",                                         // missing name
		"A->B)",                                       // trailing text
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSignature(s)
		if err != nil {
			return
		}
		text := n.String()
		m, err := ParseSignature(text)
		if err != nil {
			t.Fatalf("%q parsed, but its rendering %q does not: %v", s, text, err)
		}
		if m.String() != text {
			t.Fatalf("rendering of %q is not stable: %q then %q", s, text, m.String())
		}
		var check func(x *SigNode)
		check = func(x *SigNode) {
			for _, c := range x.Children {
				if c.From != x.To {
					t.Fatalf("%q: child %q->%q under %q->%q", s, c.From, c.To, x.From, x.To)
				}
				check(c)
			}
		}
		check(n)
		c1, err := Canonical(text)
		if err != nil {
			t.Fatal(err)
		}
		c2, err := Canonical(c1)
		if err != nil || c1 != c2 {
			t.Fatalf("Canonical not idempotent: %q -> %q -> %q (%v)", text, c1, c2, err)
		}
		if cn, _ := ParseSignature(c1); cn.Size() != n.Size() {
			t.Fatalf("Canonical changed the size of %q: %d -> %d", s, n.Size(), cn.Size())
		}
	})
}
