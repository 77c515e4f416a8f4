package cmdutil

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes of the wirepath command, documented in its help.
const (
	ExitOK      = 0 // success
	ExitError   = 1 // the command failed (I/O error, unreadable input, internal error)
	ExitUsage   = 2 // bad flags or arguments
	ExitPartial = 3 // finished, but some input was bad and was skipped (see the warnings)
	// ExitInterrupted is the exit status after SIGINT or SIGTERM (128 +
	// SIGINT, as shells report an interrupted command): the outputs in
	// progress were removed.
	ExitInterrupted = 130
)

// ExitCodesHelp is the exit-code section of the root command's help.
const ExitCodesHelp = `Exit codes:
  0  success
  1  the command failed (I/O error, unreadable input, internal error)
  2  bad flags or arguments
  3  finished, but some input was bad and was skipped (see the warnings)
  130  interrupted (SIGINT, SIGTERM): outputs not finished were removed, existing files left as they were`

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

// ExitCode maps an error returned by a command (run through Execute) to
// the process exit code.
func ExitCode(err error) int {
	var pe *PartialError
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, ErrInterrupted):
		return ExitInterrupted
	case errors.Is(err, ErrUsage):
		return ExitUsage
	case errors.As(err, &pe):
		return ExitPartial
	}
	return ExitError
}

// Execute runs cmd (the root of the command tree, or one command on its
// own in tests) and returns its error typed for ExitCode. An error that
// cobra raised while reading the command line (an unknown command or
// flag, a wrong number of arguments, a missing required flag) wraps
// ErrUsage; an error the command's own code returned is passed on as it
// is. The two are told apart by where they come from, not by their text:
// Execute marks the errors of every RunE and run hook of the tree.
func Execute(cmd *cobra.Command) error {
	markOwn(cmd)
	err := cmd.Execute()
	var own *ownError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &own):
		return own.err
	case errors.Is(err, ErrUsage): // a flag error, typed by a FlagErrorFunc
		return err
	}
	return fmt.Errorf("%w: %w", ErrUsage, err)
}

// ownError marks an error returned by a command's own code.
type ownError struct{ err error }

func (e *ownError) Error() string { return e.err.Error() }
func (e *ownError) Unwrap() error { return e.err }

// ownMarked is the annotation of a command whose hooks markOwn wrapped.
const ownMarked = "wirepath-errors-marked"

// markOwn wraps the error-returning run functions of cmd and its
// subcommands so that what they return is marked as an ownError (once per
// command, however often Execute runs it).
func markOwn(cmd *cobra.Command) {
	if cmd.Annotations[ownMarked] == "" {
		if cmd.Annotations == nil {
			cmd.Annotations = map[string]string{}
		}
		cmd.Annotations[ownMarked] = "yes"
		for _, f := range []*func(*cobra.Command, []string) error{
			&cmd.PersistentPreRunE, &cmd.PreRunE, &cmd.RunE, &cmd.PostRunE, &cmd.PersistentPostRunE,
		} {
			if run := *f; run != nil {
				*f = func(c *cobra.Command, args []string) error {
					if err := run(c, args); err != nil {
						return &ownError{err}
					}
					return nil
				}
			}
		}
	}
	for _, c := range cmd.Commands() {
		markOwn(c)
	}
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
