// Package analyze is the "wirepath analyze" command: the whole pipeline in
// one run. It runs the front half (captures → pcapio → nat → flows →
// reconcile, plus syscall traces) through package pipeline, the chosen
// engines through causal.InferAll, and renders their results with
// report.WriteAll, ending with every stage's accounting and the warnings.
package analyze

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/convolution"
	"github.com/wirepath/wirepath/causal/engines"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/captureflags"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/enginecmd"
	"github.com/wirepath/wirepath/flows"
	"github.com/wirepath/wirepath/report"
	"github.com/wirepath/wirepath/tables"
	"github.com/wirepath/wirepath/trace"
)

// Options are the command's flags and arguments.
type Options struct {
	captureflags.Pipeline
	Common      enginecmd.Common
	Engine      string
	Linking     enginecmd.LinkingFlags
	Nesting     enginecmd.NestingFlags
	Convolution enginecmd.ConvolutionFlags
	Assembly    enginecmd.AssemblyFlags
	Workers     int
	SaveTrace   string
	Title       string
	// Window and WindowMargin are --window and --window-margin: analyse
	// in windows of capture time, in bounded memory (window.go).
	Window, WindowMargin time.Duration
	// MemoryMiB is --memory-limit: Go's soft memory limit with
	// --windowed, in MiB (window.go).
	MemoryMiB int
	// PcapOut, when set, is where the merged capture is also written
	// (--pcap-out), for `wirepath requests --pcap`.
	PcapOut string
}

// Engine selections (--engine): an engine's name, all or auto.
var engineChoices = append(slices.Clone(engines.Names), engines.All, engines.Auto)

const long = `Run the whole pipeline on packet captures (and, with --preload, syscall
traces) and print the causal path patterns with where the time goes.

The stages are those of the other commands, in one run: the captures are
merged, deduplicated and clock-corrected ("wirepath merge"), address
translations are learned and undone ("wirepath nat"), TCP and UDP are cut
into write-level messages ("wirepath messages"), and each message gets
both ends' times and node names ("wirepath reconcile"). Then the engines
infer the paths: linking (WAP5), nesting or convolution (Project 5), the
per-request assembly engine (--engine assembly: every request's tree,
using request ids, threads and content tokens where the trace has them),
or all of them side by side with their agreement (--engine all). The
default, auto, runs the assembly engine on RPC traffic (most messages
are paired calls and returns, as reassembled TCP request/response
traffic is) and linking otherwise (docs/analyze.md): on the testbed the
assembly engine got the most requests exactly right in 31 of 32 runs,
one request of 1,000 behind nesting in the other (docs/accuracy.md).

The report ends with the clocks found, the NAT table, the accounting of
every stage (packets in, duplicates, NAT mappings applied, messages,
messages with both ends, patterns) and the warnings: sniffers whose clock
offset is unknown, nodes seen on one side only, gaps in TCP streams,
skipped input. Each engine's own flags are here with a prefix: --link-*,
--nest-*, --conv-*, --asm-* (as --max-delay is in "wirepath link",
--link-max-delay here).

With --engine all, text has a section per engine and one trailer, json is
an envelope {"wirepath_analysis": 1, "engines": [...], "results": [...]}
of one result per engine, dot one graph, html one page, otlp and perfetto
one export with every engine's paths (docs/formats.md).`

const example = `  wirepath analyze client.pcap server.pcapng
  wirepath analyze *.pcap* --roles roles.txt --naming role --format html -o report.html
  wirepath analyze *.pcap --engine all --format json -o results.json --save-trace trace.tsv
  wirepath analyze outside.pcapng inside.pcapng.gz --reference outside.pcapng --preload traces/
  wirepath analyze *.pcapng --parquet tables/   # observations, messages, connections, requests for SQL engines`

// NewCmd returns the analyze command.
func NewCmd(ios *cmdutil.IOStreams) *cobra.Command {
	return newCmd(ios, func(ctx context.Context, o *Options, eo engines.Options) error {
		return Run(ctx, ios, o, eo)
	})
}

// runFunc does the work once the flags are checked (tests pass their own).
type runFunc func(ctx context.Context, o *Options, eo engines.Options) error

