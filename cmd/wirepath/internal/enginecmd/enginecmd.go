// Package enginecmd holds what the engine subcommands (link, nest, convolve)
// share: one constructor (NewCmd) from a Spec, one run-function shape
// (RunFunc), the flags for naming, ranking and output, every engine's own
// flags (which analyze registers with a prefix), option errors mapped to
// usage errors naming the flag, progress, reading the trace and writing
// the result.
package enginecmd

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/report"
	"github.com/wirepath/wirepath/trace"
)

// Formats are the output formats of the engine commands: every format the
// report package renders.
var Formats = report.Formats

// Common holds the flags every engine command shares.
type Common struct {
	// OTLPEndpoint, when set, is the OTLP/HTTP receiver the OTLP export
	// is also sent to (--otlp-endpoint).
	OTLPEndpoint string

	Format      string
	Output      string
	Top         int
	Rank        string
	NoClientAgg bool
	NoEphemeral bool
	MinPeers    int
	Histograms  bool
	Instances   int
	Strict      bool
	// topSet records that --top was given (Resolve): the formats whose
	// default is every pattern (dot) then honour it.
	topSet bool
}

// AddFlags registers the shared flags on fs.
func (c *Common) AddFlags(fs *pflag.FlagSet) {
	c.AddResultFlags(fs)
	fs.BoolVar(&c.Strict, "strict", false, "stop at the first bad trace line instead of skipping it")
}

// AddResultFlags registers the shared flags but --strict (which is about
// reading a trace file): naming, ranking, output format and file, top,
// histograms and instances.
func (c *Common) AddResultFlags(fs *pflag.FlagSet) {
	ranks := make([]string, len(causal.RankMetrics))
	for i, r := range causal.RankMetrics {
		ranks[i] = string(r)
	}
	fs.StringVar(&c.Format, "format", "text", "output format: "+strings.Join(Formats, ", "))
	cmdutil.Enum(fs, "format", Formats...)
	fs.StringVarP(&c.Output, "output", "o", "", "write the result to `FILE` instead of stdout; its extension (.html, .json, .dot, .txt) picks --format, and a --format it contradicts is refused")
	fs.IntVar(&c.Top, "top", 10, "patterns to show in text, HTML and (when given) DOT output (0 = all)")
	fs.StringVar(&c.Rank, "rank", string(causal.RankExpected), "rank patterns by: "+strings.Join(ranks, ", "))
	cmdutil.Enum(fs, "rank", ranks...)
	fs.BoolVar(&c.NoClientAgg, "no-aggregate-clients", false, "keep client node names instead of aggregating them into CLIENT")
	fs.BoolVar(&c.NoEphemeral, "keep-ephemeral-ports", false, "keep ephemeral port numbers instead of replacing them with *")
	fs.IntVar(&c.MinPeers, "min-peers", trace.DefaultRoleOptions().MinPeers, "distinct peers that make a port fixed (a server port)")
	fs.BoolVar(&c.Histograms, "histograms", false, "include delay histograms in JSON output")
	cmdutil.OTLPEndpointFlag(fs, &c.OTLPEndpoint)
	fs.IntVar(&c.Instances, "instances", 0, "list the messages of up to `N` instances per pattern in JSON output (-1 = all)")
}

// Resolve settles what depends on which flags were given (it runs
// before Validate): the format from the -o file's extension (or a usage
// error for a mismatch, cmdutil.OutputFormat), and whether --top was
// given.
func (c *Common) Resolve(fs *pflag.FlagSet) error {
	if f := fs.Lookup("top"); f != nil {
		c.topSet = f.Changed
	}
	return cmdutil.OutputFormat(fs, c.Output, Formats)
}

// ReportTop is the --top the chosen format gets: text and html take it
// (their defaults are 10 and the top drawn in detail), dot takes it when
// it was given (else every pattern), the JSON result and the exports
// always have every pattern.
func (c *Common) ReportTop() int {
	switch {
	case c.Format == report.FormatText || c.Format == report.FormatHTML:
		return c.Top
	case c.Format == report.FormatDOT && c.topSet:
		return c.Top
	}
	return 0
}

// Validate checks the shared flags.
func (c *Common) Validate() error {
	if !slices.Contains(Formats, c.Format) {
		return cmdutil.UsageErrorf("--format must be one of %s, not %q", strings.Join(Formats, ", "), c.Format)
	}
	if !slices.Contains(causal.RankMetrics, causal.RankMetric(c.Rank)) {
		return cmdutil.UsageErrorf("unknown --rank %q", c.Rank)
	}
	if c.MinPeers < 1 {
		return cmdutil.UsageErrorf("--min-peers must be at least 1")
	}
	if c.OTLPEndpoint != "" {
		if _, err := cmdutil.TracesURL(c.OTLPEndpoint); err != nil {
			return err
		}
	}
	if c.Top < 0 {
		return cmdutil.UsageErrorf("--top must not be negative")
	}
	return nil
}

