// Package preloadcmd is the "wirepath preload" command: it summarises
// preload syscall traces (from libwpcap or converted from strace) and
// converts strace output into that format. It only wires flags to the
// preload package.
package preloadcmd

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/preload"
)

// NewCmd returns the preload command with its subcommands.
func NewCmd(ios *cmdutil.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "preload <command>",
		Short: "Summarise syscall traces from the LD_PRELOAD library, convert strace output",
		Long: `Syscall traces record every socket call of a process: connections with their
endpoints, and each write and read with its size and time. Take them with the
LD_PRELOAD library (built by 'make preload' as bin/libwpcap.so):

  LD_PRELOAD=bin/libwpcap.so WIREPATH_PRELOAD_DIR=traces/ your-program ...

(without WIREPATH_PRELOAD_DIR they go to $XDG_RUNTIME_DIR/wirepath-preload,
else ~/.cache/wirepath-preload), or convert 'strace -f -ttt -yy' output with
'wirepath preload strace'. The format is described in docs/formats.md and
the library in docs/preload.md.`,
	}
	cmd.AddCommand(newCmdSummarize(ios), newCmdStrace(ios))
	return cmd
}

// summarizeOptions are the flags of "preload summarize".
type summarizeOptions struct {
	Paths  []string
	JSON   bool
	Output string
	Strict bool
}

