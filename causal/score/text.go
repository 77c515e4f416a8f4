package score

import (
	"bufio"
	"fmt"
	"io"
	"math"
)

// TextOptions control WriteText.
type TextOptions struct {
	// Patterns limits the false-positive and false-negative patterns
	// listed (0: 10).
	Patterns int
	// Hops lists the per-hop delay errors of this many patterns found, in
	// the result's rank order (0: none).
	Hops int
}

func pct(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) }

// FormatUS formats a duration in microseconds for people.
func FormatUS(us float64) string {
	a := math.Abs(us)
	switch {
	case a >= 1e6:
		return fmt.Sprintf("%.3gs", us/1e6)
	case a >= 1e3:
		return fmt.Sprintf("%.3gms", us/1e3)
	}
	return fmt.Sprintf("%.3gµs", us)
}

// WriteText writes r for people. It leaves out r.Warnings, which a
// command prints on stderr.
func WriteText(w io.Writer, r *Report, opt TextOptions) error {
	if opt.Patterns <= 0 {
		opt.Patterns = 10
	}
	bw := bufio.NewWriter(w)
	writeCounts(bw, r)
	writeTopN(bw, r)
	writeNodeDelays(bw, r)
	if opt.Hops > 0 {
		writeHops(bw, r.Hops, opt.Hops)
	}
	writePatternList(bw, "false-negative patterns", r.Patterns.FalseNegativeList, opt.Patterns)
	writePatternList(bw, "false-positive patterns", r.Patterns.FalsePositiveList, opt.Patterns)
	return bw.Flush()
}

// writeCounts writes the heading and the patterns, instances and
// messages counts.
func writeCounts(bw *bufio.Writer, r *Report) {
	t := r.Truth
	name := t.Config
	if name == "" {
		name = "(unnamed)"
	}
	view := r.View
	if view == "" {
		view = ViewMessages
	}
	fmt.Fprintf(bw, "engine %s against the truth of %s: %d instances, %d messages (%d in the trace), %d patterns (compared as %s)\n\n",
		r.Engine, name, t.Instances, t.Messages, t.Observed, t.Patterns, map[View]string{ViewMessages: "trees of messages", ViewCalls: "call trees"}[view])
	p := r.Patterns
	fmt.Fprintf(bw, "%-10s %9s %9s %9s %16s %16s\n", "", "truth", "inferred", "correct", "false positives", "false negatives")
	fmt.Fprintf(bw, "%-10s %9d %9d %9d %9d %6s %9d %6s\n", "patterns", p.Truth, p.Inferred, p.TruePositives,
		p.FalsePositives, pct(p.FalsePositiveRate), p.FalseNegatives, pct(p.FalseNegativeRate))
	for _, row := range []struct {
		name string
		c    *CountScore
	}{{"instances", r.Instances}, {"messages", r.Messages}} {
		c := row.c
		if c == nil {
			fmt.Fprintf(bw, "%-10s not scored\n", row.name)
			continue
		}
		fmt.Fprintf(bw, "%-10s %9d %9d %9d %9d %6s %9d %6s\n", row.name, c.Truth, c.Inferred, c.Correct,
			c.FalsePositives, pct(c.FalsePositiveRate), c.FalseNegatives, pct(c.FalseNegativeRate))
		if math.Abs(c.WeightedInferred-float64(c.Inferred)) > 1e-6*float64(c.Inferred+1) {
			fmt.Fprintf(bw, "%-10s %9s %9.1f %9s %9.1f %6s %9.1f %6s\n", "  weighted", "", c.WeightedInferred, "",
				c.WeightedFalsePositives, pct(c.WeightedFalsePositiveRate), c.WeightedFalseNegatives, pct(c.WeightedFalseNegativeRate))
		}
		if row.name == "instances" {
			writeCallTrees(bw, r.CallTrees)
		}
	}
	if r.Messages != nil && r.Messages.Lost > 0 {
		fmt.Fprintf(bw, "(%d true messages, %s, are not in the trace", r.Messages.Lost, pct(float64(r.Messages.Lost)/float64(r.Messages.Truth)))
		if r.Instances != nil {
			fmt.Fprintf(bw, ": %d instances, %s, lost one", r.Instances.Lost, pct(float64(r.Instances.Lost)/float64(r.Instances.Truth)))
		}
		fmt.Fprintf(bw, ")\n")
	}
}

