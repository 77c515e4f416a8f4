package report

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/resultjson"
	"github.com/wirepath/wirepath/trace"
)

// twoEngines returns two results of one run: the shop result as linking's
// and the convolution fixture, sharing the shop trace's summary, with a
// warning each.
func twoEngines(t *testing.T) []*causal.Result {
	t.Helper()
	a := fixtureResult(t, "shop")
	b := fixtureResult(t, "conv")
	b.Trace = a.Trace
	a.Warnings = []string{"linking warns"}
	b.Warnings = []string{"convolution warns"}
	return []*causal.Result{a, b}
}

func TestWriteAllOneIsWrite(t *testing.T) {
	res := fixtureResult(t, "shop")
	for _, f := range Formats {
		var one, all bytes.Buffer
		if err := Write(&one, f, res, Options{}); err != nil {
			t.Fatal(err)
		}
		if err := WriteAll(&all, f, []*causal.Result{res}, Options{}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(one.Bytes(), all.Bytes()) {
			t.Errorf("%s: WriteAll of one result differs from Write", f)
		}
	}
	if err := WriteAll(&bytes.Buffer{}, FormatText, nil, Options{}); err == nil {
		t.Error("WriteAll of no result succeeded")
	}
	if err := WriteAll(&bytes.Buffer{}, "svg", twoEngines(t), Options{}); err == nil {
		t.Error("WriteAll accepted an unknown format")
	}
}

func TestWriteAllText(t *testing.T) {
	rs := twoEngines(t)
	var buf bytes.Buffer
	if err := WriteAll(&buf, FormatText, rs, Options{Top: 2}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	// Each engine's section, in order, then one trailer.
	i := strings.Index(out, "engine linking:")
	j := strings.Index(out, "engine convolution:")
	k := strings.Index(out, "\naccounting:\n")
	if i != 0 || j < i || k < j {
		t.Fatalf("sections out of order (linking %d, convolution %d, accounting %d):\n%s", i, j, k, out)
	}
	for _, s := range []string{"\naccounting:\n", "\nwarnings:\n", "\nNAT (outside → inside):\n"} {
		if n := strings.Count(out, s); n != 1 {
			t.Errorf("%q appears %d times", strings.TrimSpace(s), n)
		}
	}
	for _, s := range []string{"  - linking: linking warns\n", "  - convolution: convolution warns\n"} {
		if !strings.Contains(out, s) {
			t.Errorf("no %q", s)
		}
	}
	// Both engines' counters are in the one accounting.
	for _, r := range rs {
		for _, c := range r.Accounting {
			if !strings.Contains(out, c.Stage) {
				t.Errorf("accounting lacks stage %s", c.Stage)
			}
		}
	}
}

func TestWriteAllJSONRoundTrip(t *testing.T) {
	rs := twoEngines(t)
	var buf bytes.Buffer
	if err := WriteAll(&buf, FormatJSON, rs, Options{}); err != nil {
		t.Fatal(err)
	}
	var env map[string]json.RawMessage
	if err := json.Unmarshal(buf.Bytes(), &env); err != nil {
		t.Fatal(err)
	}
	var names []string
	if err := json.Unmarshal(env["engines"], &names); err != nil {
		t.Fatal(err)
	}
	if string(env["wirepath_analysis"]) != "1" || !slices.Equal(names, []string{"linking", "convolution"}) {
		t.Errorf("envelope header: %s %s", env["wirepath_analysis"], env["engines"])
	}
	back, err := resultjson.ReadResults(bytes.NewReader(buf.Bytes()), "all.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != 2 {
		t.Fatalf("%d results read back", len(back))
	}
	for i := range rs {
		var want, got bytes.Buffer
		if err := WriteJSON(&want, rs[i]); err != nil {
			t.Fatal(err)
		}
		if err := WriteJSON(&got, back[i]); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(want.Bytes(), got.Bytes()) {
			t.Errorf("result %d changed through the envelope", i)
		}
	}
	// Every result in the envelope follows the result schema.
	sch := compileSchema(t)
	var a struct{ Results []json.RawMessage }
	if err := json.Unmarshal(buf.Bytes(), &a); err != nil {
		t.Fatal(err)
	}
	for i, raw := range a.Results {
		if err := validateJSON(t, sch, raw); err != nil {
			t.Errorf("results[%d]: %v", i, err)
		}
	}
	// A single result reads as a list of one.
	var one bytes.Buffer
	if err := WriteJSON(&one, rs[0]); err != nil {
		t.Fatal(err)
	}
	if got, err := resultjson.ReadResults(&one, "one.json"); err != nil || len(got) != 1 || got[0].Engine != "linking" {
		t.Errorf("ReadResults of one result: %v, %v", got, err)
	}
}

func TestWriteAllDOT(t *testing.T) {
	rs := twoEngines(t)
	var buf bytes.Buffer
	if err := WriteAll(&buf, FormatDOT, rs, Options{}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, s := range []string{"subgraph cluster_linking {", "subgraph cluster_convolution {", "linking_p1_n0", "convolution_p1_n0"} {
		if !strings.Contains(out, s) {
			t.Errorf("DOT lacks %q", s)
		}
	}
	dotBin, err := exec.LookPath("dot")
	if err != nil {
		t.Skip("graphviz not installed (make deps installs it); skipping the layout")
	}
	cmd := exec.Command(dotBin, "-Tplain")
	cmd.Stdin = bytes.NewReader(buf.Bytes())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	plain, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("dot: %v %s", err, stderr.String())
	}
	// The shop result's call trees have 10 nodes and 7 edges, the
	// convolution path 7 and 6 (TestDOTParses): one graph holds both.
	nodes, edges := 0, 0
	for _, line := range strings.Split(string(plain), "\n") {
		switch {
		case strings.HasPrefix(line, "node "):
			nodes++
		case strings.HasPrefix(line, "edge "):
			edges++
		}
	}
	if nodes != 17 || edges != 13 {
		t.Errorf("dot laid out %d nodes and %d edges, want 17 and 13", nodes, edges)
	}
}

func TestWriteAllExports(t *testing.T) {
	rs := twoEngines(t)
	var buf bytes.Buffer
	if err := WriteAll(&buf, FormatOTLP, rs, Options{}); err != nil {
		t.Fatal(err)
	}
	engines := map[string]int{}
	for _, spans := range otlpSpans(t, buf.Bytes()) {
		for _, s := range spans {
			v, _ := attr(s, "wirepath.engine")
			if v.StringValue != nil {
				engines[*v.StringValue]++
			}
		}
	}
	// Mean instances: the shop result's 3 patterns and the one path.
	var sep [2]bytes.Buffer
	for i, r := range rs {
		if err := WriteOTLP(&sep[i], r, ExportOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i, r := range rs {
		n := 0
		for _, spans := range otlpSpans(t, sep[i].Bytes()) {
			n += len(spans)
		}
		if engines[r.Engine] != n {
			t.Errorf("%s: %d spans in the joint export, %d alone", r.Engine, engines[r.Engine], n)
		}
	}

	buf.Reset()
	if err := WriteAll(&buf, FormatPerfetto, rs, Options{}); err != nil {
		t.Fatal(err)
	}
	events := checkTraceEvents(t, buf.Bytes())
	names := map[int]string{}
	for _, e := range events {
		if e["name"] == "process_name" {
			pid, _ := e["pid"].(json.Number).Int64()
			names[int(pid)] = e["args"].(map[string]any)["name"].(string)
		}
	}
	if !strings.HasPrefix(names[PerfettoPIDStride+1], "linking #1 ") || !strings.HasPrefix(names[2*PerfettoPIDStride+1], "convolution #1 ") || len(names) != 4 {
		t.Errorf("processes %v", names)
	}
}

// TestWriteAllHTMLInChromium loads the page of two engines: each engine's
// pattern list and drawings under its own ids, the shared tables once, the
// columns sortable per list, and no errors.
func TestWriteAllHTMLInChromium(t *testing.T) {
	rs := twoEngines(t)
	rs[0].Trace.Clocks = []trace.Clock{
		{Name: "a.pcap", Kind: "sniffer", Reference: "a.pcap", Known: true, Method: "reference"},
		{Name: "b.pcap", Kind: "sniffer", Reference: "a.pcap", Known: true, OffsetNS: 83_250_000_000, UncertaintyNS: 30_000, Samples: 12, Method: "symmetric"},
	}
	var buf bytes.Buffer
	if err := WriteAll(&buf, FormatHTML, rs, Options{}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, s := range []string{`id="linking-pattern-list"`, `id="convolution-pattern-list"`, `id="linking-p1"`, `id="convolution-p1"`, `id="clock-table"`, "83.25 s ± 30 µs (12 samples, symmetric)"} {
		if !strings.Contains(page, s) {
			t.Errorf("page lacks %s", s)
		}
	}
	for _, s := range []string{`id="nat-table"`, `id="accounting-table"`, `id="warning-list"`} {
		if n := strings.Count(page, s); n != 1 {
			t.Errorf("%s appears %d times", s, n)
		}
	}
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	path := filepath.Join(t.TempDir(), "all.html")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel, pg := openPage(t, path, 60*time.Second)
	defer cancel()
	var st struct {
		Ready    string `json:"ready"`
		Linking  []int  `json:"linking"`
		Conv     []int  `json:"conv"`
		Lines    int    `json:"timelines"`
		Clocks   int    `json:"clocks"`
		Warnings int    `json:"warns"`
	}
	probe := `(() => {
  const q = s => Array.from(document.querySelectorAll(s));
  return {
    ready: document.documentElement.getAttribute("data-ready"),
    linking: q("#linking-pattern-list tbody tr").map(r => +r.dataset.rank),
    conv: q("#convolution-pattern-list tbody tr").map(r => +r.dataset.rank),
    timelines: q("svg.timeline").length,
    clocks: q("#clock-table tbody tr").length,
    warns: q("#warning-list li").length,
  };
})()`
	if err := pg.eval(ctx, probe, &st); err != nil {
		t.Fatal(err)
	}
	if st.Ready != "1" || !slices.Equal(st.Linking, []int{1, 2, 3}) || !slices.Equal(st.Conv, []int{1}) || st.Lines != 4 || st.Clocks != 2 {
		t.Errorf("page state %+v", st)
	}
	if want := len(rs[0].Trace.Warnings) + 2; st.Warnings != want {
		t.Errorf("%d warnings, want %d", st.Warnings, want)
	}
	// Sorting one list leaves the other alone.
	var rows struct{ L, C []int }
	expr := `(() => { document.querySelector("#linking-pattern-list th[data-sort=rank] button").click();
  const r = s => Array.from(document.querySelectorAll(s + " tbody tr")).map(r => +r.dataset.rank);
  return {L: r("#linking-pattern-list"), C: r("#convolution-pattern-list")}; })()`
	if err := pg.eval(ctx, expr, &rows); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rows.L, []int{3, 2, 1}) || !slices.Equal(rows.C, []int{1}) {
		t.Errorf("after sorting the linking list: %v and %v", rows.L, rows.C)
	}
	pg.drain()
	if len(pg.problems) > 0 {
		t.Errorf("the page reported problems:\n%s", strings.Join(pg.problems, "\n"))
	}
}

func TestSummarizeAccounting(t *testing.T) {
	c := func(stage, name string, v int64) trace.Count { return trace.Count{Stage: stage, Name: name, Value: v} }
	got := SummarizeAccounting([]trace.Count{
		c("pcapio", "records", 300), c("pcapio", "packets", 120), c("pcapio", "duplicates", 180), c("pcapio", "truncated", 2),
		c("nat", "mappings", 3), c("nat", "rewrite_packets", 120), c("nat", "rewrite_rewritten", 40),
		c("flows", "conns", 10), c("flows", "messages", 20), c("flows", "calls", 10), c("flows", "returns", 10), c("flows", "gaps_acked", 1), c("flows", "gap_bytes", 100),
		c("reconcile", "messages", 20), c("reconcile", "messages_both_ends", 18), c("reconcile", "messages_send_only", 2), c("reconcile", "nodes", 4), c("reconcile", "nodes_servers", 3),
		c("reconcile", "messages_with_req_id", 6), c("reconcile", "messages_with_tokens", 12), c("reconcile", "messages_with_label", 20), c("reconcile", "messages_with_task", 0), c("reconcile", "tokens_cut", 9),
		c("trace", "messages_read", 20), c("trace", "skipped_lines", 0),
		c("nesting", "messages_in", 20), c("nesting", "call_pairs", 10), c("nesting", "call_paths", 5), c("nesting", "patterns", 2),
		c("assembly", "messages", 20), c("assembly", "messages_in_requests", 20), c("assembly", "calls", 10), c("assembly", "calls_root", 4),
		c("assembly", "links_exact_id", 3), c("assembly", "links_joint", 2), c("assembly", "calls_background", 1), c("assembly", "decisions", 2), c("assembly", "decisions_exact", 1),
		c("assembly", "requests", 4), c("assembly", "background_trees", 1), c("assembly", "patterns", 2), c("assembly", "returns_before_call", 1),
		c("assembly", "second_starts", 3), c("assembly", "second_starts_kept", 1), c("assembly", "second_start_calls_moved", 19),
		c("custom", "widgets", 0), c("custom", "gizmos", 7),
	})
	want := []StageSummary{
		{"pcapio", "300 records read, 120 packets after removing 180 duplicates; 2 truncated"},
		{"nat", "3 mappings; 40 of 120 packets renamed to their real endpoints"},
		{"flows", "10 connections, 20 messages (10 calls, 10 returns); 1 gaps (100 bytes no sniffer saw)"},
		{"reconcile", "20 messages, 18 with both ends; 2 with one (2 send only, 0 receive only); 4 nodes (3 servers); evidence: 6 with a request id, 12 with tokens, 20 with a label, 0 with a traced thread; 9 tokens cut"},
		{"nesting", "20 messages, 10 call pairs; 5 call paths, 2 patterns"},
		{"assembly", "20 messages, 20 in requests; 4 requests, 1 background trees, 2 patterns; 10 calls: 4 roots, 3 by request id, 0 by thread, 0 only candidate, 2 joint, 1 background; 1 of 2 joint decisions exact; second start kept at 1 of 3 nodes (19 calls moved); 1 returns before call"},
		{"custom", "7 gizmos"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}
