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
	return writeDOT(w, []*causal.Result{res}, opt)
}

// writeDOT writes one digraph. With several results (one run, several
// engines) each engine's patterns are in a cluster of their own, and node
// and cluster names start with the engine's name.
func writeDOT(w io.Writer, rs []*causal.Result, opt DOTOptions) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "digraph wirepath {\n")
	if len(rs) == 1 {
		fmt.Fprintf(bw, "  graph [label=%s, labelloc=t, fontname=\"Helvetica\", newrank=true];\n",
			dotQuote(fmt.Sprintf("wirepath %s: %d patterns", rs[0].Engine, len(rs[0].Patterns))))
	} else {
		names := make([]string, len(rs))
		for i, r := range rs {
			names[i] = r.Engine
		}
		fmt.Fprintf(bw, "  graph [label=%s, labelloc=t, fontname=\"Helvetica\", newrank=true];\n",
			dotQuote("wirepath "+strings.Join(names, ", ")))
	}
	fmt.Fprintf(bw, "  node [shape=ellipse, fontname=\"Helvetica\", fontsize=11];\n")
	fmt.Fprintf(bw, "  edge [fontname=\"Helvetica\", fontsize=9];\n")
	for _, res := range rs {
		pre, ind := "", "  "
		if len(rs) > 1 {
			pre, ind = dotID(res.Engine)+"_", "    "
			fmt.Fprintf(bw, "\n  subgraph cluster_%s {\n", dotID(res.Engine))
			fmt.Fprintf(bw, "    label=%s;\n", dotQuote(fmt.Sprintf("%s: %d patterns", res.Engine, len(res.Patterns))))
		}
		n := len(res.Patterns)
		if opt.Top > 0 && opt.Top < n {
			n = opt.Top
		}
		for i := 0; i < n; i++ {
			p := &res.Patterns[i]
			fmt.Fprintf(bw, "\n%ssubgraph cluster_%sp%d {\n", ind, pre, p.Rank)
			fmt.Fprintf(bw, "%s  label=%s;\n", ind, dotQuote(fmt.Sprintf("#%d  expected %s  max p %.2f", p.Rank, fmtNum(p.Expected), p.MaxProbability)))
			if !p.WellFormed() {
				fmt.Fprintf(bw, "%s  %sp%d_bad [shape=box, label=\"malformed pattern\"];\n%s}\n", ind, pre, p.Rank, ind)
				continue
			}
			writeDOTTree(bw, p, pre, ind+"  ")
			fmt.Fprintf(bw, "%s}\n", ind)
		}
		if len(rs) > 1 {
			fmt.Fprintf(bw, "  }\n")
		}
	}
	fmt.Fprintf(bw, "}\n")
	return bw.Flush()
}

// dotID makes s usable in a DOT identifier: letters, digits and '_'.
func dotID(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, s)
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

func writeDOTTree(w *bufio.Writer, p *causal.Pattern, pre, ind string) {
	nodes, _ := patternTree(p)
	for i, n := range nodes {
		shape := ""
		if n.Diamond {
			shape = ", shape=diamond"
		}
		label := strings.Join(append([]string{n.Name}, n.Lines...), "\n")
		fmt.Fprintf(w, "%s%sp%d_n%d [label=%s%s];\n", ind, pre, p.Rank, i, dotQuote(label), shape)
	}
	var walk func(i int)
	walk = func(i int) {
		for _, k := range nodes[i].Kids {
			fmt.Fprintf(w, "%s%sp%d_n%d -> %sp%d_n%d [label=%s];\n", ind, pre, p.Rank, i, pre, p.Rank, k, dotQuote(strings.Join(nodes[k].EdgeLines, "\n")))
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
