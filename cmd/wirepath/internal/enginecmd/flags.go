package enginecmd

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/wirepath/wirepath/causal/assembly"
	"github.com/wirepath/wirepath/causal/convolution"
	"github.com/wirepath/wirepath/causal/engines"
	"github.com/wirepath/wirepath/causal/linking"
	"github.com/wirepath/wirepath/causal/nesting"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
)

// EngineFlags are one engine's own flags. The engine's command registers
// them as they are and analyze registers them with a prefix ("link-",
// "nest-", "conv-") beside the other engines'; the flag names are the
// engine's option names (its Params keys and its *causal.OptionError's
// Option), so an option error names its flag.
type EngineFlags interface {
	// Engine is the engine's name in causal/engines.
	Engine() string
	// Register adds the flags to fs, each name preceded by prefix.
	Register(fs *pflag.FlagSet, prefix string)
	// Validate checks what the engine's own validation does not.
	Validate() error
	// Apply sets the flags' values in the engine's options.
	Apply(o *engines.Options)
	// FlagName returns the name of the flag of option (an OptionError's
	// Option) as registered.
	FlagName(option string) string
}

// sharedFlags are the options whose flags every engine shares, so analyze
// registers them once, without an engine's prefix.
var sharedFlags = map[string]bool{"workers": true, "rank": true}

// prefixed remembers the prefix an engine's flags were registered with.
type prefixed struct{ prefix string }

// FlagName returns the flag of option: the prefix and the option's name,
// but for the flags every engine shares.
func (p *prefixed) FlagName(option string) string {
	if sharedFlags[option] {
		return option
	}
	return p.prefix + option
}

// LinkingFlags are the message-linking engine's own flags.
type LinkingFlags struct {
	prefixed
	fs          *pflag.FlagSet
	Window      time.Duration
	Y           float64
	Budget      int
	Low, High   float64
	MinLink     float64
	Iterations  int
	MaxTree     int
	MaxPatterns int
	LinkClients bool
	Calls       bool
	DelayModel  string
	Normalize   bool
	Reparent    bool
	Pure        bool
}

// linkingPureConflicts are the flags --pure-wap5 sets.
var linkingPureConflicts = []string{"calls", "delay-model", "iterations", "normalize-roots", "reparent"}

// Engine returns "linking".
func (f *LinkingFlags) Engine() string { return linking.Name }

// Register adds the flags to fs, each name preceded by prefix.
func (f *LinkingFlags) Register(fs *pflag.FlagSet, prefix string) {
	def := linking.DefaultOptions()
	f.prefix, f.fs = prefix, fs
	p := prefix
	fs.DurationVar(&f.Window, p+"max-delay", def.Window, "x: longest causal delay; earlier messages are never parents")
	cmdutil.DeprecatedAlias(fs, p+"window", p+"max-delay", func(fs *pflag.FlagSet, name string) { fs.DurationVar(&f.Window, name, def.Window, "") })
	fs.Float64Var(&f.Y, p+"spontaneous-factor", def.SpontaneousFactor, "y: a message is spontaneous with the weight of a link of delay y*d")
	fs.IntVar(&f.Budget, p+"try-both-budget", def.TryBothBudget, "try-both decisions allowed along one path of a root's tree (at most 2^N instances per root)")
	fs.Float64Var(&f.Low, p+"try-both-low", def.TryBothLow, "links less likely than this are probably false (unless the message's most likely cause)")
	fs.Float64Var(&f.High, p+"try-both-high", def.TryBothHigh, "links more likely than this are probably true; in between, try both")
	fs.Float64Var(&f.MinLink, p+"min-link", def.MinLinkProbability, "drop links less likely than this (the most likely cause is always kept)")
	fs.IntVar(&f.Iterations, p+"iterations", def.Iterations, "re-estimate the delay model from the link probabilities this many times (exponential: 0 = as WAP5)")
	fs.IntVar(&f.MaxTree, p+"max-tree", def.MaxTreeSize, "most messages in one path instance")
	fs.IntVar(&f.MaxPatterns, p+"max-patterns", 10000, "keep only the best N patterns in the result (0 = all)")
	// In analyze, "--link-link-clients" would stutter.
	name := "link-clients"
	if prefix != "link-" {
		name = p + name
	}
	fs.BoolVar(&f.LinkClients, name, !def.ClientRoots, "also look for the causes of messages sent by clients (by default they start paths)")
	fs.BoolVar(&f.Calls, p+"calls", def.Calls, "use CALL/RETURN kinds and call ids: a RETURN joins its CALL's instance, parents must nest")
	fs.StringVar(&f.DelayModel, p+"delay-model", string(def.DelayModel), "how a delay weighs a possible parent: exponential (WAP5) or empirical (learnt per kind of link)")
	cmdutil.Enum(fs, p+"delay-model", "exponential", "empirical")
	fs.BoolVar(&f.Normalize, p+"normalize-roots", def.NormalizeRoots, "scale the instances of one root to share its probability (and drop those under --min-link of its best)")
	fs.BoolVar(&f.Reparent, p+"reparent", def.Reparent, "within an instance, hang every message under its most recent possible cause")
	fs.BoolVar(&f.Pure, p+"pure-wap5", false, "run WAP5 section 5.1 exactly: no --"+p+"calls, exponential delays, --"+p+"iterations 0, no --"+p+"normalize-roots, no --"+p+"reparent")
}

