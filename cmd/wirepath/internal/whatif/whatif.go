// Package whatif is the "wirepath whatif" command: the inputs of the
// profile-driven performance model of Stewart and Shen (NSDI 2005) as the
// captures showed them — per link the blocking round trips κ and bytes ν
// of each request, the round trip γ and bandwidth ω; per node its
// utilisation and service time — and the predicted latency of every
// request type and pattern after changes to links, placement, load or a
// node's speed, each with its inputs and an uncertainty.
package whatif

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/trace"
	wpwhatif "github.com/wirepath/wirepath/whatif"
)

// Options are the command's flags and argument.
type Options struct {
	IO     *cmdutil.IOStreams
	Result string
	Trace  string
	Engine string

	Links     []string
	Hosts     []string
	Colocate  []string
	Separate  []string
	Faster    []string
	Load      float64
	Scenarios []string

	// HostCores and Placement put nodes on shared hosts.
	HostCores []string
	Placement string
	// AnnotateCPU is a CPU profile to print with the capture's requests
	// counted into it, instead of predicting.
	AnnotateCPU string

	// The one-link form: --link A->B --rtt ... (the first version's).
	RTT              string
	CurrentRTT       time.Duration
	Bandwidth        string
	CurrentBandwidth string

	Pattern  int
	Top      int
	By       string
	Queue    string
	JSON     bool
	Requests bool
	Output   string

	curRTTSet bool
}

