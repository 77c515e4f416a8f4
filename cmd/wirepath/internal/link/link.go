// Package link is the "wirepath link" command: it runs the message-linking
// engine (WAP5 section 5) on a message trace and prints the ranked path
// patterns.
package link

import (
	"context"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/enginecmd"
)

const long = `Infer causal path patterns from a message trace with the message-linking
algorithm of WAP5 (Reynolds et al., WWW 2006, section 5).

For every sender pair B->C it estimates the mean causal delay d as the mean
of the smallest delay before each B->C message (ignoring messages with no
message into B within --window), weighs each possible parent of a B->C
message (a message into B at most --window before it) by exp(-t/d) and the
possibility that it was spontaneous like a delay of y*d, and normalises the
weights into link probabilities. Delays are measured on one clock, the
sender's, so linking needs no clock synchronisation; a message whose sender
was not traced is linked only to messages its receiver sent to that sender
(A->B->A), on the receiver's clock. From every root it then builds path
instances, keeping probable links, dropping improbable ones and trying
ambiguous ones both ways (at most --try-both-budget times per path), gives
each instance the product of its decisions' probabilities, and aggregates
the instances into patterns ranked by expected count.

By default linking also uses what the trace says beyond WAP5's model
(docs/causal.md, "Beyond WAP5"): CALL/RETURN kinds and call ids (--calls),
the distribution of each kind of delay learnt from the trace instead of one
exponential (--delay-model empirical), the instances of one root sharing its
probability (--normalize-roots) and, within an instance, every message under
its most recent possible cause (--reparent). None of them compares clocks.
--pure-wap5 turns them all off and runs the paper's algorithm exactly.

TRACE is a message trace the trace package reads. See docs/causal.md.`

// NewCmd returns the link command.
func NewCmd(ios *cmdutil.IOStreams) *cobra.Command { return newCmd(ios, run) }

// newCmd returns the command; runF does the work once the flags are
// checked (tests pass their own).
func newCmd(ios *cmdutil.IOStreams, runF enginecmd.RunFunc) *cobra.Command {
	return enginecmd.NewCmd(ios, enginecmd.Spec{
		Use:   "link TRACE",
		Short: "Infer causal paths with the message-linking engine (WAP5)",
		Long:  long,
		Example: `  wirepath link trace.tsv
  wirepath link --window 100ms --try-both-budget 6 trace.tsv
  wirepath link --format json -o result.json trace.tsv`,
		Flags: &enginecmd.LinkingFlags{},
	}, runF)
}

// gcPercent is the garbage collector's target while linking, unless GOGC
// says otherwise: the engine's large arrays hold no pointers, so collecting
// more often costs little time and keeps the peak memory near the live heap.
const gcPercent = 25

func run(ctx context.Context, ios *cmdutil.IOStreams, o *enginecmd.Options, eng causal.Engine) error {
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(gcPercent))
	}
	return enginecmd.Run(ctx, ios, o, eng)
}
