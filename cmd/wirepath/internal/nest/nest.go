// Package nest is the "wirepath nest" command: it runs the nesting engine
// (Project 5 section 5.1) on a message trace and prints the path patterns
// and the call-path table.
package nest

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/nesting"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/enginecmd"
	"github.com/wirepath/wirepath/report"
)

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
func NewCmd(ios *cmdutil.IOStreams) *cobra.Command {
	f := &flags{}
	return newCmd(ios, f, f.run)
}

// flags are the command's own flags.
type flags struct {
	callPaths int
}

// newCmd returns the command with its own flags in f; runF does the work
// once the flags are checked (tests pass their own).
func newCmd(ios *cmdutil.IOStreams, f *flags, runF enginecmd.RunFunc) *cobra.Command {
	return enginecmd.NewCmd(ios, enginecmd.Spec{
		Use:   "nest TRACE",
		Short: "Infer causal paths with the nesting engine (Project 5)",
		Long:  long,
		Example: `  wirepath nest trace.tsv
  wirepath nest --skew-window 30ms --smooth 2 trace.tsv
  wirepath nest --format json -o result.json trace.tsv`,
		Flags: &enginecmd.NestingFlags{},
		AddFlags: func(fs *pflag.FlagSet) {
			fs.IntVar(&f.callPaths, "call-paths", 10, "call paths to show in text output (0 = all)")
		},
		Check: func(*cmdutil.IOStreams, *enginecmd.Options) error {
			if f.callPaths < 0 {
				return cmdutil.UsageErrorf("--call-paths must not be negative")
			}
			return nil
		},
	}, runF)
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

// run reads the trace into a trace.Table, runs the nesting engine on it
// and writes its patterns and call-path table.
func (f *flags) run(ctx context.Context, ios *cmdutil.IOStreams, o *enginecmd.Options, eng causal.Engine) error {
	t, skipped, err := enginecmd.ReadTable(ios, o.Path, o.Common.Strict)
	if err != nil {
		return err
	}
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(gcPercent))
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(max(memFloor, int64(memPerTrace*float64(t.Size()))+memExtra)))
	}
	res, err := eng.(*nesting.Engine).Run(ctx, t)
	if err != nil {
		return fmt.Errorf("%s: %w", eng.Name(), err)
	}
	enginecmd.Warn(ios, res.Result)
	if err := f.write(ios, &o.Common, res); err != nil {
		return err
	}
	// The trace is a Table, which the exports do not read: the OTLP
	// export has each pattern's mean instance.
	if err := o.Common.SendOTLP(ctx, ios, res.Result, nil); err != nil {
		return err
	}
	return enginecmd.Skipped(skipped, o.Path)
}

// write writes the result in the chosen format: the JSON result with its
// call_paths, the text report followed by the call-path table, or any
// other format of the patterns.
func (f *flags) write(ios *cmdutil.IOStreams, c *enginecmd.Common, res *nesting.Result) error {
	out, err := cmdutil.OpenOutput(ios, c.Output)
	if err != nil {
		return err
	}
	switch c.Format {
	case report.FormatJSON:
		err = cmdutil.WriteJSON(out, res)
	case report.FormatText:
		err = report.WriteText(out, res.Result, report.TextOptions{Top: c.Top})
		if err == nil {
			err = writeCallPaths(out, res.CallPaths, f.callPaths)
		}
	default:
		err = report.Write(out, c.Format, res.Result, report.Options{Top: c.ReportTop()})
	}
	err = out.Finish(err)
	return err
}