// NewCmd returns the whatif command.
func NewCmd(ios *cmdutil.IOStreams) *cobra.Command {
	opts := &Options{IO: ios}
	cmd := &cobra.Command{
		Use:   "whatif RESULT.json [--trace TRACE] [CHANGES...] [--scenario FILE]",
		Short: "Predict latency per request type and pattern after changes to links, placement, load or a node's speed",
		Long: `Without changes, print the model's inputs: per link the round trip γ and
bandwidth ω as the captures showed them (passive round trips per capture
point, packet pairs), per node its utilisation and service time, and per
pattern the blocking round trips κ and bytes ν of a request on each link.

With changes, predict the mean latency of every request type (the root
message's label) and pattern after them, each with its inputs and an
uncertainty from their measured spread, after the profile-driven model of
Stewart and Shen (NSDI 2005): the network term Γ = Σ κ·γ + ν/ω per link
and an M/G/1 queue per node. With --trace (the trace the result was
inferred from, and a result with --instances -1) the model works request
by request and replays each request's timeline; else from the patterns'
means. Changes (each repeatable; node names as in the signatures):

  --link 'A->B rtt=+5ms'          a link's round trip: a change (+5ms) or a value (5ms)
  --link 'A->B bandwidth=10Mbit/s' its bandwidth (current: measured, or current-bandwidth=)
  --host 'app rtt=+20ms'          every link of a node
  --colocate A,B                  two nodes on one host: a local link, one server
  --separate 'A B rtt=1ms'        two nodes of one host apart
  --load 2                        the request rate times 2
  --faster 'app 2'                a node's service 2 times faster
  --scenario FILE                 scenarios, one change per line, [NAME] starts one

Where several nodes share a machine, say so: --host-cores 'web1,app,db=2'
(repeatable; busy=0.3 gives the host's measured CPU utilisation, or
cpu=FILE,... CPU profiles sampled during the capture, fitted as a line in
the request rate: busy = a + b·λ) or --placement FILE (one such host per
line). --annotate-cpu FILE prints a CPU profile of this capture with its
requests counted in, for the prediction of another capture. The host's cores are then one
shared processor-sharing server for its nodes' work (M/G/c-PS), for the
load, a node's speed and the saturation throughput; without, every node is
its own dedicated M/G/1 server.

The first version's form --link 'A->B' --rtt 5ms --bandwidth 100Mbit/s
[--current-rtt D --current-bandwidth R] still works. See docs/whatif.md.`,
		Example: `  wirepath whatif result.json --trace trace.tsv
  wirepath whatif result.json --trace trace.tsv --link 'app->store rtt=+5ms'
  wirepath whatif result.json --trace trace.tsv --host 'app rtt=+20ms' --link 'web1->app bandwidth=10Mbit/s'
  wirepath whatif result.json --trace trace.tsv --load 2 --format json
  wirepath whatif result.json --trace trace.tsv --load 2 --host-cores 'web1,web2,app,db=2'
  wirepath whatif result.json --link 'web->db' --rtt 5ms --pattern 1`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Result = args[0]
			if err := cmdutil.OutputFormat(cmd.Flags(), opts.Output, []string{"text", "json"}); err != nil {
				return err
			}
			opts.curRTTSet = cmd.Flags().Changed("current-rtt")
			if err := opts.validate(cmd); err != nil {
				return err
			}
			return Run(opts)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.Trace, "trace", "", "the trace the result was inferred from (with --instances -1: request by request)")
	fs.StringVar(&opts.Engine, "engine", "", "the engine's result to read from a file of several (analyze --engine all)")
	fs.StringArrayVar(&opts.Links, "link", nil, "a link change `'A->B rtt=+5ms bandwidth=10Mbit/s'` (repeatable), or A->B with --rtt/--bandwidth")
	fs.StringArrayVar(&opts.Hosts, "host", nil, "change every link of a node: `'NODE rtt=+20ms'` (repeatable)")
	fs.StringArrayVar(&opts.Colocate, "colocate", nil, "put two nodes on one host: `A,B` (repeatable)")
	fs.StringArrayVar(&opts.Separate, "separate", nil, "move two nodes of one host apart: `'A B rtt=1ms'` (repeatable)")
	fs.StringArrayVar(&opts.Faster, "faster", nil, "a node's service faster: `'NODE FACTOR'` (repeatable)")
	fs.Float64Var(&opts.Load, "load", 0, "scale the request rate by `FACTOR`")
	fs.StringArrayVar(&opts.HostCores, "host-cores", nil, "nodes sharing a host and its cores: `'NODE,NODE,...=CORES [busy=0.3] [name=HOST]'` (repeatable)")
	fs.StringVar(&opts.Placement, "placement", "", "hosts from `FILE`, one per line as --host-cores writes them")
	fs.StringVar(&opts.AnnotateCPU, "annotate-cpu", "", "print the CPU profile `FILE` with the capture's requests counted into it (a requests column), for another capture's cpu=")
	fs.StringArrayVar(&opts.Scenarios, "scenario", nil, "scenarios from `FILE` (one change per line, [NAME] starts a scenario)")
	fs.StringVar(&opts.RTT, "rtt", "", "with one --link A->B: its new round trip, or a change (+5ms)")
	fs.DurationVar(&opts.CurrentRTT, "current-rtt", 0, "with one --link A->B: its current round trip, instead of the measured one")
	fs.StringVar(&opts.Bandwidth, "bandwidth", "", "with one --link A->B: its new bandwidth, e.g. 100Mbit/s")
	fs.StringVar(&opts.CurrentBandwidth, "current-bandwidth", "", "with one --link A->B: its current bandwidth, instead of the measured or assumed one")
	fs.IntVar(&opts.Pattern, "pattern", 0, "only the pattern of rank `N` (0 = every pattern)")
	fs.IntVar(&opts.Top, "top", 10, "request types and patterns to print (0 = all)")
	fs.StringVar(&opts.By, "by", "both", "group predictions by `type`, pattern or both")
	fs.StringVar(&opts.Queue, "queue", "fcfs", "the nodes' queueing: `fcfs` (M/G/1, the paper's) or ps (processor sharing)")
	cmdutil.Enum(fs, "queue", "fcfs", "ps")
	fs.BoolVar(&opts.JSON, "json", false, "print the inputs or predictions as JSON")
	cmdutil.FormatFlag(fs, &opts.JSON)
	fs.BoolVar(&opts.Requests, "requests", false, "with --format json: every request's prediction too (its root message's index in the trace)")
	fs.StringVarP(&opts.Output, "output", "o", "", "write to `FILE` instead of stdout")
	return cmd
}

