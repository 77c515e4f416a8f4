package enginecmd

import (
	"errors"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
)

// sharedFlags are the options whose flags every engine shares, so analyze
// registers them once, without an engine's prefix.
var sharedFlags = map[string]bool{"workers": true, "rank": true}

// OptionUsageError turns an engine's option validation error into a usage
// error (exit code 2) that names the flag: the *causal.OptionError's
// Option is the flag's name, which analyze registers after prefix.
func OptionUsageError(err error, prefix string) error {
	var oe *causal.OptionError
	if errors.As(err, &oe) {
		flag := oe.Option
		if !sharedFlags[flag] {
			flag = prefix + flag
		}
		return cmdutil.UsageErrorf("--%s: %s", flag, oe.Msg)
	}
	return cmdutil.UsageErrorf("%v", err)
}
