// Package merge implements `wirepath merge`: many sniffers' captures in,
// one deduplicated, clock-corrected pcapng out, with a report of the
// offsets and counts.
package merge

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/wirepath/wirepath/cmd/wirepath/internal/captureflags"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/pcapio"
)

type options struct {
	captureflags.Flags
	Output     string
	JSON       bool
	NoComments bool
	Paths      []string
}

// NewCmd returns the merge command.
func NewCmd(ios *cmdutil.IOStreams) *cobra.Command {
	o := &options{}
	cmd := &cobra.Command{
		Use:   "merge CAPTURE... -o OUT.pcapng",
		Short: "Deduplicate and clock-correct many sniffers' captures into one pcapng",
		Long: `Merge reads pcap/pcapng captures (plain, gzip or zstd), one per sniffer,
estimates each sniffer's clock offset against the reference sniffer from the
packets they share, and writes one pcapng in corrected time order in which
every wire packet appears once, however many sniffers saw it.

Each packet is written at its first sighting's corrected time, on an
interface named after that sniffer; a comment on the packet names every
sniffer that saw it, when (relative to the first) and with which TTL. The
report of offsets and counts goes to standard output (to standard error
when the capture itself goes to standard output with -o -).`,
		Example: `  wirepath merge client.pcap server.pcapng.gz -o merged.pcapng
  wirepath merge --offset b.pcap=-2m17s a.pcap b.pcap -o - | tshark -r -`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Paths = args
			if o.Output == "" {
				return cmdutil.UsageErrorf("merge needs -o FILE (or -o - for standard output)")
			}
			return run(cmd.Context(), ios, o)
		},
	}
	o.Register(cmd.Flags())
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "write the merged capture to `FILE` (- for standard output)")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the report as JSON")
	cmdutil.FormatFlag(cmd.Flags(), &o.JSON)
	cmd.Flags().BoolVar(&o.NoComments, "no-comments", false, "do not comment each packet with the sniffers that saw it")
	return cmd
}

func run(ctx context.Context, ios *cmdutil.IOStreams, o *options) error {
	m, finish, err := o.Open(ios, o.Paths)
	if err != nil {
		return err
	}
	defer m.Close()

	report := ios.Out
	var dst io.Writer = ios.Out
	var file *cmdutil.AtomicFile
	if o.Output == "-" {
		report = ios.ErrOut
	} else {
		if file, err = cmdutil.CreateAtomic(o.Output); err != nil {
			return err
		}
		defer file.Abort() // unless committed
		dst = file
	}
	n, err := captureflags.WriteMerged(ctx, dst, m, !o.NoComments)
	if err != nil {
		return err
	}
	if file != nil {
		if err := file.Commit(); err != nil {
			return err
		}
	}
	finish()

	s := pcapio.Summarize(m)
	s.Output = &pcapio.OutputSummary{File: o.Output, Packets: n}
	if o.JSON {
		err = cmdutil.WriteJSON(report, s)
	} else {
		err = s.WriteText(report)
	}
	if err != nil {
		return err
	}
	return captureflags.Outcome(ios, m)
}