// validate checks the flags.
func (opts *Options) validate(cmd *cobra.Command) error {
	old := opts.RTT != "" || opts.Bandwidth != "" || opts.curRTTSet || opts.CurrentBandwidth != ""
	switch {
	case old && (len(opts.Links) != 1 || strings.ContainsAny(strings.TrimSpace(opts.Links[0]), " \t")):
		return cmdutil.UsageErrorf("--rtt, --bandwidth and --current-* need exactly one --link 'A->B' (or write 'A->B rtt=... bandwidth=...')")
	case opts.curRTTSet && opts.CurrentRTT < 0:
		return cmdutil.UsageErrorf("round-trip times must not be negative")
	case opts.Pattern < 0, opts.Top < 0:
		return cmdutil.UsageErrorf("--pattern and --top must not be negative")
	case cmd.Flags().Changed("load") && !(opts.Load > 0):
		return cmdutil.UsageErrorf("--load must be positive")
	case opts.By != "type" && opts.By != "pattern" && opts.By != "both":
		return cmdutil.UsageErrorf("--by must be type, pattern or both")
	case opts.Queue != string(wpwhatif.FCFS) && opts.Queue != string(wpwhatif.PS):
		return cmdutil.UsageErrorf("--queue must be fcfs or ps")
	}
	if _, err := opts.changes(); err != nil {
		return cmdutil.UsageErrorf("%v", err)
	}
	for _, h := range opts.HostCores {
		if _, err := wpwhatif.ParseHostSpec(h); err != nil {
			return cmdutil.UsageErrorf("--host-cores %q: %v", h, err)
		}
	}
	return nil
}

