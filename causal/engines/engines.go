// Package engines names every causal engine and builds them by name: the
// registry behind `wirepath analyze --engine` and the engine commands.
//
// Each engine lives in a package of its own under causal/ (linking,
// nesting, convolution, assembly) with the same shape: Name, Options (embedding
// causal.Options), DefaultOptions, New(Options) (*Engine, error) and an
// Engine that implements causal.Engine. The engines import causal, so the
// list of them lives here, in a package that imports them all: adding an
// engine is a field in Options and an entry in registry.
//
// This package must not know about file formats or rendering.
package engines

import (
	"errors"
	"fmt"
	"strings"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/assembly"
	"github.com/wirepath/wirepath/causal/convolution"
	"github.com/wirepath/wirepath/causal/linking"
	"github.com/wirepath/wirepath/causal/nesting"
	"github.com/wirepath/wirepath/trace"
)

// Engine selections besides the engine names: All runs every engine, Auto
// lets Choose pick one from the trace.
const (
	All  = "all"
	Auto = "auto"
)

// Options holds every engine's options, so that a caller can build any of
// them by name (New) with one configuration.
type Options struct {
	Linking     linking.Options
	Nesting     nesting.Options
	Convolution convolution.Options
	Assembly    assembly.Options
}

// entry is one engine of the registry: its name, how to build it from
// Options and where its shared options and worker count are.
type entry struct {
	name   string
	new    func(o *Options) (causal.Engine, error)
	common func(o *Options) (*causal.Options, *int)
}

// registry lists the engines in the order commands show them and All
// runs them.
var registry = []entry{
	{
		linking.Name,
		func(o *Options) (causal.Engine, error) { return linking.New(o.Linking) },
		func(o *Options) (*causal.Options, *int) { return &o.Linking.Options, &o.Linking.Workers },
	},
	{
		nesting.Name,
		func(o *Options) (causal.Engine, error) { return nesting.New(o.Nesting) },
		func(o *Options) (*causal.Options, *int) { return &o.Nesting.Options, &o.Nesting.Workers },
	},
	{
		convolution.Name,
		func(o *Options) (causal.Engine, error) { return convolution.New(o.Convolution) },
		func(o *Options) (*causal.Options, *int) { return &o.Convolution.Options, &o.Convolution.Workers },
	},
	{
		assembly.Name,
		func(o *Options) (causal.Engine, error) { return assembly.New(o.Assembly) },
		func(o *Options) (*causal.Options, *int) { return &o.Assembly.Options, &o.Assembly.Workers },
	},
}

// Names lists the engines, in the order commands show them and Resolve
// runs them for All.
var Names = func() []string {
	out := make([]string, len(registry))
	for i, e := range registry {
		out[i] = e.name
	}
	return out
}()

// DefaultOptions returns each engine's defaults.
func DefaultOptions() Options {
	return Options{
		Linking:     linking.DefaultOptions(),
		Nesting:     nesting.DefaultOptions(),
		Convolution: convolution.DefaultOptions(),
		Assembly:    assembly.DefaultOptions(),
	}
}

// SetCommon sets the options every engine shares (naming, aggregation,
// ranking) in each engine's options.
func (o *Options) SetCommon(c causal.Options) {
	for _, e := range registry {
		p, _ := e.common(o)
		*p = c
	}
}

// SetWorkers sets every engine's number of goroutines (0 = GOMAXPROCS).
func (o *Options) SetWorkers(n int) {
	for _, e := range registry {
		_, w := e.common(o)
		*w = n
	}
}

// SetWindow makes every engine infer one window of a windowed run
// (pipeline.RunWindows): only the instances whose root was sent in
// [from, to) count, every pattern is returned (MaxPatterns 0) and every
// distribution keeps its mergeable sketch, for a causal.ResultMerger.
func (o *Options) SetWindow(from, to int64) {
	for _, e := range registry {
		c, _ := e.common(o)
		c.Aggregate.RootFrom, c.Aggregate.RootTo = from, to
		c.Aggregate.Sketches = true
		c.Aggregate.MaxPatterns = 0
	}
}

// Common returns the options engine name shares with the others (nil
// for a name that is no engine's).
func (o *Options) Common(name string) *causal.Options {
	for _, e := range registry {
		if e.name == name {
			c, _ := e.common(o)
			return c
		}
	}
	return nil
}

// Validate checks every engine's options, in the order of Names. The
// error is the first engine's *causal.OptionError.
func (o *Options) Validate() error {
	for _, e := range registry {
		if _, err := e.new(o); err != nil {
			return err
		}
	}
	return nil
}

// ErrUnknownEngine is wrapped by the errors of New and Resolve for a name
// that is not an engine's.
var ErrUnknownEngine = errors.New("unknown engine")

// New returns the engine called name (one of Names) with its options, or
// the engine's *causal.OptionError.
func (o *Options) New(name string) (causal.Engine, error) {
	for _, e := range registry {
		if e.name == name {
			return e.new(o)
		}
	}
	return nil, fmt.Errorf("%w %q (want one of %s)", ErrUnknownEngine, name, strings.Join(Names, ", "))
}

// RPCShare is the share of a trace's messages that are CALL or RETURN
// messages with a message of the other kind to pair with: twice the
// smaller of the two counts over all messages. Nesting reads only those.
func RPCShare(ms trace.Messages) float64 {
	n := ms.Len()
	if n == 0 {
		return 0
	}
	var calls, returns int
	var m trace.Message
	for i := range n {
		ms.Read(i, &m)
		switch m.Kind {
		case trace.KindCall:
			calls++
		case trace.KindReturn:
			returns++
		}
	}
	return float64(2*min(calls, returns)) / float64(n)
}

// MinRPCShare is the RPCShare from which Choose picks the assembly
// engine.
const MinRPCShare = 0.5

// Choose picks the engine for the trace ms when the user did not, and
// says why. On RPC traffic (RPCShare at least MinRPCShare: most messages
// are calls and returns, as TCP request/response traffic is once
// reassembled) it is the assembly engine, the most accurate on every RPC
// trace measured but one, where it was one request of 1,000 behind
// nesting (docs/analyze.md: the testbed's 32 runs, Project 5's generated
// traces, the demo); otherwise it is linking, which needs no call/return
// pairs and no clock synchronisation.
func Choose(ms trace.Messages) (name, reason string) {
	s := RPCShare(ms)
	if s >= MinRPCShare {
		return assembly.Name, fmt.Sprintf("%.0f%% of the messages are paired calls and returns", 100*s)
	}
	return linking.Name, fmt.Sprintf("only %.0f%% of the messages are paired calls and returns (the assembly engine needs RPC traffic)", 100*s)
}

// Resolve turns an engine selection (an engine name, All or Auto) into the
// engines to run on the trace ms, in order. For Auto it also returns
// Choose's reason.
func Resolve(sel string, ms trace.Messages) (names []string, reason string, err error) {
	switch sel {
	case All:
		return append([]string(nil), Names...), "", nil
	case Auto, "":
		name, why := Choose(ms)
		return []string{name}, why, nil
	}
	for _, n := range Names {
		if n == sel {
			return []string{n}, "", nil
		}
	}
	return nil, "", fmt.Errorf("%w %q (want %s, %s or %s)", ErrUnknownEngine, sel, strings.Join(Names, ", "), All, Auto)
}
