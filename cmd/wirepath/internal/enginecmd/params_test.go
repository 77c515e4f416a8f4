package enginecmd

import (
	"testing"

	"github.com/spf13/pflag"

	"github.com/wirepath/wirepath/causal/assembly"
	"github.com/wirepath/wirepath/causal/convolution"
	"github.com/wirepath/wirepath/causal/linking"
	"github.com/wirepath/wirepath/causal/nesting"
)

// TestParamsAreFlags: every key of an engine's Result.Params is a flag of
// the engine's command, so a result says how to repeat its run.
func TestParamsAreFlags(t *testing.T) {
	conv := convolution.DefaultOptions()
	conv.Roots = []string{"mx1"}
	link := linking.DefaultOptions()
	nest := nesting.DefaultOptions()
	asm := assembly.DefaultOptions()
	for _, tc := range []struct {
		engine   string
		register func(fs *pflag.FlagSet)
		params   map[string]any
	}{
		{linking.Name, func(fs *pflag.FlagSet) { new(LinkingFlags).Register(fs, "") }, link.Params()},
		{nesting.Name, func(fs *pflag.FlagSet) { new(NestingFlags).Register(fs, "") }, nest.Params()},
		{convolution.Name, func(fs *pflag.FlagSet) { new(ConvolutionFlags).Register(fs, "") }, conv.Params()},
		{assembly.Name, func(fs *pflag.FlagSet) { new(AssemblyFlags).Register(fs, "") }, asm.Params()},
	} {
		fs := pflag.NewFlagSet(tc.engine, pflag.ContinueOnError)
		new(Common).AddFlags(fs)
		tc.register(fs)
		for k := range tc.params {
			if fs.Lookup(k) == nil {
				t.Errorf("%s: params key %q is not a flag of its command", tc.engine, k)
			}
		}
	}
}
