// Package messages is the "wirepath messages" command: it reads captures
// through pcapio and prints the write-level messages (or the connections)
// the flows stage finds, with its accounting.
package messages

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wirepath/wirepath/cmd/wirepath/internal/captureflags"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/flows"
	"github.com/wirepath/wirepath/nat"
	"github.com/wirepath/wirepath/pcapio"
	"github.com/wirepath/wirepath/pipeline"
	"github.com/wirepath/wirepath/trace"
)

// Formats are the output formats of the command.
var Formats = []string{"tsv", "jsonl"}

// Options are the command's flags and arguments.
type Options struct {
	captureflags.Flags
	captureflags.Protocols
	Captures       []string
	Format         string
	Output         string
	Conns          bool
	JSON           bool
	SplitPause     time.Duration
	NoFraming      bool
	Settle         time.Duration
	ReorderTimeout time.Duration
	IdleTimeout    time.Duration
	FingerprintLen int
	NoNAT          bool
	NATTable       captureflags.NATTable
	NAT            nat.Options
	Parquet        captureflags.Tables
}

const long = `Read packet captures and print the write-level messages in them (WAP5
section 2.3): the bytes sent in one direction of a TCP connection between
direction changes, cut further at pauses longer than --split-pause and at
HTTP/1.x and DNS message boundaries, and every UDP datagram. Each message
has the time its first byte left (at the capture point nearest the sender)
and its last byte arrived (at the point nearest the receiver), its
endpoints, size, kind (CALL, RETURN or -), call id, a fingerprint of its
first bytes and what every capture point saw of it.

The captures are merged, deduplicated and clock-corrected as "wirepath
merge" does (one file is one sniffer unless --split-interfaces), and
address translations are learned and undone as "wirepath nat" finds them
(unless --no-nat), so that both sides of a NAT make one connection named
by its real endpoints. TCP is reassembled (retransmissions, overlaps, reordering,
holes recorded as gaps, sequence wraparound), IP fragments are put back
together.

--conns prints one line per connection instead, with passive figures in the
spirit of MSHN: handshake and call/return round trips, and the throughput
of multi-segment messages measured from the first segment to the last.

Each TCP connection's protocol is detected from its first bytes (or named
for its port with --proto PORT=NAME): HTTP/2 and gRPC (one message per
stream and direction, paired by stream id), TLS (decrypted with
--tls-keylog, else one opaque message per run of records between direction
changes, labelled with the server name), PostgreSQL, MySQL, Redis,
memcached and Kafka (by port) are cut into the messages they really are by
the proto decoders; other traffic as above. Messages carry the protocol's
label, status, stream and the propagated request ids and content tokens it
found (--tokens, --no-tokens, --no-evidence).

The accounting (packets in, bytes in streams, retransmissions, gaps,
messages out, and what was dropped and why, per protocol) goes to stderr,
or with --format json to stdout as JSON instead of the messages (which then
go only to -o FILE). The formats are documented in docs/formats.md.`

const example = `  wirepath messages web.pcap db.pcapng > messages.tsv
  wirepath messages --format jsonl --split-pause 200ms capture.pcap.gz
  wirepath messages --conns capture.pcap
  wirepath messages --tls-keylog keys.log --proto 9092=kafka capture.pcap
  wirepath messages -o messages.tsv --format json capture.pcap > accounting.json
  wirepath messages -o /dev/null --parquet tables/ capture.pcap`

// NewCmd returns the messages command.
func NewCmd(ios *cmdutil.IOStreams) *cobra.Command {
	return newCmd(ios, func(o *Options) error { return Run(ios, o) })
}

// newCmd builds the command with runF as the work done after validation
// (tests pass their own).
func newCmd(ios *cmdutil.IOStreams, runF func(*Options) error) *cobra.Command {
	def := flows.DefaultConfig()
	opts := &Options{}
	cmd := &cobra.Command{
		Use:     "messages CAPTURE...",
		Short:   "Reassemble TCP and UDP into write-level messages",
		Long:    long,
		Example: example,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Captures = args
			opts.Context = cmd.Context()
			if err := opts.Validate(); err != nil {
				return err
			}
			return runF(opts)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.Format, "format", "tsv", "output format: "+strings.Join(Formats, ", ")+", or json: the accounting as JSON on stdout (messages only go to -o FILE)")
	cmdutil.Enum(fs, "format", append(Formats, "json")...)
	fs.StringVarP(&opts.Output, "output", "o", "", "write the messages (or connections) to `FILE` instead of stdout")
	fs.BoolVar(&opts.Conns, "conns", false, "print connections with their round trips and throughput instead of messages")
	fs.BoolVar(&opts.JSON, "json", false, "print the accounting as JSON on stdout (messages only go to -o FILE)")
	fs.MarkHidden("json")
	fs.DurationVar(&opts.SplitPause, "split-pause", def.SplitPause, "cut a message when its sender pauses this long (0: never)")
	fs.BoolVar(&opts.NoFraming, "no-framing", false, "do not cut at HTTP/DNS message boundaries or pair calls by protocol")
	captureflags.RegisterFlowsTuning(fs, &opts.Settle, &opts.ReorderTimeout, &opts.IdleTimeout, &opts.FingerprintLen)
	fs.BoolVar(&opts.NoNAT, "no-nat", false, "do not learn and undo address translations")
	opts.NATTable.Register(fs)
	captureflags.RegisterNATTuning(fs, &opts.NAT)
	opts.Parquet.Register(fs)
	opts.Protocols.Register(fs)
	opts.Flags.Register(fs)
	return cmd
}

