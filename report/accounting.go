package report

import (
	"fmt"
	"strings"

	"github.com/wirepath/wirepath/trace"
)

// The stages of the engines, which count under their own names
// (linking.Name, nesting.Name, convolution.Name; report imports no engine,
// a test checks that these are the same).
const (
	stageLinking     = "linking"
	stageNesting     = "nesting"
	stageConvolution = "convolution"
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
	by := map[string]map[string]int64{}
	has := map[string]map[string]bool{}
	for _, c := range cs {
		if by[c.Stage] == nil {
			order = append(order, c.Stage)
			by[c.Stage] = map[string]int64{}
			has[c.Stage] = map[string]bool{}
		}
		by[c.Stage][c.Name] += c.Value
		has[c.Stage][c.Name] = true
	}
	var out []StageSummary
	for _, st := range order {
		v := by[st]
		var parts []string
		add := func(format string, args ...any) { parts = append(parts, fmt.Sprintf(format, args...)) }
		// nonzero adds "n name" for each counter that is not zero.
		nonzero := func(names ...string) {
			for _, n := range names {
				if v[n] != 0 {
					add("%d %s", v[n], strings.ReplaceAll(n, "_", " "))
				}
			}
		}
		switch st {
		case trace.StagePcapio:
			add("%d records read, %d packets after removing %d duplicates", v["records"], v["packets"], v["duplicates"])
			nonzero("non_ip", "undecodable", "truncated", "bad_records", "cut_records", "out_of_order")
		case trace.StageNAT:
			add("%d mappings", v["mappings"])
			if has[st]["rewrite_rewritten"] {
				add("%d of %d packets renamed to their real endpoints", v["rewrite_rewritten"], v["rewrite_packets"])
			}
			nonzero("mappings_rejected", "connection_pairs_conflicting")
		case trace.StageFlows:
			add("%d connections, %d messages (%d calls, %d returns)", v["conns"], v["messages"], v["calls"], v["returns"])
			gaps := v["gaps_acked"] + v["gaps_timeout"] + v["gaps_limit"] + v["gaps_end"]
			if gaps > 0 {
				add("%d gaps (%d bytes no sniffer saw)", gaps, v["gap_bytes"])
			} else {
				add("no gaps")
			}
			nonzero("unpaired_returns", "conns_mid_stream", "framing_lost", "frag_dropped_timeout", "frag_dropped_limit", "frag_dropped_invalid")
		case stageProtocols:
			parts = protocolParts(cs)
		case trace.StagePreload:
			add("%d files, %d records, %d data calls", v["files"], v["records"], v["data_calls"])
			nonzero("skipped_lines", "unattributed")
		case trace.StageReconcile:
			add("%d messages, %d with both ends", v["messages"], v["messages_both_ends"])
			if n := v["messages_send_only"] + v["messages_recv_only"]; n > 0 {
				add("%d with one (%d send only, %d receive only)", n, v["messages_send_only"], v["messages_recv_only"])
			}
			add("%d nodes (%d servers)", v["nodes"], v["nodes_servers"])
			if v["preload_calls"] > 0 {
				add("%d traced calls, %d matched", v["preload_calls"], v["preload_calls_matched"])
			}
			if v["messages_with_req_id"]+v["messages_with_tokens"]+v["messages_with_label"]+v["messages_with_task"] > 0 {
				add("evidence: %d with a request id, %d with tokens, %d with a label, %d with a traced thread",
					v["messages_with_req_id"], v["messages_with_tokens"], v["messages_with_label"], v["messages_with_task"])
			}
			nonzero("messages_dropped_no_timestamp", "evidence_skipped_long", "evidence_skipped_binary", "tokens_cut")
		case trace.StageTrace:
			if v[trace.CountSkippedLines] == 0 {
				continue // reading a trace file: nothing to report
			}
			add("%d lines read, %d skipped", v[trace.CountMessagesRead], v[trace.CountSkippedLines])
		case stageLinking:
			add("%d messages, %d in instances; %d instances, %d patterns", v["messages"], v["messages_in_instances"], v["instances"], v["patterns"])
			nonzero("no_timestamp", "instances_truncated")
		case stageNesting:
			add("%d messages, %d call pairs; %d call paths, %d patterns", v["messages_in"], v["call_pairs"], v["call_paths"], v["patterns"])
			nonzero("skipped_no_timestamp", "skipped_not_call_or_return", "unmatched_calls", "unmatched_returns", "instances_rejected")
		case stageConvolution:
			add("%d messages, %d explained by a pattern; %d edges, %d patterns", v["messages_in"], v["messages_in_patterns"], v["edges"], v["patterns"])
			nonzero("skipped_no_timestamp", "hop_limit_reached")
		default:
			for _, c := range cs {
				if c.Stage == st && c.Value != 0 {
					add("%d %s", c.Value, strings.ReplaceAll(c.Name, "_", " "))
				}
			}
			if len(parts) == 0 {
				add("all counters 0")
			}
		}
		out = append(out, StageSummary{Stage: st, Text: strings.Join(parts, "; ")})
	}
	return out
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
		for _, n := range []string{"rejected", "unpaired", "unanswered", "units_clamped", "decoder_errors"} {
			if v[n] != 0 {
				s += fmt.Sprintf(", %d %s", v[n], strings.ReplaceAll(n, "_", " "))
			}
		}
		parts = append(parts, s)
	}
	return parts
}
