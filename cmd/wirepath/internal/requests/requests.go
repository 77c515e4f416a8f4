// Package requests implements `wirepath requests`: the requests of a
// saved result, one per line, with their label, latency, pattern and
// confidence, filtered by pattern, label, latency and time, as text, JSON
// Lines or CSV; with the merged capture, each request's frames and the
// Wireshark display filter that selects them.
package requests

import (
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/frames"
	wpreport "github.com/wirepath/wirepath/report"
	"github.com/wirepath/wirepath/trace"
)

// Options are the command's flags and argument.
type Options struct {
	IO       *cmdutil.IOStreams
	Result   string
	Trace    string
	Pcap     string
	Format   string
	Output   string
	Engine   string
	Patterns []int
	Label    string
	MinLat   time.Duration
	MaxLat   time.Duration
	Start    string
	End      string
	Limit    int
	Slowest  bool

	filter wpreport.RequestFilter
}

const long = `List the requests of a saved result: one line per request with when it
started, its latency, the pattern it took, the engine's confidence, its
number of calls, its label (the root message's: "GET /item/{id}") and its
status (the reply's label: "200").

The requests are those the engine assembled itself (the assembly
engine's, with the confidence of each request), else the instances the
result lists (engine flag --instances -1), timed and labelled from
--trace, the trace the result was inferred from (analyze --save-trace).
An engine's trees of calls that no request made are marked background.

With --pcap, the merged capture of the same captures (wirepath merge, or
analyze --pcap-out), each request also lists the numbers of the frames
that carried its messages and the Wireshark display filter that selects
them: paste it into Wireshark's filter bar, or tshark -r MERGED -Y FILTER.

Formats: text (a table), jsonl (a header line {"wirepath_requests":1},
then one JSON object per request) and csv (docs/formats.md).`

const example = `  wirepath analyze *.pcap* --instances -1 --format json -o result.json --save-trace trace.tsv --pcap-out merged.pcapng
  wirepath requests result.json --trace trace.tsv
  wirepath requests result.json --trace trace.tsv --label '^GET /cart' --min-latency 20ms
  wirepath requests result.json --trace trace.tsv --pcap merged.pcapng --pattern 3 --format jsonl
  wirepath requests result.json --trace trace.tsv --start +2s --end +3s --format csv -o requests.csv`

