// Package nest is the "wirepath nest" command: it runs the nesting engine
// (Project 5 section 5.1) on a message trace and prints the path patterns
// and the call-path table.
package nest

import (
	"context"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/wirepath/wirepath/causal/nesting"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/enginecmd"
	"github.com/wirepath/wirepath/report"
)

// options are the command's flags.
type options struct {
	common    enginecmd.Common
	nesting   enginecmd.NestingFlags
	callPaths int
	workers   int
}

const long = `Infer causal path patterns from an RPC trace with the nesting algorithm of
Project 5 (Aguilera et al., SOSP 2003, section 5.1).

It pairs CALL and RETURN messages (by call id, or each return with the
earliest unmatched call of its connection), finds the calls each call is
nested in, scores the candidates with a scoreboard of (A, B, C, delay)
histograms, picks one parent per call with the overlapping-, same- and
generic-child penalties, and aggregates the call trees. Patterns are printed
as trees of messages like the other engines', followed by the call-path
table (latency of each call and delay from its parent's call).

TRACE is a message trace the trace package reads. Only messages marked
CALL or RETURN are used. See docs/causal-nesting.md.`

// NewCmd returns the nest command.
func NewCmd(ios *cmdutil.IOStreams) *cobra.Command { return newCmd(ios, run) }

// runFunc runs the command once its flags are validated.
type runFunc func(ctx context.Context, ios *cmdutil.IOStreams, o *options, opt nesting.Options, path string) error

func newCmd(ios *cmdutil.IOStreams, runF runFunc) *cobra.Command {
	o := &options{}
	cmd := &cobra.Command{
		Use:   "nest TRACE",
		Short: "Infer causal paths with the nesting engine (Project 5)",
		Long:  long,
		Example: `  wirepath nest trace.tsv
  wirepath nest --skew-window 30ms --smooth 2 trace.tsv
  wirepath nest --format json -o result.json trace.tsv`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.common.Validate(); err != nil {
				return err
			}
			if o.callPaths < 0 {
				return cmdutil.UsageErrorf("--call-paths must not be negative")
			}
			opt := o.engineOptions()
			if err := opt.Validate(); err != nil {
				return o.nesting.UsageError(err)
			}
			return runF(cmd.Context(), ios, o, opt, args[0])
		},
	}
	fs := cmd.Flags()
	o.common.AddFlags(fs)
	o.nesting.Register(fs, "")
	fs.IntVar(&o.callPaths, "call-paths", 10, "call paths to show in text output (0 = all)")
	fs.IntVar(&o.workers, "workers", 0, "goroutines to use (0 = one per CPU)")
	return cmd
}

func (o *options) engineOptions() nesting.Options {
	opt := nesting.DefaultOptions()
	opt.Options = o.common.Options()
	o.nesting.Apply(&opt)
	opt.Workers = o.workers
	return opt
}

// The garbage collector's settings while nesting, unless GOGC or
// GOMEMLIMIT say otherwise: the engine's arrays hold no pointers, so
// collecting often costs little time, and its working set is about 1.4
// times the loaded trace's, so a soft limit of 2.4 times the trace (plus
// 8 MiB for the rest, and never below 64 MiB, which small traces do not
// reach) keeps the peak memory near what is live. See
// docs/causal-nesting.md, "Speed and memory".
const (
	gcPercent   = 20
	memPerTrace = 2.4
	memExtra    = 8 << 20
	memFloor    = 64 << 20
)

func run(ctx context.Context, ios *cmdutil.IOStreams, o *options, opt nesting.Options, path string) error {
	t, skipped, err := enginecmd.ReadTable(ios, path, o.common.Strict)
	if err != nil {
		return err
	}
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(gcPercent))
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(max(memFloor, int64(memPerTrace*float64(t.Size()))+memExtra)))
	}
	e, err := nesting.New(opt)
	if err != nil {
		return err
	}
	res, err := e.Run(ctx, t)
	if err != nil {
		return err
	}
	for _, w := range res.Warnings {
		ios.Warnf("%s", w)
	}
	out, err := cmdutil.OpenOutput(ios, o.common.Output)
	if err != nil {
		return err
	}
	switch o.common.Format {
	case report.FormatJSON:
		err = cmdutil.WriteJSON(out, res)
	case report.FormatText:
		err = report.WriteText(out, res.Result, report.TextOptions{Top: o.common.Top})
		if err == nil {
			err = report.WriteCallPathsText(out, res.CallPaths, o.callPaths)
		}
	default:
		top := 0
		if o.common.Format == report.FormatHTML {
			top = o.common.Top
		}
		err = report.Write(out, o.common.Format, res.Result, report.Options{Top: top})
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if skipped > 0 {
		return &cmdutil.PartialError{Skipped: skipped, What: "bad trace lines in " + path}
	}
	return nil
}