// Validate checks what the engine's own validation does not.
func (f *LinkingFlags) Validate() error {
	if f.MaxPatterns < 0 {
		return cmdutil.UsageErrorf("--%smax-patterns must not be negative", f.prefix)
	}
	if f.Pure && f.fs != nil {
		for _, name := range linkingPureConflicts {
			if f.fs.Changed(f.prefix + name) {
				return cmdutil.UsageErrorf("--%spure-wap5 sets --%s%s: give one or the other", f.prefix, f.prefix, name)
			}
		}
	}
	return nil
}

// Apply sets the flags' values in the engine's options.
func (f *LinkingFlags) Apply(eo *engines.Options) {
	o := &eo.Linking
	o.Aggregate.MaxPatterns = f.MaxPatterns
	o.Window = f.Window
	o.SpontaneousFactor = f.Y
	o.TryBothBudget = f.Budget
	o.TryBothLow, o.TryBothHigh = f.Low, f.High
	o.MinLinkProbability = f.MinLink
	o.Iterations = f.Iterations
	o.MaxTreeSize = f.MaxTree
	o.ClientRoots = !f.LinkClients
	o.Calls = f.Calls
	o.DelayModel = linking.DelayModel(f.DelayModel)
	o.NormalizeRoots = f.Normalize
	o.Reparent = f.Reparent
	if f.Pure {
		p := linking.PureWAP5Options()
		o.Calls, o.DelayModel, o.Iterations, o.NormalizeRoots, o.Reparent = p.Calls, p.DelayModel, p.Iterations, p.NormalizeRoots, p.Reparent
	}
}

// NestingFlags are the nesting engine's own flags.
type NestingFlags struct {
	prefixed
	X, Y, Z float64
	Smooth  float64
	Skew    time.Duration
	BinBase float64
	BinMin  time.Duration
	Bins    int
	// MaxPatterns bounds the patterns and the call-path patterns kept.
	MaxPatterns int
}

// Engine returns "nesting".
func (f *NestingFlags) Engine() string { return nesting.Name }