func newCmdSummarize(ios *cmdutil.IOStreams) *cobra.Command {
	o := &summarizeOptions{}
	cmd := &cobra.Command{
		Use:   "summarize TRACE|DIR...",
		Short: "Per-process connections and message counts of preload traces",
		Long: `Summarize reads preload traces (files, or directories whose *.jsonl files are
read; gzip and zstd compression is recognised) and prints, per process, each socket with its endpoints, how it came to
be (socket, connect, accept, socketpair, inherited) and the messages and bytes
it sent and received. --format json prints the same as JSON.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Paths = args
			return runSummarize(ios, o)
		},
	}
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print JSON instead of text")
	cmdutil.FormatFlag(cmd.Flags(), &o.JSON)
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "write to `FILE` instead of stdout")
	cmd.Flags().BoolVar(&o.Strict, "strict", false, "stop at the first bad line instead of skipping it")
	return cmd
}

// expand replaces directories by the *.jsonl files in them.
func expand(paths []string) ([]string, error) { return preload.ExpandPaths(paths) }

// Summary is the JSON form of "preload summarize".
type Summary struct {
	Version   int              `json:"version"`
	Files     int              `json:"files"`
	Processes []ProcessSummary `json:"processes"`
	Counters  preload.Counters `json:"accounting"`
	Skipped   int64            `json:"skipped_lines"`
}

// ProcessSummary is one process of a Summary.
type ProcessSummary struct {
	Host        string        `json:"host"`
	PID         int           `json:"pid"`
	PPID        int           `json:"ppid,omitempty"`
	Process     string        `json:"process"`
	Records     int64         `json:"records"`
	Children    []int         `json:"children,omitempty"`
	Connections []ConnSummary `json:"connections"`
}

// ConnSummary is one socket of a ProcessSummary.
type ConnSummary struct {
	FD        int            `json:"fd"`
	Sock      string         `json:"sock"`
	Origin    preload.Origin `json:"origin"`
	Local     string         `json:"local,omitempty"`
	Remote    string         `json:"remote,omitempty"`
	PeerPID   int            `json:"peer_pid,omitempty"`
	Listening bool           `json:"listening,omitempty"`
	OpenedNS  int64          `json:"opened_ns,omitempty"`
	ClosedNS  int64          `json:"closed_ns,omitempty"`
	SentMsgs  int            `json:"sent_msgs"`
	SentBytes int64          `json:"sent_bytes"`
	RecvMsgs  int            `json:"recv_msgs"`
	RecvBytes int64          `json:"recv_bytes"`
	Failed    int            `json:"failed_calls,omitempty"`
	Peers     []string       `json:"datagram_peers,omitempty"`
}

func summarize(t *preload.Table, files int) *Summary {
	s := &Summary{Version: 1, Files: files, Counters: t.Counters, Skipped: t.Skipped}
	for _, p := range t.Processes() {
		ps := ProcessSummary{Host: p.Host, PID: p.PID, PPID: p.PPID, Process: p.Name, Records: p.Records, Children: p.Children, Connections: []ConnSummary{}}
		for _, c := range p.Conns {
			cs := ConnSummary{FD: c.FD, Sock: c.Sock.String(), Origin: c.Origin, Local: c.Local, Remote: c.Remote, PeerPID: c.PeerPID,
				Listening: c.Listening, OpenedNS: c.Opened, ClosedNS: c.Closed, SentMsgs: c.SentMsgs, SentBytes: c.SentBytes,
				RecvMsgs: c.RecvMsgs, RecvBytes: c.RecvBytes, Failed: c.Failed}
			seen := map[string]bool{}
			for _, m := range c.Msgs {
				if m.Peer != "" && !seen[m.Peer] {
					seen[m.Peer] = true
					cs.Peers = append(cs.Peers, m.Peer)
				}
			}
			sort.Strings(cs.Peers)
			if cs.Sock == "" {
				cs.Sock = "?"
			}
			ps.Connections = append(ps.Connections, cs)
		}
		s.Processes = append(s.Processes, ps)
	}
	return s
}

func runSummarize(ios *cmdutil.IOStreams, o *summarizeOptions) error {
	files, err := expand(o.Paths)
	if err != nil {
		return err
	}
	t, err := preload.ReadFiles(preload.Options{Strict: o.Strict}, files...)
	if err != nil {
		return err
	}
	for _, w := range t.Warnings {
		ios.Warnf("skipped %s", w)
	}
	out, err := cmdutil.OpenOutput(ios, o.Output)
	if err != nil {
		return err
	}
	s := summarize(t, len(files))
	if o.JSON {
		err = cmdutil.WriteJSON(out, s)
	} else {
		err = writeText(out, s)
	}
	err = out.Finish(err)
	if err == nil && t.Skipped > 0 {
		err = &cmdutil.PartialError{Skipped: int(t.Skipped), What: "bad lines in the preload traces"}
	}
	return err
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

func writeText(w io.Writer, s *Summary) error {
	conns := 0
	for _, p := range s.Processes {
		conns += len(p.Connections)
	}
	c := s.Counters
	fmt.Fprintf(w, "%s, %s, %s, %s: %d data calls, %d failed, %d empty, %d peeks, %d EAGAIN not logged\n",
		plural(int64(s.Files), "file", "files"), plural(int64(len(s.Processes)), "process", "processes"),
		plural(int64(conns), "socket", "sockets"), plural(c.Records, "record", "records"),
		c.DataCalls, c.FailedCalls, c.EmptyCalls, c.PeekCalls, c.EAGAINSkipped)
	if c.LostRecords != 0 || c.WriteErrors != 0 {
		fmt.Fprintf(w, "incomplete: the library lost %s (%s of its log failed)\n",
			plural(c.LostRecords, "record", "records"), plural(c.WriteErrors, "write", "writes"))
	}
	for _, p := range s.Processes {
		name := p.Process
		if name == "" {
			name = "?"
		}
		fmt.Fprintf(w, "\n%s pid %d %s", p.Host, p.PID, name)
		if p.PPID != 0 {
			fmt.Fprintf(w, " (parent %d)", p.PPID)
		}
		if len(p.Children) > 0 {
			fmt.Fprintf(w, " forked %v", p.Children)
		}
		fmt.Fprintf(w, ": %s\n", plural(p.Records, "record", "records"))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, c := range p.Connections {
			ends := c.Local
			if ends == "" {
				ends = "-"
			}
			switch {
			case c.Listening:
				ends = "listening " + c.Local
			case c.Remote != "":
				ends = c.Local + " -> " + c.Remote
			case len(c.Peers) > 0:
				ends = c.Local + " <-> " + strings.Join(c.Peers, ",")
			}
			if c.PeerPID != 0 {
				ends += fmt.Sprintf(" (peer pid %d)", c.PeerPID)
			}
			fmt.Fprintf(tw, "  fd %d\t%s\t%s\t%s\tsent %s, %d B\treceived %s, %d B\n", c.FD, c.Sock, c.Origin, ends,
				plural(int64(c.SentMsgs), "msg", "msgs"), c.SentBytes, plural(int64(c.RecvMsgs), "msg", "msgs"), c.RecvBytes)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// straceOptions are the flags of "preload strace".
type straceOptions struct {
	Input  string
	Output string
	Host   string
	Strict bool
}

func newCmdStrace(ios *cmdutil.IOStreams) *cobra.Command {
	o := &straceOptions{}
	cmd := &cobra.Command{
		Use:   "strace FILE",
		Short: "Convert 'strace -f -ttt -yy' output into a preload trace",
		Long: `Strace converts the output of 'strace -f -ttt -yy -o FILE program...' (-T and
-s are fine too) into a preload trace, for hosts where the LD_PRELOAD library
cannot be used. Socket calls are recognised from strace's -yy descriptor
annotations; datagram checksums are computed when strace printed the whole
payload (raise -s to get them for larger datagrams). FILE may be - for stdin
(UNIX peer pids then need a seekable file and are left out).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Input = args[0]
			if o.Host == "" {
				h, err := os.Hostname()
				if err != nil {
					return cmdutil.UsageErrorf("--host is needed: %v", err)
				}
				o.Host = h
			}
			return runStrace(ios, o)
		},
	}
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "write the trace to `FILE` instead of stdout")
	cmd.Flags().StringVar(&o.Host, "host", "", "host name for the trace's headers (default: this machine's)")
	cmd.Flags().BoolVar(&o.Strict, "strict", false, "stop at the first line not understood instead of skipping it")
	return cmd
}

func runStrace(ios *cmdutil.IOStreams, o *straceOptions) error {
	var in io.Reader = ios.In
	name := "stdin"
	if o.Input != "-" {
		f, err := os.Open(o.Input)
		if err != nil {
			return err
		}
		defer f.Close()
		in, name = f, o.Input
	}
	out, err := cmdutil.OpenOutput(ios, o.Output)
	if err != nil {
		return err
	}
	st, err := preload.ConvertStrace(in, name, preload.NewWriter(out), preload.StraceOptions{Host: o.Host, Strict: o.Strict})
	err = out.Finish(err)
	if err != nil {
		return err
	}
	for _, w := range st.Warnings {
		ios.Warnf("skipped %s", w)
	}
	ios.Infof("%s: %d lines, %d socket calls converted into %d records, %d other lines, %d skipped", name, st.Lines, st.Converted, st.Records, st.Ignored+st.Unfinished, st.Skipped)
	if st.Dangling > 0 {
		ios.Warnf("%d calls never finished (the trace was cut)", st.Dangling)
	}
	if st.Skipped > 0 {
		return &cmdutil.PartialError{Skipped: int(st.Skipped), What: "lines of " + name + " not understood"}
	}
	return nil
}
