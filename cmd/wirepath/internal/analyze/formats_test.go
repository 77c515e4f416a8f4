package analyze

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/wirepath/wirepath/causal/engines"
	"github.com/wirepath/wirepath/causal/nesting"
	"github.com/wirepath/wirepath/causal/resultjson"
	"github.com/wirepath/wirepath/report"
)

// smallCaptures is the small fixed input: three sniffers of one client and
// server (testdata/captures/make.sh).
var smallCaptures = []string{repo + "/testdata/captures/client.pcap", repo + "/testdata/captures/server.pcapng", repo + "/testdata/captures/router-any.pcap.zst"}

// TestFormats runs analyze --engine all in every format and checks that
// each output is what its consumers accept: the JSON envelope reads back
// and each result in it follows docs/result.schema.json; the DOT lays out
// with Graphviz; the HTML page is self-contained with a section per
// engine; the OTLP export unmarshals into the official protobuf types; the
// Perfetto export is trace-event JSON with a process per engine and
// pattern.
func TestFormats(t *testing.T) {
	dir := t.TempDir()
	out := map[string][]byte{}
	for _, f := range report.Formats {
		path := filepath.Join(dir, "all."+f)
		_, stderr, code := runAnalyze(t, append(slices.Clone(smallCaptures), "--engine", "all", "--format", f, "-o", path, "--instances", "-1")...)
		if code != 0 {
			t.Fatalf("%s: exit %d:\n%s", f, code, stderr)
		}
		if !strings.Contains(stderr, f+" report written to "+path) {
			t.Errorf("%s: stderr does not say where the report went:\n%s", f, stderr)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		out[f] = b
	}

	// text: a section per engine, then one trailer.
	txt := string(out[report.FormatText])
	for _, e := range engines.Names {
		if !strings.Contains(txt, "engine "+e+":") {
			t.Errorf("text has no %s section", e)
		}
	}
	if strings.Count(txt, "\naccounting:\n") != 1 || !strings.Contains(txt, "capture clocks") {
		t.Errorf("text trailer:\n%s", txt)
	}

	// json: the envelope, each result valid.
	rs, err := resultjson.ReadResults(bytes.NewReader(out[report.FormatJSON]), "all.json")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rs {
		names = append(names, r.Engine)
	}
	if !slices.Equal(names, engines.Names) {
		t.Errorf("envelope holds %v", names)
	}
	sch := compileSchema(t)
	var env struct{ Results []json.RawMessage }
	if err := json.Unmarshal(out[report.FormatJSON], &env); err != nil {
		t.Fatal(err)
	}
	for i, raw := range env.Results {
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(inst); err != nil {
			t.Errorf("results[%d] does not follow the schema: %v", i, err)
		}
	}

	// dot: one graph Graphviz lays out, a cluster per engine.
	dot := out[report.FormatDOT]
	for _, e := range engines.Names {
		if !bytes.Contains(dot, []byte("subgraph cluster_"+e+" {")) {
			t.Errorf("DOT has no cluster for %s", e)
		}
	}
	if bin, err := exec.LookPath("dot"); err == nil {
		cmd := exec.Command(bin, "-Tplain")
		cmd.Stdin = bytes.NewReader(dot)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if plain, err := cmd.Output(); err != nil || stderr.Len() > 0 || !bytes.Contains(plain, []byte("\nnode ")) {
			t.Errorf("dot: %v %s", err, stderr.String())
		}
	} else {
		t.Log("graphviz not installed (make deps installs it): DOT not laid out")
	}

	// html: self-contained, a pattern list per engine.
	page := string(out[report.FormatHTML])
	if !strings.Contains(page, `content="default-src 'none';`) || strings.Contains(page, "http://") || strings.Contains(page, "https://") {
		t.Error("the page is not self-contained")
	}
	for _, e := range engines.Names {
		if !strings.Contains(page, `id="`+e+`-pattern-list"`) {
			t.Errorf("the page has no pattern list for %s", e)
		}
	}

	// otlp: the official types accept it; every engine's paths are there.
	var pb tracepb.TracesData
	if err := protojson.Unmarshal(out[report.FormatOTLP], &pb); err != nil {
		t.Fatalf("protojson rejects the OTLP export: %v", err)
	}
	seen := map[string]int{}
	for _, rs := range pb.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				for _, a := range s.GetAttributes() {
					if a.GetKey() == "wirepath.engine" {
						seen[a.GetValue().GetStringValue()]++
					}
				}
			}
		}
	}
	for _, e := range engines.Names {
		if seen[e] == 0 {
			t.Errorf("OTLP has no span of %s (%v)", e, seen)
		}
	}

	// perfetto: trace events, each engine's patterns as processes.
	var doc struct {
		TraceEvents []struct {
			Name string         `json:"name"`
			Ph   string         `json:"ph"`
			PID  int            `json:"pid"`
			Args map[string]any `json:"args"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(out[report.FormatPerfetto], &doc); err != nil {
		t.Fatal(err)
	}
	procs := map[string]bool{}
	for _, ev := range doc.TraceEvents {
		if ev.Ph == "" {
			t.Fatalf("event without a phase: %+v", ev)
		}
		if ev.Name == "process_name" {
			name, _ := ev.Args["name"].(string)
			procs[strings.Fields(name)[0]] = true
			if ev.PID < report.PerfettoPIDStride {
				t.Errorf("process %q has id %d, below the first engine's", name, ev.PID)
			}
		}
	}
	for _, e := range engines.Names {
		if !procs[e] {
			t.Errorf("Perfetto has no process of %s (%v)", e, procs)
		}
	}

	// What analyze wrote as JSON, wirepath report renders as analyze does.
	var again bytes.Buffer
	if err := report.WriteAll(&again, report.FormatDOT, rs, report.Options{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), dot) {
		t.Error("the DOT of the saved results differs from analyze's")
	}
}

// compileSchema compiles docs/result.schema.json.
func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(filepath.Join(repo, "docs/result.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("result.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("result.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// TestSingleEngineJSON checks that one engine's JSON is a plain result
// (the Result contract), not the envelope.
func TestSingleEngineJSON(t *testing.T) {
	stdout, stderr, code := runAnalyze(t, append(slices.Clone(smallCaptures), "--engine", "nesting", "--format", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rs, err := resultjson.ReadResults(strings.NewReader(stdout), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || strings.Contains(stdout, `"wirepath_analysis"`) {
		t.Fatalf("%d results, or an envelope, for one engine", len(rs))
	}
	res := rs[0]
	if res.Engine != nesting.Name || len(res.Patterns) == 0 || len(res.Trace.Clocks) != 3 || len(res.Trace.Accounting) == 0 {
		t.Errorf("result: engine %s, %d patterns, %d clocks", res.Engine, len(res.Patterns), len(res.Trace.Clocks))
	}
}
