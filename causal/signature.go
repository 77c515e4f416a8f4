package causal

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// SigNode is one hop of a parsed signature, with its children in order.
type SigNode struct {
	From, To string
	Children []*SigNode
}

// String renders n and its subtree in the signature grammar.
func (n *SigNode) String() string {
	var b strings.Builder
	n.write(&b)
	return b.String()
}

func (n *SigNode) write(b *strings.Builder) {
	b.WriteString(QuoteName(n.From))
	b.WriteString("->")
	b.WriteString(QuoteName(n.To))
	if len(n.Children) == 0 {
		return
	}
	b.WriteByte('(')
	for i, c := range n.Children {
		if i > 0 {
			b.WriteByte(',')
		}
		c.write(b)
	}
	b.WriteByte(')')
}

// Canonicalize sorts the children of every hop by their canonical text, in
// place, and returns the canonical text of n.
func (n *SigNode) Canonicalize() string {
	keys := make(map[*SigNode]string, len(n.Children))
	for _, c := range n.Children {
		keys[c] = c.Canonicalize()
	}
	slices.SortStableFunc(n.Children, func(a, b *SigNode) int { return strings.Compare(keys[a], keys[b]) })
	return n.String()
}

// Size returns the number of hops in n's tree.
func (n *SigNode) Size() int {
	s := 1
	for _, c := range n.Children {
		s += c.Size()
	}
	return s
}

// Canonical returns the canonical form of a signature: the same tree with
// every hop's children sorted by their own canonical text. Two signatures
// denote the same pattern exactly when their canonical forms are equal.
func Canonical(sig string) (string, error) {
	n, err := ParseSignature(sig)
	if err != nil {
		return "", err
	}
	return n.Canonicalize(), nil
}

// QuoteName returns name as the signature grammar writes it: bare when it
// can be, Go-quoted otherwise.
func QuoteName(name string) string {
	if name == "" || strings.ContainsAny(name, "(),\" \t\r\n") || strings.Contains(name, "->") || !strconv.CanBackquote(name) {
		return strconv.Quote(name)
	}
	return name
}

// ErrSignature is wrapped by every signature syntax error.
var ErrSignature = errors.New("bad signature")

// ParseSignature parses a signature in the grammar of the package doc.
func ParseSignature(s string) (*SigNode, error) {
	p := sigParser{s: s}
	n, err := p.tree()
	if err != nil {
		return nil, err
	}
	if p.i != len(p.s) {
		return nil, p.errf("unexpected %q", p.s[p.i:])
	}
	return n, nil
}

type sigParser struct {
	s string
	i int
}

func (p *sigParser) errf(format string, args ...any) error {
	return fmt.Errorf("%w at offset %d: %s", ErrSignature, p.i, fmt.Sprintf(format, args...))
}

func (p *sigParser) tree() (*SigNode, error) {
	from, err := p.name()
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(p.s[p.i:], "->") {
		return nil, p.errf("want \"->\"")
	}
	p.i += 2
	to, err := p.name()
	if err != nil {
		return nil, err
	}
	n := &SigNode{From: from, To: to}
	if p.i < len(p.s) && p.s[p.i] == '(' {
		p.i++
		for {
			c, err := p.tree()
			if err != nil {
				return nil, err
			}
			if c.From != n.To {
				return nil, p.errf("child hop %q->%q does not start at %q", c.From, c.To, n.To)
			}
			n.Children = append(n.Children, c)
			if p.i >= len(p.s) {
				return nil, p.errf("unterminated children")
			}
			if p.s[p.i] == ',' {
				p.i++
				continue
			}
			if p.s[p.i] == ')' {
				p.i++
				break
			}
			return nil, p.errf("want \",\" or \")\"")
		}
	}
	return n, nil
}

func (p *sigParser) name() (string, error) {
	if p.i >= len(p.s) {
		return "", p.errf("want a name")
	}
	if p.s[p.i] == '"' {
		q, err := strconv.QuotedPrefix(p.s[p.i:])
		if err != nil {
			return "", p.errf("bad quoted name")
		}
		p.i += len(q)
		v, _ := strconv.Unquote(q)
		return v, nil
	}
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == '(' || c == ')' || c == ',' || c == '"' || c == ' ' || c == '\t' || c == '\r' || c == '\n' {
			break
		}
		if strings.HasPrefix(p.s[p.i:], "->") {
			break
		}
		p.i++
	}
	if p.i == start {
		return "", p.errf("want a name")
	}
	return p.s[start:p.i], nil
}
