// Package nat implements "wirepath nat": read captures, find the address
// translations between them and print the mapping table. The captures are
// read as every command reads them (the shared capture flags, package
// pipeline's learning pass).
package nat

import (
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/wirepath/wirepath/cmd/wirepath/internal/captureflags"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	natlib "github.com/wirepath/wirepath/nat"
	"github.com/wirepath/wirepath/pipeline"
)

const longHelp = `Find network address translations (NAT, load balancers, masquerading,
port forwards) from the captures alone, and print the mapping table.

Packets whose bodies match (payload, IP ID, TCP sequence numbers, flags and
lengths) while their addresses or ports differ are two copies of one packet
seen on either side of a translation. The copy with the higher TTL was seen
before it; when the TTLs tie, the earlier clock-corrected timestamp. Matches
are weighed by how random the body is; a mapping needs repeated data
matches, agreement on its direction, and matches for nearly every packet of
its connections. docs/nat.md explains the score.

Each row names an endpoint's outside name (the one its peers across the
translation use) and its inside, real name; source NAT rows aggregate the
ports of one address (addr:*). The captures must overlap in time; give
every sniffer's file. They are merged as "wirepath merge" merges them (the
same capture flags: --window is the dedupe window; the copies of a
translated packet may be --nat-window apart).

The report also gives the clock offsets between sniffers on either side of
a translation that the translated packets show (pcapio cannot relate
sniffers that share no untranslated packet), and the accounting.`

const example = `  wirepath nat outside.pcap inside.pcap
  wirepath nat --format json -o nat.json lan/*.pcapng dmz/*.pcap
  wirepath nat --all --nat-window 5s a.pcap b.pcap   # show rejected candidates too`

// Options are the command's flags and arguments.
type Options struct {
	captureflags.Flags
	Captures    []string
	JSON        bool
	Output      string
	All         bool
	Window      time.Duration // --nat-window
	IdleTimeout time.Duration // --nat-idle-timeout
	MinEvidence float64
	MinData     int
	MinScore    float64
}

// NewCmd returns the nat command.
func NewCmd(ios *cmdutil.IOStreams) *cobra.Command {
	return newCmd(ios, func(o *Options) error { return Run(ios, o) })
}

// newCmd builds the command with runF as the work done after validation
// (tests pass their own).
func newCmd(ios *cmdutil.IOStreams, runF func(*Options) error) *cobra.Command {
	def := natlib.DefaultOptions()
	o := &Options{}
	cmd := &cobra.Command{
		Use:     "nat CAPTURE...",
		Short:   "Find address translations between captures and print the mapping table",
		Long:    longHelp,
		Example: example,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Captures = args
			if err := o.Validate(); err != nil {
				return err
			}
			return runF(o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.JSON, "json", false, "print the table as JSON")
	cmdutil.FormatFlag(f, &o.JSON)
	f.StringVarP(&o.Output, "output", "o", "", "write the table to `FILE` instead of stdout")
	f.BoolVar(&o.All, "all", false, "also list the rejected candidates and why")
	f.DurationVar(&o.Window, "nat-window", def.Window, "how far apart in corrected time two copies of one packet may be")
	f.DurationVar(&o.IdleTimeout, "nat-idle-timeout", def.IdleTimeout, "a connection silent this long has ended")
	f.Float64Var(&o.MinEvidence, "min-evidence", def.MinEvidence, "weighted matches a mapping needs")
	f.IntVar(&o.MinData, "min-data", def.MinData, "matches of packets with a payload a mapping needs")
	f.Float64Var(&o.MinScore, "min-score", def.MinScore, "lowest score of an accepted mapping (0..1)")
	o.Flags.Register(f)
	// The name this command used before it shared the capture flags,
	// hidden; using it warns on stderr. (Its old --idle-timeout, now
	// --nat-idle-timeout, is gone: --idle-timeout is flows' everywhere.)
	cmdutil.DeprecatedAlias(f, "no-clock-offsets", "no-offsets", func(f *pflag.FlagSet, name string) { f.BoolVar(&o.NoOffsets, name, false, "") })
	return cmd
}

// NAT returns the learner's options the flags give.
func (o *Options) NAT() natlib.Options {
	return natlib.Options{
		Window:      o.Window,
		IdleTimeout: o.IdleTimeout,
		MinEvidence: o.MinEvidence,
		MinData:     o.MinData,
		MinScore:    o.MinScore,
	}
}

// Validate checks the options; its errors are usage errors.
func (o *Options) Validate() error {
	switch {
	case o.Window <= 0:
		return cmdutil.UsageErrorf("--nat-window must be positive")
	case o.IdleTimeout < 2*o.Window:
		return cmdutil.UsageErrorf("--nat-idle-timeout must be at least twice --nat-window")
	case o.MinEvidence < 0 || o.MinData < 0:
		return cmdutil.UsageErrorf("--min-evidence and --min-data must not be negative")
	case o.MinScore < 0 || o.MinScore > 1:
		return cmdutil.UsageErrorf("--min-score must be within 0..1")
	}
	if err := o.NAT().Validate(); err != nil {
		return cmdutil.UsageErrorf("%v", err)
	}
	_, err := o.Flags.Options()
	return err
}

// Run learns the translations in the captures and writes the table.
func Run(ios *cmdutil.IOStreams, o *Options) error {
	popts, err := o.Flags.Options()
	if err != nil {
		return err
	}
	cfg := pipeline.Config{Captures: o.Captures, Capture: popts, NAT: o.NAT()}
	var done func()
	cfg.Progress, done = captureflags.StageProgress(ios)
	res, err := pipeline.LearnNAT(cfg)
	done()
	if err != nil {
		return captureflags.UsageOf(err)
	}
	noteOffsets(ios, res, o.Window)

	out, err := cmdutil.OpenOutput(ios, o.Output)
	if err != nil {
		return err
	}
	if o.JSON {
		err = res.NAT.WriteJSON(out, o.All)
	} else {
		err = res.NAT.WriteText(out, o.All)
	}
	err = out.Finish(err)
	if err != nil {
		return err
	}
	for _, p := range res.Problems {
		ios.Warnf("%v", p)
	}
	if len(res.Problems) > 0 {
		return &cmdutil.PartialError{Skipped: len(res.Problems), What: "unreadable input was skipped (see the warnings above)"}
	}
	return nil
}

// noteOffsets tells the user about sniffers whose clocks pcapio could not
// relate to the others (nat may have related them since, Method "nat"):
// while learning, their copies were matched only within the window.
func noteOffsets(ios *cmdutil.IOStreams, res *pipeline.Result, window time.Duration) {
	for _, off := range res.Offsets {
		if int(off.Sniffer) >= len(res.Sniffers) || res.Sniffers[off.Sniffer].Packets == 0 {
			continue
		}
		name := res.Sniffers[off.Sniffer].Name
		switch {
		case !off.Known || off.Method == "nat":
			ios.Infof("%s: clock offset unknown (it shares no packets with the other sniffers); its copies are matched only within --nat-window %v", name, window)
		case time.Duration(2*off.Uncertainty) > window:
			ios.Infof("%s: clock offset uncertain by %v; copies further apart than --nat-window %v are not matched", name, time.Duration(off.Uncertainty), window)
		}
	}
}