// Validate checks the options.
func (o *Options) Validate() error {
	if o.Format == "json" { // the accounting as JSON, as --json
		o.Format, o.JSON = "tsv", true
	}
	if !slices.Contains(Formats, o.Format) {
		return cmdutil.UsageErrorf("--format must be one of %s, not %q", strings.Join(Formats, ", "), o.Format)
	}
	cfg := o.Config()
	if err := cfg.Validate(); err != nil {
		return cmdutil.UsageErrorf("%v", err)
	}
	if err := o.NAT.Validate(); err != nil {
		return cmdutil.UsageErrorf("%v", err)
	}
	if err := o.NATTable.Validate(o.NoNAT); err != nil {
		return err
	}
	if err := o.Protocols.Validate(); err != nil {
		return err
	}
	_, err := o.Flags.Options()
	return err
}

// Config returns the flows configuration the options describe.
func (o *Options) Config() flows.Config {
	cfg := flows.DefaultConfig()
	cfg.SplitPause = o.SplitPause
	cfg.Framing = !o.NoFraming
	cfg.Settle = o.Settle
	cfg.ReorderTimeout = o.ReorderTimeout
	cfg.IdleTimeout = o.IdleTimeout
	cfg.FingerprintLen = o.FingerprintLen
	return cfg
}

// Accounting is what --json prints: the pcapio, nat and flows accounting
// and the problems found in the input.
type Accounting struct {
	Pcapio   pcapio.Stats  `json:"pcapio"`
	NAT      []trace.Count `json:"nat,omitempty"`
	Flows    *flows.Stats  `json:"flows"`
	Problems []string      `json:"problems"`
}

// Run reads the captures and writes the messages or connections.
func Run(ios *cmdutil.IOStreams, o *Options) error {
	popts, err := o.Flags.Options()
	if err != nil {
		return err
	}
	var tcfg pipeline.Config // the table, read before the output is opened
	if err := o.NATTable.Apply(&tcfg); err != nil {
		return err
	}
	table := tcfg.NATTable
	w, err := o.openWriter(ios)
	if err != nil {
		return err
	}
	cfg := o.Config()
	warns, err := o.Protocols.Apply(&cfg)
	if err != nil {
		w.close()
		return err
	}
	for _, s := range warns {
		ios.Warnf("%s", s)
	}
	if o.Conns {
		cfg.OnConn = w.conn
	}
	pc := pipeline.Config{Captures: o.Captures, Capture: popts, NoNAT: o.NoNAT, NAT: o.NAT, Flows: cfg, Context: o.Context,
		NATTable: table, NATLearn: o.NATTable.Learn}
	if err := o.Parquet.Install(&pc); err != nil {
		w.err = err
		w.close()
		return err
	}
	rec := o.Parquet.Recorder()
	var done func()
	pc.Progress, done = captureflags.StageProgress(ios)
	res, runErr := pipeline.Messages(pc, func(m *flows.Message) error {
		if !o.Conns {
			w.message(m)
		}
		if rec != nil {
			rec.FlowMessage(m)
		}
		return w.err
	})
	done()
	if runErr != nil && w.err == nil {
		w.err = runErr // the output of a failed run is not put in place
	}
	err = w.close()
	if perr := o.Parquet.Finish(ios, err); err == nil && perr != nil {
		err = perr
	}
	if err != nil && err != runErr {
		return err
	}
	if runErr != nil {
		return captureflags.UsageOf(runErr)
	}
	return o.report(ios, res)
}

// openWriter opens the output of the messages (or connections) with its
// header: -o FILE, or stdout unless --json prints the accounting there.
func (o *Options) openWriter(ios *cmdutil.IOStreams) (*writer, error) {
	w := &writer{jsonl: o.Format == "jsonl"}
	if o.JSON && o.Output == "" {
		return w, nil
	}
	out, err := cmdutil.OpenOutput(ios, o.Output)
	if err != nil {
		return nil, err
	}
	w.out = out
	if !w.jsonl {
		if o.Conns {
			w.buf = flows.AppendConnsHeader(w.buf)
		} else {
			w.buf = flows.AppendMessagesHeader(w.buf)
		}
	}
	return w, nil
}

