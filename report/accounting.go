package report

import (
	"fmt"
	"strings"

	"github.com/wirepath/wirepath/trace"
)

// The stages of the engines, which count under their own names
// (linking.Name, nesting.Name, convolution.Name, assembly.Name; report
// imports no engine, a test checks that these are the same).
const (
	stageLinking     = "linking"
	stageNesting     = "nesting"
	stageConvolution = "convolution"
	stageAssembly    = "assembly"
)

// StageSummary is one line of the short accounting: a stage and its key
// figures.
type StageSummary struct {
	Stage string
	Text  string
}

// SummarizeAccounting condenses counters into one line per stage, in the
// order the stages first appear, with the figures a user needs to trust a
// run: packets in and duplicates, NAT mappings and packets renamed,
// connections, messages and gaps, messages with both ends, instances and
// patterns. Stages it does not know get their non-zero counters. The
// complete counters stay in the JSON output.
func SummarizeAccounting(cs []trace.Count) []StageSummary {
	var order []string
	lines := map[string]*stageLine{}
	for _, c := range cs {
		l := lines[c.Stage]
		if l == nil {
			order = append(order, c.Stage)
			l = &stageLine{stage: c.Stage, all: cs, v: map[string]int64{}, has: map[string]bool{}}
			lines[c.Stage] = l
		}
		l.v[c.Name] += c.Value
		l.has[c.Name] = true
	}
	var out []StageSummary
	for _, st := range order {
		l := lines[st]
		summarize, ok := stageSummarizers[st]
		if !ok {
			summarize = (*stageLine).unknown
		}
		if !summarize(l) {
			continue
		}
		out = append(out, StageSummary{Stage: st, Text: strings.Join(l.parts, "; ")})
	}
	return out
}

// stageLine gathers one stage's counters and the parts of its summary.
type stageLine struct {
	stage string
	all   []trace.Count // every stage's counters, in order
	v     map[string]int64
	has   map[string]bool
	parts []string
}

// add appends one formatted part.
func (l *stageLine) add(format string, args ...any) {
	l.parts = append(l.parts, fmt.Sprintf(format, args...))
}

// nonzero adds "n name" for each counter that is not zero.
func (l *stageLine) nonzero(names ...string) {
	for _, n := range names {
		if l.v[n] != 0 {
			l.add("%d %s", l.v[n], strings.ReplaceAll(n, "_", " "))
		}
	}
}

// stageSummarizers write the summary of the stages the report knows; each
// returns false when its stage has nothing to say.
var stageSummarizers = map[string]func(*stageLine) bool{
	trace.StagePcapio:    (*stageLine).pcapio,
	trace.StageNAT:       (*stageLine).nat,
	trace.StageFlows:     (*stageLine).flows,
	stageProtocols:       (*stageLine).protocols,
	trace.StagePreload:   (*stageLine).preload,
	trace.StageReconcile: (*stageLine).reconcile,
	trace.StageTrace:     (*stageLine).trace,
	stageLinking:         (*stageLine).linking,
	stageNesting:         (*stageLine).nesting,
	stageConvolution:     (*stageLine).convolution,
	stageAssembly:        (*stageLine).assembly,
}

func (l *stageLine) pcapio() bool {
	v := l.v
	l.add("%d records read, %d packets after removing %d duplicates", v["records"], v["packets"], v["duplicates"])
	l.nonzero("non_ip", "undecodable", "truncated", "bad_records", "cut_records", "out_of_order")
	return true
}

func (l *stageLine) nat() bool {
	l.add("%d mappings", l.v["mappings"])
	if l.has["rewrite_rewritten"] {
		l.add("%d of %d packets renamed to their real endpoints", l.v["rewrite_rewritten"], l.v["rewrite_packets"])
	}
	l.nonzero("mappings_rejected", "connection_pairs_conflicting")
	return true
}

func (l *stageLine) flows() bool {
	v := l.v
	l.add("%d connections, %d messages (%d calls, %d returns)", v["conns"], v["messages"], v["calls"], v["returns"])
	if gaps := v["gaps_acked"] + v["gaps_timeout"] + v["gaps_limit"] + v["gaps_end"]; gaps > 0 {
		l.add("%d gaps (%d bytes no sniffer saw)", gaps, v["gap_bytes"])
	} else {
		l.add("no gaps")
	}
	l.nonzero("unpaired_returns", "udp_not_exchanges")
	if n := v["conns_mid_stream"]; n > 0 {
		l.add("%d connections open before the capture (%d taken up by a decoder at a confirmed message boundary, %d bytes before it skipped; %d HTTP/1.x)",
			n, v["conns_mid_stream_decoded"], v["mid_stream_skipped_bytes"], v["conns_mid_stream_http"])
	}
	l.nonzero("framing_lost", "frag_dropped_timeout", "frag_dropped_limit", "frag_dropped_invalid")
	return true
}

func (l *stageLine) protocols() bool {
	l.parts = protocolParts(l.all)
	return true
}

func (l *stageLine) preload() bool {
	l.add("%d files, %d records, %d data calls", l.v["files"], l.v["records"], l.v["data_calls"])
	l.nonzero("skipped_lines", "unattributed")
	return true
}

