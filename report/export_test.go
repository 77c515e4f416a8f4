package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

var (
	hex32 = regexp.MustCompile(`^[0-9a-f]{32}$`)
	hex16 = regexp.MustCompile(`^[0-9a-f]{16}$`)
)

// otlpSpans decodes WriteOTLP output twice: with protojson into the
// official OTLP types (field names, oneofs, enum and integer encodings must
// all be right, and unknown fields are errors), and with encoding/json to
// check what protojson cannot (OTLP/JSON's hex ids) and to return the
// spans by trace id.
func otlpSpans(t *testing.T, raw []byte) map[string][]otlpSpan {
	t.Helper()
	var pb tracepb.TracesData
	if err := (protojson.UnmarshalOptions{DiscardUnknown: false}).Unmarshal(raw, &pb); err != nil {
		t.Fatalf("protojson rejects the OTLP output: %v", err)
	}
	var doc otlpTraces
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if len(pb.GetResourceSpans()) != len(doc.ResourceSpans) {
		t.Fatalf("protojson saw %d resources, encoding/json %d", len(pb.GetResourceSpans()), len(doc.ResourceSpans))
	}
	byTrace := map[string][]otlpSpan{}
	for ri, rs := range doc.ResourceSpans {
		svc := ""
		for _, a := range pb.GetResourceSpans()[ri].GetResource().GetAttributes() {
			if a.GetKey() == "service.name" {
				svc = a.GetValue().GetStringValue()
			}
		}
		if svc == "" {
			t.Errorf("resource %d has no service.name", ri)
		}
		for si, s := range rs.ScopeSpans[0].Spans {
			ps := pb.GetResourceSpans()[ri].GetScopeSpans()[0].GetSpans()[si]
			if s.Name == "" || ps.GetName() != s.Name {
				t.Errorf("span %q in the resource of %q has no name", s.Name, svc)
			}
			if !hex32.MatchString(s.TraceID) || !hex16.MatchString(s.SpanID) || s.ParentSpanID != "" && !hex16.MatchString(s.ParentSpanID) {
				t.Errorf("bad ids: trace %q span %q parent %q", s.TraceID, s.SpanID, s.ParentSpanID)
			}
			if ps.GetEndTimeUnixNano() < ps.GetStartTimeUnixNano() {
				t.Errorf("span %s ends before it starts", s.SpanID)
			}
			if ps.GetKind() == tracepb.Span_SPAN_KIND_UNSPECIFIED {
				t.Errorf("span %s has no kind", s.SpanID)
			}
			byTrace[s.TraceID] = append(byTrace[s.TraceID], s)
		}
	}
	for tid, spans := range byTrace {
		ids := map[string]bool{}
		roots := 0
		for _, s := range spans {
			if ids[s.SpanID] {
				t.Errorf("trace %s: span id %s twice", tid, s.SpanID)
			}
			ids[s.SpanID] = true
		}
		for _, s := range spans {
			if s.ParentSpanID == "" {
				roots++
			} else if !ids[s.ParentSpanID] {
				t.Errorf("trace %s: span %s has a parent outside the trace", tid, s.SpanID)
			}
		}
		if roots != 1 {
			t.Errorf("trace %s has %d root spans", tid, roots)
		}
	}
	return byTrace
}

func attr(s otlpSpan, key string) (otlpAnyV, bool) {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value, true
		}
	}
	return otlpAnyV{}, false
}

func attrF(s otlpSpan, key string) float64 {
	v, ok := attr(s, key)
	if !ok || v.DoubleValue == nil {
		return math.NaN()
	}
	return *v.DoubleValue
}

func attrI(s otlpSpan, key string) int64 {
	v, ok := attr(s, key)
	if !ok || v.IntValue == nil {
		return -1
	}
	n, _ := strconv.ParseInt(*v.IntValue, 10, 64)
	return n
}

func ns(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }

// otlpKinds counts spans by kind.
func otlpKinds(spans []otlpSpan) map[int]int {
	k := map[int]int{}
	for _, s := range spans {
		k[s.Kind]++
	}
	return k
}

