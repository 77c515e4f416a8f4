package linking

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"time"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

// Name is the name of the message-linking engine.
const Name = "linking"

// Options are the parameters of the message-linking engine (WAP5
// section 5.1). Start from DefaultOptions; the zero value is invalid.
type Options struct {
	// Options are the naming, aggregation and ranking settings every engine
	// shares.
	causal.Options

	// Window is WAP5's x: the longest causal delay. A message with no
	// message into its sender within Window before it is spontaneous, and
	// only messages within Window are its possible parents. Default 2 s.
	Window time.Duration
	// SpontaneousFactor is WAP5's y: the spontaneous option of a B→C message
	// weighs as much as a link with delay y·d(B→C). Default 4.
	SpontaneousFactor float64
	// TryBothBudget is k, the number of "try both" decisions allowed along
	// one path of a root's decision tree, so a root yields at most 2^k
	// instances. When it is spent, an ambiguous link is kept if its
	// probability is at least 0.5 or it is the message's most likely cause.
	// WAP5 gives no value; the default is 4.
	TryBothBudget int
	// TryBothLow and TryBothHigh bound the probabilities that are "near
	// 0.5": a link above TryBothHigh is probably true, one below TryBothLow
	// probably false (unless it is the most likely cause of its message),
	// and one in between is tried both ways. WAP5 gives no values; the
	// defaults 0.3 and 0.7 classify its Figure 4 as the paper does.
	TryBothLow, TryBothHigh float64
	// MinLinkProbability drops links less likely than this after
	// normalisation (the most likely cause of a message is always kept).
	// A dropped link would be "probably false" and change an instance's
	// probability by a factor of at least 1-MinLinkProbability. Default 0.001.
	MinLinkProbability float64
	// Iterations is the number of rounds the delay model is re-estimated
	// from the link probabilities it gives (steps 1 and 2 iterated, as WAP5
	// suggests). With DelayExponential each round sets every d(B→C) to the
	// mean delay of B→C's links weighted by their probabilities; with
	// DelayEmpirical each round is one EM step (0 leaves WAP5's weights).
	// 0, the paper's behaviour, uses the mean smallest preceding delay.
	// Default 2.
	Iterations int
	// MaxTreeSize bounds the messages of one path instance; links beyond it
	// are left out and the instance is counted as truncated. Default 1000
	// (a reused call id chained 2,000 messages into one instance).
	MaxTreeSize int
	// ClientRoots makes every message sent by a client node (a node that
	// never uses a fixed port, WAP5 section 2.5.1) spontaneous. WAP5's
	// traces never saw clients; sniffed captures do, and without this a
	// client's think time links its requests into one long chain.
	// Default true.
	ClientRoots bool
	// Calls uses what a trace says about RPC (docs/causal.md, "Call-aware
	// linking"): a RETURN is paired with its CALL (by connection and call
	// id, on one clock), belongs to the CALL's instance and is never
	// spontaneous; its possible parents are the CALL and the RETURNs of
	// calls its sender made while serving it; a CALL B→C cannot have been
	// caused by a CALL into B that B answered before B→C's answer came
	// back. Messages of unknown kind are linked as WAP5 does. Default true.
	Calls bool
	// NormalizeRoots scales the probabilities of the instances built from
	// one root so that they add up to the root's probability of being
	// spontaneous: the instances are the alternatives for one piece of
	// work, so a pattern's expected count estimates how many times it ran.
	// Without it (WAP5), probability lost to decisions that were not tried
	// both ways is lost, and big trees score low. Default true.
	NormalizeRoots bool
	// Reparent chooses, once an instance's messages are decided, every
	// message's parent among its possible parents in the instance: the
	// most recent one (for a paired RETURN, the most recent in its CALL's
	// subtree). Linking's probabilities decide which messages belong
	// together; within one instance the most recent cause is the one the
	// exponential model of WAP5 ranks first, and the one the nesting
	// relation implies for synchronous calls. Without it a message hangs
	// under whichever link brought it into the instance first. Default
	// true.
	Reparent bool
	// DelayModel says how a possible parent is weighed by its delay:
	// DelayExponential (WAP5) or DelayEmpirical (learnt per parent and
	// child type from Iterations rounds of expectation maximisation that
	// start from WAP5's weights). Default DelayEmpirical.
	DelayModel DelayModel
	// Workers is the number of goroutines that build trees and links
	// (0 = GOMAXPROCS). The result does not depend on it.
	Workers int
	// Progress, when set, is called from the engine's goroutine with the
	// number of roots whose trees have been built and the total.
	Progress func(done, total int)
}

