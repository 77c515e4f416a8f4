package report

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

// ExportOptions controls WriteOTLP and WritePerfetto.
type ExportOptions struct {
	// Top limits the patterns exported (0 = all).
	Top int
	// Trace, when set and the result lists instances (engine flag
	// --instances), exports every listed instance with its own measured
	// times; it must be the trace the result was inferred from. Without
	// it each pattern's mean instance is exported.
	Trace *trace.Trace
}

// OTLP JSON encoding (OpenTelemetry protocol, JSON mapping of
// opentelemetry/proto/trace/v1): lowerCamelCase field names, trace and span
// ids as hex, 64-bit integers as decimal strings, enums as integers.
type otlpTraces struct {
	ResourceSpans []otlpResourceSpans `json:"resourceSpans"`
}

type otlpResourceSpans struct {
	Resource   otlpResource     `json:"resource"`
	ScopeSpans []otlpScopeSpans `json:"scopeSpans"`
}

type otlpResource struct {
	Attributes []otlpKV `json:"attributes"`
}

type otlpScopeSpans struct {
	Scope otlpScope  `json:"scope"`
	Spans []otlpSpan `json:"spans"`
}

type otlpScope struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

type otlpSpan struct {
	TraceID           string      `json:"traceId"`
	SpanID            string      `json:"spanId"`
	ParentSpanID      string      `json:"parentSpanId,omitempty"`
	Name              string      `json:"name"`
	Kind              int         `json:"kind"`
	StartTimeUnixNano string      `json:"startTimeUnixNano"`
	EndTimeUnixNano   string      `json:"endTimeUnixNano"`
	Attributes        []otlpKV    `json:"attributes,omitempty"`
	Events            []otlpEvent `json:"events,omitempty"`
}

type otlpEvent struct {
	TimeUnixNano string   `json:"timeUnixNano"`
	Name         string   `json:"name"`
	Attributes   []otlpKV `json:"attributes,omitempty"`
}

type otlpKV struct {
	Key   string   `json:"key"`
	Value otlpAnyV `json:"value"`
}

type otlpAnyV struct {
	StringValue *string  `json:"stringValue,omitempty"`
	BoolValue   *bool    `json:"boolValue,omitempty"`
	IntValue    *string  `json:"intValue,omitempty"`
	DoubleValue *float64 `json:"doubleValue,omitempty"`
}

// OTLP span kinds.
const (
	spanKindInternal = 1
	spanKindServer   = 2
	spanKindClient   = 3
)

func kvS(k, v string) otlpKV      { return otlpKV{Key: k, Value: otlpAnyV{StringValue: &v}} }
func kvB(k string, v bool) otlpKV { return otlpKV{Key: k, Value: otlpAnyV{BoolValue: &v}} }
func kvI(k string, v int64) otlpKV {
	s := strconv.FormatInt(v, 10)
	return otlpKV{Key: k, Value: otlpAnyV{IntValue: &s}}
}
func kvF(k string, v float64) otlpKV {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return kvS(k, "NaN")
	}
	return otlpKV{Key: k, Value: otlpAnyV{DoubleValue: &v}}
}

// ids derives stable trace and span ids from what identifies an instance,
// so that exporting the same result twice gives the same ids.
func traceID(engine string, p *causal.Pattern, index int) [16]byte {
	sum := sha256.Sum256([]byte(fmt.Sprintf("wirepath\x00%s\x00%d\x00%s\x00%d", engine, p.Rank, p.Signature, index)))
	var id [16]byte
	copy(id[:], sum[:16])
	return id
}

func spanID(tid [16]byte, visit int) string {
	sum := sha256.Sum256(append(tid[:], byte(visit), byte(visit>>8), byte(visit>>16), byte(visit>>24)))
	if sum[0]|sum[1]|sum[2]|sum[3]|sum[4]|sum[5]|sum[6]|sum[7] == 0 {
		sum[7] = 1 // an all-zero span id is invalid
	}
	return hex.EncodeToString(sum[:8])
}

func nanos(base int64, us float64) string {
	return strconv.FormatInt(base+int64(math.Round(us*1e3)), 10)
}

// WriteOTLP writes res as OpenTelemetry OTLP/JSON traces (the body of an
// OTLP/HTTP export request, also what file exporters write): every path
// instance is a trace, every node visit a span with the measured delays,
// the spans grouped by node into resources whose service.name is the node.
// Span attributes carry the pattern, its rank and counts and the
// instance's probability.
func WriteOTLP(w io.Writer, res *causal.Result, opt ExportOptions) error {
	return writeOTLP(w, []*causal.Result{res}, opt)
}

