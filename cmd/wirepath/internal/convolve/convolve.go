// Package convolve is the "wirepath convolve" command: it runs the
// convolution engine (Project 5 section 5.2) on a message trace and prints
// the path patterns with the delays found on each edge.
package convolve

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/convolution"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/enginecmd"
	"github.com/wirepath/wirepath/trace"
)

// options are the command's flags.
type options struct {
	common      enginecmd.Common
	convolution enginecmd.ConvolutionFlags
	workers     int
}

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
func NewCmd(ios *cmdutil.IOStreams) *cobra.Command { return newCmd(ios, run) }

// runFunc runs the command once its flags are validated.
type runFunc func(ctx context.Context, ios *cmdutil.IOStreams, o *options, opt convolution.Options, path string) error

func newCmd(ios *cmdutil.IOStreams, runF runFunc) *cobra.Command {
	o := &options{}
	cmd := &cobra.Command{
		Use:   "convolve TRACE",
		Short: "Infer causal paths with the convolution engine (Project 5)",
		Long:  long,
		Example: `  wirepath convolve trace.tsv
  wirepath convolve --quantum 5s --max-delay 10m --root mx1 mail.tsv
  wirepath convolve --format json -o result.json trace.tsv`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.common.Validate(); err != nil {
				return err
			}
			opt := o.engineOptions()
			if err := opt.Validate(); err != nil {
				return o.convolution.UsageError(err)
			}
			if o.common.Instances != 0 {
				ios.Warnf("--instances has no effect: the convolution engine finds edges and delays, not instances")
			}
			return runF(cmd.Context(), ios, o, opt, args[0])
		},
	}
	fs := cmd.Flags()
	o.common.AddFlags(fs)
	o.convolution.Register(fs, "")
	fs.IntVar(&o.workers, "workers", 0, "goroutines to use (0 = one per CPU)")
	return cmd
}

func (o *options) engineOptions() convolution.Options {
	opt := convolution.DefaultOptions()
	opt.Options = o.common.Options()
	o.convolution.Apply(&opt)
	opt.Workers = o.workers
	return opt
}

func run(ctx context.Context, ios *cmdutil.IOStreams, o *options, opt convolution.Options, path string) error {
	prog := cmdutil.NewProgress(ios, "convolve: hops", -1, false)
	defer prog.Finish()
	if prog != nil {
		opt.Progress = func(n int) { prog.Add(int64(n)) }
	}
	e, err := convolution.New(opt)
	if err != nil {
		return err
	}
	return enginecmd.Run(ctx, ios, &o.common, path, warnings{e, ios})
}

// warnings wraps an engine to print the result's warnings on stderr.
type warnings struct {
	causal.Engine
	ios *cmdutil.IOStreams
}

// Infer runs the engine and prints the result's warnings.
func (w warnings) Infer(ctx context.Context, t trace.Messages) (*causal.Result, error) {
	res, err := w.Engine.Infer(ctx, t)
	if err == nil {
		for _, s := range res.Warnings {
			w.ios.Warnf("%s", s)
		}
	}
	return res, err
}
