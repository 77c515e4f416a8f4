// Package convolve is the "wirepath convolve" command: it runs the
// convolution engine (Project 5 section 5.2) on a message trace and prints
// the path patterns with the delays found on each edge.
package convolve

import (
	"github.com/spf13/cobra"

	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/enginecmd"
)

const long = `Infer causal path patterns from a message trace with the convolution
algorithm of Project 5 (Aguilera et al., SOSP 2003, section 5.2).

Each edge (sender, receiver) becomes a signal: the square root of its
message count per time quantum. Starting from each root node, the messages
into a node are cross-correlated (by FFT) with each edge out of it; spikes of
the correlation N standard deviations above its mean give the delays at
which the node passes messages on. Paths are built by following those edges,
and each edge is labelled with its delays, most frequent first.

It needs only timestamps, senders and receivers: no CALL/RETURN marks. Each
root edge gives one pattern; its count is the number of messages on the
root edge. See docs/causal-convolution.md.`

// NewCmd returns the convolve command.
func NewCmd(ios *cmdutil.IOStreams) *cobra.Command { return newCmd(ios, enginecmd.Run) }

// newCmd returns the command; runF does the work once the flags are
// checked (tests pass their own).
func newCmd(ios *cmdutil.IOStreams, runF enginecmd.RunFunc) *cobra.Command {
	return enginecmd.NewCmd(ios, enginecmd.Spec{
		Use:   "convolve TRACE",
		Short: "Infer causal paths with the convolution engine (Project 5)",
		Long:  long,
		Example: `  wirepath convolve trace.tsv
  wirepath convolve --quantum 5s --max-delay 10m --root mx1 mail.tsv
  wirepath convolve --format json -o result.json trace.tsv`,
		Flags: &enginecmd.ConvolutionFlags{},
		Check: func(ios *cmdutil.IOStreams, o *enginecmd.Options) error {
			if o.Common.Instances != 0 {
				ios.Warnf("--instances has no effect: the convolution engine finds edges and delays, not instances")
			}
			return nil
		},
	}, runF)
}