// writeOTLP writes one export request with the spans of every result
// (one run, several engines): a node's spans share one resource, and the
// engines' traces have distinct ids since the engine is part of them.
func writeOTLP(w io.Writer, rs []*causal.Result, opt ExportOptions) error {
	byNode := map[string]int{}
	var doc otlpTraces
	for _, res := range rs {
		if err := appendOTLP(&doc, byNode, res, opt); err != nil {
			return err
		}
	}
	if doc.ResourceSpans == nil {
		doc.ResourceSpans = []otlpResourceSpans{}
	}
	enc := json.NewEncoder(w)
	return enc.Encode(&doc)
}

// appendOTLP adds res's spans to doc; byNode indexes doc's resources by
// node.
func appendOTLP(doc *otlpTraces, byNode map[string]int, res *causal.Result, opt ExportOptions) error {
	insts, err := exportInstances(res, opt.Trace, opt.Top)
	if err != nil {
		return err
	}
	scope := otlpScope{Name: "wirepath", Version: fmt.Sprintf("result-v%d", res.Version)}
	add := func(node string, s otlpSpan) {
		i, ok := byNode[node]
		if !ok {
			i = len(doc.ResourceSpans)
			byNode[node] = i
			doc.ResourceSpans = append(doc.ResourceSpans, otlpResourceSpans{
				Resource:   otlpResource{Attributes: []otlpKV{kvS("service.name", node), kvS("wirepath.node", node)}},
				ScopeSpans: []otlpScopeSpans{{Scope: scope}},
			})
		}
		ss := &doc.ResourceSpans[i].ScopeSpans[0]
		ss.Spans = append(ss.Spans, s)
	}
	for _, in := range insts {
		p, tl := in.P, in.TL
		tid := traceID(res.Engine, p, in.Index)
		thex := hex.EncodeToString(tid[:])
		common := []otlpKV{
			kvS("wirepath.engine", res.Engine),
			kvI("wirepath.pattern.rank", int64(p.Rank)),
			kvS("wirepath.pattern.signature", p.Signature),
			kvI("wirepath.pattern.count", int64(p.Count)),
			kvF("wirepath.pattern.expected", p.Expected),
			kvF("wirepath.probability", in.Prob),
		}
		if in.Index < 0 {
			common = append(common, kvS("wirepath.instance", "mean"))
		} else {
			common = append(common, kvI("wirepath.instance", int64(in.Index)))
		}
		for vi := range tl.Visits {
			v := &tl.Visits[vi]
			s := otlpSpan{TraceID: thex, SpanID: spanID(tid, vi), Name: v.Node, Kind: spanKindInternal}
			start, end := v.Start, v.End
			attrs := append([]otlpKV(nil), common...)
			attrs = append(attrs, kvS("wirepath.node", v.Node), kvB("wirepath.untraced", v.Untraced))
			if v.In < 0 {
				s.Kind = spanKindClient
				start, end = 0, tl.Total
				attrs = append(attrs, kvF("wirepath.latency_us", tl.Total))
				if p.Latency != nil && in.Index < 0 {
					attrs = append(attrs, kvF("wirepath.latency_p50_us", p.Latency.P50), kvF("wirepath.latency_p90_us", p.Latency.P90))
				}
			} else {
				h := &p.Hops[v.In]
				s.ParentSpanID = spanID(tid, tl.Sender[v.In])
				if h.Kind == "CALL" {
					s.Kind = spanKindServer
				}
				attrs = append(attrs, kvI("wirepath.hop", int64(v.In)), kvS("wirepath.from", h.From), kvS("wirepath.kind", h.Kind))
				if h.ToEndpoint != "" {
					attrs = append(attrs, kvS("wirepath.to_endpoint", h.ToEndpoint))
				}
				if ht := tl.Hops[v.In]; ht.netKnown {
					attrs = append(attrs, kvF("wirepath.net_delay_us", ht.net))
				}
				if v.Untraced && !v.Unseen {
					attrs = append(attrs, kvF("wirepath.combined_delay_us", v.End-v.Start))
				} else if len(v.Sends) > 0 {
					attrs = append(attrs, kvF("wirepath.node_delay_us", v.Delay))
				}
			}
			for _, h := range v.Sends {
				ht := tl.Hops[h]
				start = math.Min(start, ht.send)
				end = math.Max(end, ht.send)
				ev := otlpEvent{TimeUnixNano: nanos(in.BaseNS, ht.send), Name: "send to " + p.Hops[h].To,
					Attributes: []otlpKV{kvI("wirepath.hop", int64(h)), kvS("wirepath.kind", p.Hops[h].Kind)}}
				if ht.nodeKnown {
					ev.Attributes = append(ev.Attributes, kvF("wirepath.node_delay_us", ht.node))
				}
				if ht.bytes > 0 {
					ev.Attributes = append(ev.Attributes, kvF("wirepath.bytes", ht.bytes))
				}
				s.Events = append(s.Events, ev)
			}
			s.StartTimeUnixNano = nanos(in.BaseNS, start)
			s.EndTimeUnixNano = nanos(in.BaseNS, math.Max(end, start))
			s.Attributes = attrs
			add(v.Node, s)
		}
	}
	return nil
}
