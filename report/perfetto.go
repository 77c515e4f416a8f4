package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/wirepath/wirepath/causal"
)

// traceEvent is one event of the Chrome trace-event format (the JSON that
// chrome://tracing and the Perfetto UI load).
type traceEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	TS   *float64       `json:"ts,omitempty"`
	Dur  *float64       `json:"dur,omitempty"`
	PID  int            `json:"pid"`
	TID  int            `json:"tid"`
	ID   string         `json:"id,omitempty"`
	BP   string         `json:"bp,omitempty"`
	Args map[string]any `json:"args,omitempty"`
}

type traceEventDoc struct {
	TraceEvents     []traceEvent   `json:"traceEvents"`
	DisplayTimeUnit string         `json:"displayTimeUnit"`
	OtherData       map[string]any `json:"otherData,omitempty"`
}

func f64(v float64) *float64 { return &v }

// WritePerfetto writes res in the Chrome trace-event JSON format, which
// Perfetto and chrome://tracing load: a process per pattern, a thread per
// node (more when visits of a node overlap), a complete ("X") slice per node
// visit with its delays, a slice per path instance on the "path" thread,
// and a flow arrow per message from the sending visit to the receiving one.
// Times are µs: from the root's send for mean instances, from the start of
// the trace for listed instances (ExportOptions.Trace).
func WritePerfetto(w io.Writer, res *causal.Result, opt ExportOptions) error {
	return writePerfetto(w, []*causal.Result{res}, opt)
}

// writePerfetto writes one trace-event document. With several results (one
// run, several engines) the processes of engine i have ids from
// (i+1)·PerfettoPIDStride and names starting with the engine's name.
func writePerfetto(w io.Writer, rs []*causal.Result, opt ExportOptions) error {
	doc := traceEventDoc{DisplayTimeUnit: "ns", OtherData: map[string]any{"engine": rs[0].Engine, "result_version": rs[0].Version, "generator": "wirepath"}}
	if len(rs) > 1 {
		names := make([]string, len(rs))
		for i, r := range rs {
			names[i] = r.Engine
		}
		doc.OtherData["engine"] = strings.Join(names, ",")
	}
	flow := 0
	for i, res := range rs {
		base, prefix := 0, ""
		if len(rs) > 1 {
			base, prefix = (i+1)*PerfettoPIDStride, res.Engine+" "
		}
		if err := appendPerfetto(&doc, res, opt, base, prefix, &flow); err != nil {
			return err
		}
	}
	if doc.TraceEvents == nil {
		doc.TraceEvents = []traceEvent{}
	}
	if d := shiftNonNegative(&doc); d > 0 {
		doc.OtherData["ts_shift_us"] = d
	}
	return json.NewEncoder(w).Encode(&doc)
}

// PerfettoPIDStride separates the process ids of the engines in a
// trace-event document of several results: pattern r of the i-th engine
// (from 0) is process (i+1)·PerfettoPIDStride + r.
const PerfettoPIDStride = 1_000_000

// appendPerfetto adds res's events to doc: pattern r is process base+r,
// named with prefix; flow numbers the flow arrows across calls.
func appendPerfetto(doc *traceEventDoc, res *causal.Result, opt ExportOptions, base int, prefix string, flow *int) error {
	insts, err := exportInstances(res, opt.Trace, opt.Top)
	if err != nil {
		return err
	}
	tidOf := map[[2]int]int{} // (inst, visit) -> tid, with the pid implied
	nextTID := map[int]int{}
	named := map[int]bool{}
	for ii := range insts {
		in := &insts[ii]
		pid := base + in.P.Rank
		if !named[pid] {
			named[pid] = true
			doc.TraceEvents = append(doc.TraceEvents,
				traceEvent{Name: "process_name", Ph: "M", PID: pid, Args: map[string]any{"name": fmt.Sprintf("%s#%d %s", prefix, in.P.Rank, in.P.Signature)}},
				traceEvent{Name: "process_sort_index", Ph: "M", PID: pid, Args: map[string]any{"sort_index": pid}},
			)
			nextTID[pid] = 1
		}
		shift := 0.0
		if in.Index >= 0 {
			shift = float64(in.BaseNS-res.Trace.StartNS) / 1e3
		}
		name := fmt.Sprintf("#%d mean instance", in.P.Rank)
		if in.Index >= 0 {
			name = fmt.Sprintf("#%d instance %d", in.P.Rank, in.Index)
		}
		// The instance's slices, on tracks of its own: the path slice,
		// then every visit, each on the first of the instance's tracks
		// where it nests.
		slots := []perfettoSlot{{visit: -1, start: shift, end: shift + math.Max(in.TL.Total, 0)}}
		for vi := range in.TL.Visits {
			s, e := visitSpan(in.TL, vi)
			slots = append(slots, perfettoSlot{visit: vi, start: s + shift, end: e + shift})
		}
		tids := packTracks(slots, func(n int) int {
			tid := nextTID[pid]
			nextTID[pid]++
			tn := name
			if n > 0 {
				tn = fmt.Sprintf("%s (%d)", name, n+1)
			}
			doc.TraceEvents = append(doc.TraceEvents,
				traceEvent{Name: "thread_name", Ph: "M", PID: pid, TID: tid, Args: map[string]any{"name": tn}},
				traceEvent{Name: "thread_sort_index", Ph: "M", PID: pid, TID: tid, Args: map[string]any{"sort_index": tid}})
			return tid
		})
		for k, sl := range slots {
			if sl.visit < 0 {
				args := map[string]any{"pattern": in.P.Rank, "signature": in.P.Signature, "probability": in.Prob, "latency_us": in.TL.Total}
				if in.Index >= 0 {
					args["instance"] = in.Index
				}
				doc.TraceEvents = append(doc.TraceEvents, traceEvent{Name: name, Cat: "path", Ph: "X", TS: f64(sl.start), Dur: f64(sl.end - sl.start), PID: pid, TID: tids[k], Args: args})
				continue
			}
			tidOf[[2]int{ii, sl.visit}] = tids[k]
			doc.TraceEvents = append(doc.TraceEvents, visitEvent(in, sl, pid, tids[k]))
		}
	}
	// Flow arrows, one per message.
	for ii := range insts {
		in := &insts[ii]
		shift := 0.0
		if in.Index >= 0 {
			shift = float64(in.BaseNS-res.Trace.StartNS) / 1e3
		}
		for h := range in.P.Hops {
			*flow++
			ht := in.TL.Hops[h]
			sv, rv := in.TL.Sender[h], in.TL.Recv[h]
			rs, _ := visitSpan(in.TL, rv)
			name := in.P.Hops[h].From + " → " + hopTarget(&in.P.Hops[h])
			id := fmt.Sprintf("%d", *flow)
			doc.TraceEvents = append(doc.TraceEvents,
				traceEvent{Name: name, Cat: "message", Ph: "s", TS: f64(ht.send + shift), PID: base + in.P.Rank, TID: tidOf[[2]int{ii, sv}], ID: id},
				traceEvent{Name: name, Cat: "message", Ph: "f", BP: "e", TS: f64(math.Max(rs, ht.send) + shift), PID: base + in.P.Rank, TID: tidOf[[2]int{ii, rv}], ID: id},
			)
		}
	}
	return nil
}

