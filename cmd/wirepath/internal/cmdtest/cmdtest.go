// Package cmdtest holds what the command packages' flag tests share: running
// a cobra command in process with its output discarded, and checking that a
// rejected command line is a usage error (exit code 2) that names the flag.
package cmdtest

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
)

// Execute runs cmd with args as main does (cmdutil.Execute), discarding
// what it prints, and returns its error.
func Execute(cmd *cobra.Command, args ...string) error {
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	return cmdutil.Execute(cmd)
}

// WantUsage fails t unless err is a usage error (cmdutil.ErrUsage, which
// maps to exit code 2) whose text contains want ("" accepts any text).
func WantUsage(t testing.TB, err error, want string) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("no error, want a usage error naming %q", want)
	case !strings.Contains(err.Error(), want):
		t.Errorf("error %v, want one naming %q", err, want)
	case !errors.Is(err, cmdutil.ErrUsage):
		t.Errorf("error %v is not a usage error", err)
	}
}
