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
	type laneKey struct {
		pid  int
		node string
	}
	type lane struct {
		tid int
		end float64
	}
	lanes := map[laneKey][]lane{}
	nextTID := map[int]int{}
	named := map[int]bool{}
	type slot struct {
		in    int // index in insts
		visit int
		start float64
		end   float64
	}
	// Group instances by pattern (one process each), visits in time order.
	byPID := map[int][]slot{}
	var pids []int
	for ii := range insts {
		in := &insts[ii]
		pid := base + in.P.Rank
		if !named[pid] {
			named[pid] = true
			pids = append(pids, pid)
			doc.TraceEvents = append(doc.TraceEvents,
				traceEvent{Name: "process_name", Ph: "M", PID: pid, Args: map[string]any{"name": fmt.Sprintf("%s#%d %s", prefix, in.P.Rank, in.P.Signature)}},
				traceEvent{Name: "process_sort_index", Ph: "M", PID: pid, Args: map[string]any{"sort_index": pid}},
				traceEvent{Name: "thread_name", Ph: "M", PID: pid, TID: 0, Args: map[string]any{"name": "path"}},
			)
			nextTID[pid] = 1
		}
		shift := 0.0
		if in.Index >= 0 {
			shift = float64(in.BaseNS-res.Trace.StartNS) / 1e3
		}
		for vi := range in.TL.Visits {
			s, e := visitSpan(in.TL, vi)
			byPID[pid] = append(byPID[pid], slot{ii, vi, s + shift, e + shift})
		}
		args := map[string]any{"pattern": in.P.Rank, "signature": in.P.Signature, "probability": in.Prob, "latency_us": in.TL.Total}
		name := fmt.Sprintf("#%d mean instance", in.P.Rank)
		if in.Index >= 0 {
			name = fmt.Sprintf("#%d instance %d", in.P.Rank, in.Index)
			args["instance"] = in.Index
		}
		doc.TraceEvents = append(doc.TraceEvents, traceEvent{Name: name, Cat: "path", Ph: "X", TS: f64(shift), Dur: f64(in.TL.Total), PID: pid, TID: 0, Args: args})
	}
	tidOf := map[[3]int]int{} // (inst, visit) -> tid, with the pid implied
	for _, pid := range pids {
		slots := byPID[pid]
		slices.SortStableFunc(slots, func(a, b slot) int {
			if c := cmpF(a.start, b.start); c != 0 {
				return c
			}
			return cmpF(b.end, a.end)
		})
		for _, s := range slots {
			in := &insts[s.in]
			v := &in.TL.Visits[s.visit]
			k := laneKey{pid, v.Node}
			li := -1
			for i, l := range lanes[k] {
				if s.start >= l.end {
					li = i
					break
				}
			}
			if li < 0 {
				tid := nextTID[pid]
				nextTID[pid]++
				name := v.Node
				if n := len(lanes[k]); n > 0 {
					name = fmt.Sprintf("%s (%d)", v.Node, n+1)
				}
				lanes[k] = append(lanes[k], lane{tid: tid})
				li = len(lanes[k]) - 1
				doc.TraceEvents = append(doc.TraceEvents, traceEvent{Name: "thread_name", Ph: "M", PID: pid, TID: tid, Args: map[string]any{"name": name}})
			}
			lanes[k][li].end = s.end
			tid := lanes[k][li].tid
			tidOf[[3]int{s.in, s.visit, 0}] = tid
			args := map[string]any{"node": v.Node, "untraced": v.Untraced}
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
			doc.TraceEvents = append(doc.TraceEvents, traceEvent{Name: v.Node, Cat: "visit", Ph: "X", TS: f64(s.start), Dur: f64(s.end - s.start), PID: pid, TID: tid, Args: args})
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
				traceEvent{Name: name, Cat: "message", Ph: "s", TS: f64(ht.send + shift), PID: base + in.P.Rank, TID: tidOf[[3]int{ii, sv, 0}], ID: id},
				traceEvent{Name: name, Cat: "message", Ph: "f", BP: "e", TS: f64(math.Max(rs, ht.send) + shift), PID: base + in.P.Rank, TID: tidOf[[3]int{ii, rv, 0}], ID: id},
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
