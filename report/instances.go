package report

import (
	"errors"
	"fmt"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

// pathInstance is one path to export: a pattern's mean instance, or one
// listed instance with its real times from the trace.
type pathInstance struct {
	P *causal.Pattern
	// Index is the instance's index in P.Instances, -1 for the mean.
	Index int
	// Prob is the instance's probability; for the mean instance, the
	// pattern's average probability (expected ÷ count).
	Prob float64
	// BaseNS is the absolute time of the root's send, ns since the epoch.
	BaseNS int64
	TL     *timeline
}

// ErrTraceMismatch is returned when the trace given for exporting listed
// instances is not the one the result was inferred from.
var ErrTraceMismatch = errors.New("the trace is not the one the result was inferred from")

// exportInstances returns the instances to export: with a trace and
// instances listed in the result, each listed instance with its measured
// times; otherwise each pattern's mean instance. Malformed patterns are
// skipped. At most top patterns are used (0 = all).
func exportInstances(res *causal.Result, t *trace.Trace, top int) ([]pathInstance, error) {
	if t != nil && len(t.Messages) != res.Trace.Messages {
		return nil, fmt.Errorf("%w: it has %d messages, the result's had %d", ErrTraceMismatch, len(t.Messages), res.Trace.Messages)
	}
	n := len(res.Patterns)
	if top > 0 && top < n {
		n = top
	}
	var out []pathInstance
	for i := 0; i < n; i++ {
		p := &res.Patterns[i]
		if !p.WellFormed() {
			continue
		}
		if t != nil && len(p.Instances) > 0 {
			for k, rec := range p.Instances {
				ht, base, err := instanceTimes(p, rec, t)
				if err != nil {
					return nil, fmt.Errorf("pattern #%d instance %d: %w", p.Rank, k, err)
				}
				out = append(out, pathInstance{P: p, Index: k, Prob: rec.Probability, BaseNS: base, TL: buildTimeline(p, ht)})
			}
			continue
		}
		prob := 0.0
		if p.Count > 0 {
			prob = p.Expected / float64(p.Count)
		}
		out = append(out, pathInstance{P: p, Index: -1, Prob: prob, BaseNS: res.Trace.StartNS, TL: buildTimeline(p, meanTimes(p))})
	}
	return out, nil
}

// instanceTimes returns the hop times of one listed instance, from the
// trace's timestamps corrected by its clock offsets, and the absolute
// time of the root's send.
func instanceTimes(p *causal.Pattern, rec causal.InstanceRecord, t *trace.Trace) ([]hopTimes, int64, error) {
	if len(rec.Messages) != len(p.Hops) {
		return nil, 0, fmt.Errorf("%d messages for %d hops", len(rec.Messages), len(p.Hops))
	}
	msgs := make([]*trace.Message, len(rec.Messages))
	for i, mi := range rec.Messages {
		if mi < 0 || mi >= len(t.Messages) {
			return nil, 0, fmt.Errorf("%w: message %d is outside it", ErrTraceMismatch, mi)
		}
		msgs[i] = &t.Messages[mi]
	}
	off := func(s trace.Sym) int64 {
		o, _ := t.Meta.OffsetOf(t.Str(s))
		return o
	}
	send := func(m *trace.Message) (int64, bool) {
		if m.SendTS.Known() {
			return int64(m.SendTS) - off(m.SrcNode), true
		}
		if m.RecvTS.Known() {
			return int64(m.RecvTS) - off(m.DstNode), true
		}
		return 0, false
	}
	base, ok := send(msgs[0])
	if !ok {
		return nil, 0, fmt.Errorf("root message %d has no timestamp", rec.Messages[0])
	}
	ht := make([]hopTimes, len(msgs))
	for i, m := range msgs {
		s, ok := send(m)
		if !ok {
			return nil, 0, fmt.Errorf("message %d has no timestamp", rec.Messages[i])
		}
		ht[i].send = float64(s-base) / 1e3
		if m.SendTS.Known() && m.RecvTS.Known() && m.SendTS != m.RecvTS {
			ht[i].net = float64((int64(m.RecvTS)-off(m.DstNode))-(int64(m.SendTS)-off(m.SrcNode))) / 1e3
			ht[i].netKnown = true
		}
		if par := p.Hops[i].Parent; par != nil {
			pm := msgs[*par]
			if m.SendTS.Known() && pm.RecvTS.Known() {
				ht[i].node = float64(m.SendTS-pm.RecvTS) / 1e3
				ht[i].nodeKnown = true
			}
		}
		ht[i].bytes = float64(m.Bytes)
	}
	return ht, base, nil
}
