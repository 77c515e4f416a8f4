// Command wirepath reconstructs the causal paths of distributed applications
// from packet captures and syscall traces. Run "wirepath --help" for usage.
package main

import (
	"io"
	"os"

	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/root"
)

func main() {
	ios := cmdutil.System()
	os.Exit(run(ios, os.Args[1:]))
}

// run executes the command line args with the given streams and returns the
// exit code; tests call it in process.
func run(ios *cmdutil.IOStreams, args []string) int {
	cmd := root.NewCmdRoot(ios)
	cmd.SetArgs(args)
	err := cmdutil.Execute(cmd)
	if err != nil {
		cmdutil.PrintError(ios.ErrOut, err)
	}
	return cmdutil.ExitCode(err)
}

// runArgs is run with in-memory streams, for tests.
func runArgs(stdout, stderr io.Writer, args ...string) int {
	return run(&cmdutil.IOStreams{In: nil, Out: stdout, ErrOut: stderr}, args)
}
