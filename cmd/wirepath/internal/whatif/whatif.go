// Package whatif is the "wirepath whatif" command: the per-link profile of
// each pattern (bytes and blocking round trips per request) and the
// predicted latency of a pattern if a link's round-trip time or bandwidth
// changed, after the profile-driven performance model of Stewart and Shen
// (NSDI 2005, section 3.2): Γ = Σ κ·γ + ν/ω.
package whatif

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/report"
	wpwhatif "github.com/wirepath/wirepath/whatif"
)

// Options are the command's flags and argument.
type Options struct {
	IO               *cmdutil.IOStreams
	Result           string
	Link             string
	RTT              time.Duration
	CurrentRTT       time.Duration
	Bandwidth        string
	CurrentBandwidth string
	Pattern          int
	Top              int
	JSON             bool
	Output           string

	rttSet, curRTTSet, curBWSet bool
}

// NewCmd returns the whatif command.
func NewCmd(ios *cmdutil.IOStreams) *cobra.Command {
	opts := &Options{IO: ios}
	cmd := &cobra.Command{
		Use:   "whatif RESULT.json [--link 'A->B' --rtt DURATION | --bandwidth RATE] [--pattern N]",
		Short: "Predict a pattern's latency if a link's round-trip time or bandwidth changed",
		Long: `Without --link, print for each pattern the profile of every link it uses
(a link joins two nodes and carries messages both ways): messages, bytes ν
and blocking round trips κ per request, and the measured round-trip time γ.

With --link 'A->B' and --rtt and/or --bandwidth, predict the mean latency of
every pattern that uses the link (or of --pattern N) after the change, with
the network delay model of Stewart and Shen (NSDI 2005, section 3.2):

  Γ = Σ over links of κ·γ + ν/ω

The prediction adds the change of the link's term to the measured latency,
and also replays the pattern's mean timeline along its critical path, where
parallel round trips do not add up. The current RTT is measured from the
network delays of the link's round trips (--current-rtt overrides it; it
is needed when an end of the link was not seen); the current bandwidth is
not measurable from captures and defaults to 1 Gbit/s (--current-bandwidth).
See docs/whatif.md.`,
		Example: `  wirepath whatif result.json
  wirepath whatif result.json --link 'web->db' --rtt 5ms
  wirepath whatif result.json --link 'web->db' --bandwidth 100Mbit/s --current-bandwidth 1Gbit/s --pattern 1
  wirepath whatif result.json --link 'web->db' --rtt 2ms --format json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Result = args[0]
			if err := cmdutil.OutputFormat(cmd.Flags(), opts.Output, []string{"text", "json"}); err != nil {
				return err
			}
			opts.rttSet = cmd.Flags().Changed("rtt")
			opts.curRTTSet = cmd.Flags().Changed("current-rtt")
			opts.curBWSet = cmd.Flags().Changed("current-bandwidth")
			change := opts.rttSet || opts.Bandwidth != ""
			switch {
			case opts.Link == "" && (change || opts.curRTTSet || cmd.Flags().Changed("current-bandwidth")):
				return cmdutil.UsageErrorf("--rtt, --bandwidth and --current-* need --link 'A->B'")
			case opts.Link != "" && !change:
				return cmdutil.UsageErrorf("--link needs --rtt and/or --bandwidth")
			case opts.rttSet && opts.RTT < 0, opts.curRTTSet && opts.CurrentRTT < 0:
				return cmdutil.UsageErrorf("round-trip times must not be negative")
			case opts.Pattern < 0, opts.Top < 0:
				return cmdutil.UsageErrorf("--pattern and --top must not be negative")
			}
			if opts.Link != "" {
				if _, _, err := wpwhatif.ParseLink(opts.Link); err != nil {
					return cmdutil.UsageErrorf("%v", err)
				}
			}
			for _, b := range []string{opts.Bandwidth, opts.CurrentBandwidth} {
				if b == "" {
					continue
				}
				if _, err := wpwhatif.ParseBandwidth(b); err != nil {
					return cmdutil.UsageErrorf("%v", err)
				}
			}
			return Run(opts)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.Link, "link", "", "the link `A->B` to change (node names as in the signatures; either direction)")
	fs.DurationVar(&opts.RTT, "rtt", 0, "new round-trip time of the link, e.g. 5ms or 250us")
	fs.DurationVar(&opts.CurrentRTT, "current-rtt", 0, "current round-trip time, instead of the measured one")
	fs.StringVar(&opts.Bandwidth, "bandwidth", "", "new bandwidth of the link, e.g. 100Mbit/s, 1Gbps, 10MB/s")
	fs.StringVar(&opts.CurrentBandwidth, "current-bandwidth", "1Gbit/s", "current bandwidth of the link")
	fs.IntVar(&opts.Pattern, "pattern", 0, "only the pattern of rank `N` (0 = every pattern)")
	fs.IntVar(&opts.Top, "top", 10, "patterns to profile without --link (0 = all)")
	fs.BoolVar(&opts.JSON, "json", false, "print the profiles or predictions as JSON")
	cmdutil.FormatFlag(fs, &opts.JSON)
	fs.StringVarP(&opts.Output, "output", "o", "", "write to `FILE` instead of stdout")
	return cmd
}

// ErrNoPattern is returned when --pattern names no pattern.
var ErrNoPattern = errors.New("no such pattern")

// ErrNoLink is returned when no pattern uses the link.
var ErrNoLink = errors.New("unknown link")

// Run reads the result and prints profiles or predictions.
func Run(opts *Options) error {
	res, err := cmdutil.ReadResult(opts.IO, opts.Result)
	if err != nil {
		return err
	}
	var pats []*causal.Pattern
	for i := range res.Patterns {
		p := &res.Patterns[i]
		if opts.Pattern == 0 || p.Rank == opts.Pattern {
			pats = append(pats, p)
		}
	}
	if opts.Pattern > 0 && len(pats) == 0 {
		return fmt.Errorf("%w: the result has no pattern of rank %d", ErrNoPattern, opts.Pattern)
	}
	out, err := cmdutil.OpenOutput(opts.IO, opts.Output)
	if err != nil {
		return err
	}
	if opts.Link == "" {
		if opts.Pattern == 0 && opts.Top > 0 && opts.Top < len(pats) {
			pats = pats[:opts.Top]
		}
		err = profiles(out, opts, pats)
	} else {
		err = predict(out, opts, pats)
	}
	err = out.Finish(err)
	return err
}

type profileJSON struct {
	Rank      int                    `json:"rank"`
	Signature string                 `json:"signature"`
	Links     []wpwhatif.LinkProfile `json:"links"`
}

func profiles(w io.Writer, opts *Options, pats []*causal.Pattern) error {
	if opts.JSON {
		list := make([]profileJSON, 0, len(pats))
		for _, p := range pats {
			list = append(list, profileJSON{Rank: p.Rank, Signature: p.Signature, Links: wpwhatif.LinkProfiles(p)})
		}
		return cmdutil.WriteJSON(w, list)
	}
	for i, p := range pats {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "#%d  %s\n", p.Rank, p.Signature)
		ls := wpwhatif.LinkProfiles(p)
		lw := len("link")
		for _, l := range ls {
			lw = max(lw, len(l.Link))
		}
		fmt.Fprintf(w, "    %-*s  %8s  %s  %s  %s\n", lw, "link", "messages", lpad("bytes ν", 10), lpad("round trips κ", 13), lpad("RTT γ", 10))
		for _, l := range ls {
			rtt := "-"
			if l.RTTKnown {
				rtt = report.FormatUS(l.RTTUS)
			}
			fmt.Fprintf(w, "    %-*s  %8d  %10.0f  %13d  %s\n", lw, l.Link, l.Messages, l.Bytes, l.RoundTrips, lpad(rtt, 10))
		}
	}
	return nil
}

func predict(w io.Writer, opts *Options, pats []*causal.Pattern) error {
	wi := wpwhatif.NoChange(opts.Link)
	if opts.rttSet {
		wi.RTTUS = float64(opts.RTT) / 1e3
	}
	if opts.curRTTSet {
		wi.CurrentRTTUS = float64(opts.CurrentRTT) / 1e3
	}
	if opts.Bandwidth != "" {
		wi.Bandwidth, _ = wpwhatif.ParseBandwidth(opts.Bandwidth)
	}
	wi.CurrentBandwidth, _ = wpwhatif.ParseBandwidth(opts.CurrentBandwidth)
	var preds []wpwhatif.Prediction
	skipped := 0
	for _, p := range pats {
		pr, err := wpwhatif.Predict(p, wi)
		switch {
		case errors.Is(err, wpwhatif.ErrNoLink) && opts.Pattern == 0:
			continue
		case errors.Is(err, wpwhatif.ErrRTTUnknown) && opts.Pattern == 0:
			opts.IO.Warnf("pattern #%d skipped: the round-trip time of %s was not measured (an end was not seen); pass --current-rtt", p.Rank, opts.Link)
			skipped++
			continue
		case err != nil:
			return err
		}
		preds = append(preds, pr)
	}
	switch {
	case len(preds) == 0 && skipped > 0:
		return fmt.Errorf("no prediction: the round-trip time of %s is unknown in every pattern that uses it; pass --current-rtt", opts.Link)
	case len(preds) == 0:
		return fmt.Errorf("%w: no pattern uses the link %s (run 'wirepath whatif %s' to list the links)", ErrNoLink, opts.Link, opts.Result)
	}
	if opts.JSON {
		return cmdutil.WriteJSON(w, preds)
	}
	var change []string
	if !math.IsNaN(wi.RTTUS) {
		change = append(change, "an RTT of "+report.FormatUS(wi.RTTUS))
	}
	if !math.IsNaN(wi.Bandwidth) {
		change = append(change, "a bandwidth of "+wpwhatif.FormatBandwidth(wi.Bandwidth))
	}
	fmt.Fprintf(w, "what if %s had %s?\n", opts.Link, strings.Join(change, " and "))
	for _, pr := range preds {
		l := &pr.Profile
		fmt.Fprintf(w, "\n#%d  %s\n", pr.Rank, pr.Pattern)
		fmt.Fprintf(w, "    link %s: %d messages, ν %.0f bytes, κ %d round trips per request\n", l.Link, l.Messages, l.Bytes, l.RoundTrips)
		rttNote := "measured"
		if opts.curRTTSet {
			rttNote = "given"
		}
		bwNote := " (assumed)"
		if opts.curBWSet {
			bwNote = ""
		}
		fmt.Fprintf(w, "    γ %s (%s) → %s; ω %s%s", report.FormatUS(pr.RTTUS), rttNote, report.FormatUS(pr.NewRTTUS), wpwhatif.FormatBandwidth(pr.Bandwidth), bwNote)
		if opts.Bandwidth != "" {
			fmt.Fprintf(w, " → %s", wpwhatif.FormatBandwidth(pr.NewBandwidth))
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "    link term κ·γ + ν/ω: %s → %s\n", report.FormatUS(pr.LinkDelayUS), report.FormatUS(pr.NewLinkDelayUS))
		fmt.Fprintf(w, "    latency %s → %s (model, %s); %s along the critical path\n",
			report.FormatUS(pr.LatencyUS), report.FormatUS(pr.ModelUS), signed(pr.ModelUS-pr.LatencyUS), report.FormatUS(pr.CriticalPathUS))
	}
	return nil
}

// lpad right-aligns s in n columns, counting runes (µ, ν, κ, γ are one).
func lpad(s string, n int) string {
	return strings.Repeat(" ", max(0, n-utf8.RuneCountInString(s))) + s
}

func signed(us float64) string {
	if us >= 0 {
		return "+" + report.FormatUS(us)
	}
	return report.FormatUS(us)
}