func newCmd(ios *cmdutil.IOStreams, runF runFunc) *cobra.Command {
	o := &Options{}
	cmd := &cobra.Command{
		Use:     "analyze CAPTURE... [--preload TRACE...] [--engine auto|linking|nesting|convolution|assembly|all] [--format FORMAT] [-o FILE]",
		Short:   "Run the whole pipeline: captures to causal paths, delays and accounting",
		Long:    long,
		Example: example,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Captures = args
			if err := o.Common.Resolve(cmd.Flags()); err != nil {
				return err
			}
			eo, err := o.Validate(ios)
			if err != nil {
				return err
			}
			return runF(cmd.Context(), o, eo)
		},
	}
	fs := cmd.Flags()
	o.Pipeline.Register(fs)
	o.Common.AddResultFlags(fs)
	fs.StringVar(&o.Engine, "engine", engines.Auto, "engine to run: "+strings.Join(engineChoices, ", "))
	cmdutil.Enum(fs, "engine", engineChoices...)
	fs.IntVar(&o.Workers, "workers", 0, "goroutines each engine uses (0 = one per CPU)")
	fs.StringVar(&o.SaveTrace, "save-trace", "", "also write the reconciled message trace to `FILE` (TSV; JSON Lines for .jsonl; .gz/.zst compress), for the engine commands and 'wirepath score --trace'")
	fs.StringVar(&o.Title, "title", "", "HTML page title")
	fs.DurationVar(&o.Window, "windowed", 0, "analyse in windows of this much capture time, in memory bounded by one window's trace, merging each engine's patterns (0 = the whole run at once; docs/performance.md)")
	fs.IntVar(&o.MemoryMiB, "memory-limit", 768, "with --windowed, the Go runtime's soft memory limit in `MiB` (the garbage collector works harder near it; 0 = none; the GOMEMLIMIT environment variable overrides it)")
	fs.DurationVar(&o.WindowMargin, "windowed-margin", 3*time.Second, "with --windowed, how much before and after its own time each window also reconciles, so that requests crossing its edges are whole (at least the causal window)")
	fs.StringVar(&o.PcapOut, "pcap-out", "", "also write the merged capture to `FILE` (pcapng, as 'wirepath merge' writes it), for Wireshark and 'wirepath requests --pcap'; the HTML report's request list then gives each request's Wireshark filter")
	o.Linking.Register(fs, "link-")
	o.Nesting.Register(fs, "nest-")
	o.Convolution.Register(fs, "conv-")
	o.Assembly.Register(fs, "asm-")
	return cmd
}

// engineFlags returns every engine's own flags.
func (o *Options) engineFlags() []enginecmd.EngineFlags {
	return []enginecmd.EngineFlags{&o.Linking, &o.Nesting, &o.Convolution, &o.Assembly}
}

// Validate checks the flags and returns the engines' options.
func (o *Options) Validate(ios *cmdutil.IOStreams) (engines.Options, error) {
	eo := engines.DefaultOptions()
	if err := o.Pipeline.Validate(); err != nil {
		return eo, err
	}
	if err := o.Common.Validate(); err != nil {
		return eo, err
	}
	if !slices.Contains(engineChoices, o.Engine) {
		return eo, cmdutil.UsageErrorf("--engine must be one of %s, not %q", strings.Join(engineChoices, ", "), o.Engine)
	}
	if err := o.validateWindow(); err != nil {
		return eo, err
	}
	if o.Workers < 0 {
		return eo, cmdutil.UsageErrorf("--workers must not be negative")
	}
	flags := o.engineFlags()
	for _, f := range flags {
		if err := f.Validate(); err != nil {
			return eo, err
		}
	}
	co := o.Common.Options()
	if o.Engine == engines.All {
		// The agreement table compares every engine's tree of each
		// request: every instance is kept, and dropped after unless
		// --instances asked for them.
		co.Aggregate.KeepInstances, co.Aggregate.MaxKept = true, max(0, o.Common.Instances)
	}
	if o.Common.Format == report.FormatHTML && o.Common.Instances == 0 && o.Window == 0 {
		// The HTML report lists the slowest requests: every instance is
		// kept for it (the page itself holds at most 1,000; --windowed
		// keeps none).
		co.Aggregate.KeepInstances, co.Aggregate.MaxKept = true, 0
	}
	if o.Parquet.Dir != "" && o.Common.Instances == 0 {
		// The requests table lists every instance; the result keeps
		// none, as asked (Run drops them after writing the table).
		co.Aggregate.KeepInstances, co.Aggregate.MaxKept = true, 0
	}
	eo.SetCommon(co)
	for _, f := range flags {
		f.Apply(&eo)
	}
	eo.SetWorkers(o.Workers)
	// Every engine's options are checked, whichever run: a bad flag is a
	// mistake even when auto picks another engine.
	if err := eo.Validate(); err != nil {
		return eo, enginecmd.OptionUsageError(err, flags...)
	}
	if o.Common.Instances != 0 && o.Engine == convolution.Name {
		ios.Warnf("--instances has no effect: the convolution engine finds edges and delays, not instances")
	}
	return eo, nil
}

