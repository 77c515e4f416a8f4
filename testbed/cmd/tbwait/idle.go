package main

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/wirepath/wirepath/trace"
)

// segment is one stretch of a node's work in the capture: a message
// arrives and the node's next event is a send. Idle is the time from the
// node's previous event (a send or an arrival) to the arrival: how long
// it had nothing to do, whether it waited on a call of its own or for
// work (ms).
type segment struct {
	key       string // node|what arrived|what left
	node      string
	idle, dur float64
	on        bool
}

// nodeEvent is a message's send or arrival at one node.
type nodeEvent struct {
	t    int64
	send bool
	desc string // kind, peer and (arrivals) label
}

// segments lists trace tr's work segments whose arrival is at least
// warmup after the trace's first send, each with its window (odd windows
// of toggle ns: with the change).
func segments(tr *trace.Trace, toggle, warmup int64) []segment {
	evs := map[string][]nodeEvent{}
	first := int64(-1)
	for i := range tr.Messages {
		m := &tr.Messages[i]
		if !m.SendTS.Known() || !m.RecvTS.Known() {
			continue
		}
		src, dst := tr.Str(m.SrcNode), tr.Str(m.DstNode)
		evs[src] = append(evs[src], nodeEvent{int64(m.SendTS), true, m.Kind.String() + " " + dst})
		evs[dst] = append(evs[dst], nodeEvent{int64(m.RecvTS), false, m.Kind.String() + " " + src + " " + tr.Str(m.Label)})
		if first < 0 || int64(m.SendTS) < first {
			first = int64(m.SendTS)
		}
	}
	var out []segment
	for _, node := range slices.Sorted(maps.Keys(evs)) {
		es := evs[node]
		slices.SortStableFunc(es, func(a, b nodeEvent) int { return cmp.Compare(a.t, b.t) })
		for i := 1; i+1 < len(es); i++ {
			e, next := es[i], es[i+1]
			if e.send || !next.send || e.t-first < warmup {
				continue
			}
			out = append(out, segment{key: node + "|" + e.desc + "|" + next.desc, node: node,
				idle: ms1(e.t - es[i-1].t), dur: ms1(next.t - e.t), on: (e.t/toggle)%2 == 1})
		}
	}
	return out
}

// idleGrowth is, per node, the change (with less without, summed over
// its segments made with the change, ms) of its segments' time: measured,
// and foretold by each segment kind's line in log10 of the idle time
// fitted in the windows without; and the segments counted.
type idleGrowth struct {
	n                   int
	measured, predicted float64
}

// idleByNode fits each segment key with at least minN segments in both
// windows and sums the changes per node.
func idleByNode(segs []segment, minN int) map[string]*idleGrowth {
	byKey := map[string]*group{}
	for _, s := range segs {
		g := byKey[s.key]
		if g == nil {
			g = &group{node: s.node}
			byKey[s.key] = g
		}
		i := boolIndex(s.on)
		g.wait[i] = append(g.wait[i], s.idle)
		g.post[i] = append(g.post[i], s.dur)
	}
	out := map[string]*idleGrowth{}
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		g := byKey[k]
		gr, ok := grow(g, minN)
		if !ok {
			continue
		}
		n := out[g.node]
		if n == nil {
			n = &idleGrowth{}
			out[g.node] = n
		}
		n.n += gr.n[1]
		n.measured += float64(gr.n[1]) * gr.measured
		n.predicted += float64(gr.n[1]) * gr.predicted
	}
	return out
}

// writeIdle prints idleByNode's table: per node the mean change per
// segment made with the change, measured and foretold.
func writeIdle(w io.Writer, segs []segment, minN int) {
	nodes := idleByNode(segs, minN)
	fmt.Fprintln(w, "| node | segments with | segment time Δ µs | from the idle time's line in the windows without µs |")
	fmt.Fprintln(w, "|---|---:|---:|---:|")
	for _, n := range slices.Sorted(maps.Keys(nodes)) {
		g := nodes[n]
		fmt.Fprintf(w, "| %s | %d | %+.0f | %+.0f |\n", n, g.n, 1e3*g.measured/float64(g.n), 1e3*g.predicted/float64(g.n))
	}
	fmt.Fprintln(w, "\n(a segment: a message arrives and the node's next event is a send; idle: from the node's previous event to the arrival; per kind of segment, the time fitted as a line in log10 of the idle time)")
}
