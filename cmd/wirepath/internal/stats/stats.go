// Package stats implements `wirepath stats`: what each sniffer's capture
// holds (packets, link types, time span), the packets each pair of
// sniffers shared, the estimated clock offsets and the accounting.
package stats

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/wirepath/wirepath/cmd/wirepath/internal/captureflags"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/pcapio"
)

type options struct {
	captureflags.Flags
	JSON   bool
	Output string
	Paths  []string
}

// NewCmd returns the stats command.
func NewCmd(ios *cmdutil.IOStreams) *cobra.Command {
	o := &options{}
	cmd := &cobra.Command{
		Use:   "stats CAPTURE...",
		Short: "Per-sniffer counts, shared packets and clock offsets of captures",
		Long: `Stats reads pcap/pcapng captures (plain, gzip or zstd), one per sniffer, and
prints per sniffer its packets, link types, time span and clock offset against
the reference sniffer, the packets each pair of sniffers both saw, and the
accounting of every file (records read, decoded, non-IP, undecodable,
truncated, dropped) with any problems found.`,
		Example: `  wirepath stats client.pcap server.pcapng.gz
  wirepath stats --format json --split-interfaces multi.pcapng`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Paths = args
			return run(ios, o)
		},
	}
	o.Register(cmd.Flags())
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the report as JSON")
	cmdutil.FormatFlag(cmd.Flags(), &o.JSON)
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "write the report to `FILE` instead of standard output")
	return cmd
}

func run(ios *cmdutil.IOStreams, o *options) error {
	m, finish, err := o.Open(ios, o.Paths)
	if err != nil {
		return err
	}
	defer m.Close()
	for {
		if _, err := m.Next(); err == io.EOF {
			break
		}
	}
	finish()
	out, err := cmdutil.OpenOutput(ios, o.Output)
	if err != nil {
		return err
	}
	s := pcapio.Summarize(m)
	if o.JSON {
		err = cmdutil.WriteJSON(out, s)
	} else {
		err = s.WriteText(out)
	}
	err = out.Finish(err)
	if err != nil {
		return err
	}
	return captureflags.Outcome(ios, m)
}