// Options returns the engine options the flags describe.
func (c *Common) Options() causal.Options {
	o := causal.DefaultOptions()
	o.Rank = causal.RankMetric(c.Rank)
	o.Aggregate.Naming.AggregateClients = !c.NoClientAgg
	o.Aggregate.Naming.EphemeralPorts = !c.NoEphemeral
	o.Aggregate.Naming.Roles.MinPeers = c.MinPeers
	o.Aggregate.Histograms = c.Histograms
	if c.Instances != 0 {
		o.Aggregate.KeepInstances = true
		if c.Instances > 0 {
			o.Aggregate.MaxKept = c.Instances
		}
	}
	return o
}

// ReadTrace reads the trace at path, warning on stderr about skipped lines.
func ReadTrace(ios *cmdutil.IOStreams, path string, strict bool) (*trace.Trace, int, error) {
	t, err := trace.ReadFile(path, trace.ReadOptions{Strict: strict})
	if err != nil {
		return nil, 0, err
	}
	return t, warnSkipped(ios, &t.Meta), nil
}

// ReadTable is ReadTrace into a compact trace.Table, for engines that can
// use one (about half the memory of a trace.Trace).
func ReadTable(ios *cmdutil.IOStreams, path string, strict bool) (*trace.Table, int, error) {
	t, err := trace.ReadFileTable(path, trace.ReadOptions{Strict: strict})
	if err != nil {
		return nil, 0, err
	}
	return t, warnSkipped(ios, &t.Meta), nil
}

// warnSkipped warns about the lines the reader skipped and returns their
// number.
func warnSkipped(ios *cmdutil.IOStreams, meta *trace.Meta) int {
	skipped := int(meta.SkippedLines())
	if skipped > 0 {
		for _, w := range meta.Warnings {
			ios.Warnf("%s", w)
		}
	}
	return skipped
}

// WriteResult writes res in the chosen format to stdout or -o. t, when not
// nil, lets the OTLP and Perfetto exports use the instances' real times.
func (c *Common) WriteResult(ios *cmdutil.IOStreams, res *causal.Result, t *trace.Trace) error {
	out, err := cmdutil.OpenOutput(ios, c.Output)
	if err != nil {
		return err
	}
	err = report.Write(out, c.Format, res, report.Options{Top: c.ReportTop(), Trace: t})
	err = out.Finish(err)
	return err
}

// SendOTLP sends the OTLP export of res to --otlp-endpoint, when given;
// t, when not nil, gives listed instances their own times.
func (c *Common) SendOTLP(ctx context.Context, ios *cmdutil.IOStreams, res *causal.Result, t *trace.Trace) error {
	if c.OTLPEndpoint == "" {
		return nil
	}
	return cmdutil.ExportOTLP(ctx, ios, c.OTLPEndpoint, []*causal.Result{res}, t)
}

// Run is the work of an engine command: it reads the trace at o.Path,
// gives the reader's garbage back to the system before the engine's
// arrays come, runs eng on the trace, prints the result's warnings on
// stderr and writes the result. It returns a *cmdutil.PartialError when
// trace lines were skipped.
func Run(ctx context.Context, ios *cmdutil.IOStreams, o *Options, eng causal.Engine) error {
	t, skipped, err := ReadTrace(ios, o.Path, o.Common.Strict)
	if err != nil {
		return err
	}
	debug.FreeOSMemory()
	res, err := eng.Infer(ctx, t)
	o.Progress.Finish()
	if err != nil {
		return fmt.Errorf("%s: %w", eng.Name(), err)
	}
	Warn(ios, res)
	if err := o.Common.WriteResult(ios, res, t); err != nil {
		return err
	}
	if err := o.Common.SendOTLP(ctx, ios, res, t); err != nil {
		return err
	}
	return Skipped(skipped, o.Path)
}

// Warn prints the result's warnings on stderr.
func Warn(ios *cmdutil.IOStreams, res *causal.Result) {
	for _, w := range res.Warnings {
		ios.Warnf("%s", w)
	}
}

// Skipped returns the *cmdutil.PartialError of a run that skipped bad
// lines of the trace at path, nil when it skipped none.
func Skipped(lines int, path string) error {
	if lines > 0 {
		return &cmdutil.PartialError{Skipped: lines, What: "bad trace lines in " + path}
	}
	return nil
}
