package report

import (
	"fmt"
	"math"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

// noNS marks a time nobody observed in a reqMsg.
const noNS = math.MinInt64

// request is one request as the exports see it: the tree of its messages
// with the call each belongs to, built from a pattern's instance. Its shape
// is that of the requests an engine assembles itself (causal.Request of
// result version 3, the assembly engine's), so that those export alike.
type request struct {
	// Engine is the engine that found it.
	Engine string
	// ID numbers the request within its result: the engine's request id,
	// or the position of the instance among the exported ones.
	ID int
	// Pattern is the rank of the pattern it is an instance of, 0 for none;
	// Signature is that pattern's signature.
	Pattern   int
	Signature string
	// Instance is the index in the pattern's instances, -1 for the
	// pattern's mean instance, which has no messages of the trace.
	Instance int
	// Confidence is the request's probability (an instance's p, the
	// product of a request's link confidences).
	Confidence float64
	// Own is set for a request the engine assembled itself
	// (causal.Result.Requests): ID is its id, Instance is -1, and Pattern
	// is the rank of the pattern its root's instance went to (0 when the
	// result lists no instances).
	Own bool
	// Background marks an engine's tree of calls no request made.
	Background bool
	// RootID, when HasRootID, is the id ExportOptions.RootIDs gave the
	// first seen message of an engine's own request: it names the
	// request's trace instead of ID.
	RootID    int64
	HasRootID bool
	// Msgs are the messages, parents before children; Msgs[0] is the root.
	Msgs []reqMsg
}

// reqMsg is one message of a request.
type reqMsg struct {
	// Msg is the index in the trace, -1 when unseen or for a mean instance.
	Msg int
	// Parent, Call and CallParent index Msgs as in causal.RequestMessage:
	// the message whose arrival caused this one (-1 for the root), the
	// CALL of the call this message belongs to (itself for a CALL or a
	// message of unknown kind), and the CALL of the call the caller was
	// serving when it made this message's call (-1 at the top).
	Parent, Call, CallParent int
	Kind                     string
	From, To                 string
	// Src and Dst are the endpoints ("10.0.0.1:80"), "" when unknown.
	Src, Dst string
	Proto    string
	Label    string
	// Confidence is the probability of the link that placed the message;
	// Evidence, for an engine's own request, what decided that link
	// (causal.RequestMessage.Evidence).
	Confidence float64
	Evidence   string
	// Send and Recv are ns since the epoch on the reference clock, noNS
	// when not seen.
	Send, Recv int64
	Bytes      int64
	// Untraced is set when the sender's or receiver's side was not seen.
	Untraced bool
}

// start is the message's earliest known time (its send, else its receipt).
func (m *reqMsg) start() int64 {
	if m.Send != noNS {
		return m.Send
	}
	return m.Recv
}

// end is the message's arrival (its receipt, else its send).
func (m *reqMsg) end() int64 {
	if m.Recv != noNS {
		return m.Recv
	}
	return m.Send
}

// Latency is the request's latency: from the root's send to the last
// arrival of its messages, in µs.
func (r *request) Latency() float64 {
	if len(r.Msgs) == 0 {
		return 0
	}
	s, e := r.Msgs[0].start(), int64(noNS)
	for i := range r.Msgs {
		if t := r.Msgs[i].end(); t != noNS && t > e {
			e = t
		}
	}
	if s == noNS || e == noNS || e < s {
		return 0
	}
	return float64(e-s) / 1e3
}

// Start is the root's send, ns since the epoch (noNS when not seen).
func (r *request) Start() int64 {
	if len(r.Msgs) == 0 {
		return noNS
	}
	return r.Msgs[0].start()
}

// Label is the root message's label.
func (r *request) Label() string {
	if len(r.Msgs) == 0 {
		return ""
	}
	return r.Msgs[0].Label
}

// exportRequests returns the requests to export: with a trace, the
// requests the engine assembled itself (Result.Requests, the assembly
// engine's) when the result has them; else, with a trace and instances
// listed in the result, every listed instance with its measured
// times and what the trace says of its messages; otherwise each pattern's
// mean instance. At most top patterns are used (0 = all).
func exportRequests(res *causal.Result, t *trace.Trace, top int) ([]request, error) {
	if t != nil && len(res.Requests) > 0 {
		return ownRequests(res, t, top)
	}
	insts, err := exportInstances(res, t, top)
	if err != nil {
		return nil, err
	}
	out := make([]request, 0, len(insts))
	for i := range insts {
		in := &insts[i]
		r := request{Engine: res.Engine, ID: i, Pattern: in.P.Rank, Signature: in.P.Signature, Instance: in.Index, Confidence: in.Prob}
		r.Msgs = patternMsgs(in.P, in.Prob)
		if in.Index >= 0 {
			if err := fillFromTrace(r.Msgs, in.P.Instances[in.Index].Messages, t); err != nil {
				return nil, fmt.Errorf("pattern #%d instance %d: %w", in.P.Rank, in.Index, err)
			}
		} else {
			fillFromTimeline(r.Msgs, in)
		}
		out = append(out, r)
	}
	return out, nil
}

// patternMsgs returns the messages of an instance of p, one per hop, with
// their calls: a RETURN belongs to the CALL it answers (pairReturns), and
// a call's parent call is the one its caller was serving.
func patternMsgs(p *causal.Pattern, prob float64) []reqMsg {
	pair := pairReturns(p)
	ms := make([]reqMsg, len(p.Hops))
	for i := range p.Hops {
		h := &p.Hops[i]
		m := &ms[i]
		*m = reqMsg{Msg: -1, Parent: -1, Call: i, CallParent: -1, Kind: h.Kind, From: h.From, To: h.To,
			Dst: h.ToEndpoint, Confidence: prob, Send: noNS, Recv: noNS}
		if h.Parent != nil {
			m.Parent = *h.Parent
		}
		if h.Kind == "RETURN" && pair[i] >= 0 {
			m.Call = pair[i]
			continue
		}
		m.CallParent = servingCall(p, pair, i)
	}
	return ms
}

// servingCall returns the hop that entered the sender of hop h in the call
// it was serving when it sent h (a CALL or a hop of unknown kind), -1 when
// the sender is the path's initiator.
func servingCall(p *causal.Pattern, pair []int, h int) int {
	from := p.Hops[h].From
	for a := p.Hops[h].Parent; a != nil; a = p.Hops[*a].Parent {
		g := &p.Hops[*a]
		if g.To != from {
			continue
		}
		if g.Kind == "RETURN" && pair[g.ID] >= 0 {
			// Back from a callee: the sender serves what it served when
			// it made that call.
			return servingCall(p, pair, pair[g.ID])
		}
		if g.Kind != "RETURN" {
			return g.ID
		}
	}
	return -1
}

// fillFromTrace sets the messages' trace indices, times (on the reference
// clock: the trace's timestamps less their nodes' clock offsets),
// endpoints, protocol, label and size from the trace.
func fillFromTrace(ms []reqMsg, idx []int, t *trace.Trace) error {
	if len(idx) != len(ms) {
		return fmt.Errorf("%d messages for %d hops", len(idx), len(ms))
	}
	off := func(s trace.Sym) int64 {
		o, _ := t.Meta.OffsetOf(t.Str(s))
		return o
	}
	for i, mi := range idx {
		m := &ms[i]
		if mi < 0 {
			// A message no capture saw (a request's unseen reply): its
			// ends are its call's, the other way round.
			m.Msg, m.Untraced = -1, true
			if c := m.Call; c >= 0 && c < i && m.From == "" {
				m.From, m.To, m.Src, m.Dst = ms[c].To, ms[c].From, ms[c].Dst, ms[c].Src
			}
			continue
		}
		if mi >= len(t.Messages) {
			return fmt.Errorf("%w: message %d is outside it", ErrTraceMismatch, mi)
		}
		tm := &t.Messages[mi]
		m.Msg = mi
		if m.From == "" && m.To == "" {
			m.From, m.To = t.Str(tm.SrcNode), t.Str(tm.DstNode)
		}
		if tm.SendTS.Known() {
			m.Send = int64(tm.SendTS) - off(tm.SrcNode)
		}
		if tm.RecvTS.Known() {
			m.Recv = int64(tm.RecvTS) - off(tm.DstNode)
		}
		m.Untraced = !tm.SendTS.Known() || !tm.RecvTS.Known()
		m.Src, m.Dst = t.Str(tm.Src), t.Str(tm.Dst)
		if tm.Proto != trace.ProtoUnknown {
			m.Proto = tm.Proto.String()
		}
		m.Label = t.Str(tm.Label)
		m.Bytes = tm.Bytes
	}
	return nil
}

// fillFromTimeline sets the times of a mean instance's messages from its
// timeline: µs from the root's send, made absolute by in.BaseNS.
func fillFromTimeline(ms []reqMsg, in *pathInstance) {
	ns := func(us float64) int64 { return in.BaseNS + int64(math.Round(us*1e3)) }
	for i := range ms {
		ht := in.TL.Hops[i]
		ms[i].Send = ns(ht.send)
		ms[i].Recv = ns(ht.arrive())
		ms[i].Untraced = !ht.netKnown
		ms[i].Bytes = int64(math.Round(ht.bytes))
	}
}

// ownRequests returns the requests the engine assembled (res.Requests),
// timed, placed and labelled from the trace t, each link with its own
// confidence and evidence. With top > 0, a request whose pattern is known
// (the result lists instances) is kept only when that pattern is among
// the top ones.
func ownRequests(res *causal.Result, t *trace.Trace, top int) ([]request, error) {
	if len(t.Messages) != res.Trace.Messages {
		return nil, fmt.Errorf("%w: it has %d messages, the result's had %d", ErrTraceMismatch, len(t.Messages), res.Trace.Messages)
	}
	rank, byRank := instanceRanks(res)
	out := make([]request, 0, len(res.Requests))
	var idx []int
	for k := range res.Requests {
		q := &res.Requests[k]
		r := request{Engine: res.Engine, ID: q.ID, Instance: -1, Confidence: q.Confidence, Own: true, Background: q.Background}
		idx = idx[:0]
		first := -1
		for _, m := range q.Messages {
			if first < 0 && m.Msg >= 0 {
				first = m.Msg
			}
			idx = append(idx, m.Msg)
		}
		// The instance the engine made of the request starts at its first
		// seen message.
		r.Pattern = rank[first]
		if top > 0 && r.Pattern > top {
			continue
		}
		r.Msgs = make([]reqMsg, len(q.Messages))
		for i, m := range q.Messages {
			r.Msgs[i] = reqMsg{Msg: m.Msg, Parent: m.Parent, Call: m.Call, CallParent: m.CallParent, Kind: m.Kind,
				Label: m.Label, Confidence: m.Confidence, Evidence: m.Evidence, Send: noNS, Recv: noNS}
		}
		if err := fillFromTrace(r.Msgs, idx, t); err != nil {
			return nil, fmt.Errorf("request %d: %w", q.ID, err)
		}
		unseenCalls(r.Msgs)
		if p := byRank[r.Pattern]; p != nil {
			r.Signature = p.Signature
		}
		out = append(out, r)
	}
	return out, nil
}

// instanceRanks maps the first message of every listed instance to its
// pattern's rank, and every rank to its pattern.
func instanceRanks(res *causal.Result) (map[int]int, map[int]*causal.Pattern) {
	rank := map[int]int{}
	byRank := map[int]*causal.Pattern{}
	for i := range res.Patterns {
		p := &res.Patterns[i]
		byRank[p.Rank] = p
		for _, in := range p.Instances {
			if len(in.Messages) > 0 && in.Messages[0] >= 0 {
				rank[in.Messages[0]] = p.Rank
			}
		}
	}
	return rank, byRank
}

// unseenCalls gives an unseen CALL whose RETURN was seen that RETURN's
// ends, the other way round (fillFromTrace takes an unseen RETURN's from
// its CALL).
func unseenCalls(ms []reqMsg) {
	for i := range ms {
		r := &ms[i]
		c := r.Call
		if r.Msg < 0 || c < 0 || c >= len(ms) || c == i || ms[c].Msg >= 0 || ms[c].From != "" {
			continue
		}
		ms[c].From, ms[c].To, ms[c].Src, ms[c].Dst = r.To, r.From, r.Dst, r.Src
	}
}
