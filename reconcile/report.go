package reconcile

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/wirepath/wirepath/flows"
	"github.com/wirepath/wirepath/trace"
)

// callStatus is what became of one traced data call.
type callStatus uint8

const (
	callUnset   callStatus = iota
	callMatched            // its bytes were sniffed: it named and cut a sniffed message
	// The call's bytes became a message no sniffer saw, because:
	reasonUnsniffed      // its connection was never sniffed (a host without a sniffer)
	reasonOutsideCapture // its connection was sniffed, but not these bytes (the capture started late or ended early)
	reasonUnix           // it is on a UNIX-domain socket
	reasonLoopback       // it is on the loopback interface
	// The call was dropped, because:
	reasonNotAligned  // its connection was sniffed, but its byte counts could not be lined up with the sniffed bytes
	reasonNoEndpoints // its socket's endpoints are unknown (a descriptor the trace never described)
	reasonSocket      // its socket is of a kind reconcile does not handle (raw, other)
	numCallStatus
)

var callStatusNames = [numCallStatus]string{
	"unaccounted", "matched",
	"only_unsniffed", "only_outside_capture", "only_unix", "only_loopback",
	"dropped_not_aligned", "dropped_no_endpoints", "dropped_socket_kind",
}

// Report is the accounting of one reconciliation and what it found.
type Report struct {
	Naming     string `json:"naming"`
	Boundaries string `json:"boundaries"`

	// Messages = BothEnds + SendOnly + RecvOnly, and
	// Messages = SniffedOnly + Merged + PreloadOnly.
	Messages    int64 `json:"messages"`
	BothEnds    int64 `json:"both_ends"`
	SendOnly    int64 `json:"send_only"`
	RecvOnly    int64 `json:"recv_only"`
	SniffedOnly int64 `json:"sniffed_only"`
	Merged      int64 `json:"merged"`
	PreloadOnly int64 `json:"preload_only"`
	// ProcessEnds counts messages with a process name at one end at
	// least, ProcessBoth at both.
	ProcessEnds int64 `json:"process_ends"`
	ProcessBoth int64 `json:"process_both"`
	// Converted counts timestamps moved from the clock they were taken on
	// to their node's clock (a syscall-traced time on a host whose node
	// keeps its sniffer's clock, say).
	Converted int64 `json:"converted_timestamps"`
	// DroppedNoTime counts logical messages dropped because no timestamp
	// of theirs could be put on their nodes' clocks.
	DroppedNoTime int64 `json:"dropped_no_timestamp"`
	// OnReference counts the messages whose timestamps moved onto the
	// reference clock by their nodes' offsets (the trace is on one clock);
	// RecvClamped those that still arrived before they were sent (by less
	// than the offsets' error, as a rule) and now arrive when sent, and
	// RecvClampedMaxNS the largest such correction.
	OnReference      int64 `json:"messages_on_reference_clock"`
	RecvClamped      int64 `json:"recv_before_send_clamped"`
	RecvClampedMaxNS int64 `json:"recv_before_send_max_ns"`

	// Evidence: the messages with a request id, content tokens, a label,
	// a traced thread at either end (WithTask); the values the protocol
	// decoders gave that the trace cannot hold (too long, or not
	// printable text), each counted once; the tokens beyond the cap
	// (Options.MaxTokens).
	WithReqID     int64 `json:"messages_with_req_id"`
	WithTokens    int64 `json:"messages_with_tokens"`
	WithLabel     int64 `json:"messages_with_label"`
	WithTask      int64 `json:"messages_with_task"`
	SkippedLong   int64 `json:"evidence_skipped_long"`
	SkippedBinary int64 `json:"evidence_skipped_binary"`
	TokensCut     int64 `json:"tokens_cut"`

	// FlowsIn = FlowsUsed + FlowsDropped + FlowsUnplaced (0 unless a bug).
	FlowsIn       int64 `json:"flows_messages_in"`
	FlowsUsed     int64 `json:"flows_messages_used"`
	FlowsDropped  int64 `json:"flows_messages_dropped_no_timestamp"`
	FlowsUnplaced int64 `json:"flows_messages_unplaced"`

	// PreloadCalls is every data call of the syscall traces; Calls counts
	// them by what became of them (see docs/reconcile.md).
	PreloadCalls int64            `json:"preload_calls"`
	Calls        map[string]int64 `json:"calls,omitempty"`
	// PreloadConns counts traced connections with data; SniffedConns how
	// many of them were matched with a sniffed connection.
	PreloadConns int64 `json:"preload_conns"`
	SniffedConns int64 `json:"preload_conns_sniffed"`

	// Nodes counts the nodes; Servers those that use a fixed port (WAP5
	// section 2.5.1: the others are clients).
	Nodes   int            `json:"nodes"`
	Servers int            `json:"servers"`
	Hosts   []HostReport   `json:"hosts,omitempty"`
	Clocks  []trace.Clock  `json:"clocks,omitempty"`
	Offsets []trace.Offset `json:"clock_offsets,omitempty"`
	// Sources names, by trace index, the flows message each message of
	// the trace began with (its first byte's), the same in every trace
	// reconciled from that message (a windowed run's neighbouring
	// windows); zero for a message no sniffer saw begin.
	Sources []flows.MessageID `json:"-"`
	// Reference is the node whose clock the offsets are against.
	Reference string   `json:"reference,omitempty"`
	Warnings  []string `json:"warnings,omitempty"`
}

