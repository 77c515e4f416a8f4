package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/wirepath/wirepath/causal"
)

// TextOptions controls WriteText.
type TextOptions struct {
	// Top limits the patterns shown (0 = all).
	Top int
}

// WriteText writes the top patterns of res as an indented tree per pattern,
// with count, expected count, latency and per-hop mean delays.
func WriteText(w io.Writer, res *causal.Result, opt TextOptions) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "engine %s: %d messages, %d nodes, %d patterns\n", res.Engine, res.Trace.Messages, res.Trace.Nodes, len(res.Patterns))
	n := len(res.Patterns)
	if opt.Top > 0 && opt.Top < n {
		n = opt.Top
	}
	for i := 0; i < n; i++ {
		p := &res.Patterns[i]
		fmt.Fprintf(bw, "\n#%d  count %d  expected %.1f  max p %.2f", p.Rank, p.Count, p.Expected, p.MaxProbability)
		if p.Latency != nil {
			fmt.Fprintf(bw, "  latency %s", FormatUS(p.Latency.Mean))
		}
		fmt.Fprintf(bw, "\n    %s\n", p.Signature)
		writeTree(bw, p)
	}
	if n < len(res.Patterns) {
		fmt.Fprintf(bw, "\n(%d more patterns; use --top 0 to show all)\n", len(res.Patterns)-n)
	}
	return bw.Flush()
}

func writeTree(w io.Writer, p *causal.Pattern) {
	kids := make([][]int, len(p.Hops))
	for _, h := range p.Hops {
		if h.Parent != nil {
			kids[*h.Parent] = append(kids[*h.Parent], h.ID)
		}
	}
	var walk func(id int, prefix string, last bool, root bool)
	walk = func(id int, prefix string, last, root bool) {
		h := &p.Hops[id]
		branch, next := "├─ ", "│  "
		if last {
			branch, next = "└─ ", "   "
		}
		if root {
			branch, next = "", ""
		}
		var parts []string
		if h.NodeDelay != nil {
			parts = append(parts, "at "+h.From+" "+FormatUS(h.NodeDelay.Mean))
		}
		if h.NetDelay != nil {
			parts = append(parts, "net "+FormatUS(h.NetDelay.Mean))
		} else if h.Parent != nil || h.NodeDelay == nil {
			parts = append(parts, "net ?")
		}
		if h.Start != nil {
			parts = append(parts, "starts +"+FormatUS(h.Start.Mean))
		}
		for i, d := range h.Delays {
			if i == 3 {
				parts = append(parts, "…")
				break
			}
			parts = append(parts, fmt.Sprintf("delay %s ×%d", FormatUS(d.DelayUS), d.Count))
		}
		kind := ""
		if h.Kind != "-" && h.Kind != "" {
			kind = " " + h.Kind
		}
		fmt.Fprintf(w, "    %s%s → %s%s  [%s]\n", prefix+branch, h.From, h.To, kind, strings.Join(parts, ", "))
		for i, c := range kids[id] {
			walk(c, prefix+next, i == len(kids[id])-1, false)
		}
	}
	if len(p.Hops) > 0 {
		walk(0, "", true, true)
	}
}

// FormatUS formats a duration in microseconds with a readable unit.
func FormatUS(us float64) string {
	a := math.Abs(us)
	switch {
	case a >= 1e6:
		return fmt.Sprintf("%.2f s", us/1e6)
	case a >= 1e3:
		return fmt.Sprintf("%.2f ms", us/1e3)
	default:
		return fmt.Sprintf("%.0f µs", us)
	}
}

// WriteJSON writes res as the indented JSON result contract.
func WriteJSON(w io.Writer, res *causal.Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}