// hosts reads the placement: --placement's file, then --host-cores.
func (opts *Options) hosts() ([]wpwhatif.HostSpec, error) {
	var out []wpwhatif.HostSpec
	if opts.Placement != "" {
		f, err := os.Open(opts.Placement)
		if err != nil {
			return nil, err
		}
		out, err = wpwhatif.ReadPlacement(f, opts.Placement)
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	for _, s := range opts.HostCores {
		h, err := wpwhatif.ParseHostSpec(s)
		if err != nil {
			return nil, err
		}
		h.Where = "--host-cores " + strconv.Quote(s)
		out = append(out, h)
	}
	for i := range out {
		dir := "."
		if i < len(out)-len(opts.HostCores) {
			dir = filepath.Dir(opts.Placement)
		}
		if err := readProfiles(&out[i], dir); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readProfiles reads a host's CPU profiles (cpu=), relative names from
// dir (the placement file's).
func readProfiles(h *wpwhatif.HostSpec, dir string) error {
	for _, name := range h.CPUFiles {
		if !filepath.IsAbs(name) {
			name = filepath.Join(dir, name)
		}
		p, err := readProfile(name)
		if err != nil {
			return fmt.Errorf("%s: %w", h.Where, err)
		}
		h.Profiles = append(h.Profiles, p)
	}
	return nil
}

// readProfile reads one CPU profile.
func readProfile(name string) (*wpwhatif.CPUProfile, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return wpwhatif.ReadCPUProfile(f, name)
}

// changes turns the change flags into the changes of one scenario.
func (opts *Options) changes() ([]wpwhatif.Change, error) {
	var lines []string
	for _, l := range opts.Links {
		if s := strings.TrimSpace(l); !strings.ContainsAny(s, " \t") {
			lines = append(lines, "link "+s+opts.oneLinkKeys())
			continue
		}
		lines = append(lines, "link "+l)
	}
	for _, h := range opts.Hosts {
		lines = append(lines, "host "+h)
	}
	for _, c := range opts.Colocate {
		lines = append(lines, "colocate "+strings.Replace(c, ",", " ", 1))
	}
	for _, s := range opts.Separate {
		lines = append(lines, "separate "+strings.Replace(s, ",", " ", 1))
	}
	for _, f := range opts.Faster {
		lines = append(lines, "faster "+f)
	}
	if opts.Load > 0 {
		lines = append(lines, fmt.Sprintf("load %g", opts.Load))
	}
	var out []wpwhatif.Change
	for _, l := range lines {
		c, err := wpwhatif.ParseChange(l)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// oneLinkKeys writes the first version's flags as keys of a link change.
func (opts *Options) oneLinkKeys() string {
	var b strings.Builder
	if opts.RTT != "" {
		b.WriteString(" rtt=" + opts.RTT)
	}
	if opts.Bandwidth != "" {
		b.WriteString(" bandwidth=" + opts.Bandwidth)
	}
	if opts.curRTTSet {
		b.WriteString(" current-rtt=" + opts.CurrentRTT.String())
	}
	if opts.CurrentBandwidth != "" {
		b.WriteString(" current-bandwidth=" + opts.CurrentBandwidth)
	}
	return b.String()
}

// ErrNoPattern is returned when --pattern names no pattern.
var ErrNoPattern = errors.New("no such pattern")

// ErrNoLink is returned when a change names a link or node no request
// uses.
var ErrNoLink = errors.New("unknown link")

// Run reads the result (and the trace), builds the model and prints its
// inputs or the predictions of every scenario.
func Run(opts *Options) error {
	res, err := opts.readResult()
	if err != nil {
		return err
	}
	if opts.Pattern > 0 {
		if err := keepPattern(res, opts.Pattern); err != nil {
			return err
		}
	}
	var tr *trace.Trace
	if opts.Trace != "" {
		if tr, err = trace.ReadFile(opts.Trace, trace.ReadOptions{}); err != nil {
			return err
		}
	}
	model, err := wpwhatif.Build(res, wpwhatif.BuildOptions{Trace: tr})
	if err != nil {
		return err
	}
	model.Discipline = wpwhatif.Discipline(opts.Queue)
	hosts, err := opts.hosts()
	if err != nil {
		return err
	}
	if len(hosts) > 0 {
		if err := model.Place(hosts); err != nil {
			return err
		}
	}
	if opts.Trace != "" && !model.PerRequest {
		opts.IO.Warnf("the result lists no instances: the model uses the patterns' means (run the engine with --instances -1)")
	}
	if opts.AnnotateCPU != "" {
		return annotateCPU(opts, model)
	}
	scenarios, err := opts.scenarios()
	if err != nil {
		return err
	}
	out, err := cmdutil.OpenOutput(opts.IO, opts.Output)
	if err != nil {
		return err
	}
	if len(scenarios) == 0 {
		err = writeInputs(out, opts, res, model)
	} else {
		err = predict(out, opts, opts.Result, model, scenarios)
	}
	err = out.Finish(err)
	return err
}

// annotateCPU writes --annotate-cpu's profile with the capture's requests
// counted into it.
func annotateCPU(opts *Options, model *wpwhatif.Model) error {
	p, err := readProfile(opts.AnnotateCPU)
	if err != nil {
		return err
	}
	if p, err = model.AnnotateCPU(p); err != nil {
		return err
	}
	out, err := cmdutil.OpenOutput(opts.IO, opts.Output)
	if err != nil {
		return err
	}
	return out.Finish(wpwhatif.WriteCPUProfile(out, p))
}

// readResult reads the result, taking --engine's from a file of several.
func (opts *Options) readResult() (*causal.Result, error) {
	if opts.Engine == "" {
		return cmdutil.ReadResult(opts.IO, opts.Result)
	}
	rs, err := cmdutil.ReadResults(opts.IO, opts.Result)
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		if r.Engine == opts.Engine {
			return r, nil
		}
	}
	return nil, fmt.Errorf("%s holds no result of the engine %q", opts.Result, opts.Engine)
}

// keepPattern keeps only the pattern of rank n.
func keepPattern(res *causal.Result, n int) error {
	for i := range res.Patterns {
		if res.Patterns[i].Rank == n {
			res.Patterns = res.Patterns[i : i+1]
			return nil
		}
	}
	return fmt.Errorf("%w: the result has no pattern of rank %d", ErrNoPattern, n)
}

// scenarios are the flags' changes (one scenario) and the files'.
func (opts *Options) scenarios() ([]wpwhatif.Scenario, error) {
	var out []wpwhatif.Scenario
	cs, err := opts.changes()
	if err != nil {
		return nil, err
	}
	if len(cs) > 0 {
		out = append(out, wpwhatif.Scenario{Name: "command line", Changes: cs})
	}
	for _, path := range opts.Scenarios {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		ss, err := wpwhatif.ReadScenarios(f, path)
		f.Close()
		if err != nil {
			return nil, err
		}
		out = append(out, ss...)
	}
	return out, nil
}