// NewCmd returns the requests command.
func NewCmd(ios *cmdutil.IOStreams) *cobra.Command {
	o := &Options{IO: ios}
	cmd := &cobra.Command{
		Use:     "requests RESULT.json --trace TRACE [--pcap MERGED.pcapng] [--format text|jsonl|csv]",
		Short:   "List requests with label, latency, pattern and confidence, and their packets",
		Long:    long,
		Example: example,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Result = args[0]
			if err := o.validate(); err != nil {
				return err
			}
			return Run(o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Trace, "trace", "", "the `TRACE` the result was inferred from (analyze --save-trace)")
	fs.StringVar(&o.Pcap, "pcap", "", "the merged capture `FILE` (wirepath merge, analyze --pcap-out): list each request's frames and a Wireshark filter")
	fs.StringVar(&o.Format, "format", wpreport.RequestsText, "output format: "+strings.Join(wpreport.RequestFormats, ", "))
	cmdutil.Enum(fs, "format", wpreport.RequestFormats...)
	fs.StringVarP(&o.Output, "output", "o", "", "write to `FILE` instead of stdout")
	fs.StringVar(&o.Engine, "engine", "", "list only the requests of engine `NAME` (a result of several engines)")
	fs.IntSliceVar(&o.Patterns, "pattern", nil, "list only the requests of pattern `RANK` (repeatable, or comma-separated)")
	fs.StringVar(&o.Label, "label", "", "list only the requests whose label matches `REGEXP`")
	fs.DurationVar(&o.MinLat, "min-latency", 0, "list only requests at least this slow")
	fs.DurationVar(&o.MaxLat, "max-latency", 0, "list only requests at most this slow")
	fs.StringVar(&o.Start, "start", "", "list only requests that started at or after `TIME` (RFC 3339, or +DURATION after the trace's start)")
	fs.StringVar(&o.End, "end", "", "list only requests that started before `TIME` (as --start)")
	fs.IntVar(&o.Limit, "limit", 0, "list at most `N` requests (0 = all)")
	fs.BoolVar(&o.Slowest, "slowest", false, "order by latency, slowest first, instead of by start")
	return cmd
}

func (o *Options) validate() error {
	if !slices.Contains(wpreport.RequestFormats, o.Format) {
		return cmdutil.UsageErrorf("--format must be one of %s, not %q", strings.Join(wpreport.RequestFormats, ", "), o.Format)
	}
	if o.Trace == "" {
		return cmdutil.UsageErrorf("requests needs --trace TRACE, the trace the result was inferred from")
	}
	if o.MinLat < 0 || o.MaxLat < 0 || o.MaxLat > 0 && o.MaxLat < o.MinLat {
		return cmdutil.UsageErrorf("--min-latency and --max-latency must be positive, the maximum above the minimum")
	}
	if o.Limit < 0 {
		return cmdutil.UsageErrorf("--limit must not be negative")
	}
	if o.Label != "" {
		re, err := regexp.Compile(o.Label)
		if err != nil {
			return cmdutil.UsageErrorf("--label: %v", err)
		}
		o.filter.Label = re
	}
	for _, p := range o.Patterns {
		if p < 1 {
			return cmdutil.UsageErrorf("--pattern %d: ranks start at 1", p)
		}
	}
	o.filter.Patterns = o.Patterns
	o.filter.MinLatency, o.filter.MaxLatency = o.MinLat, o.MaxLat
	return nil
}

// bound parses a --start or --end value against the trace's start.
func bound(flag, s string, origin int64) (int64, error) {
	switch {
	case s == "":
		return 0, nil
	case strings.HasPrefix(s, "+"):
		d, err := time.ParseDuration(s[1:])
		if err != nil || d < 0 {
			return 0, cmdutil.UsageErrorf("%s %q: want +DURATION (e.g. +1m30s) or an RFC 3339 time", flag, s)
		}
		return origin + int64(d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, cmdutil.UsageErrorf("%s %q: want an RFC 3339 time (2026-11-21T20:02:25Z) or +DURATION", flag, s)
	}
	return t.UnixNano(), nil
}

// Run reads the result and the trace and writes the request list.
func Run(o *Options) error {
	rs, err := cmdutil.ReadResults(o.IO, o.Result)
	if err != nil {
		return err
	}
	if o.Engine != "" {
		rs = slices.DeleteFunc(rs, func(r *causal.Result) bool { return r.Engine != o.Engine })
		if len(rs) == 0 {
			return cmdutil.UsageErrorf("--engine %s: the result has no result of that engine", o.Engine)
		}
	}
	tr, err := trace.ReadFile(o.Trace, trace.ReadOptions{})
	if err != nil {
		return err
	}
	if o.filter.From, err = bound("--start", o.Start, rs[0].Trace.StartNS); err != nil {
		return err
	}
	if o.filter.To, err = bound("--end", o.End, rs[0].Trace.StartNS); err != nil {
		return err
	}
	rows, err := wpreport.RequestRows(rs, tr)
	if err != nil {
		return err
	}
	rows = slices.DeleteFunc(rows, func(r wpreport.RequestRow) bool { return !o.filter.Keep(&r) })
	if o.Slowest {
		slices.SortStableFunc(rows, func(a, b wpreport.RequestRow) int {
			switch {
			case a.LatencyUS > b.LatencyUS:
				return -1
			case a.LatencyUS < b.LatencyUS:
				return 1
			}
			return 0
		})
	}
	if o.Limit > 0 && len(rows) > o.Limit {
		rows = rows[:o.Limit]
	}
	if o.Pcap != "" {
		if err := addFrames(o, rows, tr); err != nil {
			return err
		}
	}
	out, err := cmdutil.OpenOutput(o.IO, o.Output)
	if err != nil {
		return err
	}
	return out.Finish(wpreport.WriteRequests(out, o.Format, rows))
}

// addFrames finds the rows' frames in the merged capture.
func addFrames(o *Options, rows []wpreport.RequestRow, tr *trace.Trace) error {
	x, err := cmdutil.BuildFrames(o.IO, o.Pcap, tr)
	if err != nil {
		return err
	}
	for i := range rows {
		rows[i].Frames = x.FramesOf(rows[i].Messages)
		rows[i].Filter, _ = frames.Filter(rows[i].Frames)
	}
	return nil
}
