package score

import (
	"bufio"
	"fmt"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/gen"
)

// callTreeInstances scores res's instances against truth as call trees
// (ViewCalls), with toTruth mapping the result's trace to the truth's:
// Report.CallTrees, the figure the accuracy harness reports beside the
// stricter trees of messages.
func callTreeInstances(res *causal.Result, truth *gen.Truth, opt Options, toTruth []int32) *CountScore {
	opt.View = ViewCalls
	t := newTally(truth, opt, toTruth)
	for pi := range res.Patterns {
		p := &res.Patterns[pi]
		for _, rec := range p.Instances {
			t.add(p, rec)
		}
	}
	return t.instanceScore()
}

// writeCallTrees writes the row of instances compared as call trees, when
// the report has it.
func writeCallTrees(bw *bufio.Writer, c *CountScore) {
	if c == nil {
		return
	}
	fmt.Fprintf(bw, "%-10s %9d %9d %9d %9d %6s %9d %6s\n", "  as calls", c.Truth, c.Inferred, c.Correct,
		c.FalsePositives, pct(c.FalsePositiveRate), c.FalseNegatives, pct(c.FalseNegativeRate))
}