// Run runs the pipeline and the engines and writes the report.
func Run(ctx context.Context, ios *cmdutil.IOStreams, o *Options, eo engines.Options) error {
	if o.Window > 0 {
		return runWindowed(ctx, ios, o, eo)
	}
	o.Pipeline.Context = ctx
	res, err := o.Pipeline.Run(ios)
	if err != nil {
		return err
	}
	defer o.Parquet.Finish(ios, errors.New("not finished")) // removes the tables unless writeTables put them in place
	// Nothing readable: no report, the problems say why.
	status := captureflags.PipelineStatus(res)
	var partial *cmdutil.PartialError
	if status != nil && !errors.As(status, &partial) {
		for _, p := range res.Problems {
			ios.Warnf("%v", p)
		}
		return status
	}
	if err := res.Report.Check(); err != nil {
		ios.Warnf("%v (a bug)", err)
	}
	tr := res.Trace
	fx, err := o.mergedCapture(ctx, ios, tr)
	if err != nil {
		return err
	}
	if o.SaveTrace != "" {
		if err := cmdutil.WriteTraceFile(o.SaveTrace, tr, trace.FormatAuto); err != nil {
			return err
		}
	}
	results, err := o.infer(ctx, ios, eo, tr)
	if err != nil {
		return err
	}
	if err := o.output(ctx, ios, results, tr, res.Report.Sources, fx); err != nil {
		return err
	}
	if partial != nil {
		partial.What = "the warnings say what was skipped"
		return partial
	}
	return nil
}

// infer runs the engines --engine names on the trace.
func (o *Options) infer(ctx context.Context, ios *cmdutil.IOStreams, eo engines.Options, tr *trace.Trace) ([]*causal.Result, error) {
	names, why, err := engines.Resolve(o.Engine, tr)
	if err != nil {
		return nil, cmdutil.UsageErrorf("%v", err)
	}
	if why != "" {
		ios.Infof("engine %s: %s (--engine chooses another)", names[0], why)
	}
	prog := enginecmd.NewProgress(ios)
	prog.Install(&eo)
	engs := make([]causal.Engine, len(names))
	for i, n := range names {
		if engs[i], err = eo.New(n); err != nil {
			return nil, enginecmd.OptionUsageError(err, o.engineFlags()...)
		}
	}
	results, err := causal.InferAll(ctx, tr, engs, func(int, causal.Engine) { prog.Finish() })
	prog.Finish()
	return results, err
}

// output writes the results: the tables, the report, the OTLP export, and
// the warnings on stderr when the report does not end with them.
func (o *Options) output(ctx context.Context, ios *cmdutil.IOStreams, results []*causal.Result, tr *trace.Trace, src []flows.MessageID, fx report.FrameIndex) error {
	if err := o.writeTables(ios, results, tr, src); err != nil {
		return err
	}
	if err := o.write(ios, results, tr, o.agreement(results), fx); err != nil {
		return err
	}
	if o.Common.OTLPEndpoint != "" {
		if err := cmdutil.ExportOTLP(ctx, ios, o.Common.OTLPEndpoint, results, tr); err != nil {
			return err
		}
	}
	// Text on stdout already ends with the warnings; otherwise they go to
	// stderr.
	toFile := o.Common.Output != "" && o.Common.Output != "-"
	if o.Common.Format != report.FormatText || toFile {
		for _, w := range tr.Meta.Warnings {
			ios.Warnf("%s", w)
		}
		for _, r := range results {
			for _, w := range r.Warnings {
				ios.Warnf("%s: %s", r.Engine, w)
			}
		}
	}
	if toFile {
		ios.Infof("%s report written to %s", o.Common.Format, o.Common.Output)
	}
	return nil
}

// mergedCapture writes, with --pcap-out, the merged capture and, for the
// HTML report, returns its frames of the trace's messages (nil otherwise):
// the report's request list gives each request's Wireshark filter.
func (o *Options) mergedCapture(ctx context.Context, ios *cmdutil.IOStreams, tr *trace.Trace) (report.FrameIndex, error) {
	if o.PcapOut == "" {
		return nil, nil
	}
	n, err := o.Pipeline.Flags.WriteMergedFile(ctx, ios, o.Captures, o.PcapOut)
	if err != nil {
		return nil, err
	}
	ios.Infof("merged capture (%d packets) written to %s", n, o.PcapOut)
	if o.Common.Format != report.FormatHTML {
		return nil, nil
	}
	x, err := cmdutil.BuildFrames(ios, o.PcapOut, tr)
	if err != nil {
		return nil, err
	}
	return x, nil
}

