package nest

import (
	"bufio"
	"fmt"
	"io"

	"github.com/wirepath/wirepath/causal/nesting"
	"github.com/wirepath/wirepath/report"
)

// writeCallPaths writes the nesting engine's call-path table (Project 5
// Figure 8 as text): per call path its count and call tree, per call the
// mean latency (the time in the callee and everything it called) and the
// mean call delay from the parent's call. top limits the call paths shown
// (0 = all).
func writeCallPaths(w io.Writer, paths []nesting.CallPath, top int) error {
	bw := bufio.NewWriter(w)
	total := 0
	for _, p := range paths {
		total += p.Count
	}
	fmt.Fprintf(bw, "\ncall paths: %d shapes, %d paths\n", len(paths), total)
	n := len(paths)
	if top > 0 && top < n {
		n = top
	}
	for i := 0; i < n; i++ {
		p := &paths[i]
		fmt.Fprintf(bw, "\n#%d  ×%d  %s\n", p.Rank, p.Count, p.Signature)
		kids := make([][]int, len(p.Calls))
		for _, c := range p.Calls {
			if c.Parent != nil {
				kids[*c.Parent] = append(kids[*c.Parent], c.ID)
			}
		}
		var walk func(id int, prefix string, last, root bool)
		walk = func(id int, prefix string, last, root bool) {
			c := &p.Calls[id]
			branch, next := "├─ ", "│  "
			if last {
				branch, next = "└─ ", "   "
			}
			if root {
				branch, next = "", ""
			}
			fmt.Fprintf(bw, "    %s%s → %s  [", prefix+branch, c.From, c.To)
			if c.CallDelay != nil {
				fmt.Fprintf(bw, "call delay %s, ", report.FormatUS(c.CallDelay.Mean))
			}
			if c.Latency != nil {
				fmt.Fprintf(bw, "latency %s", report.FormatUS(c.Latency.Mean))
			}
			fmt.Fprintln(bw, "]")
			for k, kid := range kids[id] {
				walk(kid, prefix+next, k == len(kids[id])-1, false)
			}
		}
		if len(p.Calls) > 0 {
			walk(0, "", true, true)
		}
	}
	if n < len(paths) {
		fmt.Fprintf(bw, "\n(%d more call paths; use --call-paths 0 to show all)\n", len(paths)-n)
	}
	return bw.Flush()
}