// writeTopN writes the top-N omitted true patterns.
func writeTopN(bw *bufio.Writer, r *Report) {
	if len(r.TopN) == 0 {
		return
	}
	fmt.Fprintf(bw, "\ntop-N omitted true patterns (tolerance %s):\n", pct(r.Tolerance))
	fmt.Fprintf(bw, "%5s %8s %7s %8s %9s %7s\n", "N", "omitted", "rate", "excused", "rate-tol", "1/N")
	for _, pt := range r.TopN {
		fmt.Fprintf(bw, "%5d %8d %7.3f %8d %9.3f %7.3f\n", pt.N, pt.Omitted, pt.Rate, pt.Excused, pt.RateTolerant, 1/float64(pt.N))
	}
}

// writeNodeDelays writes the node delays' errors.
func writeNodeDelays(bw *bufio.Writer, r *Report) {
	if len(r.Nodes) == 0 {
		return
	}
	fmt.Fprintf(bw, "\nnode delays of the patterns found (weighted by true count):\n")
	fmt.Fprintf(bw, "  %-16s %5s %11s %11s %7s\n", "node", "hops", "true mean", "abs error", "rel")
	for _, n := range r.Nodes {
		fmt.Fprintf(bw, "  %-16s %5d %11s %11s %7s\n", n.Node, n.Hops, FormatUS(n.MeanTrueUS), FormatUS(n.MeanAbsErrorUS), pct(n.RelError))
	}
	fmt.Fprintf(bw, "  all: node delay error %s (largest %s), network delay error %s\n",
		pct(r.Delays.NodeRelError), FormatUS(r.Delays.NodeMaxErrorUS), pct(r.Delays.NetRelError))
}

// writeHops writes the per-hop delays of the first limit patterns.
func writeHops(bw *bufio.Writer, hops []HopError, limit int) {
	if len(hops) == 0 {
		return
	}
	fmt.Fprintf(bw, "\nper-hop delays (inferred / true):\n")
	shown, last := 0, -1
	for _, h := range hops {
		if h.Rank != last {
			if shown == limit {
				break
			}
			shown++
			last = h.Rank
			fmt.Fprintf(bw, "  #%d (truth #%d, %d instances)\n", h.Rank, h.TruthRank, h.Weight)
		}
		fmt.Fprintf(bw, "    %-24s", h.From+"->"+h.To)
		if h.NodeUS != nil {
			fmt.Fprintf(bw, "  node %s / %s", FormatUS(*h.NodeUS), FormatUS(*h.TrueNodeUS))
		}
		if h.NetUS != nil {
			fmt.Fprintf(bw, "  net %s / %s", FormatUS(*h.NetUS), FormatUS(*h.TrueNetUS))
		}
		bw.WriteByte('\n')
	}
}

// writePatternList writes a list of patterns, at most limit of them.
func writePatternList(bw *bufio.Writer, title string, refs []PatternRef, limit int) {
	if len(refs) == 0 {
		return
	}
	fmt.Fprintf(bw, "\n%s (%d):\n", title, len(refs))
	for i, ref := range refs {
		if i == limit {
			fmt.Fprintf(bw, "  ... and %d more\n", len(refs)-i)
			break
		}
		if ref.Rank > 0 {
			fmt.Fprintf(bw, "  #%-4d count %-7d %s\n", ref.Rank, ref.Count, ref.Signature)
		} else {
			fmt.Fprintf(bw, "  truth #%-4d count %-7d %s\n", ref.TruthRank, ref.Count, ref.Signature)
		}
	}
}
