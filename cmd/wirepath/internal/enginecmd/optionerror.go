package enginecmd

import (
	"errors"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
)

// OptionUsageError turns an engine's option error into a usage error
// (exit code 2). A *causal.OptionError names the option by its flag: the
// flags of its engine among flags give the name as registered (with
// analyze's prefix), so the message names the flag the user typed.
func OptionUsageError(err error, flags ...EngineFlags) error {
	var oe *causal.OptionError
	if !errors.As(err, &oe) {
		return cmdutil.UsageErrorf("%v", err)
	}
	name := oe.Option
	for _, f := range flags {
		if f.Engine() == oe.Engine {
			name = f.FlagName(oe.Option)
		}
	}
	return cmdutil.UsageErrorf("--%s: %s", name, oe.Msg)
}
