// Package skew is the `wirepath skew` command: Project 5's skewer. It
// shifts nodes' clocks in a message trace, to test how the engines cope
// with clock offsets, or removes the offsets a trace already knows
// (--deskew), to put a multi-point trace on one clock.
package skew

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/trace"
)

// Options are the command's flags.
type Options struct {
	Input  string
	Output string
	Format string
	Nodes  []string
	Deskew bool
	Strict bool
}

const long = `Shift nodes' clocks in a message trace, as Project 5's skewer does
(section 7.5.6): every timestamp taken on a node's clock moves by the given
duration — a message's send time by its sender's shift, its receive time by
its receiver's (in a one-timestamp trace both by the sender's). CLIENT
stands for every client node. The trace's known clock offsets move with
their nodes, and a warning in its metadata records the change.

With --deskew it does the opposite for a real multi-point trace: it removes
the node clock offsets the trace carries (as 'wirepath reconcile' estimates
them), so that every timestamp is on the reference clock.

TRACE is any trace the trace package reads (wirepath TSV or JSON Lines,
Project 5's layout, plain or compressed). The result goes to stdout as TSV,
or to -o FILE in the format its name asks for (.jsonl, .gz, .zst).`

const example = `  wirepath skew mt.tsv --node WS2=30ms -o skewed.tsv
  wirepath skew mt.tsv --node CLIENT=-1s --node DB=2.5ms -o skewed.tsv
  wirepath reconcile caps/*.pcap* -o trace.tsv && wirepath skew --deskew trace.tsv -o onclock.tsv`

// NewCmd returns the skew command.
func NewCmd(ios *cmdutil.IOStreams) *cobra.Command { return newCmd(ios, run) }

func newCmd(ios *cmdutil.IOStreams, runF func(*cmdutil.IOStreams, *Options) error) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:     "skew TRACE [--node NODE=DURATION]... [--deskew] [-o FILE]",
		Short:   "Shift nodes' clocks in a trace, or remove its known offsets (the skewer)",
		Long:    long,
		Example: example,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Input = args[0]
			if err := opts.validate(); err != nil {
				return err
			}
			return runF(ios, opts)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&opts.Nodes, "node", nil, "shift `NODE=DURATION` (repeatable; CLIENT for every client; negative for a slow clock)")
	f.BoolVar(&opts.Deskew, "deskew", false, "remove the trace's known node clock offsets instead")
	f.StringVarP(&opts.Output, "output", "o", "", "write the trace to `FILE` (format from its name) instead of stdout")
	f.StringVar(&opts.Format, "format", "", "output format: tsv or jsonl (default: from -o, else tsv)")
	cmdutil.Enum(f, "format", "tsv", "jsonl")
	f.BoolVar(&opts.Strict, "strict", false, "stop at the first bad trace line instead of skipping it")
	return cmd
}

func (o *Options) validate() error {
	if o.Deskew == (len(o.Nodes) > 0) {
		return cmdutil.UsageErrorf("give --node NODE=DURATION (one or more) or --deskew")
	}
	for _, n := range o.Nodes {
		if _, _, err := cmdutil.ParseNodeDuration(n); err != nil {
			return cmdutil.UsageErrorf("--node %q: %v", n, err)
		}
	}
	if o.Format != "" && !slices.Contains([]string{"tsv", "jsonl"}, o.Format) {
		return cmdutil.UsageErrorf("--format must be tsv or jsonl, not %q", o.Format)
	}
	return nil
}

func run(ios *cmdutil.IOStreams, o *Options) error {
	t, err := trace.ReadFile(o.Input, trace.ReadOptions{Strict: o.Strict})
	if err != nil {
		return err
	}
	skipped := int(t.Meta.SkippedLines())
	if o.Deskew {
		n, unknown := trace.Deskew(t)
		ios.Infof("%d of %d messages moved onto the reference clock", n, len(t.Messages))
		if len(unknown) > 0 {
			ios.Warnf("no known clock offset for %s: their timestamps stay on their own clocks", strings.Join(unknown, ", "))
		}
		if n == 0 && len(t.Meta.Offsets) == 0 {
			ios.Warnf("%s carries no node clock offsets: nothing to remove", o.Input)
		}
		for _, c := range t.Meta.Clocks {
			if d := c.DriftText(); d != "" {
				ios.Infof("clock %s: %s (already removed from its times by reconcile)", c.Name, d)
			}
		}
	} else {
		shifts := make(map[string]int64)
		for _, s := range o.Nodes {
			node, d, _ := cmdutil.ParseNodeDuration(s)
			shifts[node] += int64(d)
		}
		n, err := trace.Skew(t, shifts)
		if err != nil {
			return err
		}
		ios.Infof("%d of %d messages shifted", n, len(t.Messages))
	}
	format := trace.FormatTSV
	switch {
	case o.Format == "jsonl":
		format = trace.FormatJSONL
	case o.Format == "" && o.Output != "" && o.Output != "-":
		format = trace.FormatAuto
	}
	if o.Output != "" && o.Output != "-" {
		err = cmdutil.WriteTraceFile(o.Output, t, format)
	} else {
		out, oerr := cmdutil.OpenOutput(ios, "")
		if oerr != nil {
			return oerr
		}
		err = trace.Write(out, t, format)
		err = out.Finish(err)
	}
	if err != nil {
		return err
	}
	if skipped > 0 {
		return &cmdutil.PartialError{Skipped: skipped, What: fmt.Sprintf("bad trace lines in %s", o.Input)}
	}
	return nil
}