func (l *stageLine) reconcile() bool {
	v := l.v
	l.add("%d messages, %d with both ends", v["messages"], v["messages_both_ends"])
	if n := v["messages_send_only"] + v["messages_recv_only"]; n > 0 {
		l.add("%d with one (%d send only, %d receive only)", n, v["messages_send_only"], v["messages_recv_only"])
	}
	l.add("%d nodes (%d servers)", v["nodes"], v["nodes_servers"])
	if v["preload_calls"] > 0 {
		l.add("%d traced calls, %d matched", v["preload_calls"], v["preload_calls_matched"])
	}
	if v["messages_with_req_id"]+v["messages_with_tokens"]+v["messages_with_label"]+v["messages_with_task"] > 0 {
		l.add("evidence: %d with a request id, %d with tokens, %d with a label, %d with a traced thread",
			v["messages_with_req_id"], v["messages_with_tokens"], v["messages_with_label"], v["messages_with_task"])
	}
	l.nonzero("messages_dropped_no_timestamp", "evidence_skipped_long", "evidence_skipped_binary", "tokens_cut")
	return true
}

// trace reports the lines a trace file's reader skipped; reading a trace
// file is otherwise nothing to report.
func (l *stageLine) trace() bool {
	if l.v[trace.CountSkippedLines] == 0 {
		return false
	}
	l.add("%d lines read, %d skipped", l.v[trace.CountMessagesRead], l.v[trace.CountSkippedLines])
	return true
}

func (l *stageLine) linking() bool {
	v := l.v
	l.add("%d messages, %d in instances; %d instances, %d patterns", v["messages"], v["messages_in_instances"], v["instances"], v["patterns"])
	l.nonzero("no_timestamp", "instances_truncated")
	return true
}

func (l *stageLine) nesting() bool {
	v := l.v
	l.add("%d messages, %d call pairs; %d call paths, %d patterns", v["messages_in"], v["call_pairs"], v["call_paths"], v["patterns"])
	l.nonzero("skipped_no_timestamp", "skipped_not_call_or_return", "unmatched_calls", "unmatched_returns", "instances_rejected")
	return true
}

func (l *stageLine) convolution() bool {
	v := l.v
	l.add("%d messages, %d explained by a pattern; %d edges, %d patterns", v["messages_in"], v["messages_in_patterns"], v["edges"], v["patterns"])
	l.nonzero("skipped_no_timestamp", "hop_limit_reached")
	return true
}

// assembly says how many requests the assembly engine built and on what
// evidence its calls were linked: roots, exact links (request id, thread,
// the only candidate), joint decisions (and how many of those were exact),
// background, and at how many nodes the last pass's second start was kept.
func (l *stageLine) assembly() bool {
	v := l.v
	l.add("%d messages, %d in requests; %d requests, %d background trees, %d patterns", v["messages"], v["messages_in_requests"], v["requests"], v["background_trees"], v["patterns"])
	l.add("%d calls: %d roots, %d by request id, %d by thread, %d only candidate, %d joint, %d background",
		v["calls"], v["calls_root"], v["links_exact_id"], v["links_thread"], v["links_only_candidate"], v["links_joint"], v["calls_background"])
	if v["decisions"] > 0 {
		l.add("%d of %d joint decisions exact", v["decisions_exact"], v["decisions"])
	}
	if v["second_starts"] > 0 {
		l.add("second start kept at %d of %d nodes (%d calls moved)", v["second_starts_kept"], v["second_starts"], v["second_start_calls_moved"])
	}
	l.nonzero("messages_no_timestamp", "unpaired_calls", "unpaired_returns", "returns_before_call", "requests_outside_window",
		"unseen_messages", "instances_cut_at_unseen", "instances_rejected", "cycles_broken", "depth_cut")
	return true
}

// unknown lists the non-zero counters of a stage the report does not know,
// in their order.
func (l *stageLine) unknown() bool {
	for _, c := range l.all {
		if c.Stage == l.stage && c.Value != 0 {
			l.add("%d %s", c.Value, strings.ReplaceAll(c.Name, "_", " "))
		}
	}
	if len(l.parts) == 0 {
		l.add("all counters 0")
	}
	return true
}

// stageProtocols is the stage of flows' per-protocol counters
// (flows.ProtoStats).
const stageProtocols = "protocols"

// protocolParts condenses the per-protocol counters of flows (stage
// "protocols", named "<protocol>_<counter>") into one part per protocol:
// its connections and messages, and what a user must see (TLS
// connections not decrypted, rejected detections, unpaired responses,
// decoder errors).
func protocolParts(cs []trace.Count) []string {
	var order []string
	by := map[string]map[string]int64{}
	for _, c := range cs {
		if c.Stage != stageProtocols {
			continue
		}
		p, name, ok := strings.Cut(c.Name, "_")
		if !ok {
			continue
		}
		if by[p] == nil {
			order = append(order, p)
			by[p] = map[string]int64{}
		}
		by[p][name] += c.Value
	}
	var parts []string
	for _, p := range order {
		v := by[p]
		s := fmt.Sprintf("%s: %d conns, %d messages", p, v["conns"], v["messages"])
		if v["control_units"] > 0 {
			s += fmt.Sprintf(", %d control units", v["control_units"])
		}
		if p == "tls" {
			s += fmt.Sprintf(" (%d decrypted, %d with SNI)", v["decrypted"], v["with_sni"])
		}
		if v["mid_stream"] > 0 {
			s += fmt.Sprintf(", %d taken up mid-stream (%d bytes skipped)", v["mid_stream"], v["mid_skipped_bytes"])
		}
		for _, n := range []string{"rejected", "unpaired", "unanswered", "units_clamped", "decoder_errors"} {
			if v[n] != 0 {
				s += fmt.Sprintf(", %d %s", v[n], strings.ReplaceAll(n, "_", " "))
			}
		}
		parts = append(parts, s)
	}
	return parts
}