// TestOTLPMeanInstances exports each pattern's mean instance: one trace per
// pattern, a CLIENT and a SERVER span per call.
func TestOTLPMeanInstances(t *testing.T) {
	res, _ := shopResult()
	var buf bytes.Buffer
	if err := WriteOTLP(&buf, res, ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	byTrace := otlpSpans(t, buf.Bytes())
	if len(byTrace) != 3 {
		t.Fatalf("%d traces, want one per pattern (3)", len(byTrace))
	}
	for _, spans := range byTrace {
		rank := attrI(spans[0], "wirepath.pattern.rank")
		p := &res.Patterns[rank-1]
		calls := 0
		for _, h := range p.Hops {
			if h.Kind == "CALL" {
				calls++
			}
		}
		if k := otlpKinds(spans); k[spanKindClient] != calls || k[spanKindServer] != calls || len(spans) != 2*calls {
			t.Errorf("pattern %d: spans by kind %v, want %d CLIENT and %d SERVER", rank, k, calls, calls)
		}
		for _, s := range spans {
			if got, want := attrF(s, "wirepath.request.confidence"), p.Expected/float64(p.Count); math.Abs(got-want) > 1e-9 {
				t.Errorf("pattern %d: confidence %v, want %v", rank, got, want)
			}
			if v, _ := attr(s, "wirepath.instance"); v.StringValue == nil || *v.StringValue != "mean" {
				t.Errorf("pattern %d: instance attribute %+v", rank, v)
			}
		}
		if rank == 3 {
			// The cache hit: web serves the request for 500 µs, the
			// client waits 900 µs.
			for _, s := range spans {
				d := ns(s.EndTimeUnixNano) - ns(s.StartTimeUnixNano)
				want := int64((shopWebOutUS + 2*shopNetUS) * 1e3)
				if s.Kind == spanKindServer {
					want = int64(shopWebOutUS * 1e3)
				}
				if d != want {
					t.Errorf("hit: span of kind %d lasts %d ns, want %d", s.Kind, d, want)
				}
			}
		}
	}
}

// TestOTLPCalls exports every listed instance with its own times,
// corrected by the database's 3 ms clock offset: each call is a CLIENT span
// on the caller and a SERVER span on the callee, nested by causality.
func TestOTLPCalls(t *testing.T) {
	tr, insts := shopTrace()
	res := resultOf(tr, insts, "linking", false, -1)
	var buf bytes.Buffer
	if err := WriteOTLP(&buf, res, ExportOptions{Trace: tr}); err != nil {
		t.Fatal(err)
	}
	byTrace := otlpSpans(t, buf.Bytes())
	if len(byTrace) != len(insts) {
		t.Fatalf("%d traces, want one per instance (%d)", len(byTrace), len(insts))
	}
	slow := 0
	for _, spans := range byTrace {
		byID := map[string]otlpSpan{}
		for _, s := range spans {
			byID[s.SpanID] = s
		}
		for _, s := range spans {
			par, ok := byID[s.ParentSpanID]
			switch {
			case s.ParentSpanID == "":
				if s.Kind != spanKindClient {
					t.Errorf("root span of kind %d, want CLIENT", s.Kind)
				}
			case s.Kind == spanKindServer && (!ok || par.Kind != spanKindClient || par.Name != s.Name):
				t.Errorf("SERVER span %q has parent %+v, want its call's CLIENT span", s.Name, par)
			case s.Kind == spanKindClient && (!ok || par.Kind != spanKindServer):
				t.Errorf("CLIENT span %q has parent %+v, want the SERVER span its caller was serving", s.Name, par)
			}
			if ok && (ns(s.StartTimeUnixNano) < ns(par.StartTimeUnixNano) || ns(s.EndTimeUnixNano) > ns(par.EndTimeUnixNano)) {
				t.Errorf("span %q [%s,%s] is not within its parent [%s,%s]", s.Name, s.StartTimeUnixNano, s.EndTimeUnixNano, par.StartTimeUnixNano, par.EndTimeUnixNano)
			}
		}
		if attrI(spans[0], "wirepath.pattern.rank") != 1 {
			continue
		}
		var dbClient, dbServer otlpSpan
		for _, s := range spans {
			if v, _ := attr(s, "server.port"); v.IntValue != nil && *v.IntValue == "5432" {
				if s.Kind == spanKindClient {
					dbClient = s
				} else {
					dbServer = s
				}
			}
		}
		d := float64(ns(dbServer.EndTimeUnixNano)-ns(dbServer.StartTimeUnixNano)) / 1e3
		switch d {
		case shopDBSlowUS:
			slow++
		case shopDBFastUS:
		default:
			t.Errorf("db SERVER span lasts %v µs, want %v or %v", d, shopDBFastUS, shopDBSlowUS)
		}
		if c := float64(ns(dbClient.EndTimeUnixNano)-ns(dbClient.StartTimeUnixNano)) / 1e3; c != d+2*shopLANUS {
			t.Errorf("db CLIENT span lasts %v µs, want the server's %v and the network's %v", c, d, 2*shopLANUS)
		}
		if v, _ := attr(dbServer, "client.address"); v.StringValue == nil || *v.StringValue != shopNodes["web"] {
			t.Errorf("db SERVER span's client.address %+v, want web", v)
		}
	}
	if want := shopPageN / 4; slow != want {
		t.Errorf("%d instances with a disk-slow db, want %d", slow, want)
	}
	// A trace that is not the result's is refused.
	tr.Messages = tr.Messages[:10]
	if err := WriteOTLP(&buf, res, ExportOptions{Trace: tr}); !errors.Is(err, ErrTraceMismatch) {
		t.Errorf("mismatched trace: err %v, want ErrTraceMismatch", err)
	}
}

// TestLabelAttrs maps the decoders' labels to semantic-convention
// attributes.
func TestLabelAttrs(t *testing.T) {
	for _, tc := range []struct {
		label, dst string
		want       map[string]string
	}{
		{"GET /item/{id}", "10.0.0.1:80", map[string]string{"http.request.method": "GET", "http.route": "/item/{id}"}},
		{"grpc /shop.Cart/Add", "", map[string]string{"rpc.system": "grpc", "rpc.service": "shop.Cart", "rpc.method": "Add"}},
		{"redis GET", "", map[string]string{"db.system": "redis", "db.operation.name": "GET"}},
		{"memcache get", "", map[string]string{"db.system": "memcached", "db.operation.name": "get"}},
		{"SELECT users", "10.0.0.2:5432", map[string]string{"db.system": "postgresql", "db.operation.name": "SELECT", "db.collection.name": "users"}},
		{"INSERT orders", "10.0.0.2:3306", map[string]string{"db.system": "mysql", "db.collection.name": "orders"}},
		{"SELECT", "10.0.0.2:9999", map[string]string{"db.system": "other_sql", "db.operation.name": "SELECT"}},
		{"dns A example.com", "", map[string]string{"dns.question.name": "example.com"}},
		{"kafka Produce", "", map[string]string{"messaging.system": "kafka", "messaging.operation.name": "Produce"}},
		{"tls sni=a alpn=h2", "", map[string]string{}},
		{"", "", map[string]string{}},
	} {
		got := map[string]string{}
		for _, a := range labelAttrs(&reqMsg{Label: tc.label, Dst: tc.dst}) {
			got[a.Key] = *a.Value.StringValue
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%q: %s = %q, want %q (all: %v)", tc.label, k, got[k], v, got)
			}
		}
		if len(tc.want) == 0 && len(got) != 0 {
			t.Errorf("%q: attributes %v, want none", tc.label, got)
		}
	}
}

