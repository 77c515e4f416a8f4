// Package link is the "wirepath link" command: it runs the message-linking
// engine (WAP5 section 5) on a message trace and prints the ranked path
// patterns.
package link

import (
	"context"
	"os"
	"runtime/debug"
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
	window      time.Duration
	y           float64
	budget      int
	low, high   float64
	minLink     float64
	iterations  int
	maxTree     int
	maxPatterns int
	linkClients bool
	workers     int
	calls       bool
	delayModel  string
	normalize   bool
	reparent    bool
	pure        bool
}

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
func NewCmd(ios *cmdutil.IOStreams) *cobra.Command {
	return newCmd(ios, func(ctx context.Context, o *options, eng *causal.Linking, path string) error {
		return run(ctx, ios, o, eng, path)
	})
}

// newCmd returns the command; runF does the work once the flags are
// checked (tests pass their own).
func newCmd(ios *cmdutil.IOStreams, runF func(context.Context, *options, *causal.Linking, string) error) *cobra.Command {
	def := causal.DefaultLinkingOptions()
	o := &options{}
	cmd := &cobra.Command{
		Use:   "link TRACE",
		Short: "Infer causal paths with the message-linking engine (WAP5)",
		Long:  long,
		Example: `  wirepath link trace.tsv
  wirepath link --window 100ms --try-both-budget 6 trace.tsv
  wirepath link --format json -o result.json trace.tsv`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.common.Validate(); err != nil {
				return err
			}
			if o.maxPatterns < 0 {
				return cmdutil.UsageErrorf("--max-patterns must not be negative")
			}
			if o.pure {
				for _, name := range pureConflicts {
					if cmd.Flags().Changed(name) {
						return cmdutil.UsageErrorf("--pure-wap5 sets --%s: give one or the other", name)
					}
				}
			}
			opt := o.engineOptions(ios)
			eng, err := causal.NewLinking(opt)
			if err != nil {
				return cmdutil.UsageErrorf("%v", err)
			}
			return runF(cmd.Context(), o, eng, args[0])
		},
	}
	fs := cmd.Flags()
	o.common.AddFlags(fs)
	fs.DurationVar(&o.window, "window", def.Window, "x: longest causal delay; earlier messages are never parents")
	fs.Float64Var(&o.y, "spontaneous-factor", def.SpontaneousFactor, "y: a message is spontaneous with the weight of a link of delay y*d")
	fs.IntVar(&o.budget, "try-both-budget", def.TryBothBudget, "try-both decisions allowed along one path of a root's tree (at most 2^N instances per root)")
	fs.Float64Var(&o.low, "try-both-low", def.TryBothLow, "links less likely than this are probably false (unless the message's most likely cause)")
	fs.Float64Var(&o.high, "try-both-high", def.TryBothHigh, "links more likely than this are probably true; in between, try both")
	fs.Float64Var(&o.minLink, "min-link", def.MinLinkProbability, "drop links less likely than this (the most likely cause is always kept)")
	fs.IntVar(&o.iterations, "iterations", def.Iterations, "re-estimate the delay model from the link probabilities this many times (exponential: 0 = as WAP5)")
	fs.IntVar(&o.maxTree, "max-tree", def.MaxTreeSize, "most messages in one path instance")
	fs.IntVar(&o.maxPatterns, "max-patterns", 10000, "keep only the best N patterns in the result (0 = all)")
	fs.BoolVar(&o.linkClients, "link-clients", !def.ClientRoots, "also look for the causes of messages sent by clients (by default they start paths)")
	fs.IntVar(&o.workers, "workers", 0, "goroutines to use (0 = one per CPU)")
	fs.BoolVar(&o.calls, "calls", def.Calls, "use CALL/RETURN kinds and call ids: a RETURN joins its CALL's instance, parents must nest")
	fs.StringVar(&o.delayModel, "delay-model", string(def.DelayModel), "how a delay weighs a possible parent: exponential (WAP5) or empirical (learnt per kind of link)")
	fs.BoolVar(&o.normalize, "normalize-roots", def.NormalizeRoots, "scale the instances of one root to share its probability (and drop those under --min-link of its best)")
	fs.BoolVar(&o.reparent, "reparent", def.Reparent, "within an instance, hang every message under its most recent possible cause")
	fs.BoolVar(&o.pure, "pure-wap5", false, "run WAP5 section 5.1 exactly: no --calls, exponential delays, --iterations 0, no --normalize-roots, no --reparent")
	return cmd
}

// pureConflicts are the flags --pure-wap5 sets.
var pureConflicts = []string{"calls", "delay-model", "iterations", "normalize-roots", "reparent"}

func (o *options) engineOptions(ios *cmdutil.IOStreams) causal.LinkingOptions {
	opt := causal.DefaultLinkingOptions()
	opt.Options = o.common.Options()
	opt.Aggregate.MaxPatterns = o.maxPatterns
	opt.Window = o.window
	opt.SpontaneousFactor = o.y
	opt.TryBothBudget = o.budget
	opt.TryBothLow, opt.TryBothHigh = o.low, o.high
	opt.MinLinkProbability = o.minLink
	opt.Iterations = o.iterations
	opt.MaxTreeSize = o.maxTree
	opt.ClientRoots = !o.linkClients
	opt.Workers = o.workers
	opt.Calls = o.calls
	opt.DelayModel = causal.DelayModel(o.delayModel)
	opt.NormalizeRoots = o.normalize
	opt.Reparent = o.reparent
	if o.pure {
		p := causal.PureWAP5LinkingOptions()
		opt.Calls, opt.DelayModel, opt.Iterations, opt.NormalizeRoots, opt.Reparent = p.Calls, p.DelayModel, p.Iterations, p.NormalizeRoots, p.Reparent
	}
	var prog *cmdutil.Progress
	started, last := false, 0
	opt.Progress = func(done, total int) {
		if !started {
			started = true
			prog = cmdutil.NewProgress(ios, "building paths", int64(total), false)
		}
		prog.Add(int64(done - last))
		last = done
		if done == total {
			prog.Finish()
		}
	}
	return opt
}

// warnEngine prints the engine's warnings on stderr.
type warnEngine struct {
	causal.Engine
	ios *cmdutil.IOStreams
}

// Infer runs the engine and prints its warnings.
func (w warnEngine) Infer(ctx context.Context, t *trace.Trace) (*causal.Result, error) {
	// Give the reader's garbage back before the engine's arrays come.
	debug.FreeOSMemory()
	res, err := w.Engine.Infer(ctx, t)
	if err == nil {
		for _, m := range res.Warnings {
			w.ios.Warnf("%s", m)
		}
	}
	return res, err
}

// gcPercent is the garbage collector's target while linking, unless GOGC
// says otherwise: the engine's large arrays hold no pointers, so collecting
// more often costs little time and keeps the peak memory near the live heap.
const gcPercent = 25

func run(ctx context.Context, ios *cmdutil.IOStreams, o *options, eng *causal.Linking, path string) error {
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(gcPercent))
	}
	return enginecmd.Run(ctx, ios, &o.common, path, warnEngine{eng, ios})
}
