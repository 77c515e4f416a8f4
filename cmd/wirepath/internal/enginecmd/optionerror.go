package enginecmd

import (
	"errors"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
)

// OptionUsageError turns an engine's option validation error into a usage
// error (exit code 2) that names the flag: flags maps the option (the
// *causal.OptionError's field name) to the flag's name.
func OptionUsageError(err error, flags map[string]string) error {
	var oe *causal.OptionError
	if errors.As(err, &oe) {
		if f, ok := flags[oe.Option]; ok {
			return cmdutil.UsageErrorf("--%s: %s", f, oe.Msg)
		}
	}
	return cmdutil.UsageErrorf("%v", err)
}