// visitSpan is the slice a visit occupies: from its start to its end,
// widened to cover every send it makes (mean times need not be ordered).
func visitSpan(tl *timeline, vi int) (start, end float64) {
	v := &tl.Visits[vi]
	start, end = v.Start, v.End
	for _, h := range v.Sends {
		start = math.Min(start, tl.Hops[h].send)
		end = math.Max(end, tl.Hops[h].send)
	}
	return start, math.Max(end, start)
}

// perfettoSlot is one slice of an instance: its path slice (visit -1) or
// a visit, µs on the document's time line.
type perfettoSlot struct {
	visit      int
	start, end float64
}

// packTracks assigns the slots of one instance to tracks so that the
// slices of a track nest (the trace-event format draws nothing else
// right): each slot goes to the first track where it fits inside the
// slice still open there, or where nothing is open; newTrack makes the
// n-th track (from 0) and returns its thread id. It returns the thread id
// of each slot, in the order of slots; slots are sorted in place by start,
// longest first.
func packTracks(slots []perfettoSlot, newTrack func(n int) int) []int {
	slices.SortStableFunc(slots, func(a, b perfettoSlot) int {
		if c := cmpF(a.start, b.start); c != 0 {
			return c
		}
		return cmpF(b.end, a.end)
	})
	const eps = 1e-6
	type track struct {
		tid  int
		open []float64 // ends of the slices open on it, innermost last
	}
	var tracks []track
	out := make([]int, len(slots))
	for k, s := range slots {
		ti := -1
		for i := range tracks {
			t := &tracks[i]
			for len(t.open) > 0 && t.open[len(t.open)-1] <= s.start && !(s.end == s.start && t.open[len(t.open)-1] == s.start) {
				t.open = t.open[:len(t.open)-1]
			}
			if len(t.open) == 0 || s.end <= t.open[len(t.open)-1]+eps {
				ti = i
				break
			}
		}
		if ti < 0 {
			tracks = append(tracks, track{tid: newTrack(len(tracks))})
			ti = len(tracks) - 1
		}
		tracks[ti].open = append(tracks[ti].open, s.end)
		out[k] = tracks[ti].tid
	}
	return out
}

// visitEvent is the slice of one visit of an instance, with its delays.
func visitEvent(in *pathInstance, sl perfettoSlot, pid, tid int) traceEvent {
	v := &in.TL.Visits[sl.visit]
	args := map[string]any{"node": v.Node, "untraced": v.Untraced, "pattern": in.P.Rank}
	if in.Index >= 0 {
		args["instance"] = in.Index
	}
	if v.In >= 0 {
		h := &in.P.Hops[v.In]
		args["hop"] = v.In
		args["from"] = h.From
		args["kind"] = h.Kind
		if ht := in.TL.Hops[v.In]; ht.netKnown {
			args["net_delay_us"] = ht.net
		}
	}
	switch {
	case v.Untraced && !v.Unseen && v.In >= 0:
		args["combined_delay_us"] = v.End - v.Start
	case len(v.Sends) > 0 && v.In >= 0:
		args["node_delay_us"] = v.Delay
	}
	return traceEvent{Name: v.Node, Cat: "visit", Ph: "X", TS: f64(sl.start), Dur: f64(sl.end - sl.start), PID: pid, TID: tid, Args: args}
}

// shiftNonNegative moves every event of doc later by the same amount so
// that none has a negative ts (mean times and clock corrections can put an
// event before the time line's origin), and returns the amount in µs.
func shiftNonNegative(doc *traceEventDoc) float64 {
	lo := 0.0
	for i := range doc.TraceEvents {
		if ts := doc.TraceEvents[i].TS; ts != nil && *ts < lo {
			lo = *ts
		}
	}
	if lo == 0 {
		return 0
	}
	for i := range doc.TraceEvents {
		if ts := doc.TraceEvents[i].TS; ts != nil {
			*ts -= lo
		}
	}
	return -lo
}