// HostReport says which capture point a host's timestamps come from.
type HostReport struct {
	Host string `json:"host"`
	// Traced is the syscall-traced host name, if any.
	Traced string `json:"traced,omitempty"`
	// Home is the capture point chosen; Near counts the host's messages it
	// saw whole on the host's side of every router, Seen those it saw,
	// Messages the host's sniffed messages.
	Home     string `json:"home,omitempty"`
	Near     int64  `json:"near"`
	Seen     int64  `json:"seen"`
	Messages int64  `json:"messages"`
}

// Check verifies the report's identities.
func (r *Report) Check() error {
	if r.Messages != r.BothEnds+r.SendOnly+r.RecvOnly {
		return fmt.Errorf("reconcile: messages %d != both %d + send only %d + receive only %d", r.Messages, r.BothEnds, r.SendOnly, r.RecvOnly)
	}
	if r.Messages != r.SniffedOnly+r.Merged+r.PreloadOnly {
		return fmt.Errorf("reconcile: messages %d != sniffed only %d + merged %d + preload only %d", r.Messages, r.SniffedOnly, r.Merged, r.PreloadOnly)
	}
	if r.FlowsIn != r.FlowsUsed+r.FlowsDropped+r.FlowsUnplaced {
		return fmt.Errorf("reconcile: flows messages in %d != used %d + dropped %d + unplaced %d", r.FlowsIn, r.FlowsUsed, r.FlowsDropped, r.FlowsUnplaced)
	}
	var n int64
	for _, v := range r.Calls {
		n += v
	}
	if n != r.PreloadCalls {
		return fmt.Errorf("reconcile: preload calls %d != %d by status", r.PreloadCalls, n)
	}
	if r.FlowsUnplaced != 0 || r.Calls["unaccounted"] != 0 {
		return fmt.Errorf("reconcile: %d sniffed messages and %d calls unaccounted for", r.FlowsUnplaced, r.Calls["unaccounted"])
	}
	return nil
}

// Accounting returns the counters as trace counts of stage trace.StageReconcile.
func (r *Report) Accounting() []trace.Count {
	c := func(name string, v int64) trace.Count {
		return trace.Count{Stage: trace.StageReconcile, Name: name, Value: v}
	}
	out := []trace.Count{
		c("flows_messages_in", r.FlowsIn),
		c("flows_messages_used", r.FlowsUsed),
		c("flows_messages_dropped_no_timestamp", r.FlowsDropped),
		c("preload_calls", r.PreloadCalls),
	}
	for _, n := range callStatusNames {
		if v := r.Calls[n]; v != 0 || n == "matched" {
			out = append(out, c("preload_calls_"+n, v))
		}
	}
	out = append(out,
		c("messages", r.Messages),
		c("messages_both_ends", r.BothEnds),
		c("messages_send_only", r.SendOnly),
		c("messages_recv_only", r.RecvOnly),
		c("messages_sniffed_only", r.SniffedOnly),
		c("messages_merged", r.Merged),
		c("messages_preload_only", r.PreloadOnly),
		c("messages_process_names", r.ProcessEnds),
		c("messages_dropped_no_timestamp", r.DroppedNoTime),
		c("messages_with_req_id", r.WithReqID),
		c("messages_with_tokens", r.WithTokens),
		c("messages_with_label", r.WithLabel),
		c("messages_with_task", r.WithTask),
	)
	for _, x := range [...]struct {
		name string
		v    int64
	}{{"evidence_skipped_long", r.SkippedLong}, {"evidence_skipped_binary", r.SkippedBinary}, {"tokens_cut", r.TokensCut}} {
		if x.v != 0 {
			out = append(out, c(x.name, x.v))
		}
	}
	out = append(out,
		c("timestamps_converted", r.Converted),
		c("messages_on_reference_clock", r.OnReference),
		c("recv_before_send_clamped", r.RecvClamped),
		c("recv_before_send_max_ns", r.RecvClampedMaxNS),
		c("nodes", int64(r.Nodes)),
		c("nodes_servers", int64(r.Servers)),
	)
	return out
}