// Register adds the flags to fs, each name preceded by prefix.
func (f *NestingFlags) Register(fs *pflag.FlagSet, prefix string) {
	def := nesting.DefaultOptions()
	f.prefix = prefix
	p := prefix
	fs.Float64Var(&f.X, p+"overlap-penalty", def.OverlapExp, "exponent x of the overlapping-child penalty")
	fs.Float64Var(&f.Y, p+"same-penalty", def.SameExp, "exponent y of the same-child penalty")
	fs.Float64Var(&f.Z, p+"generic-penalty", def.GenericExp, "exponent z of the generic-child penalty")
	fs.Float64Var(&f.Smooth, p+"smooth", def.Smooth, "smooth the scoreboard with a Gaussian of this standard deviation, in bins (0 = off)")
	fs.DurationVar(&f.Skew, p+"skew-window", time.Duration(def.SkewWindow), "loosen the timestamp comparisons that decide nesting by this much")
	fs.Float64Var(&f.BinBase, p+"bin-base", def.BinBase, "ratio between successive scoreboard bins")
	fs.DurationVar(&f.BinMin, p+"bin-min", time.Duration(def.BinMin), "lower edge of the first scoreboard bin")
	fs.IntVar(&f.Bins, p+"bins", def.Bins, "scoreboard bins per histogram")
	fs.IntVar(&f.MaxPatterns, p+"max-patterns", 10000, "keep only the N most frequent patterns and call-path patterns in the result, counting the rest (0 = all)")
}

// Validate checks what the engine's own validation does not.
func (f *NestingFlags) Validate() error {
	if f.MaxPatterns < 0 {
		return cmdutil.UsageErrorf("--%smax-patterns must not be negative", f.prefix)
	}
	return nil
}

// Apply sets the flags' values in the engine's options.
func (f *NestingFlags) Apply(eo *engines.Options) {
	o := &eo.Nesting
	o.OverlapExp, o.SameExp, o.GenericExp = f.X, f.Y, f.Z
	o.Smooth = f.Smooth
	o.SkewWindow = int64(f.Skew)
	o.BinBase = f.BinBase
	o.BinMin = int64(f.BinMin)
	o.Bins = f.Bins
	o.Aggregate.MaxPatterns = f.MaxPatterns
}

// ConvolutionFlags are the convolution engine's own flags.
type ConvolutionFlags struct {
	prefixed
	Quantum     time.Duration
	NSigma      float64
	Dip         float64
	Window      time.Duration
	MaxDelay    time.Duration
	MaxDepth    int
	MinCount    int
	MinFraction float64
	MaxHops     int
	Roots       []string
}

// Engine returns "convolution".
func (f *ConvolutionFlags) Engine() string { return convolution.Name }

// Register adds the flags to fs, each name preceded by prefix.
func (f *ConvolutionFlags) Register(fs *pflag.FlagSet, prefix string) {
	def := convolution.DefaultOptions()
	f.prefix = prefix
	p := prefix
	fs.DurationVar(&f.Quantum, p+"quantum", time.Duration(def.Quantum), "time quantum μ of the signals")
	fs.Float64Var(&f.NSigma, p+"spike-sigma", def.NSigma, "N: a spike is at least this many standard deviations above the mean")
	fs.Float64Var(&f.Dip, p+"dip-sigma", def.Dip, "S: spikes are separated by a point below this many standard deviations")
	fs.DurationVar(&f.Window, p+"tolerance", 0, "v: match messages within the delay ± this (0 = one quantum)")
	cmdutil.DeprecatedAlias(fs, p+"window", p+"tolerance", func(fs *pflag.FlagSet, name string) { fs.DurationVar(&f.Window, name, 0, "") })
	fs.DurationVar(&f.MaxDelay, p+"max-delay", 0, "largest delay searched (0 = 100 quanta)")
	fs.IntVar(&f.MaxDepth, p+"max-depth", def.MaxDepth, "longest path, in hops")
	fs.IntVar(&f.MinCount, p+"min-count", def.MinCount, "fewest messages an edge of a path, and each delay on it, must explain")
	fs.Float64Var(&f.MinFraction, p+"min-fraction", def.MinFraction, "smallest share of a hop's messages a spike must explain")
	fs.IntVar(&f.MaxHops, p+"max-hops", def.MaxVertices, "most hops explored from one root edge")
	fs.StringSliceVar(&f.Roots, p+"root", nil, "start paths at `NODE` (repeatable; default: the clients)")
}