// agreement compares the engines' trees of each request (nil for one
// engine), then drops the instances kept for it unless --instances asked
// for them or the HTML report lists them.
func (o *Options) agreement(results []*causal.Result) *report.Agreement {
	if len(results) < 2 {
		return nil
	}
	agree := report.ComputeAgreement(results)
	if o.Common.Instances == 0 && o.Common.Format != report.FormatHTML {
		for _, r := range results {
			for i := range r.Patterns {
				r.Patterns[i].Instances = nil
			}
		}
	}
	return agree
}

// write renders the results to stdout or -o; fx, when set, gives the HTML
// report's requests their frames.
func (o *Options) write(ios *cmdutil.IOStreams, results []*causal.Result, tr *trace.Trace, agree *report.Agreement, fx report.FrameIndex) error {
	return o.writeReport(ios, results, report.Options{Top: o.Common.ReportTop(), Title: o.Title, Trace: tr, Summary: true, Agreement: agree, Frames: fx})
}

// writeReport writes the results in the chosen format with opt.
func (o *Options) writeReport(ios *cmdutil.IOStreams, results []*causal.Result, opt report.Options) error {
	out, err := cmdutil.OpenOutput(ios, o.Common.Output)
	if err != nil {
		return err
	}
	return out.Finish(report.WriteAll(out, o.Common.Format, results, opt))
}

// writeTables writes, with --parquet, the trace's messages and every
// instance of every result as requests (tableRows), and puts the tables
// in place. src names the trace's messages (reconcile.Report.Sources).
func (o *Options) writeTables(ios *cmdutil.IOStreams, results []*causal.Result, tr *trace.Trace, src []flows.MessageID) error {
	rec := o.Parquet.Recorder()
	if rec == nil {
		return nil
	}
	o.tableRows(rec, results, tr, tables.TraceRows{Sources: src})
	return o.Parquet.Finish(ios, nil)
}

// tableRows adds tr's messages that rows keeps to messages and every
// instance of every result to requests. The instances leave the results
// unless --instances asked for them.
func (o *Options) tableRows(rec *tables.Recorder, results []*causal.Result, tr *trace.Trace, rows tables.TraceRows) {
	rec.TraceMessages(tr, rows)
	off := causal.NodeOffsets(tr)
	at := func(t trace.Timestamp, node trace.Sym) int64 {
		if int(node) < len(off) {
			return int64(t) - off[node]
		}
		return int64(t)
	}
	name := func(s trace.Sym) string {
		if s == 0 {
			return ""
		}
		return tr.Syms.String(s)
	}
	for _, r := range results {
		for pi := range r.Patterns {
			p := &r.Patterns[pi]
			for _, in := range p.Instances {
				if len(in.Messages) == 0 {
					continue
				}
				row := requestRow(tr, in.Messages, at, rows.Sources)
				root := &tr.Messages[in.Messages[0]]
				row.Engine, row.Pattern, row.Signature, row.Probability = r.Engine, int32(p.Rank), p.Signature, in.Probability
				row.Client, row.Server, row.Label = name(root.SrcNode), name(root.DstNode), name(root.Label)
				row.WindowStart = rows.WindowStart
				rec.W.Request(&row)
			}
			if o.Common.Instances == 0 {
				p.Instances = nil
			}
		}
	}
}

// requestRow returns the request of the instance of messages idx (parents
// first): its root, messages and times, on the reference clock as the
// result's latency_us (send of the root to the last receive).
func requestRow(tr *trace.Trace, idx []int, at func(trace.Timestamp, trace.Sym) int64, src []flows.MessageID) tables.Request {
	send := func(m *trace.Message) int64 {
		if m.SendTS.Known() {
			return at(m.SendTS, m.SrcNode)
		}
		return at(m.RecvTS, m.DstNode)
	}
	recv := func(m *trace.Message) int64 {
		if m.RecvTS.Known() {
			return at(m.RecvTS, m.DstNode)
		}
		return at(m.SendTS, m.SrcNode)
	}
	row := tables.Request{Root: int64(idx[0]), Messages: make([]int64, len(idx)), MessageIDs: make([]int64, len(idx))}
	row.Start = send(&tr.Messages[idx[0]])
	row.End = row.Start
	for k, i := range idx {
		row.Messages[k] = int64(i)
		if i < len(src) {
			row.MessageIDs[k] = tables.MsgID(src[i])
		}
		if e := recv(&tr.Messages[i]); e > row.End {
			row.End = e
		}
	}
	row.LatencyUS = float64(row.End-row.Start) / 1e3
	row.RootID = row.MessageIDs[0]
	return row
}
