// Command wirepath reconstructs the causal paths of distributed applications
// from packet captures and syscall traces. Run "wirepath --help" for usage.
package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/root"
)

// interruptGrace is how long a command may take to stop on its own after
// SIGINT or SIGTERM before the process removes its unfinished outputs and
// exits anyway.
const interruptGrace = 2 * time.Second

func main() {
	ios := cmdutil.System()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second signal kills at once
		time.Sleep(interruptGrace)
		cmdutil.RemoveTemporaries()
		cmdutil.PrintError(ios.ErrOut, cmdutil.ErrInterrupted)
		os.Exit(cmdutil.ExitInterrupted)
	}()
	os.Exit(run(ctx, ios, os.Args[1:]))
}

// run executes the command line args with the given streams and returns the
// exit code; tests call it in process. When ctx is cancelled (a signal),
// the command stops, its unfinished outputs are removed and the code is
// cmdutil.ExitInterrupted.
func run(ctx context.Context, ios *cmdutil.IOStreams, args []string) int {
	cmd := root.NewCmdRoot(ios)
	cmd.SetArgs(args)
	cmd.SetContext(ctx)
	err := cmdutil.Execute(cmd)
	if perr := root.StopProfile(); perr != nil && err == nil {
		err = perr
	}
	if ctx.Err() != nil {
		cmdutil.RemoveTemporaries()
		err = cmdutil.ErrInterrupted
	} else if err != nil && errors.Is(err, context.Canceled) {
		err = cmdutil.ErrInterrupted
	}
	if err != nil {
		cmdutil.PrintError(ios.ErrOut, err)
	}
	return cmdutil.ExitCode(err)
}

// runArgs is run with in-memory streams, for tests.
func runArgs(stdout, stderr io.Writer, args ...string) int {
	return run(context.Background(), &cmdutil.IOStreams{In: nil, Out: stdout, ErrOut: stderr}, args)
}
