// Package report is the "wirepath report" command: it re-renders a saved
// result (the JSON an engine or analyze wrote) in any output format.
package report

import (
	"context"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	wpreport "github.com/wirepath/wirepath/report"
	"github.com/wirepath/wirepath/trace"
)

// Options are the command's flags and argument.
type Options struct {
	IO     *cmdutil.IOStreams
	Result string
	Format string
	Output string
	Top    int
	Trace  string
	Pcap   string
	Title  string
	// OTLPEndpoint, when set, is the OTLP/HTTP receiver the OTLP export
	// is also sent to (--otlp-endpoint).
	OTLPEndpoint string
}

// NewCmd returns the report command.
func NewCmd(ios *cmdutil.IOStreams) *cobra.Command {
	opts := &Options{IO: ios}
	cmd := &cobra.Command{
		Use:   "report RESULT.json",
		Short: "Render a saved result as text, JSON, DOT, HTML, OTLP or Perfetto",
		Long: `Render a result saved with --format json (by link, nest, convolve or analyze)
in another format, without running the inference again. RESULT.json may be
"-" for standard input. It may also hold the results of several engines
(analyze --engine all --format json): they are rendered together, as
analyze renders them.

Formats:
  text      the top patterns as trees with per-node and per-hop mean delays;
            untraced nodes as WAP5 diamonds; offsets, NAT, accounting, warnings
  json      the versioned result contract (docs/formats.md)
  dot       Graphviz: call trees (Project 5 Figure 8), convolution paths (Figure 9)
  html      one self-contained page: request types, where the time goes,
            service map, waterfalls, the slowest requests, sortable pattern
            list, timelines, call trees, histograms, offsets, NAT,
            accounting, warnings
  otlp      OpenTelemetry OTLP/JSON traces, a trace per request (path
            instance), a CLIENT and a SERVER span per call
  perfetto  Chrome/Perfetto trace-event JSON

--top limits the patterns shown; it defaults to 10 for text, to 50 drawn
in detail for html (whose list always has every pattern) and to all for
the other formats. With --trace (the trace the result was inferred
from), otlp exports the requests the engine assembled itself (the
assembly engine's), else every instance listed in the result (engine
flag --instances) with its own times, and perfetto every listed
instance; otherwise each pattern's mean instance. With --trace, html
lists the slowest requests with their times; with --pcap too (the merged
capture: wirepath merge, analyze --pcap-out), each with the Wireshark
display filter of its frames.`,
		Example: `  wirepath link trace.tsv --format json --histograms -o result.json
  wirepath report result.json
  wirepath report result.json --format html -o report.html
  wirepath report result.json --trace trace.tsv --pcap merged.pcapng -o report.html
  wirepath report result.json --format dot | dot -Tsvg > paths.svg
  wirepath report result.json --format otlp --trace trace.tsv -o traces.json
  wirepath report result.json --trace trace.tsv --otlp-endpoint http://localhost:4318 -o /dev/null`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Result = args[0]
			if err := cmdutil.OutputFormat(cmd.Flags(), opts.Output, wpreport.Formats); err != nil {
				return err
			}
			if !slices.Contains(wpreport.Formats, opts.Format) {
				return cmdutil.UsageErrorf("--format must be one of %s, not %q", strings.Join(wpreport.Formats, ", "), opts.Format)
			}
			if opts.Top < 0 {
				return cmdutil.UsageErrorf("--top must not be negative")
			}
			if opts.Trace != "" && !slices.Contains([]string{wpreport.FormatOTLP, wpreport.FormatPerfetto, wpreport.FormatHTML}, opts.Format) && opts.OTLPEndpoint == "" {
				return cmdutil.UsageErrorf("--trace is used only by --format otlp, perfetto and html and by --otlp-endpoint")
			}
			if opts.Pcap != "" && (opts.Format != wpreport.FormatHTML || opts.Trace == "") {
				return cmdutil.UsageErrorf("--pcap is used only by --format html, with --trace (the trace the result was inferred from)")
			}
			if opts.OTLPEndpoint != "" {
				if _, err := cmdutil.TracesURL(opts.OTLPEndpoint); err != nil {
					return err
				}
			}
			if !cmd.Flags().Changed("top") {
				switch opts.Format {
				case wpreport.FormatText:
				case wpreport.FormatHTML:
					opts.Top = 50
				default:
					opts.Top = 0
				}
			}
			return Run(cmd.Context(), opts)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.Format, "format", wpreport.FormatText, "output format: "+strings.Join(wpreport.Formats, ", "))
	cmdutil.Enum(fs, "format", wpreport.Formats...)
	fs.StringVarP(&opts.Output, "output", "o", "", "write to `FILE` instead of stdout; its extension (.html, .json, .dot, .txt) picks --format, and a --format it contradicts is refused")
	fs.IntVar(&opts.Top, "top", 10, "patterns to show (0 = all; default 10 for text, 50 for html, all otherwise)")
	fs.StringVar(&opts.Trace, "trace", "", "the `TRACE` the result came from, to export requests and listed instances with their times (otlp, perfetto, html)")
	fs.StringVar(&opts.Pcap, "pcap", "", "the merged capture `FILE` of the same captures (wirepath merge, analyze --pcap-out): html lists each request's Wireshark filter; needs --trace")
	fs.StringVar(&opts.Title, "title", "", "HTML page title")
	cmdutil.OTLPEndpointFlag(fs, &opts.OTLPEndpoint)
	return cmd
}

// Run reads the result and writes it in the chosen format.
func Run(ctx context.Context, opts *Options) error {
	rs, err := cmdutil.ReadResults(opts.IO, opts.Result)
	if err != nil {
		return err
	}
	var t *trace.Trace
	if opts.Trace != "" {
		t, err = trace.ReadFile(opts.Trace, trace.ReadOptions{})
		if err != nil {
			return err
		}
	}
	var fx wpreport.FrameIndex
	if opts.Pcap != "" {
		x, err := cmdutil.BuildFrames(opts.IO, opts.Pcap, t)
		if err != nil {
			return err
		}
		fx = x
	}
	out, err := cmdutil.OpenOutput(opts.IO, opts.Output)
	if err != nil {
		return err
	}
	err = wpreport.WriteAll(out, opts.Format, rs, wpreport.Options{Top: opts.Top, Title: opts.Title, Trace: t, Frames: fx})
	if err = out.Finish(err); err != nil || opts.OTLPEndpoint == "" {
		return err
	}
	return cmdutil.ExportOTLP(ctx, opts.IO, opts.OTLPEndpoint, rs, t)
}
