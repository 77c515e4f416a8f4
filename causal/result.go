package causal

import (
	"context"

	"github.com/wirepath/wirepath/trace"
)

// ResultVersion is the version of the result schema (DESIGN.md, "Result
// contract"). It changes only with a note in docs/formats.md. Version 3
// adds the requests (Result.Requests); version 2 keys Params by the engine
// commands' flag names; readers of results also read versions 1 and 2.
const ResultVersion = 3

// Engine is a causal path inference engine.
type Engine interface {
	// Name is the engine's name as the CLI and the result use it.
	Name() string
	// Infer finds the path patterns of the trace ms (a *trace.Trace or a
	// *trace.Table). It does not modify ms.
	Infer(ctx context.Context, ms trace.Messages) (*Result, error)
}

// Result is what every engine returns; it marshals to the documented JSON
// result contract.
type Result struct {
	Version int    `json:"version"`
	Engine  string `json:"engine"`
	// Params are the engine parameters the run used, keyed by the names of
	// the engine command's flags (the options' Params methods).
	Params   map[string]any `json:"params,omitempty"`
	Trace    TraceSummary   `json:"trace"`
	Patterns []Pattern      `json:"patterns"`
	// Requests lists, for engines that assemble them (assembly), every
	// request's tree of messages, and the trees of the calls no request
	// made (Background).
	Requests []Request `json:"requests,omitempty"`
	// Accounting holds the engine's own counters (messages in, linked,
	// spontaneous, discarded by reason, instances, patterns, ...).
	Accounting []trace.Count `json:"accounting,omitempty"`
	Warnings   []string      `json:"warnings,omitempty"`
	// RequestTypes gathers the patterns' instances by request label
	// (Pattern.Label), with their count and latency, leaving out the
	// background trees (work no request caused: Request.Background);
	// absent when the trace has no labels or the engine lists no
	// instances (convolution).
	RequestTypes []RequestType `json:"request_types,omitempty"`
}

// TraceSummary describes the trace a result was inferred from.
type TraceSummary struct {
	Source   string         `json:"source,omitempty"`
	Messages int            `json:"messages"`
	Nodes    int            `json:"nodes"`
	StartNS  int64          `json:"start_ns"`
	EndNS    int64          `json:"end_ns"`
	Offsets  []trace.Offset `json:"clock_offsets,omitempty"`
	// Clocks are the offsets of the clocks the timestamps were taken on
	// (each sniffer's, each syscall-traced host's), from which Offsets
	// derive.
	Clocks  []trace.Clock `json:"clocks,omitempty"`
	Aliases []trace.Alias `json:"aliases,omitempty"`
	// Accounting carries the counters of the stages that produced the trace.
	Accounting []trace.Count `json:"accounting,omitempty"`
	Warnings   []string      `json:"warnings,omitempty"`
	// Links are the network between the nodes as the captures showed it
	// (the trace's Meta.Links): what the what-if model reads.
	Links []trace.Link `json:"links,omitempty"`
}

// Pattern is one aggregated causal path: a tree of hops.
type Pattern struct {
	Rank      int    `json:"rank"`
	Signature string `json:"signature"`
	// Count is the raw number of instances.
	Count int `json:"count"`
	// Expected is the sum of the instances' probabilities.
	Expected       float64 `json:"expected"`
	MaxProbability float64 `json:"max_probability"`
	// Label names the pattern's request type: its root call's label and
	// the class of the reply's ("GET /item/{id} 2xx", "redis GET", "SELECT
	// users"), the most frequent over its instances; LabelCount is how
	// many instances carried it. Absent when the trace has no labels.
	Label      string `json:"label,omitempty"`
	LabelCount int    `json:"label_count,omitempty"`
	// Latency is the time from the root's send to the last event of an
	// instance, in microseconds.
	Latency *Dist `json:"latency_us,omitempty"`
	// Hops are the messages of the pattern, parents before children.
	Hops []Hop `json:"hops"`
	// Instances lists, when asked for, the messages of each instance.
	Instances []InstanceRecord `json:"instances,omitempty"`
}

