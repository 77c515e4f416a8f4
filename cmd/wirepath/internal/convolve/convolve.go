// Package convolve is the "wirepath convolve" command: it runs the
// convolution engine (Project 5 section 5.2) on a message trace and prints
// the path patterns with the delays found on each edge.
package convolve

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/enginecmd"
	"github.com/wirepath/wirepath/trace"
)

// options are the command's flags.
type options struct {
	common      enginecmd.Common
	quantum     time.Duration
	nSigma      float64
	dip         float64
	window      time.Duration
	maxDelay    time.Duration
	maxDepth    int
	minCount    int
	minFraction float64
	maxHops     int
	roots       []string
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
type runFunc func(ctx context.Context, ios *cmdutil.IOStreams, o *options, opt causal.ConvolutionOptions, path string) error

func newCmd(ios *cmdutil.IOStreams, runF runFunc) *cobra.Command {
	def := causal.DefaultConvolutionOptions()
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
				return enginecmd.OptionUsageError(err, flagOf)
			}
			if o.common.Instances != 0 {
				ios.Warnf("--instances has no effect: the convolution engine finds edges and delays, not instances")
			}
			return runF(cmd.Context(), ios, o, opt, args[0])
		},
	}
	fs := cmd.Flags()
	o.common.AddFlags(fs)
	fs.DurationVar(&o.quantum, "quantum", time.Duration(def.Quantum), "time quantum μ of the signals")
	fs.Float64Var(&o.nSigma, "spike-sigma", def.NSigma, "N: a spike is at least this many standard deviations above the mean")
	fs.Float64Var(&o.dip, "dip-sigma", def.Dip, "S: spikes are separated by a point below this many standard deviations")
	fs.DurationVar(&o.window, "window", 0, "v: match messages within the delay ± this (0 = one quantum)")
	fs.DurationVar(&o.maxDelay, "max-delay", 0, "largest delay searched (0 = 100 quanta)")
	fs.IntVar(&o.maxDepth, "max-depth", def.MaxDepth, "longest path, in hops")
	fs.IntVar(&o.minCount, "min-count", def.MinCount, "fewest messages an edge of a path, and each delay on it, must explain")
	fs.Float64Var(&o.minFraction, "min-fraction", def.MinFraction, "smallest share of a hop's messages a spike must explain")
	fs.IntVar(&o.maxHops, "max-hops", def.MaxVertices, "most hops explored from one root edge")
	fs.StringSliceVar(&o.roots, "root", nil, "start paths at `NODE` (repeatable; default: the clients)")
	fs.IntVar(&o.workers, "workers", 0, "goroutines to use (0 = one per CPU)")
	return cmd
}

// flagOf names the flag of each engine option.
var flagOf = map[string]string{
	"Quantum": "quantum", "NSigma": "spike-sigma", "Dip": "dip-sigma", "Window": "window",
	"MaxDelay": "max-delay", "MaxDepth": "max-depth", "MinCount": "min-count",
	"MinFraction": "min-fraction", "MaxVertices": "max-hops", "Workers": "workers",
}

func (o *options) engineOptions() causal.ConvolutionOptions {
	opt := causal.DefaultConvolutionOptions()
	opt.Options = o.common.Options()
	opt.Quantum = int64(o.quantum)
	opt.NSigma = o.nSigma
	opt.Dip = o.dip
	opt.Window = int64(o.window)
	opt.MaxDelay = int64(o.maxDelay)
	opt.MaxDepth = o.maxDepth
	opt.MinCount = o.minCount
	opt.MinFraction = o.minFraction
	opt.MaxVertices = o.maxHops
	opt.Roots = o.roots
	opt.Workers = o.workers
	return opt
}

func run(ctx context.Context, ios *cmdutil.IOStreams, o *options, opt causal.ConvolutionOptions, path string) error {
	prog := cmdutil.NewProgress(ios, "convolve: hops", -1, false)
	defer prog.Finish()
	if prog != nil {
		opt.Progress = func(n int) { prog.Add(int64(n)) }
	}
	return enginecmd.Run(ctx, ios, &o.common, path, warnings{causal.NewConvolution(opt), ios})
}

// warnings wraps an engine to print the result's warnings on stderr.
type warnings struct {
	causal.Engine
	ios *cmdutil.IOStreams
}

// Infer runs the engine and prints the result's warnings.
func (w warnings) Infer(ctx context.Context, t *trace.Trace) (*causal.Result, error) {
	res, err := w.Engine.Infer(ctx, t)
	if err == nil {
		for _, s := range res.Warnings {
			w.ios.Warnf("%s", s)
		}
	}
	return res, err
}