// reporter is the part of testing.T the checkers use, so that a test can
// run a checker on a broken document and see that it complains.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// complaints collects what a checker reports; Fatalf stops the checker.
type complaints struct{ msgs []string }

type stopCheck struct{}

func (c *complaints) Helper() {}
func (c *complaints) Errorf(format string, args ...any) {
	c.msgs = append(c.msgs, fmt.Sprintf(format, args...))
}
func (c *complaints) Fatalf(format string, args ...any) {
	c.Errorf(format, args...)
	panic(stopCheck{})
}

// checkTraceEvents checks the rules of the Chrome trace-event format that
// the viewers rely on and returns the events.
func checkTraceEvents(t reporter, raw []byte) []map[string]any {
	t.Helper()
	var doc struct {
		TraceEvents     []map[string]any `json:"traceEvents"`
		DisplayTimeUnit string           `json:"displayTimeUnit"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("%v", err)
	}
	if doc.DisplayTimeUnit != "ms" && doc.DisplayTimeUnit != "ns" {
		t.Errorf("displayTimeUnit %q", doc.DisplayTimeUnit)
	}
	num := func(e map[string]any, k string) (float64, bool) {
		n, ok := e[k].(json.Number)
		if !ok {
			return 0, false
		}
		f, err := n.Float64()
		return f, err == nil
	}
	type thread struct{ pid, tid int }
	type slice struct{ ts, end float64 }
	named := map[thread]bool{}
	procs := map[int]bool{}
	slices := map[thread][]slice{}
	type flowEnd struct {
		ph   string
		ts   float64
		th   thread
		bp   string
		cat  string
		name string
	}
	flows := map[string][]flowEnd{}
	for i, e := range doc.TraceEvents {
		ph, _ := e["ph"].(string)
		name, _ := e["name"].(string)
		pid, ok1 := num(e, "pid")
		tid, ok2 := num(e, "tid")
		if ph == "" || name == "" || !ok1 || !ok2 || pid != math.Trunc(pid) || tid != math.Trunc(tid) {
			t.Fatalf("event %d lacks ph, name or integer pid/tid: %v", i, e)
		}
		th := thread{int(pid), int(tid)}
		switch ph {
		case "M":
			args, _ := e["args"].(map[string]any)
			switch name {
			case "process_name", "thread_name":
				if s, _ := args["name"].(string); s == "" {
					t.Errorf("event %d: %s without args.name", i, name)
				}
				if name == "thread_name" {
					named[th] = true
				} else {
					procs[th.pid] = true
				}
			case "process_sort_index", "thread_sort_index":
				if _, ok := num(args, "sort_index"); !ok {
					t.Errorf("event %d: %s without a numeric args.sort_index", i, name)
				}
			default:
				t.Errorf("event %d: unknown metadata event %q", i, name)
			}
			continue
		case "X", "s", "f":
		default:
			t.Errorf("event %d: phase %q", i, ph)
			continue
		}
		ts, ok := num(e, "ts")
		if !ok || ts < 0 {
			t.Errorf("event %d: ts %v", i, e["ts"])
		}
		switch ph {
		case "X":
			dur, ok := num(e, "dur")
			if !ok || dur < 0 {
				t.Errorf("event %d: dur %v", i, e["dur"])
			}
			slices[th] = append(slices[th], slice{ts, ts + dur})
		case "s", "f":
			id, _ := e["id"].(string)
			cat, _ := e["cat"].(string)
			bp, _ := e["bp"].(string)
			if id == "" || cat == "" {
				t.Errorf("event %d: flow event without id or cat", i)
			}
			flows[id] = append(flows[id], flowEnd{ph: ph, ts: ts, th: th, bp: bp, cat: cat, name: name})
		}
	}
	// Every thread with slices is named and its process too; slices on one
	// thread nest properly (no partial overlap).
	for th, ss := range slices {
		if !named[th] || !procs[th.pid] {
			t.Errorf("thread %v or its process has no name", th)
		}
		sort.Slice(ss, func(a, b int) bool {
			if ss[a].ts != ss[b].ts {
				return ss[a].ts < ss[b].ts
			}
			return ss[a].end > ss[b].end
		})
		var stack []slice
		for _, s := range ss {
			for len(stack) > 0 && s.ts >= stack[len(stack)-1].end && !(s.ts == stack[len(stack)-1].end && s.end == s.ts && stack[len(stack)-1].end > stack[len(stack)-1].ts) {
				stack = stack[:len(stack)-1]
			}
			if len(stack) > 0 && s.end > stack[len(stack)-1].end+1e-6 {
				t.Errorf("thread %v: slice [%v,%v] overlaps [%v,%v] without nesting", th, s.ts, s.end, stack[len(stack)-1].ts, stack[len(stack)-1].end)
			}
			stack = append(stack, s)
		}
	}
	// Flows: one start and one end each, in time order, and each end lies in
	// a slice of its thread (which is what a viewer binds the arrow to).
	within := func(th thread, ts float64) bool {
		for _, s := range slices[th] {
			if ts >= s.ts-1e-6 && ts <= s.end+1e-6 {
				return true
			}
		}
		return false
	}
	for id, fs := range flows {
		if len(fs) != 2 || fs[0].ph != "s" || fs[1].ph != "f" {
			t.Errorf("flow %s: events %+v, want one s then one f", id, fs)
			continue
		}
		if fs[1].bp != "e" || fs[0].cat != fs[1].cat || fs[0].name != fs[1].name {
			t.Errorf("flow %s: ends do not match: %+v", id, fs)
		}
		if fs[1].ts < fs[0].ts {
			t.Errorf("flow %s ends before it starts", id)
		}
		for _, f := range fs {
			if !within(f.th, f.ts) {
				t.Errorf("flow %s: %s at %v is in no slice of thread %v", id, f.ph, f.ts, f.th)
			}
		}
	}
	return doc.TraceEvents
}

func TestPerfettoMeanInstances(t *testing.T) {
	res, _ := shopResult()
	var buf bytes.Buffer
	if err := WritePerfetto(&buf, res, ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	evs := checkTraceEvents(t, buf.Bytes())
	visits, flows := 0, 0
	for _, e := range evs {
		switch {
		case e["ph"] == "X" && e["cat"] == "visit":
			visits++
		case e["ph"] == "s":
			flows++
		}
	}
	hops := 0
	for _, p := range res.Patterns {
		hops += len(p.Hops)
	}
	if visits != hops+len(res.Patterns) || flows != hops {
		t.Errorf("%d visit slices and %d flows, want %d and %d", visits, flows, hops+len(res.Patterns), hops)
	}
}

func TestPerfettoInstances(t *testing.T) {
	tr, insts := shopTrace()
	res := resultOf(tr, insts, "linking", false, -1)
	var buf bytes.Buffer
	if err := WritePerfetto(&buf, res, ExportOptions{Trace: tr}); err != nil {
		t.Fatal(err)
	}
	evs := checkTraceEvents(t, buf.Bytes())
	paths := 0
	for _, e := range evs {
		if e["ph"] == "X" && e["cat"] == "path" {
			paths++
		}
	}
	if paths != len(insts) {
		t.Errorf("%d path slices, want one per instance (%d)", paths, len(insts))
	}
}

// TestPerfettoOverlapping exports two requests that overlap in time, one
// of them from a client whose clock runs 5 ms ahead (so that its corrected
// start lies before the trace's first timestamp): no ts is negative, and
// every track carries the slices of one instance only.
func TestPerfettoOverlapping(t *testing.T) {
	f := &fixture{t: &trace.Trace{}}
	f.t.Meta.Offsets = []trace.Offset{{Node: "10.0.9.1", Reference: "10.0.0.1", Known: true, OffsetNS: 5_000_000}}
	for i, c := range []string{"10.0.9.1:40000", "10.0.9.2:40001"} {
		t0 := float64(100 * i)
		m0 := f.msg(t0, t0+200, c, "10.0.0.1:80", 100, trace.KindCall)
		m1 := f.msg(t0+700, t0+900, "10.0.0.1:80", c, 100, trace.KindReturn)
		f.inst(1, node(m0, -1), node(m1, 0))
	}
	res := resultOf(f.t, f.insts, "nesting", false, -1)
	var buf bytes.Buffer
	if err := WritePerfetto(&buf, res, ExportOptions{Trace: f.t}); err != nil {
		t.Fatal(err)
	}
	evs := checkTraceEvents(t, buf.Bytes()) // fails on a negative ts
	type thread struct{ pid, tid string }
	insts := map[thread]map[string]bool{}
	paths := 0
	for _, e := range evs {
		if e["ph"] != "X" {
			continue
		}
		args, _ := e["args"].(map[string]any)
		th := thread{fmt.Sprint(e["pid"]), fmt.Sprint(e["tid"])}
		if insts[th] == nil {
			insts[th] = map[string]bool{}
		}
		insts[th][fmt.Sprint(args["instance"])] = true
		if e["cat"] == "path" {
			paths++
		}
	}
	if paths != 2 {
		t.Fatalf("%d path slices, want 2", paths)
	}
	for th, in := range insts {
		if len(in) != 1 {
			t.Errorf("thread %v carries the slices of instances %v, want one", th, in)
		}
	}
}

// TestTraceEventCheckerCatches makes sure the checker fails on broken
// documents, so that passing it means something.
func TestTraceEventCheckerCatches(t *testing.T) {
	for name, doc := range map[string]string{
		"partial overlap": `{"displayTimeUnit":"ns","traceEvents":[{"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"a"}},{"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":"p"}},{"name":"a","ph":"X","ts":0,"dur":10,"pid":1,"tid":1},{"name":"b","ph":"X","ts":5,"dur":10,"pid":1,"tid":1}]}`,
		"dangling flow":   `{"displayTimeUnit":"ns","traceEvents":[{"name":"m","cat":"c","ph":"s","id":"1","ts":0,"pid":1,"tid":1}]}`,
		"negative dur":    `{"displayTimeUnit":"ns","traceEvents":[{"name":"a","ph":"X","ts":0,"dur":-1,"pid":1,"tid":1}]}`,
		"negative ts":     `{"displayTimeUnit":"ns","traceEvents":[{"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"a"}},{"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":"p"}},{"name":"a","ph":"X","ts":-5,"dur":1,"pid":1,"tid":1}]}`,
	} {
		c := &complaints{}
		func() {
			defer func() {
				if r := recover(); r != nil {
					if _, ok := r.(stopCheck); !ok {
						panic(r)
					}
				}
			}()
			checkTraceEvents(c, []byte(doc))
		}()
		if len(c.msgs) == 0 {
			t.Errorf("%s: the checker passed a broken document", name)
		}
	}
	_ = causal.ResultVersion
}