// Hop is one message of a pattern.
type Hop struct {
	ID int `json:"id"`
	// Parent is the ID of the hop that caused this one, nil for the root.
	Parent *int `json:"parent"`
	// From and To are node names; aggregated clients are "CLIENT".
	From string `json:"from"`
	To   string `json:"to"`
	// ToEndpoint is the receiving endpoint ("*" for an ephemeral port).
	ToEndpoint string `json:"to_endpoint,omitempty"`
	// Kind is CALL, RETURN or "-".
	Kind string `json:"kind"`
	// Label is the message's label most frequent over the pattern's
	// instances ("GET /item/{id}", "200", "redis GET"); absent when none
	// had one.
	Label string `json:"label,omitempty"`
	// Start is the send time relative to the root's send.
	Start *Dist `json:"start_us"`
	// NodeDelay is the time at From between the parent's arrival and this
	// send (one clock). Absent for the root and for untraced senders.
	NodeDelay *Dist `json:"node_delay_us,omitempty"`
	// NetDelay is send-to-receive after clock-offset correction; absent when
	// one end was not seen.
	NetDelay *Dist `json:"net_delay_us,omitempty"`
	// Bytes is the size of the message.
	Bytes *Dist `json:"bytes,omitempty"`
	// Delays lists, for convolution, the causal delays found for this edge
	// (spike positions) ordered by declining frequency.
	Delays []DelayPeak `json:"delays,omitempty"`
}

// DelayPeak is one causal delay and the number of messages that matched it.
type DelayPeak struct {
	DelayUS float64 `json:"delay_us"`
	Count   int     `json:"count"`
	// Score is the height of the correlation spike in standard deviations.
	Score float64 `json:"score,omitempty"`
}

// InstanceRecord names the messages of one path instance by their index in
// the trace, in the order of the pattern's hops, with its probability.
type InstanceRecord struct {
	Messages    []int   `json:"messages"`
	Probability float64 `json:"p"`
}

// Request is one request as an engine assembled it: the tree of its
// messages, each with its index in the trace, the link to the message
// that caused it, the call it belongs to and the evidence that decided
// the link.
type Request struct {
	// ID numbers the requests from 0, in order of their roots' times.
	ID int `json:"id"`
	// Root is the trace index of the request's first message, -1 when
	// that message was not seen.
	Root int `json:"root"`
	// Background marks the trees of calls that no request made (health
	// checks, refreshes): their root call was made by a node that serves
	// requests.
	Background bool `json:"background,omitempty"`
	// Label is the root message's label, when the trace has one.
	Label string `json:"label,omitempty"`
	// Kind names the root call's kind: its label, or its caller, callee
	// and size class.
	Kind string `json:"kind,omitempty"`
	// Latency is the time from the root's send to its reply's arrival, in
	// microseconds (absent when either was not seen).
	Latency *float64 `json:"latency_us,omitempty"`
	// StartNS is when the root call was sent (its reply's arrival when
	// its CALL was not seen), in nanoseconds since the epoch on the
	// trace's reference clock; 0 when unknown.
	StartNS int64 `json:"start_ns,omitempty"`
	// Window is, in the merged result of a windowed run, the index of the
	// window whose trace the request's message indices (Msg, Root, the
	// alternatives' Call) refer to; nil otherwise (they refer to the
	// run's trace).
	Window *int `json:"window,omitempty"`
	// Confidence is the probability that the whole tree is right, as the
	// engine states it (for the assembly engine, docs/causal-assembly.md).
	Confidence float64 `json:"confidence"`
	// Unseen counts the messages of its calls that no capture saw.
	Unseen int `json:"unseen,omitempty"`
	// Messages are the request's messages, parents before children; the
	// first is the root.
	Messages []RequestMessage `json:"messages"`
}