// DefaultOptions returns the paper's parameters (x = 2 s, y = 4)
// and wirepath's choices where the paper gives none.
func DefaultOptions() Options {
	return Options{
		Options:            causal.DefaultOptions(),
		Window:             2 * time.Second,
		SpontaneousFactor:  4,
		TryBothBudget:      4,
		TryBothLow:         0.3,
		TryBothHigh:        0.7,
		MinLinkProbability: 1e-3,
		MaxTreeSize:        1000,
		ClientRoots:        true,
		Calls:              true,
		DelayModel:         DelayEmpirical,
		Iterations:         2,
		NormalizeRoots:     true,
		Reparent:           true,
	}
}

// PureWAP5Options returns the options that reproduce WAP5 section
// 5.1 exactly: DefaultOptions without any of wirepath's extensions
// that change which links are found or how they are weighed (Calls off).
func PureWAP5Options() Options {
	o := DefaultOptions()
	o.Calls = false
	o.DelayModel = DelayExponential
	o.Iterations = 0
	o.NormalizeRoots = false
	o.Reparent = false
	return o
}

// Validate checks the options. The error is a *causal.OptionError naming
// the option by its flag.
func (o *Options) Validate() error {
	bad := func(option, format string, args ...any) error {
		return causal.OptionErrorf(Name, option, format, args...)
	}
	switch {
	case o.Window <= 0:
		return bad("max-delay", "the longest causal delay must be positive, not %v", o.Window)
	case !(o.SpontaneousFactor > 0) || math.IsInf(o.SpontaneousFactor, 0):
		return bad("spontaneous-factor", "spontaneous factor y must be positive, not %v", o.SpontaneousFactor)
	case o.TryBothBudget < 0 || o.TryBothBudget > 30:
		return bad("try-both-budget", "try-both budget must be within 0..30, not %d", o.TryBothBudget)
	case !(o.TryBothLow >= 0 && o.TryBothLow <= 0.5):
		return bad("try-both-low", "try-both low bound must be within 0..0.5, not %v", o.TryBothLow)
	case !(o.TryBothHigh >= 0.5 && o.TryBothHigh <= 1):
		return bad("try-both-high", "try-both high bound must be within 0.5..1, not %v", o.TryBothHigh)
	case !(o.MinLinkProbability >= 0 && o.MinLinkProbability < 0.5):
		return bad("min-link", "minimum link probability must be within [0, 0.5), not %v", o.MinLinkProbability)
	case o.Iterations < 0:
		return bad("iterations", "iterations must not be negative")
	case o.MaxTreeSize < 1:
		return bad("max-tree", "maximum tree size must be at least 1")
	case o.Workers < 0:
		return bad("workers", "workers must not be negative")
	case o.DelayModel != DelayExponential && o.DelayModel != DelayEmpirical:
		return bad("delay-model", "unknown delay model %q", o.DelayModel)
	}
	return o.Options.Validate(Name)
}

// Params returns the options by the names of the link command's flags,
// for Result.Params.
func (o *Options) Params() map[string]any {
	return map[string]any{
		"max-delay":          o.Window.String(),
		"spontaneous-factor": o.SpontaneousFactor,
		"try-both-budget":    o.TryBothBudget,
		"try-both-low":       o.TryBothLow,
		"try-both-high":      o.TryBothHigh,
		"min-link":           o.MinLinkProbability,
		"iterations":         o.Iterations,
		"max-tree":           o.MaxTreeSize,
		"max-patterns":       o.Aggregate.MaxPatterns,
		"link-clients":       !o.ClientRoots,
		"calls":              o.Calls,
		"delay-model":        string(o.DelayModel),
		"normalize-roots":    o.NormalizeRoots,
		"reparent":           o.Reparent,
		"rank":               string(o.Rank),
	}
}

