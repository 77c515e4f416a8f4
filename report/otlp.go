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
	// RootIDs, when set, names each request the engine assembled itself
	// (causal.Result.Requests) by an id of its first seen message, given
	// that message's trace index (false: the message has none), instead
	// of by its request id: a windowed run numbers its requests only
	// after the last window, so it names their traces by their first
	// message's msg_id (the Parquet tables' root_id), which is the same
	// whichever window assembled the request.
	RootIDs func(msg int) (int64, bool)
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
	Status            *otlpStatus `json:"status,omitempty"`
}

// otlpStatus is a span's status; code 2 is ERROR.
type otlpStatus struct {
	Code int `json:"code,omitempty"`
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
	spanKindServer   = 2
	spanKindClient   = 3
	spanKindProducer = 4
	spanKindConsumer = 5
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

// traceID derives a stable trace id from what identifies a request, so
// that exporting the same result twice gives the same ids.
func traceID(r *request) [16]byte {
	if r.Own && r.HasRootID {
		// Named by its first message: the same in every window.
		sum := sha256.Sum256([]byte(fmt.Sprintf("wirepath\x00%s\x00msg\x00%d", r.Engine, r.RootID)))
		var id [16]byte
		copy(id[:], sum[:16])
		return id
	}
	if r.Own {
		// An engine's own request is named by its id alone.
		return hashID(r.Engine, 0, "", -1, r.ID)
	}
	n := r.ID
	if r.Pattern > 0 {
		n = -1 // an instance is named by its pattern and index alone
	}
	return hashID(r.Engine, r.Pattern, r.Signature, r.Instance, n)
}

func hashID(engine string, pattern int, sig string, instance, n int) [16]byte {
	sum := sha256.Sum256([]byte(fmt.Sprintf("wirepath\x00%s\x00%d\x00%s\x00%d\x00%d", engine, pattern, sig, instance, n)))
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

// WriteOTLP writes res as OpenTelemetry OTLP/JSON traces (the body of an
// OTLP/HTTP export request, also what file exporters write): every request
// is a trace (each pattern's listed instances with their measured times,
// else its mean instance), every call in it two spans: a CLIENT span on the caller from
// the request's send to the response's receipt, and a SERVER span on the
// callee from the request's receipt to the response's send, the client
// span the child of the server span its caller was serving. A message of
// unknown kind is a PRODUCER span on its sender and a CONSUMER span on its
// receiver. Spans carry OpenTelemetry's semantic-convention attributes
// where the messages' labels and endpoints give them, and the link's
// confidence; each node is a resource whose service.name is the node.
func WriteOTLP(w io.Writer, res *causal.Result, opt ExportOptions) error {
	return writeOTLP(w, []*causal.Result{res}, opt)
}

// writeOTLP writes one export request with the spans of every result
// (one run, several engines): a node's spans share one resource, and the
// engines' traces have distinct ids since the engine is part of them.
func writeOTLP(w io.Writer, rs []*causal.Result, opt ExportOptions) error {
	doc, err := buildOTLP(rs, opt)
	if err != nil {
		return err
	}
	return json.NewEncoder(w).Encode(doc)
}

// buildOTLP returns the export request of the results' requests.
func buildOTLP(rs []*causal.Result, opt ExportOptions) (*otlpTraces, error) {
	b := otlpBuilder{byNode: map[string]int{}}
	for _, res := range rs {
		reqs, err := exportRequests(res, opt.Trace, opt.Top)
		if err != nil {
			return nil, err
		}
		scope := otlpScope{Name: "wirepath", Version: fmt.Sprintf("result-v%d", res.Version)}
		for i := range reqs {
			nameByRoot(&reqs[i], opt.RootIDs)
			b.request(&reqs[i], scope)
		}
	}
	if b.doc.ResourceSpans == nil {
		b.doc.ResourceSpans = []otlpResourceSpans{}
	}
	return &b.doc, nil
}

// nameByRoot sets r.RootID from ids (ExportOptions.RootIDs), when given,
// for an engine's own request: the id of its first seen message.
func nameByRoot(r *request, ids func(int) (int64, bool)) {
	if ids == nil || !r.Own {
		return
	}
	for _, m := range r.Msgs {
		if m.Msg >= 0 {
			r.RootID, r.HasRootID = ids(m.Msg)
			return
		}
	}
}

// otlpBuilder collects spans into resources, one per node.
type otlpBuilder struct {
	doc    otlpTraces
	byNode map[string]int
}

func (b *otlpBuilder) add(node string, scope otlpScope, s otlpSpan) {
	i, ok := b.byNode[node]
	if !ok {
		i = len(b.doc.ResourceSpans)
		b.byNode[node] = i
		b.doc.ResourceSpans = append(b.doc.ResourceSpans, otlpResourceSpans{
			Resource:   otlpResource{Attributes: []otlpKV{kvS("service.name", node), kvS("wirepath.node", node)}},
			ScopeSpans: []otlpScopeSpans{{Scope: scope}},
		})
	}
	ss := &b.doc.ResourceSpans[i].ScopeSpans[0]
	ss.Spans = append(ss.Spans, s)
}

// callSpans are the two spans of one call: the caller's and the callee's.
type callSpans struct {
	client, server string // span ids
}

// request adds the spans of one request.
func (b *otlpBuilder) request(r *request, scope otlpScope) {
	tid := traceID(r)
	thex := hex.EncodeToString(tid[:])
	common := []otlpKV{kvS("wirepath.engine", r.Engine), kvF("wirepath.request.confidence", r.Confidence)}
	if r.Own {
		if r.HasRootID {
			common = append(common, kvI("wirepath.request.root_id", r.RootID))
		} else {
			common = append(common, kvI("wirepath.request", int64(r.ID)))
		}
		if r.Background {
			common = append(common, kvB("wirepath.request.background", true))
		}
		if r.Pattern > 0 {
			common = append(common, kvI("wirepath.pattern.rank", int64(r.Pattern)), kvS("wirepath.pattern.signature", r.Signature))
		}
	} else if r.Pattern > 0 {
		common = append(common, kvI("wirepath.pattern.rank", int64(r.Pattern)), kvS("wirepath.pattern.signature", r.Signature))
		if r.Instance < 0 {
			common = append(common, kvS("wirepath.instance", "mean"))
		} else {
			common = append(common, kvI("wirepath.instance", int64(r.Instance)))
		}
	} else {
		common = append(common, kvI("wirepath.request", int64(r.ID)))
	}
	ret := returnsOf(r)
	ids := make([]callSpans, len(r.Msgs))
	for i := range r.Msgs {
		m := &r.Msgs[i]
		if m.Call != i {
			continue // a RETURN: part of its call's spans
		}
		ids[i] = callSpans{client: spanID(tid, 2*i), server: spanID(tid, 2*i+1)}
		parent := ""
		if m.CallParent >= 0 && m.CallParent < i {
			parent = ids[m.CallParent].server
		}
		var rm *reqMsg
		if ret[i] >= 0 {
			rm = &r.Msgs[ret[i]]
		}
		cs, ss := callPair(m, rm, r.Start())
		cs.TraceID, ss.TraceID = thex, thex
		cs.SpanID, ss.SpanID = ids[i].client, ids[i].server
		cs.ParentSpanID, ss.ParentSpanID = parent, ids[i].client
		cs.Attributes = append(append(append([]otlpKV(nil), common...), cs.Attributes...), msgAttrs(m, rm)...)
		ss.Attributes = append(append(append([]otlpKV(nil), common...), ss.Attributes...), msgAttrs(m, rm)...)
		b.add(m.From, scope, cs)
		b.add(m.To, scope, ss)
	}
}

// returnsOf returns, for each CALL of r, the index of its RETURN (-1 if
// none).
func returnsOf(r *request) []int {
	ret := make([]int, len(r.Msgs))
	for i := range ret {
		ret[i] = -1
	}
	for i := range r.Msgs {
		m := &r.Msgs[i]
		if m.Kind == "RETURN" && m.Call != i && m.Call >= 0 && m.Call < len(ret) && ret[m.Call] < 0 {
			ret[m.Call] = i
		}
	}
	return ret
}

// callPair returns the caller's and the callee's span of the call made by
// message c and answered by r (nil when the call has no RETURN), with
// their names, kinds, times and the attributes that differ between them.
// A call whose CALL nobody saw starts when its RETURN was sent (else at
// from, the request's start).
func callPair(c, r *reqMsg, from int64) (client, server otlpSpan) {
	name := c.Label
	if name == "" {
		name = c.To
		if c.Dst != "" {
			name = c.Dst
		}
	}
	client.Name, server.Name = name, name
	client.Kind, server.Kind = spanKindClient, spanKindServer
	cs, ss := c.start(), c.end()
	if cs == noNS && r != nil {
		cs, ss = r.start(), r.start()
	}
	if cs == noNS {
		cs, ss = from, from
	}
	ce, se := cs, ss
	if c.Kind != "CALL" && r == nil {
		// A message of unknown kind: the sender produced it, the
		// receiver consumed it.
		client.Kind, server.Kind = spanKindProducer, spanKindConsumer
	}
	if r != nil {
		ce, se = r.end(), r.start()
	}
	ce, se = max(ce, cs), max(se, ss)
	client.StartTimeUnixNano, client.EndTimeUnixNano = strconv.FormatInt(cs, 10), strconv.FormatInt(ce, 10)
	server.StartTimeUnixNano, server.EndTimeUnixNano = strconv.FormatInt(ss, 10), strconv.FormatInt(se, 10)
	if host, port, ok := splitHostPort(c.Dst); ok {
		client.Attributes = append(client.Attributes, kvS("server.address", host), kvS("network.peer.address", host))
		server.Attributes = append(server.Attributes, kvS("server.address", host))
		if port >= 0 {
			client.Attributes = append(client.Attributes, kvI("server.port", int64(port)), kvI("network.peer.port", int64(port)))
			server.Attributes = append(server.Attributes, kvI("server.port", int64(port)))
		}
	}
	if host, port, ok := splitHostPort(c.Src); ok {
		server.Attributes = append(server.Attributes, kvS("client.address", host), kvS("network.peer.address", host))
		if port >= 0 {
			server.Attributes = append(server.Attributes, kvI("client.port", int64(port)), kvI("network.peer.port", int64(port)))
		}
	}
	client.Attributes = append(client.Attributes, kvS("wirepath.peer", c.To))
	server.Attributes = append(server.Attributes, kvS("wirepath.peer", c.From))
	if st, ok := httpStatus(r); ok {
		client.Attributes = append(client.Attributes, kvI("http.response.status_code", int64(st)))
		server.Attributes = append(server.Attributes, kvI("http.response.status_code", int64(st)))
		// OpenTelemetry's HTTP conventions: 4xx is an error of the
		// client's span only, 5xx of both.
		if st >= 400 {
			client.Status = &otlpStatus{Code: 2}
		}
		if st >= 500 {
			server.Status = &otlpStatus{Code: 2}
		}
	}
	return client, server
}

// msgAttrs returns the attributes both spans of a call share: what its
// request's label says (method and route, database system and operation,
// RPC method, DNS question), its transport, the link's confidence and the
// trace indices of its messages.
func msgAttrs(c, r *reqMsg) []otlpKV {
	var a []otlpKV
	a = append(a, labelAttrs(c)...)
	if c.Proto != "" && c.Proto != "-" {
		a = append(a, kvS("network.transport", c.Proto))
	}
	a = append(a, kvF("wirepath.link.confidence", c.Confidence), kvS("wirepath.kind", c.Kind))
	if c.Evidence != "" {
		a = append(a, kvS("wirepath.link.evidence", c.Evidence))
	}
	if c.Label != "" {
		a = append(a, kvS("wirepath.label", c.Label))
	}
	if c.Msg >= 0 {
		a = append(a, kvI("wirepath.message", int64(c.Msg)))
	}
	if c.Bytes > 0 {
		a = append(a, kvI("wirepath.request.bytes", c.Bytes))
	}
	if c.Untraced {
		a = append(a, kvB("wirepath.untraced", true))
	}
	if r != nil {
		if r.Msg >= 0 {
			a = append(a, kvI("wirepath.return.message", int64(r.Msg)))
		}
		if r.Label != "" {
			a = append(a, kvS("wirepath.return.label", r.Label))
		}
		if r.Evidence != "" {
			a = append(a, kvF("wirepath.return.confidence", r.Confidence), kvS("wirepath.return.evidence", r.Evidence))
		}
		if r.Bytes > 0 {
			a = append(a, kvI("wirepath.response.bytes", r.Bytes))
		}
		if r.Untraced {
			a = append(a, kvB("wirepath.return.untraced", true))
		}
	}
	return a
}
