package cmdutil

import (
	"io"
	"os"

	"golang.org/x/term"
)

// IOStreams are the streams a command reads and writes. Reports go to Out;
// warnings and progress go to ErrOut, progress only when ErrOut is a
// terminal and Quiet is not set.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// ErrTTY is true when ErrOut is a terminal.
	ErrTTY bool
	// Quiet suppresses progress and informational messages (-q).
	Quiet bool
}

// System returns the process's streams.
func System() *IOStreams {
	return &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr, ErrTTY: isTerminal(os.Stderr)}
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// Infof writes an informational line to ErrOut unless Quiet is set.
func (s *IOStreams) Infof(format string, args ...any) {
	if s.Quiet {
		return
	}
	printf(s.ErrOut, format, args...)
}

// Warnf writes a warning line to ErrOut, even when Quiet is set.
func (s *IOStreams) Warnf(format string, args ...any) {
	printf(s.ErrOut, "warning: "+format, args...)
}
