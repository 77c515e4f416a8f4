package cmdutil

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// Exit codes of the wirepath command, documented in its help.
const (
	ExitOK      = 0 // success
	ExitError   = 1 // the command failed (I/O error, unreadable input, internal error)
	ExitUsage   = 2 // bad flags or arguments
	ExitPartial = 3 // finished, but some input was bad and was skipped (see the warnings)
)

// ExitCodesHelp is the exit-code section of the root command's help.
const ExitCodesHelp = `Exit codes:
  0  success
  1  the command failed (I/O error, unreadable input, internal error)
  2  bad flags or arguments
  3  finished, but some input was bad and was skipped (see the warnings)`

// ErrUsage marks errors in how the command was called.
var ErrUsage = errors.New("usage")

// UsageErrorf returns an error that maps to ExitUsage.
func UsageErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUsage, fmt.Sprintf(format, args...))
}

// PartialError reports that a command finished but skipped bad input; it
// maps to ExitPartial. Skipped counts the problems.
type PartialError struct {
	Skipped int
	What    string
}

// Error says how many problems were skipped.
func (e *PartialError) Error() string {
	return fmt.Sprintf("finished with %d problem(s) in the input: %s", e.Skipped, e.What)
}

// ExitCode maps an error returned by a command to the process exit code.
func ExitCode(err error) int {
	var pe *PartialError
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, ErrUsage):
		return ExitUsage
	case errors.As(err, &pe):
		return ExitPartial
	case isCobraUsage(err):
		return ExitUsage
	}
	return ExitError
}

// isCobraUsage recognises the flag and argument errors cobra itself returns.
func isCobraUsage(err error) bool {
	s := err.Error()
	for _, p := range []string{"unknown flag", "unknown shorthand flag", "flag needs an argument", "invalid argument", "unknown command", "accepts ", "requires at least", "requires at most", "if any flags in the group"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// PrintError writes err to w as "wirepath: <err>".
func PrintError(w io.Writer, err error) {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, ErrUsage.Error()+": ")
	fmt.Fprintf(w, "wirepath: %s\n", msg)
}

func printf(w io.Writer, format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	io.WriteString(w, s)
}
