// Package nat implements "wirepath nat": read captures, find the address
// translations between them and print the mapping table.
package nat

import (
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	natlib "github.com/wirepath/wirepath/nat"
	"github.com/wirepath/wirepath/pcapio"
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
every sniffer's file.

The report also gives the clock offsets between sniffers on either side of
a translation that the translated packets show (pcapio cannot relate
sniffers that share no untranslated packet), and the accounting.`

const example = `  wirepath nat outside.pcap inside.pcap
  wirepath nat --json -o nat.json lan/*.pcapng dmz/*.pcap
  wirepath nat --all --window 5s a.pcap b.pcap   # show rejected candidates too`

type options struct {
	captures        []string
	json            bool
	output          string
	all             bool
	window          time.Duration
	idle            time.Duration
	minEvidence     float64
	minData         int
	minScore        float64
	splitInterfaces bool
	noOffsets       bool
}

// NewCmd returns the nat command.
func NewCmd(ios *cmdutil.IOStreams) *cobra.Command {
	def := natlib.DefaultOptions()
	o := &options{}
	cmd := &cobra.Command{
		Use:     "nat CAPTURE...",
		Short:   "Find address translations between captures and print the mapping table",
		Long:    longHelp,
		Example: example,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.captures = args
			switch {
			case o.window <= 0:
				return cmdutil.UsageErrorf("--window must be positive")
			case o.idle < 2*o.window:
				return cmdutil.UsageErrorf("--idle-timeout must be at least twice --window")
			case o.minEvidence < 0 || o.minData < 0:
				return cmdutil.UsageErrorf("--min-evidence and --min-data must not be negative")
			case o.minScore < 0 || o.minScore > 1:
				return cmdutil.UsageErrorf("--min-score must be within 0..1")
			}
			opts := natlib.Options{
				Window:      o.window,
				IdleTimeout: o.idle,
				MinEvidence: o.minEvidence,
				MinData:     o.minData,
				MinScore:    o.minScore,
			}
			if err := opts.Validate(); err != nil {
				return cmdutil.UsageErrorf("%v", err)
			}
			return run(ios, o, opts)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.json, "json", false, "print the table as JSON")
	f.StringVarP(&o.output, "output", "o", "", "write the table to `FILE` instead of stdout")
	f.BoolVar(&o.all, "all", false, "also list the rejected candidates and why")
	f.DurationVar(&o.window, "window", def.Window, "how far apart in corrected time two copies of one packet may be")
	f.DurationVar(&o.idle, "idle-timeout", def.IdleTimeout, "a connection silent this long has ended")
	f.Float64Var(&o.minEvidence, "min-evidence", def.MinEvidence, "weighted matches a mapping needs")
	f.IntVar(&o.minData, "min-data", def.MinData, "matches of packets with a payload a mapping needs")
	f.Float64Var(&o.minScore, "min-score", def.MinScore, "lowest score of an accepted mapping (0..1)")
	f.BoolVar(&o.splitInterfaces, "split-interfaces", false, "treat each pcapng interface as a sniffer of its own")
	f.BoolVar(&o.noOffsets, "no-clock-offsets", false, "do not estimate the sniffers' clock offsets")
	return cmd
}

// run learns the translations in the captures and writes the table.
func run(ios *cmdutil.IOStreams, o *options, opts natlib.Options) error {
	progress := cmdutil.NewProgress(ios, "nat", -1, true)
	var last int64
	m, err := pcapio.Open(o.captures, pcapio.Options{
		SplitInterfaces: o.splitInterfaces,
		NoOffsets:       o.noOffsets,
		Progress: func(done, total int64) {
			progress.Add(done - last)
			last = done
		},
	})
	if err != nil {
		return err
	}
	defer m.Close()

	l := natlib.NewLearner(opts)
	for {
		p, err := m.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		l.Observe(p)
	}
	progress.Finish()
	table := l.Finish()
	var names []string
	for _, s := range m.Sniffers() {
		names = append(names, s.Name)
	}
	table.SetSnifferNames(names)
	noteOffsets(ios, m, opts.Window)

	out, err := cmdutil.OpenOutput(ios, o.output)
	if err != nil {
		return err
	}
	if o.json {
		err = table.WriteJSON(out, o.all)
	} else {
		err = table.WriteText(out, o.all)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}

	problems := m.Problems()
	for _, p := range problems {
		ios.Warnf("%v", p)
	}
	if len(problems) > 0 {
		return &cmdutil.PartialError{Skipped: len(problems), What: "unreadable input was skipped (see the warnings above)"}
	}
	return nil
}

// noteOffsets tells the user about sniffers whose clocks could not be
// related to the others: their copies are matched only within the window.
func noteOffsets(ios *cmdutil.IOStreams, m *pcapio.Merger, window time.Duration) {
	sniffers := m.Sniffers()
	for _, off := range m.Offsets() {
		if int(off.Sniffer) >= len(sniffers) || sniffers[off.Sniffer].Packets == 0 {
			continue
		}
		name := sniffers[off.Sniffer].Name
		switch {
		case !off.Known:
			ios.Infof("%s: clock offset unknown (it shares no packets with the other sniffers); its copies are matched only within --window %v", name, window)
		case time.Duration(2*off.Uncertainty) > window:
			ios.Infof("%s: clock offset uncertain by %v; copies further apart than --window %v are not matched", name, time.Duration(off.Uncertainty), window)
		}
	}
}
