package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

const schemaPath = "../docs/result.schema.json"

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("%s: %v", schemaPath, err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("result.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("result.schema.json")
	if err != nil {
		t.Fatalf("%s: %v", schemaPath, err)
	}
	return sch
}

func validateJSON(t *testing.T, sch *jsonschema.Schema, raw []byte) error {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return sch.Validate(inst)
}

// TestJSONMatchesSchema validates what WriteJSON writes, for results that
// use every field, against docs/result.schema.json.
func TestJSONMatchesSchema(t *testing.T) {
	sch := compileSchema(t)
	shop, _ := shopResult()
	cases := map[string]*causal.Result{
		"shop":  shop,
		"conv":  convResult(),
		"empty": {Version: causal.ResultVersion, Engine: "nesting"},
	}
	tr, insts := shopTrace()
	cases["no-histograms"] = resultOf(tr, insts, "nesting", false, 0)
	// A node delay of zero everywhere gives a histogram without edges.
	z := resultOf(tr, insts, "linking", true, 3)
	z.Patterns[0].Hops[1].NodeDelay = &causal.Dist{N: 1, Weight: 1, Hist: &causal.Histogram{Underflow: 1}}
	cases["zero-hist"] = z
	// The network between the nodes, every field set.
	links, _ := shopResult()
	half := trace.HalfDist{N: 3, Handshake: 1, Acks: 1, Echoes: 1, MinNS: 20000, P50NS: 30000, P90NS: 90000}
	rate := trace.LinkRate{N: 2, P50: 1.2e8, Max: 1.25e8}
	links.Trace.Links = []trace.Link{{A: "web", B: "db", Proto: "tcp", SameHost: true, Conns: 2, Opened: 1, Calls: 9,
		RTT:     trace.LinkRTT{Known: true, MinNS: 40000, P50NS: 60000, P90NS: 180000, Samples: 6, Point: "s0", Method: "hosts"},
		Points:  []trace.LinkPoint{{Point: "s0", Position: "between", ToA: half, ToB: half}},
		WindowA: 65535, WindowB: -1, MSS: 1460, PairsAB: rate, PairsBA: rate, ThroughputAB: rate, ThroughputBA: trace.LinkRate{}},
		{A: "web", B: "dns:53", Proto: "udp", RTT: trace.LinkRTT{Reason: "no round trip"}, WindowA: -1, WindowB: -1}}
	cases["links"] = links
	for name, res := range cases {
		var buf bytes.Buffer
		if err := WriteJSON(&buf, res); err != nil {
			t.Fatal(err)
		}
		if err := validateJSON(t, sch, buf.Bytes()); err != nil {
			t.Errorf("%s: output does not match the schema: %v", name, err)
		}
		back, err := readJSON(&buf, name)
		if err != nil {
			t.Errorf("%s: reading it back: %v", name, err)
			continue
		}
		if len(back.Patterns) != len(res.Patterns) {
			t.Errorf("%s: %d patterns back, want %d", name, len(back.Patterns), len(res.Patterns))
		}
	}
	for _, name := range []string{"shop", "conv"} {
		raw, err := os.ReadFile(filepath.Join("testdata", name+".result.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := validateJSON(t, sch, raw); err != nil {
			t.Errorf("testdata/%s.result.json: %v", name, err)
		}
	}
}

// TestSchemaRejects makes sure the schema is strict enough to catch
// mistakes: each mutation of a valid result must fail validation.
func TestSchemaRejects(t *testing.T) {
	sch := compileSchema(t)
	res, _ := shopResult()
	var buf bytes.Buffer
	if err := WriteJSON(&buf, res); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, from, to string }{
		{"version 3", `"version": 2`, `"version": 3`},
		{"unknown top-level field", `"engine": "linking",`, `"engine": "linking", "colour": "red",`},
		{"kind outside the enum", `"kind": "CALL"`, `"kind": "call"`},
		{"count as a string", `"count": 40,`, `"count": "40",`},
		{"probability above 1", `"max_probability": 0.9,`, `"max_probability": 1.9,`},
		{"root parent not a number", `"parent": null`, `"parent": "none"`},
	} {
		s := buf.String()
		if !strings.Contains(s, c.from) {
			t.Fatalf("%s: %q not in the output", c.name, c.from)
		}
		bad := strings.Replace(s, c.from, c.to, 1)
		if err := validateJSON(t, sch, []byte(bad)); err == nil {
			t.Errorf("%s: the schema accepted it", c.name)
		}
	}
}

// jsonFields returns the JSON names of the fields of every struct type
// reachable from typ.
func jsonFields(typ reflect.Type, seen map[reflect.Type]bool, out map[string]string) {
	for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
		typ = typ.Elem()
	}
	if typ.Kind() != reflect.Struct || seen[typ] {
		return
	}
	seen[typ] = true
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = typ.Name() + "." + f.Name
		jsonFields(f.Type, seen, out)
	}
}

// schemaProps collects every property name the schema defines.
func schemaProps(v any, out map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		if props, ok := x["properties"].(map[string]any); ok {
			for k := range props {
				out[k] = true
			}
		}
		for _, c := range x {
			schemaProps(c, out)
		}
	case []any:
		for _, c := range x {
			schemaProps(c, out)
		}
	}
}

// TestSchemaAndDocsCoverContract fails when a field of the Go result types
// is missing from the schema or from docs/formats.md, so that the contract
// documents cannot fall behind the code.
func TestSchemaAndDocsCoverContract(t *testing.T) {
	fields := map[string]string{}
	jsonFields(reflect.TypeOf(causal.Result{}), map[reflect.Type]bool{}, fields)
	raw, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	props := map[string]bool{}
	schemaProps(doc, props)
	docs, err := os.ReadFile("../docs/formats.md")
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(fields))
	for n := range fields {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !props[n] {
			t.Errorf("%s (JSON %q) is not in %s", fields[n], n, schemaPath)
		}
		if !bytes.Contains(docs, []byte("`"+n+"`")) {
			t.Errorf("%s (JSON %q) is not documented in docs/formats.md", fields[n], n)
		}
	}
	for p := range props {
		if _, ok := fields[p]; !ok {
			t.Errorf("the schema defines %q, which no Go field has", p)
		}
	}
	_ = trace.Count{}
}
