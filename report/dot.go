package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/wirepath/wirepath/causal"
)

// DOTOptions controls WriteDOT.
type DOTOptions struct {
	// Top limits the patterns drawn (0 = all).
	Top int
}

// WriteDOT writes the top patterns of res as one Graphviz digraph with a
// cluster per pattern, in the formats of Project 5 section 5.4:
//
//   - call trees (Figure 8) for patterns from the linking and nesting
//     engines: an ellipse per node entered by a call, labelled with its name
//     and the mean latency of all activity in it and its children; an edge
//     per call, labelled with the mean delay from the entry into the parent
//     node to the entry into the child; the pattern's count and total
//     latency next to the first edge. CALL hops are paired with their RETURN
//     hops where the kinds say so; otherwise every message is an edge.
//     Untraced nodes are diamonds, their latency including the network.
//   - linear paths (Figure 9) for convolution patterns (hops that carry
//     delays): a node per visit, each edge labelled with the delays found
//     for it, ordered by declining frequency, and the count of messages
//     with those delays.
func WriteDOT(w io.Writer, res *causal.Result, opt DOTOptions) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "digraph wirepath {\n")
	fmt.Fprintf(bw, "  graph [label=%s, labelloc=t, fontname=\"Helvetica\", newrank=true];\n",
		dotQuote(fmt.Sprintf("wirepath %s: %d patterns", res.Engine, len(res.Patterns))))
	fmt.Fprintf(bw, "  node [shape=ellipse, fontname=\"Helvetica\", fontsize=11];\n")
	fmt.Fprintf(bw, "  edge [fontname=\"Helvetica\", fontsize=9];\n")
	n := len(res.Patterns)
	if opt.Top > 0 && opt.Top < n {
		n = opt.Top
	}
	for i := 0; i < n; i++ {
		p := &res.Patterns[i]
		fmt.Fprintf(bw, "\n  subgraph cluster_p%d {\n", p.Rank)
		fmt.Fprintf(bw, "    label=%s;\n", dotQuote(fmt.Sprintf("#%d  expected %s  max p %.2f", p.Rank, fmtNum(p.Expected), p.MaxProbability)))
		if !validPattern(p) {
			fmt.Fprintf(bw, "    p%d_bad [shape=box, label=\"malformed pattern\"];\n  }\n", p.Rank)
			continue
		}
		writeDOTTree(bw, p)
		fmt.Fprintf(bw, "  }\n")
	}
	fmt.Fprintf(bw, "}\n")
	return bw.Flush()
}

// isLinear reports whether p is a convolution path: its hops carry delays.
func isLinear(p *causal.Pattern) bool {
	for i := range p.Hops {
		if len(p.Hops[i].Delays) > 0 {
			return true
		}
	}
	return false
}

func writeDOTTree(w *bufio.Writer, p *causal.Pattern) {
	nodes, _ := patternTree(p)
	for i, n := range nodes {
		shape := ""
		if n.Diamond {
			shape = ", shape=diamond"
		}
		label := strings.Join(append([]string{n.Name}, n.Lines...), "\n")
		fmt.Fprintf(w, "    p%d_n%d [label=%s%s];\n", p.Rank, i, dotQuote(label), shape)
	}
	var walk func(i int)
	walk = func(i int) {
		for _, k := range nodes[i].Kids {
			fmt.Fprintf(w, "    p%d_n%d -> p%d_n%d [label=%s];\n", p.Rank, i, p.Rank, k, dotQuote(strings.Join(nodes[k].EdgeLines, "\n")))
			walk(k)
		}
	}
	walk(0)
}

// dotQuote returns s as a DOT double-quoted string; newlines become the
// centred line break \n.
func dotQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
