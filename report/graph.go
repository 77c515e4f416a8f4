package report

import (
	"fmt"
	"strings"

	"github.com/wirepath/wirepath/causal"
)

// treeNode is one node of the drawing of a pattern as a tree (Project 5
// §5.4): a call-tree node (Figure 8) or a visit of a linear path (Figure 9).
type treeNode struct {
	Name    string
	Lines   []string // label lines after the name
	Diamond bool     // untraced: drawn as a diamond
	Parent  int      // -1 for the root
	// EdgeLines label the edge from the parent.
	EdgeLines []string
	Kids      []int
}

// patternTree draws p as Figure 8 (call tree, or message tree when calls
// cannot be paired) or, for convolution patterns, Figure 9 (linear path).
// It reports which in mode: "calls", "messages" or "linear". p must
// be WellFormed.
func patternTree(p *causal.Pattern) (nodes []treeNode, mode string) {
	tl := buildTimeline(p, meanTimes(p))
	if isLinear(p) {
		nodes = make([]treeNode, len(tl.Visits))
		for i, v := range tl.Visits {
			nodes[i] = treeNode{Name: v.Node, Diamond: v.Untraced, Parent: -1}
		}
		for i := range p.Hops {
			h := &p.Hops[i]
			r, s := tl.Recv[i], tl.Sender[i]
			nodes[r].Parent = s
			nodes[s].Kids = append(nodes[s].Kids, r)
			if len(h.Delays) > 0 {
				ds := byFrequency(h.Delays)
				parts := make([]string, len(ds))
				total := 0
				for k, d := range ds {
					parts[k] = FormatUS(d.DelayUS)
					total += d.Count
				}
				nodes[r].EdgeLines = []string{strings.Join(parts, ", "), fmt.Sprintf("(%d)", total)}
			}
			if i == 0 {
				nodes[r].EdgeLines = append(nodes[r].EdgeLines, firstEdgeLines(p)...)
			}
		}
		return nodes, "linear"
	}
	ct := buildCallTree(p, tl)
	mode = "messages"
	if ct.Calls {
		mode = "calls"
	}
	nodes = make([]treeNode, len(ct.Nodes))
	for i, n := range ct.Nodes {
		t := treeNode{Name: n.Node, Lines: []string{FormatUS(n.Latency)}, Diamond: n.Untraced, Parent: n.Parent, Kids: n.Kids}
		if n.Untraced {
			t.Lines = append(t.Lines, "(with network)")
		}
		if n.Parent >= 0 {
			t.EdgeLines = []string{FormatUS(n.EdgeDelay)}
		}
		nodes[i] = t
	}
	if len(nodes[0].Kids) > 0 {
		k := nodes[0].Kids[0]
		nodes[k].EdgeLines = append(nodes[k].EdgeLines, firstEdgeLines(p)...)
	}
	return nodes, mode
}

// firstEdgeLines are the count and total latency Project 5 puts next to
// the first edge.
func firstEdgeLines(p *causal.Pattern) []string {
	s := []string{fmt.Sprintf("count %d", p.Count)}
	if p.Latency != nil {
		s = append(s, "total "+FormatUS(p.Latency.Mean))
	}
	return s
}