// WriteText prints the report for people: messages by ends and sources,
// the traced calls by what became of them, the clocks and the node
// offsets with their uncertainty.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	pct := func(n int64) string {
		if r.Messages == 0 {
			return "0%"
		}
		return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(r.Messages))
	}
	fmt.Fprintf(&b, "messages: %d (%s naming, %d nodes, %d of them servers): %d with both ends (%s), %d send only, %d receive only\n",
		r.Messages, r.Naming, r.Nodes, r.Servers, r.BothEnds, pct(r.BothEnds), r.SendOnly, r.RecvOnly)
	fmt.Fprintf(&b, "sources: %d sniffed only, %d sniffed and traced, %d traced only; %d with a process name (%d at both ends)\n",
		r.SniffedOnly, r.Merged, r.PreloadOnly, r.ProcessEnds, r.ProcessBoth)
	fmt.Fprintf(&b, "sniffed messages: %d in, %d used, %d dropped (no timestamp)\n", r.FlowsIn, r.FlowsUsed, r.FlowsDropped)
	if r.PreloadCalls > 0 {
		fmt.Fprintf(&b, "traced calls: %d in, %d matched with sniffed bytes", r.PreloadCalls, r.Calls["matched"])
		for _, n := range callStatusNames[2:] {
			if v := r.Calls[n]; v > 0 {
				fmt.Fprintf(&b, ", %d %s", v, strings.ReplaceAll(n, "_", " "))
			}
		}
		fmt.Fprintf(&b, "; %d of %d traced connections sniffed\n", r.SniffedConns, r.PreloadConns)
	}
	if r.WithReqID+r.WithTokens+r.WithLabel+r.WithTask+r.SkippedLong+r.SkippedBinary+r.TokensCut > 0 {
		fmt.Fprintf(&b, "evidence: %d messages with a request id, %d with content tokens, %d with a label, %d with a traced thread",
			r.WithReqID, r.WithTokens, r.WithLabel, r.WithTask)
		if n := r.SkippedLong + r.SkippedBinary; n > 0 {
			fmt.Fprintf(&b, "; %d values skipped (%d too long, %d not printable)", n, r.SkippedLong, r.SkippedBinary)
		}
		if r.TokensCut > 0 {
			fmt.Fprintf(&b, "; %d tokens beyond the cap", r.TokensCut)
		}
		b.WriteByte('\n')
	}
	if r.Converted > 0 || r.DroppedNoTime > 0 {
		fmt.Fprintf(&b, "timestamps: %d moved onto their node's clock, %d messages dropped without one\n", r.Converted, r.DroppedNoTime)
	}
	if len(r.Clocks) > 0 {
		b.WriteString("clocks:\n")
		for _, c := range r.Clocks {
			line := fmtOffset(c.Known, c.OffsetNS, c.UncertaintyNS, c.Samples, c.Method)
			if d := c.DriftText(); d != "" {
				line += "; " + d
			}
			fmt.Fprintf(&b, "  %-7s %-24s %s\n", c.Kind, c.Name, line)
		}
	}
	if len(r.Offsets) > 0 {
		fmt.Fprintf(&b, "node clock offsets against %s:\n", r.Reference)
		for _, o := range r.Offsets {
			line := fmtOffset(o.Known, o.OffsetNS+o.AppliedNS, o.UncertaintyNS, o.Samples, "")
			if o.AppliedNS != 0 && o.OffsetNS == 0 {
				line += ", applied to the timestamps"
			}
			fmt.Fprintf(&b, "  %-32s %s\n", o.Node, line)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func fmtOffset(known bool, off, unc int64, samples int, method string) string {
	if !known {
		return "unknown"
	}
	sign := "+"
	if off < 0 {
		sign = ""
	}
	s := fmt.Sprintf("%s%v ± %v", sign, time.Duration(off), time.Duration(unc))
	if samples > 0 {
		s += fmt.Sprintf(" (%d samples", samples)
		if method != "" {
			s += ", " + method
		}
		s += ")"
	} else if method != "" {
		s += " (" + method + ")"
	}
	return s
}
