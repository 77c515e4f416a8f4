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
	// Confidence is the probability of the link that placed the message.
	Confidence float64
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

// exportRequests returns the requests to export: with a trace and
// instances listed in the result, every listed instance with its measured
// times and what the trace says of its messages; otherwise each pattern's
// mean instance. At most top patterns are used (0 = all).
func exportRequests(res *causal.Result, t *trace.Trace, top int) ([]request, error) {
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
