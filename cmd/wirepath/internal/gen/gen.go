// Package gen is the `wirepath gen` command: synthetic traces (and
// captures) with ground truth, from a tracelet configuration.
package gen

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/wirepath/wirepath/causal/gen"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/trace"
)

// Options are the flags of `wirepath gen`.
type Options struct {
	Config      string
	List        bool
	Dump        bool
	Output      string
	Truth       string
	Seed        uint64
	Duration    time.Duration
	Instances   int
	Clients     int
	Skew        []string
	DropRate    float64
	DropQueue   int
	DropRandom  float64
	DelayScale  float64
	Single      bool
	NoCallIDs   bool
	Names       string
	MaxMessages int
	PcapDir     string

	changed func(string) bool
}

const long = `Generate a synthetic message trace and its ground truth from a tracelet
configuration, as Project 5's maketrace does (section 7.1.1).

CONFIG is a YAML or JSON file, or the name of a shipped configuration
(--list shows them; --dump prints one to start your own from). The trace
goes to stdout or -o FILE in wirepath's TSV trace format; the ground truth
(every message with its true timestamps, path instance, causal parent and
index in the trace) goes to --truth FILE, by default next to -o as
NAME.truth.tsv. Score an engine against it with 'wirepath score'.

Flags override the configuration: clock skew per node (the skewer), the
sniffer-queue loss model (--drop-rate messages/s with a --drop-queue of
messages; bursty, as in section 7.5.5), random loss, the delay variance,
one timestamp per message instead of two. docs/gen.md describes the
configuration format.

With --pcap DIR it also writes synthetic pcapng captures of the same
messages, as the configuration's sniffers (default: one mirror seeing
everything) saw them with their clock offsets: every TCP message on a real
connection (handshake, MSS-sized segments, ACKs, FINs), UDP datagrams
fragmented past the MTU. Run the capture pipeline on them and score its
result with 'wirepath score --trace' to test the whole chain.`

const example = `  wirepath gen --list
  wirepath gen multitier -o mt.tsv                  # also writes mt.truth.tsv
  wirepath nest mt.tsv --format json --instances -1 -o nest.json
  wirepath score nest.json mt.truth.tsv
  wirepath gen multitier --skew WS2=30ms -o skewed.tsv
  wirepath gen multitier --drop-rate 400 --drop-queue 64 -o lossy.tsv
  wirepath gen children-d-cc --dump > my.yaml
  wirepath gen multitier --duration 30s --pcap caps/   # caps/mirror.pcapng, trace.tsv, truth.tsv`

// NewCmd returns the gen command.
func NewCmd(ios *cmdutil.IOStreams) *cobra.Command { return newCmd(ios, run) }