// RequestMessage is one message of a request.
type RequestMessage struct {
	// Msg is the message's index in the trace, -1 for a message of one of
	// the request's calls that was not seen.
	Msg int `json:"msg"`
	// Parent is the index in Messages of the message whose arrival caused
	// this one (the result contract's hop parent), -1 for the root.
	Parent int `json:"parent"`
	// Call is the index in Messages of the CALL of the call the message
	// belongs to (its own index for a CALL).
	Call int `json:"call"`
	// CallParent is the index in Messages of the CALL of the call its
	// caller was serving when it made the message's call, -1 for the
	// root call.
	CallParent int `json:"call_parent"`
	// Kind is CALL, RETURN or "-".
	Kind string `json:"kind"`
	// Label is the message's label, when the trace has one.
	Label string `json:"label,omitempty"`
	// Confidence is the probability of the link that placed the message:
	// for a CALL, that its call belongs to its parent call; for a RETURN,
	// that it answers its CALL.
	Confidence float64 `json:"confidence"`
	// Evidence says what decided the link: "root", "exact-id", "thread",
	// "only-candidate", "joint-timing", "tokens" or "background" for a
	// CALL; "call-id", "stream", "order" or "unseen" for a RETURN.
	Evidence string `json:"evidence"`
	// Alternatives are, for a CALL decided by the joint assignment, the
	// next most probable parent calls.
	Alternatives []Alternative `json:"alternatives,omitempty"`
}

// Alternative is another call a call may have been made for.
type Alternative struct {
	// Call is the trace index of the alternative parent call's CALL
	// message, -1 for none (a background call).
	Call int `json:"call"`
	// Probability is its probability.
	Probability float64 `json:"p"`
}

// RootHop returns the pattern's root hop, or nil for an empty pattern.
func (p *Pattern) RootHop() *Hop {
	if len(p.Hops) == 0 {
		return nil
	}
	return &p.Hops[0]
}

// Summarize describes the trace of the messages ms.
func Summarize(ms trace.Messages) TraceSummary {
	meta := ms.Metadata()
	s := TraceSummary{
		Source:     meta.Source,
		Messages:   ms.Len(),
		Offsets:    meta.Offsets,
		Clocks:     meta.Clocks,
		Aliases:    meta.Aliases,
		Accounting: meta.Accounting,
		Warnings:   meta.Warnings,
		Links:      meta.Links,
		Nodes:      countNodes(ms),
	}
	if first, last, ok := trace.TimeRange(ms); ok {
		s.StartNS, s.EndNS = int64(first), int64(last)
	}
	return s
}

// countNodes returns the number of distinct known nodes that send or
// receive the messages of ms: on a Table, from its few distinct flows.
func countNodes(ms trace.Messages) int {
	nodes := make(map[trace.Sym]struct{})
	if t, ok := ms.(*trace.Table); ok {
		for _, f := range t.Flows() {
			nodes[f.SrcNode] = struct{}{}
			nodes[f.DstNode] = struct{}{}
		}
	} else {
		var m trace.Message
		t, isTrace := ms.(*trace.Trace)
		// A connection's messages come in runs with the same two nodes:
		// a pair met last is not added again.
		last := [2]trace.Sym{0, 0}
		for i := range ms.Len() {
			mp := &m
			if isTrace {
				mp = &t.Messages[i]
			} else {
				ms.Read(i, &m)
			}
			if pair := [2]trace.Sym{mp.SrcNode, mp.DstNode}; pair != last || i == 0 {
				nodes[mp.SrcNode] = struct{}{}
				nodes[mp.DstNode] = struct{}{}
				last = pair
			}
		}
	}
	delete(nodes, 0)
	return len(nodes)
}

// Options are the settings every engine shares: how patterns are named and
// aggregated, and how they are ranked.
type Options struct {
	Aggregate AggregateOptions
	Rank      RankMetric
}

// DefaultOptions names nodes as WAP5 does and ranks by expected count.
func DefaultOptions() Options {
	return Options{Aggregate: AggregateOptions{Naming: DefaultNaming()}, Rank: RankExpected}
}
