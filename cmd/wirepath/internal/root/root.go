// Package root builds the wirepath command tree: the root command, its
// global flags and help, and the registration of every subcommand.
package root

import (
	"sync"

	"github.com/spf13/cobra"

	"github.com/wirepath/wirepath/cmd/wirepath/internal/analyze"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/assemble"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/convolve"
	gencmd "github.com/wirepath/wirepath/cmd/wirepath/internal/gen"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/link"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/merge"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/messages"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/nat"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/nest"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/preloadcmd"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/reconcile"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/report"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/requests"
	scorecmd "github.com/wirepath/wirepath/cmd/wirepath/internal/score"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/skew"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/stats"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/whatif"
)

const longHelp = `wirepath reconstructs the causal structure of a distributed application from
what sniffers saw on the wire: which request into a host caused which requests
out of it, how often each path pattern runs, and where the time goes.

It reads pcap/pcapng files from switch port mirrors and host sniffers (and,
optionally, syscall traces from its LD_PRELOAD library), deduplicates packets
seen by several sniffers, corrects the sniffers' clock offsets, undoes NAT,
reassembles TCP into write-level messages and runs the inference engines:
message linking (WAP5), nesting and convolution (Project 5), and the
per-request assembly engine.

Each stage is also a subcommand of its own.`

// active is the profile the running command started, which StopProfile
// ends.
var (
	profiling sync.Mutex
	active    *cmdutil.Profile
)

// StopProfile ends the profiles the hidden --cpuprofile and --memprofile
// flags started, if any, writing them out.
func StopProfile() error {
	profiling.Lock()
	p := active
	active = nil
	profiling.Unlock()
	if p == nil {
		return nil
	}
	return p.Stop()
}

// NewCmdRoot returns the wirepath command with all subcommands registered.
func NewCmdRoot(ios *cmdutil.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:           "wirepath <command> [flags]",
		Short:         "Causal paths of distributed applications from packet captures",
		Long:          longHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       cmdutil.VersionString(),
	}
	cmd.SetOut(ios.Out)
	cmd.SetErr(ios.ErrOut)
	cmd.SetIn(ios.In)
	cmd.SetVersionTemplate("{{.Version}}\n")
	cmd.PersistentFlags().BoolVarP(&ios.Quiet, "quiet", "q", false, "no progress display or informational messages on stderr")
	cmd.SetHelpTemplate(cmd.HelpTemplate() + "\n" + cmdutil.ExitCodesHelp + "\n")
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return cmdutil.UsageErrorf("%v (see '%s --help')", err, c.CommandPath())
	})
	// `wirepath completion bash|zsh|fish|powershell`, listed among the
	// commands; enum flags complete their values.
	cmd.CompletionOptions.HiddenDefaultCmd = false
	// No command writes over one of its inputs, or reads a capture as a
	// trace or a result.
	// The hidden --cpuprofile and --memprofile flags profile the command
	// (main stops them with StopProfile, whatever the outcome).
	prof := &cmdutil.Profile{}
	prof.Register(cmd.PersistentFlags())
	cmd.PersistentPreRunE = func(c *cobra.Command, args []string) error {
		if err := cmdutil.CheckArgs(c, args); err != nil {
			return err
		}
		profiling.Lock()
		active = prof
		profiling.Unlock()
		return prof.Start()
	}

	cmd.AddGroup(
		&cobra.Group{ID: "pipeline", Title: "Pipeline stages:"},
		&cobra.Group{ID: "engines", Title: "Inference engines:"},
		&cobra.Group{ID: "tools", Title: "Tools:"},
	)
	add := func(group string, cs ...*cobra.Command) {
		for _, c := range cs {
			c.GroupID = group
			cmd.AddCommand(c)
		}
	}
	add("engines", nest.NewCmd(ios))
	add("engines", convolve.NewCmd(ios))
	add("pipeline", messages.NewCmd(ios))
	add("pipeline", nat.NewCmd(ios))
	add("engines", link.NewCmd(ios))
	add("engines", assemble.NewCmd(ios))
	add("tools", newCmdVersion(ios))
	add("tools", report.NewCmd(ios))
	add("tools", whatif.NewCmd(ios))
	add("tools", requests.NewCmd(ios))
	add("pipeline", preloadcmd.NewCmd(ios))
	add("pipeline", reconcile.NewCmd(ios))
	add("pipeline", merge.NewCmd(ios))
	add("tools", stats.NewCmd(ios))
	add("tools", skew.NewCmd(ios))
	add("tools", gencmd.NewCmd(ios))
	add("tools", scorecmd.NewCmd(ios))
	add("pipeline", analyze.NewCmd(ios))
	cmdutil.CompleteEnums(cmd)
	return cmd
}

func newCmdVersion(ios *cmdutil.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of this build",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := ios.Out.Write([]byte(cmdutil.VersionString() + "\n"))
			return err
		},
	}
}