// newCmd returns the command with runF as its run function (tests replace
// it to see the parsed options).
func newCmd(ios *cmdutil.IOStreams, runF func(*cmdutil.IOStreams, *Options) error) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:     "gen [CONFIG] [flags]",
		Short:   "Generate a synthetic trace with ground truth (maketrace)",
		Long:    long,
		Example: example,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Config = args[0]
			}
			opts.changed = cmd.Flags().Changed
			if err := opts.validate(); err != nil {
				return err
			}
			return runF(ios, opts)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&opts.List, "list", false, "list the shipped configurations")
	f.BoolVar(&opts.Dump, "dump", false, "print the configuration's YAML and exit")
	f.StringVarP(&opts.Output, "output", "o", "", "write the trace to `FILE` instead of stdout")
	f.StringVar(&opts.Truth, "truth", "", "write the ground truth to `FILE` (default: the -o name with .truth.tsv)")
	f.Uint64Var(&opts.Seed, "seed", 0, "random seed (default: the configuration's)")
	f.DurationVar(&opts.Duration, "duration", 0, "start instances for this long (overrides the configuration)")
	f.IntVar(&opts.Instances, "max-instances", 0, "stop after `N` instances (overrides the configuration)")
	cmdutil.DeprecatedAlias(f, "instances", "max-instances", func(f *pflag.FlagSet, name string) { f.IntVar(&opts.Instances, name, 0, "") })
	f.IntVar(&opts.Clients, "clients", 0, "parallel clients (overrides the configuration)")
	f.StringArrayVar(&opts.Skew, "skew", nil, "shift NODE's clock: `NODE=DURATION` (repeatable; CLIENT for all clients; negative for slow)")
	f.Float64Var(&opts.DropRate, "drop-rate", 0, "sniffer capture rate in messages/s; messages that overflow its queue are lost (0 = no limit)")
	f.IntVar(&opts.DropQueue, "drop-queue", 64, "sniffer queue length in messages, with --drop-rate")
	f.Float64Var(&opts.DropRandom, "drop-random", 0, "lose each message with this probability")
	f.Float64Var(&opts.DelayScale, "delay-scale", 1, "multiply the standard deviation of every delay")
	f.BoolVar(&opts.Single, "single-timestamp", false, "one timestamp per message (the send time at the sender's clock), as Project 5's traces")
	f.BoolVar(&opts.NoCallIDs, "no-call-ids", false, "leave out call ids (engines then pair calls and returns by order)")
	f.StringVar(&opts.Names, "names", "", "name nodes by `name` (as configured) or addr (IP address, as captures do)")
	f.IntVar(&opts.MaxMessages, "max-messages", gen.DefaultMaxMessages, "refuse configurations that generate more messages")
	f.StringVar(&opts.PcapDir, "pcap", "", "also write synthetic pcapng captures (one per sniffer), trace.tsv and truth.tsv to `DIR`; nodes are named by address unless --names says otherwise")
	return cmd
}

// validate checks the flags and fills in the default output names.
func (o *Options) validate() error {
	if o.List || o.Dump {
		return o.validateListing()
	}
	if o.Config == "" {
		return cmdutil.UsageErrorf("give a CONFIG file or a shipped configuration name (see --list)")
	}
	if err := o.validateNumbers(); err != nil {
		return err
	}
	if o.Names != "" && o.Names != "name" && o.Names != "addr" {
		return cmdutil.UsageErrorf("--names must be name or addr")
	}
	for _, s := range o.Skew {
		if _, _, err := cmdutil.ParseNodeDuration(s); err != nil {
			return cmdutil.UsageErrorf("--skew %q: %v", s, err)
		}
	}
	return o.outputNames()
}

// validateListing checks --list and --dump, which generate nothing.
func (o *Options) validateListing() error {
	if o.List && o.Dump {
		return cmdutil.UsageErrorf("--list and --dump exclude each other")
	}
	if o.Dump && o.Config == "" {
		return cmdutil.UsageErrorf("--dump needs a CONFIG")
	}
	return nil
}

// validateNumbers checks the ranges of the numeric flags.
func (o *Options) validateNumbers() error {
	if o.Duration < 0 || o.Instances < 0 || o.Clients < 0 || o.DropRate < 0 || o.DropQueue < 1 || o.MaxMessages < 1 {
		return cmdutil.UsageErrorf("--duration, --instances, --clients, --drop-rate, --drop-queue and --max-messages must not be negative")
	}
	if !(o.DropRandom >= 0 && o.DropRandom < 1) {
		return cmdutil.UsageErrorf("--drop-random must be in [0, 1)")
	}
	if !(o.DelayScale >= 0) {
		return cmdutil.UsageErrorf("--delay-scale must not be negative")
	}
	return nil
}

// outputNames fills in the trace and truth files --pcap and -o imply,
// which must differ.
func (o *Options) outputNames() error {
	if o.PcapDir != "" && o.Output == "" {
		o.Output = filepath.Join(o.PcapDir, "trace.tsv")
		if o.Truth == "" {
			o.Truth = filepath.Join(o.PcapDir, "truth.tsv")
		}
	}
	if o.Truth == "" && o.Output != "" && o.Output != "-" {
		o.Truth = strings.TrimSuffix(o.Output, ".tsv") + ".truth.tsv"
	}
	if o.Truth != "" && o.Truth == o.Output {
		return cmdutil.UsageErrorf("--truth and -o name the same file")
	}
	return nil
}