// Engine is the message-linking engine of WAP5 section 5.1. For every
// sender pair B→C it estimates the mean causal delay d, weighs each
// possible parent of a B→C message (a message into B at most Window
// before it) by exp(-t/d) and the spontaneous option by exp(-y), normalises
// the weights into link probabilities, then builds path instances from
// every root with probably-true, probably-false and try-both decisions and
// aggregates them into patterns. It is safe for concurrent use.
type Engine struct {
	opt Options
}

// New returns a linking engine with the given options, or the
// *causal.OptionError of the first option out of range.
func New(opt Options) (*Engine, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	return &Engine{opt: opt}, nil
}

// Name returns "linking".
func (l *Engine) Name() string { return Name }

// Options returns the engine's options.
func (l *Engine) Options() Options { return l.opt }

// Infer links the messages of ms, builds the path instances and aggregates
// them into ranked patterns.
func (l *Engine) Infer(ctx context.Context, ms trace.Messages) (*causal.Result, error) {
	if ms.Len() > math.MaxInt32-1 {
		return nil, fmt.Errorf("linking: %d messages is more than the engine indexes", ms.Len())
	}
	agg := causal.NewAggregator(ms, l.opt.Aggregate)
	g, err := l.link(ctx, trace.MessageSlice(ms), ms.Symbols().Len(), agg.Namer().Roles())
	if err != nil {
		return nil, err
	}
	// Keep only what step 3 needs while the trees are built.
	ti := g.treeInput(l.opt.TryBothLow)
	c := g.counts
	nPairs := len(g.pairMsg)
	g = nil
	covered := make([]uint64, (ms.Len()+63)/64)
	st, err := l.paths(ctx, ti, func(in causal.Instance) error {
		for _, nd := range in.Nodes {
			covered[nd.Msg>>6] |= 1 << (uint(nd.Msg) & 63)
		}
		return agg.Add(in)
	})
	if err != nil {
		return nil, err
	}
	nCovered := 0
	for _, w := range covered {
		nCovered += bits.OnesCount64(w)
	}
	res := &causal.Result{
		Version:  causal.ResultVersion,
		Engine:   Name,
		Params:   l.opt.Params(),
		Trace:    causal.Summarize(ms),
		Patterns: agg.Patterns(l.opt.Rank),
	}
	res.RequestTypes = agg.RequestTypes()
	count := func(name string, v int) {
		res.Accounting = append(res.Accounting, trace.Count{Stage: Name, Name: name, Value: int64(v)})
	}
	count("messages", c.messages)
	count("messages_in_instances", nCovered)
	count("messages_in_no_instance", c.messages-nCovered)
	count("children_sender_clock", c.senderClock)
	count("children_receiver_clock", c.receiverClock)
	count("client_roots", c.clientRoots)
	count("call_pairs", c.calls)
	count("orphan_returns", c.orphans)
	count("no_timestamp", c.noTime)
	count("no_possible_parent", c.noParent)
	count("candidate_links", c.candidates)
	count("links", c.links)
	count("links_dropped_improbable", c.candidates-c.links)
	count("pairs", nPairs)
	count("roots", st.roots)
	count("instances", st.instances)
	count("try_both", st.tryBoth)
	count("try_both_over_budget", st.overBudget)
	count("instances_truncated", st.truncated)
	count("instances_pruned", st.pruned)
	count("instances_rejected", agg.Rejected())
	_, nPatterns := agg.Len()
	count("patterns", nPatterns)
	count("patterns_reported", len(res.Patterns))
	if len(res.Patterns) < nPatterns {
		res.Warnings = append(res.Warnings, fmt.Sprintf("reported the %d best of %d patterns", len(res.Patterns), nPatterns))
	}
	if st.truncated > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d instances reached the maximum tree size of %d messages and were cut", st.truncated, l.opt.MaxTreeSize))
	}
	return res, nil
}
