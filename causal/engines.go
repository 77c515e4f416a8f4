package causal

import (
	"context"
	"fmt"
	"strings"

	"github.com/wirepath/wirepath/trace"
)

// EngineNames lists the engines, in the order commands show them and
// InferAll runs them for "all".
var EngineNames = []string{LinkingName, NestingName, ConvolutionName}

// Engine selections besides the engine names: AllEngines runs every engine,
// AutoEngine lets ChooseEngine pick one from the trace.
const (
	AllEngines = "all"
	AutoEngine = "auto"
)

// EngineOptions holds every engine's options, so that a caller can build
// any of them by name (New) with one configuration.
type EngineOptions struct {
	Linking     LinkingOptions
	Nesting     NestingOptions
	Convolution ConvolutionOptions
}

// DefaultEngineOptions returns each engine's defaults.
func DefaultEngineOptions() EngineOptions {
	return EngineOptions{
		Linking:     DefaultLinkingOptions(),
		Nesting:     DefaultNestingOptions(),
		Convolution: DefaultConvolutionOptions(),
	}
}

// SetCommon sets the options every engine shares (naming, aggregation,
// ranking) in each engine's options.
func (o *EngineOptions) SetCommon(c Options) {
	o.Linking.Options = c
	o.Nesting.Options = c
	o.Convolution.Options = c
}

// Validate checks every engine's options. The error is an *OptionError
// where the engine's own validation gives one.
func (o *EngineOptions) Validate() error {
	if err := o.Linking.Validate(); err != nil {
		return err
	}
	if err := o.Nesting.Validate(); err != nil {
		return err
	}
	return o.Convolution.Validate()
}

// New returns the engine called name (one of EngineNames) with its
// options.
func (o *EngineOptions) New(name string) (Engine, error) {
	switch name {
	case LinkingName:
		return NewLinking(o.Linking)
	case NestingName:
		if err := o.Nesting.Validate(); err != nil {
			return nil, err
		}
		return NewNesting(o.Nesting), nil
	case ConvolutionName:
		if err := o.Convolution.Validate(); err != nil {
			return nil, err
		}
		return NewConvolution(o.Convolution), nil
	}
	return nil, fmt.Errorf("unknown engine %q (want one of %s)", name, strings.Join(EngineNames, ", "))
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

// MinRPCShare is the RPCShare from which ChooseEngine picks nesting.
const MinRPCShare = 0.5

// ChooseEngine picks the engine for the trace ms when the user did not, and says why.
// On RPC traffic (RPCShare at least MinRPCShare: most messages are calls
// and returns, as TCP request/response traffic is once reassembled) it is
// nesting, which was the most accurate engine on every RPC trace measured
// (docs/analyze.md: the demo system, the generated multi-tier captures);
// otherwise it is linking, which needs no call/return pairs and no clock
// synchronisation.
func ChooseEngine(ms trace.Messages) (name, reason string) {
	s := RPCShare(ms)
	if s >= MinRPCShare {
		return NestingName, fmt.Sprintf("%.0f%% of the messages are paired calls and returns", 100*s)
	}
	return LinkingName, fmt.Sprintf("only %.0f%% of the messages are paired calls and returns (nesting needs RPC traffic)", 100*s)
}

// ResolveEngines turns an engine selection (an engine name, AllEngines or
// AutoEngine) into the engines to run on the trace ms, in order. For AutoEngine it
// also returns ChooseEngine's reason.
func ResolveEngines(sel string, ms trace.Messages) (names []string, reason string, err error) {
	switch sel {
	case AllEngines:
		return append([]string(nil), EngineNames...), "", nil
	case AutoEngine, "":
		name, why := ChooseEngine(ms)
		return []string{name}, why, nil
	}
	for _, n := range EngineNames {
		if n == sel {
			return []string{n}, "", nil
		}
	}
	return nil, "", fmt.Errorf("unknown engine %q (want %s, %s or %s)", sel, strings.Join(EngineNames, ", "), AllEngines, AutoEngine)
}

// InferAll runs the engines one after another on the trace ms and returns
// their results in the same order. start, if not nil, is called before
// each engine with its position. Engines do not modify ms, and each uses its
// own workers, so they run in turn. An engine's error stops the run and is
// returned with the engine's name.
func InferAll(ctx context.Context, ms trace.Messages, engines []Engine, start func(i int, e Engine)) ([]*Result, error) {
	out := make([]*Result, 0, len(engines))
	for i, e := range engines {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		if start != nil {
			start(i, e)
		}
		res, err := e.Infer(ctx, ms)
		if err != nil {
			return out, fmt.Errorf("%s: %w", e.Name(), err)
		}
		out = append(out, res)
	}
	return out, nil
}