// Validate checks nothing: the engine's validation covers every flag.
func (f *ConvolutionFlags) Validate() error { return nil }

// Apply sets the flags' values in the engine's options.
func (f *ConvolutionFlags) Apply(eo *engines.Options) {
	o := &eo.Convolution
	o.Quantum = int64(f.Quantum)
	o.NSigma = f.NSigma
	o.Dip = f.Dip
	o.Window = int64(f.Window)
	o.MaxDelay = int64(f.MaxDelay)
	o.MaxDepth = f.MaxDepth
	o.MinCount = f.MinCount
	o.MinFraction = f.MinFraction
	o.MaxVertices = f.MaxHops
	o.Roots = f.Roots
}

// AssemblyFlags are the assembly engine's own flags.
type AssemblyFlags struct {
	prefixed
	Tolerance    time.Duration
	Stated       bool
	Learn        bool
	Beam         int
	Passes       int
	MaxPasses    int
	EM           string
	Init         string
	Alternatives int
	MaxOpen      time.Duration
}

// Engine returns "assembly".
func (f *AssemblyFlags) Engine() string { return assembly.Name }

// Register adds the flags to fs, each name preceded by prefix.
func (f *AssemblyFlags) Register(fs *pflag.FlagSet, prefix string) {
	def := assembly.DefaultOptions()
	f.prefix = prefix
	p := prefix
	fs.DurationVar(&f.Tolerance, p+"clock-error", def.Tolerance, "clock error allowed between two timestamps compared at one node (the most, with --stated-clock-error or --learn-clock-error)")
	fs.BoolVar(&f.Stated, p+"stated-clock-error", def.StatedClockError, "take the clock error from the trace where it states every node's clock offset: the largest stated uncertainty, 1µs to --clock-error")
	fs.BoolVar(&f.Learn, p+"learn-clock-error", def.LearnClockError, "where the trace does not state every node's clock offset, learn the clock error per node from the links the trace makes certain, at most --clock-error")
	fs.IntVar(&f.Beam, p+"beam", def.Beam, "hypotheses kept per node by the search (a window that never needs more is solved exactly)")
	fs.IntVar(&f.Passes, p+"passes", def.Passes, "search passes; the models are re-fitted between passes (EM)")
	fs.IntVar(&f.MaxPasses, p+"max-passes", def.MaxPasses, "most passes of a node whose assignment has not settled after --passes (still moving more than 15 % of its calls; at most --passes: none more)")
	fs.StringVar(&f.EM, p+"em", string(def.EM), "how the models are re-fitted: hard (from the best assignment), soft (from each call's posterior) or auto (soft while a node's calls are in doubt)")
	fs.StringVar(&f.Init, p+"init", string(def.Init), "how the first model estimates the delays before any assignment: floor (the floor of unrelated pairs subtracted) or cluster (EM on a Poisson cluster process of the triggers)")
	fs.IntVar(&f.Alternatives, p+"alternatives", def.Alternatives, "alternative parents listed per link (K, 0 to 3; the assignment is the same whatever K)")
	fs.DurationVar(&f.MaxOpen, p+"max-open", def.MaxOpen, "longest a request whose arrival or reply was not seen is taken to have been open")
}

// Validate checks nothing: the engine's validation covers every flag.
func (f *AssemblyFlags) Validate() error { return nil }

// Apply sets the flags' values in the engine's options.
func (f *AssemblyFlags) Apply(eo *engines.Options) {
	o := &eo.Assembly
	o.Tolerance = f.Tolerance
	o.StatedClockError = f.Stated
	o.LearnClockError = f.Learn
	o.Beam = f.Beam
	o.Passes = f.Passes
	o.MaxPasses = f.MaxPasses
	o.EM = assembly.EM(f.EM)
	o.Init = assembly.Init(f.Init)
	o.Alternatives = f.Alternatives
	o.MaxOpen = f.MaxOpen
}
