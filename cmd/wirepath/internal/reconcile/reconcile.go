// Package reconcile is the "wirepath reconcile" command: it runs the front
// half of the pipeline (captures, NAT, flows, syscall traces) through
// package pipeline and writes the reconciled message trace with its
// accounting.
package reconcile

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/wirepath/wirepath/cmd/wirepath/internal/captureflags"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/tables"
	"github.com/wirepath/wirepath/trace"
)

// Options are the command's flags and arguments.
type Options struct {
	captureflags.Pipeline
	Output string
	Format string
	JSON   bool
}

const long = `Read packet captures (and, with --preload, syscall traces from the
LD_PRELOAD library or the strace converter) and write one trace of logical
messages: each application message once, with the time it left its sender
and the time it reached its receiver.

The captures are merged, deduplicated and clock-corrected as "wirepath
merge" does; address translations are learned and undone as "wirepath nat"
finds them; TCP and UDP are cut into write-level messages as "wirepath
messages" does. Then, for each host, its home capture point is chosen (the
one that sees its messages whole, on its side of every router), and each
message takes its send time from the sender's home point and its receive
time from the receiver's (WAP5 section 7). A message seen on one side only
keeps one time.

Syscall traces are matched to the sniffed bytes of the same connection
(endpoints, across NAT, and byte ranges), so messages get process names and
the application's own write boundaries; traced traffic no sniffer saw
(UNIX sockets, hosts without a sniffer) becomes messages too.

Nodes are named by --naming: host (IP address, or the --roles name), role
(host and fixed port, e.g. 10.0.0.5:5432 or db:5432) or process
(name[pid]@host where a syscall trace covers the end; role elsewhere). The
--roles file maps "ADDRESS[:PORT] NAME" per line (/etc/hosts works).

Clock offsets between the clocks the times come from (sniffers, traced
hosts) are estimated from messages and calls seen at both ends, assuming
symmetric smallest delays (WAP5 section 5.2) and keeping the shortest round
trip (MSHN); each node keeps one clock, and the trace's metadata gives each
node's offset with its uncertainty.

The trace goes to -o FILE (TSV, or JSON Lines for .jsonl; .gz and .zst
compress) or stdout; the accounting to stderr, or with --format json to stdout as
JSON (the trace then only to -o). Formats: docs/formats.md, docs/reconcile.md.`

const example = `  wirepath reconcile client.pcap server.pcapng -o trace.tsv
  wirepath reconcile *.pcap --preload traces/ --naming process -o trace.jsonl
  wirepath reconcile outside.pcapng inside.pcapng.gz --roles hosts.txt --naming role -o t.tsv.gz
  wirepath reconcile capture.pcap --format json -o trace.tsv > accounting.json
  wirepath reconcile *.pcap -o trace.tsv --parquet tables/   # then: duckdb -c "select count(*) from 'tables/messages/*/*/*.parquet'"`

// NewCmd returns the reconcile command.
func NewCmd(ios *cmdutil.IOStreams) *cobra.Command {
	return newCmd(ios, func(o *Options) error { return Run(ios, o) })
}

func newCmd(ios *cmdutil.IOStreams, runF func(*Options) error) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:     "reconcile CAPTURE... [--preload TRACE...] [-o trace.tsv]",
		Short:   "Reconcile captures and syscall traces into one message trace",
		Long:    long,
		Example: example,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Captures = args
			opts.Context = cmd.Context()
			if err := opts.Validate(); err != nil {
				return err
			}
			return runF(opts)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&opts.Output, "output", "o", "", "write the trace to `FILE` (TSV; JSON Lines for .jsonl; .gz/.zst compress) instead of stdout")
	fs.StringVar(&opts.Format, "format", "", "trace format: tsv or jsonl (default: from the -o name, tsv on stdout), or json: the accounting as JSON on stdout (the trace then only goes to -o FILE)")
	cmdutil.Enum(fs, "format", "tsv", "jsonl", "json")
	fs.BoolVar(&opts.JSON, "json", false, "print the accounting as JSON on stdout (the trace then only goes to -o FILE)")
	fs.MarkHidden("json")
	opts.Pipeline.Register(fs)
	return cmd
}

// Validate checks the options.
func (o *Options) Validate() error {
	if err := o.Pipeline.Validate(); err != nil {
		return err
	}
	if o.Format == "json" { // the accounting as JSON, as --json
		o.Format, o.JSON = "", true
	}
	if o.Format != "" && o.Format != "tsv" && o.Format != "jsonl" {
		return cmdutil.UsageErrorf("--format must be tsv or jsonl, not %q", o.Format)
	}
	if o.JSON && (o.Output == "" || o.Output == "-") {
		return cmdutil.UsageErrorf("--format json prints the accounting on stdout: give the trace a file with -o")
	}
	return nil
}

// Run reads the inputs and writes the trace and the accounting.
func Run(ios *cmdutil.IOStreams, o *Options) error {
	res, err := o.Pipeline.Run(ios)
	if err != nil {
		return err
	}
	err = writeTrace(ios, o, res.Trace)
	if r := o.Parquet.Recorder(); r != nil && err == nil {
		r.TraceMessages(res.Trace, tables.TraceRows{Sources: res.Report.Sources})
	}
	if err := o.Parquet.Finish(ios, err); err != nil {
		return err
	}
	if err := res.Report.Check(); err != nil {
		ios.Warnf("%v (a bug)", err)
	}
	if o.JSON {
		if err := cmdutil.WriteJSON(ios.Out, res.Report); err != nil {
			return err
		}
	} else if !ios.Quiet {
		var b strings.Builder
		_ = res.Report.WriteText(&b)
		for _, line := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
			ios.Infof("%s", line)
		}
	}
	for _, w := range res.Report.Warnings {
		ios.Warnf("%s", w)
	}
	for _, w := range res.Warnings {
		ios.Warnf("%s", w)
	}
	return captureflags.PipelineOutcome(ios, res)
}

// writeTrace writes the trace to -o or stdout in the chosen format.
func writeTrace(ios *cmdutil.IOStreams, o *Options, t *trace.Trace) error {
	f := trace.FormatAuto
	switch o.Format {
	case "tsv":
		f = trace.FormatTSV
	case "jsonl":
		f = trace.FormatJSONL
	}
	if o.Output != "" && o.Output != "-" {
		return cmdutil.WriteTraceFile(o.Output, t, f)
	}
	if f == trace.FormatAuto {
		f = trace.FormatTSV
	}
	out, err := cmdutil.OpenOutput(ios, "")
	if err != nil {
		return err
	}
	return out.Finish(trace.Write(out, t, f))
}