// report checks and prints the accounting (as JSON with --json) and
// returns the command's outcome.
func (o *Options) report(ios *cmdutil.IOStreams, res *pipeline.Result) error {
	st := res.Flows
	if err := st.Check(); err != nil {
		ios.Warnf("flows accounting does not balance (a bug): %v", err)
	}
	if o.JSON {
		acc := Accounting{Pcapio: res.Capture, NAT: res.NATCounts(), Flows: st, Problems: make([]string, len(res.Problems))}
		for i, p := range res.Problems {
			acc.Problems[i] = p.Error()
		}
		if err := cmdutil.WriteJSON(ios.Out, &acc); err != nil {
			return err
		}
	} else {
		if res.NAT != nil && len(res.NAT.Mappings) > 0 {
			ios.Infof("nat: %d address translations undone (%d packets renamed); see wirepath nat", len(res.NAT.Mappings), res.NATApply.Rewritten)
		}
		summary(ios, st)
	}
	return captureflags.OutcomeOf(ios, res.Problems, res.Capture)
}

// summary prints the accounting in a few lines on stderr.
func summary(ios *cmdutil.IOStreams, s *flows.Stats) {
	ios.Infof("packets: %d in: %d TCP, %d UDP, %d fragments (%d reassembled into %d datagrams), %d other protocols, %d not IP",
		s.Packets, s.TCPPackets, s.UDPPackets, s.Fragments, s.FragUsed, s.FragDatagrams, s.OtherProto, s.NotIP)
	dropped := s.DroppedBeforeStart + s.DroppedAfterClose + s.DroppedOutOfWindow + s.DroppedLate
	ios.Infof("tcp bytes: %d in = %d in streams + %d retransmitted + %d seen again by other sniffers + %d dropped; %d gaps (%d bytes never seen), %d conflicting overlaps",
		s.TCPBytes, s.StreamBytes, s.RetransBytes, s.CopyBytes, dropped, s.GapsAcked+s.GapsTimeout+s.GapsLimit+s.GapsEnd, s.GapBytes, s.ConflictSegments)
	ios.Infof("messages: %d out (%d TCP, %d UDP; %d calls, %d returns, %d incomplete) from %d connections and %d UDP flows",
		s.Messages, s.TCPMessages, s.UDPMessages, s.Calls, s.Returns, s.Incomplete, s.TCPConns, s.UDPFlows)
	var parts []string
	for _, a := range flows.Apps() {
		name := a.String()
		p, ok := s.Protocols[name]
		if !ok {
			continue
		}
		if a == flows.AppNone {
			name = "none"
		}
		part := fmt.Sprintf("%s %d conns, %d messages", name, p.Conns, p.Messages)
		if p.ControlUnits > 0 {
			part += fmt.Sprintf(" (%d control units not messages)", p.ControlUnits)
		}
		if name == "tls" {
			part += fmt.Sprintf(" (%d decrypted, %d with SNI)", p.Decrypted, p.WithSNI)
		}
		parts = append(parts, part)
	}
	if len(parts) > 0 {
		ios.Infof("protocols: %s", strings.Join(parts, "; "))
	}
}

// writer writes messages or connections, remembering the first error.
type writer struct {
	out   *cmdutil.Output
	jsonl bool
	buf   []byte
	err   error
	tsv   flows.MessageTSV
}

// close writes what is buffered and closes the output; it returns the
// first error of the writer.
func (w *writer) close() error {
	if w.out == nil {
		return w.err
	}
	if w.err == nil {
		w.flush()
	}
	w.err = w.out.Finish(w.err)
	return w.err
}

func (w *writer) flush() {
	if len(w.buf) > 0 && w.err == nil {
		_, w.err = w.out.Write(w.buf)
	}
	w.buf = w.buf[:0]
}

func (w *writer) message(m *flows.Message) {
	if w.out == nil || w.err != nil {
		return
	}
	if w.jsonl {
		w.err = flows.MessageJSON(w.out, m)
		return
	}
	w.buf = w.tsv.Append(w.buf, m)
	if len(w.buf) > 64<<10 {
		w.flush()
	}
}

func (w *writer) conn(cs *flows.ConnStats) {
	if w.out == nil || w.err != nil {
		return
	}
	if w.jsonl {
		w.flush()
		w.err = flows.ConnJSON(w.out, cs)
		return
	}
	w.buf = flows.AppendConnTSV(w.buf, cs)
	if len(w.buf) > 64<<10 {
		w.flush()
	}
}