// apply writes the flags that were given into c.
func (o *Options) apply(c *gen.Config) {
	ch := o.changed
	if ch == nil {
		ch = func(string) bool { return false }
	}
	if ch("seed") {
		c.Seed = o.Seed
	}
	if ch("duration") {
		c.Duration = gen.Duration(o.Duration)
		if !ch("max-instances") && !ch("instances") {
			c.Instances = 0
		}
	}
	if ch("max-instances") || ch("instances") {
		c.Instances = o.Instances
		if !ch("duration") {
			c.Duration = 0
		}
	}
	if ch("clients") {
		c.Clients = o.Clients
	}
	if len(o.Skew) > 0 {
		if c.Skew == nil {
			c.Skew = make(map[string]gen.Duration)
		}
		for _, s := range o.Skew {
			n, d, _ := cmdutil.ParseNodeDuration(s)
			c.Skew[n] = gen.Duration(d)
		}
	}
	if ch("drop-rate") {
		c.Drop.Rate = o.DropRate
		c.Drop.Queue = o.DropQueue
	} else if ch("drop-queue") {
		c.Drop.Queue = o.DropQueue
	}
	if ch("drop-random") {
		c.Drop.Random = o.DropRandom
	}
	if ch("delay-scale") {
		v := o.DelayScale
		c.DelayScale = &v
	}
	if o.Single {
		c.Timestamps = "single"
	}
	if o.NoCallIDs {
		f := false
		c.CallIDs = &f
	}
	if o.Names != "" {
		c.Names = o.Names
	} else if o.PcapDir != "" {
		c.Names = "addr" // as the capture pipeline names nodes
	}
}

func run(ios *cmdutil.IOStreams, o *Options) error {
	if o.List {
		tw := tabwriter.NewWriter(ios.Out, 0, 4, 2, ' ', 0)
		for _, b := range gen.Builtins() {
			fmt.Fprintf(tw, "%s\t%s\n", b.Name, b.Description)
		}
		return tw.Flush()
	}
	if o.Dump {
		if b, ok := gen.LookupBuiltin(o.Config); ok {
			if _, err := os.Stat(o.Config); err != nil {
				_, err := ios.Out.Write(b.Source)
				return err
			}
		}
		data, err := os.ReadFile(o.Config)
		if err != nil {
			return err
		}
		_, err = ios.Out.Write(data)
		return err
	}
	cfg, err := gen.LoadConfig(o.Config)
	if err != nil {
		return err
	}
	o.apply(cfg)
	if err := cfg.Validate(); err != nil {
		return err
	}
	out, err := gen.Generate(cfg, gen.Options{MaxMessages: o.MaxMessages})
	if err != nil {
		return err
	}
	if o.PcapDir != "" {
		if err := os.MkdirAll(o.PcapDir, 0o755); err != nil {
			return err
		}
	}
	w, err := cmdutil.OpenOutput(ios, o.Output)
	if err != nil {
		return err
	}
	err = trace.WriteTSV(w, out.Trace)
	err = w.Finish(err)
	if err != nil {
		return err
	}
	if o.Truth != "" {
		if err := gen.WriteTruthFile(o.Truth, out.Truth); err != nil {
			return err
		}
	} else {
		ios.Warnf("no ground truth written (give --truth FILE or -o FILE)")
	}
	if o.PcapDir != "" {
		stats, err := gen.WritePcaps(o.PcapDir, out, cfg)
		if err != nil {
			return err
		}
		for _, st := range stats {
			missed := ""
			if st.Missed > 0 {
				missed = fmt.Sprintf(", %d missed by the sniffer", st.Missed)
			}
			ios.Infof("%s: %d packets (%d carrying message bytes, %d data segments lost%s)", st.File, st.Packets, st.DataSegments, st.LostSegments, missed)
		}
	}
	s := out.Stats
	ios.Infof("%s: %d instances, %d messages, %d in the trace (lost %d to the sniffer queue, %d at random), %.1f instances in progress, call parallelism %.1f",
		cfg.Name, s.Instances, s.Messages, s.Observed, s.LostQueue, s.LostRandom, s.Parallelism, s.CallParallelism)
	return nil
}
