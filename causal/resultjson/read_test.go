package resultjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/internal/fuzzseed"
)

// sample is a result of one two-hop pattern with an instance listed.
func sample(engine string) *causal.Result {
	root := 0
	d := func(v float64) *causal.Dist {
		return &causal.Dist{N: 2, Weight: 2, Mean: v, Min: v, P50: v, P90: v, P99: v, Max: v}
	}
	return &causal.Result{
		Version: causal.ResultVersion, Engine: engine,
		Trace:  causal.TraceSummary{Messages: 4, Nodes: 2},
		Params: map[string]any{"window": "1s"},
		Patterns: []causal.Pattern{{
			Rank: 1, Signature: "CLIENT->web(web->CLIENT)", Count: 2, Expected: 2, MaxProbability: 1, Latency: d(900),
			Hops: []causal.Hop{
				{ID: 0, From: "CLIENT", To: "web", Kind: "CALL", Start: d(0), NetDelay: d(200)},
				{ID: 1, Parent: &root, From: "web", To: "CLIENT", Kind: "RETURN", Start: d(700), NodeDelay: d(500), NetDelay: d(200)},
			},
			Instances: []causal.InstanceRecord{{Messages: []int{0, 1}, Probability: 1}},
		}},
	}
}

func written(t *testing.T, res *causal.Result) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, res); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestRoundTrip(t *testing.T) {
	one := sample("linking")
	rs, err := ReadResults(strings.NewReader(written(t, one)), "one.json")
	if err != nil || len(rs) != 1 {
		t.Fatalf("one result: %v, %v", rs, err)
	}
	if got := written(t, rs[0]); got != written(t, one) {
		t.Errorf("one result changed in a round trip:\n%s", got)
	}
	two := []*causal.Result{sample("linking"), sample("nesting")}
	var buf bytes.Buffer
	if err := WriteAnalysis(&buf, two); err != nil {
		t.Fatal(err)
	}
	back, err := ReadResults(&buf, "all.json")
	if err != nil || len(back) != 2 {
		t.Fatalf("envelope: %v, %v", back, err)
	}
	for i := range two {
		if written(t, back[i]) != written(t, two[i]) {
			t.Errorf("result %d changed through the envelope", i)
		}
	}
	// No pattern is written as [], not null.
	empty := &causal.Result{Version: causal.ResultVersion, Engine: "x"}
	if s := written(t, empty); !strings.Contains(s, `"patterns": []`) {
		t.Errorf("nil patterns written as %s", s)
	}
	if empty.Patterns != nil {
		t.Error("Write changed its argument")
	}
}

func TestReadOneErrors(t *testing.T) {
	good := written(t, sample("linking"))
	for _, c := range []struct {
		name, doc string
		want      string
		is        error
	}{
		{"empty", "", "r.json: byte 0: empty file", nil},
		{"syntax", `{"version": 1, "engine": }`, "r.json: byte 25: invalid character '}'", nil},
		{"type", `{"version": "1"}`, "r.json: byte 15: json: cannot unmarshal string", nil},
		{"truncated", good[:len(good)/2], "truncated", io.ErrUnexpectedEOF},
		{"no version", `{"engine": "x", "patterns": []}`, "not a wirepath result", ErrNotResult},
		{"newer", `{"version": 7, "engine": "x", "patterns": []}`, "version 7, this build reads up to 3", ErrNewerVersion},
		{"trailing", `{"version": 1, "engine": "x", "patterns": []} {}`, "data after the result object", nil},
		{"bad parent", strings.Replace(good, `"parent": 0`, `"parent": 3`, 1), "hop 1: parent 3 is not an earlier hop", nil},
		{"wrong sender", strings.Replace(good, `"from": "web"`, `"from": "db"`, 1), `hop 1 is sent by "db" but its parent hop 0 went to "web"`, nil},
		{"short instance", strings.Replace(good, `"messages": [`+"\n"+`            0,`, `"messages": [`, 1), "instances[0] lists 1 messages for 2 hops", nil},
		{"no hops", `{"version": 1, "engine": "x", "patterns": [{"rank": 1, "hops": []}]}`, "patterns[0] (rank 1): no hops", nil},
	} {
		_, err := ReadResults(strings.NewReader(c.doc), "r.json")
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q lacks %q", c.name, err, c.want)
		}
		if c.is != nil && !errors.Is(err, c.is) {
			t.Errorf("%s: error %v is not %v", c.name, err, c.is)
		}
		var re *ResultError
		if !errors.As(err, &re) || re.File != "r.json" {
			t.Errorf("%s: error %v is not a *ResultError naming the file", c.name, err)
		}
	}
	// Unknown fields are allowed within a version.
	extra := strings.Replace(good, `"engine": "linking",`, `"engine": "linking", "future_field": [1, 2],`, 1)
	rs, err := ReadResults(strings.NewReader(extra), "r.json")
	if err != nil {
		t.Fatalf("an unknown field was refused: %v", err)
	}
	if !reflect.DeepEqual(rs[0], sample("linking")) {
		t.Error("an unknown field changed what was read")
	}
}

func TestReadAnalysisErrors(t *testing.T) {
	good, err := json.Marshal(NewAnalysis([]*causal.Result{sample("linking"), sample("nesting")}))
	if err != nil {
		t.Fatal(err)
	}
	badPattern := NewAnalysis([]*causal.Result{sample("linking"), sample("nesting")})
	badPattern.Results[1].Patterns[0].Hops[0].ID = 7
	bp, _ := json.Marshal(badPattern)
	newer := strings.Replace(string(good), `"wirepath_analysis":1`, `"wirepath_analysis":2`, 1)
	newerResult := strings.Replace(string(good), fmt.Sprintf(`"version":%d`, causal.ResultVersion), `"version":9`, 1)
	tests := []struct {
		name, in string
		want     string
		is       error
	}{
		{"empty envelope", `{"wirepath_analysis":1,"engines":[],"results":[]}`, "no result", nil},
		{"newer envelope", newer, "analysis version 2", ErrNewerVersion},
		{"newer result", newerResult, "results[0]: ", ErrNewerVersion},
		{"bad pattern", string(bp), "results[1]: patterns[0]", nil},
		{"null result", `{"wirepath_analysis":1,"engines":["x"],"results":[null]}`, "results[0] is null", nil},
		{"not a result", `{"hello":1}`, "", ErrNotResult},
		{"syntax", `{"wirepath_analysis":1,`, "all.json", nil},
		{"zero version", `{"wirepath_analysis":0,"results":[{}]}`, "bad analysis version", nil},
		{"trailing data", string(good) + `{}`, "data after the analysis object", nil},
	}
	for _, tc := range tests {
		_, err := ReadResults(strings.NewReader(tc.in), "all.json")
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "all.json") {
			t.Errorf("%s: %v, want a message naming the file with %q", tc.name, err, tc.want)
		}
		if tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("%s: %v is not %v", tc.name, err, tc.is)
		}
	}
}

// FuzzReadResults feeds arbitrary bytes to the reader: it must not panic,
// every error must name the input, and what it accepts must come back
// unchanged from a write/read round trip, each pattern well formed.
func FuzzReadResults(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	fuzzseed.Files(f, "report/testdata/*.result.json", "cmd/wirepath/testdata/report/*.json")
	one := `{"version": 2, "engine": "x", "patterns": [{"rank": 1, "signature": "A->B", "hops": [{"id": 0, "parent": null, "from": "A", "to": "B", "kind": "-", "start_us": null}]}]}`
	f.Add([]byte(one))
	f.Add([]byte(`{"wirepath_analysis": 1, "engines": ["x", "y"], "results": [` + one + `, ` + one + `]}`))
	f.Add([]byte(`{"wirepath_analysis": 1, "results": [{"version": 1, "engine": "x", "patterns": [{"hops": []}]}]}`))
	f.Add([]byte(`{"version": 1, "patterns": [{"hops": [{"id": 0}, {"id": 1, "parent": 0}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := ReadResults(bytes.NewReader(data), "fuzz")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz") {
				t.Fatalf("error does not name the input: %v", err)
			}
			return
		}
		if len(rs) == 0 {
			t.Fatal("no result and no error")
		}
		var buf bytes.Buffer
		if err := WriteAnalysis(&buf, rs); err != nil {
			return // e.g. NaN cannot be written; not a reader bug
		}
		back, err := ReadResults(&buf, "again")
		if err != nil {
			t.Fatalf("re-reading written results: %v", err)
		}
		if len(back) != len(rs) {
			t.Fatalf("%d results after round trip, want %d", len(back), len(rs))
		}
		for i := range rs {
			if len(back[i].Patterns) != len(rs[i].Patterns) {
				t.Fatalf("result %d: %d patterns after the round trip, want %d", i, len(back[i].Patterns), len(rs[i].Patterns))
			}
			// What the reader accepts, every consumer can walk.
			for k := range rs[i].Patterns {
				if !rs[i].Patterns[k].WellFormed() {
					t.Fatalf("result %d pattern %d accepted but not well formed", i, k)
				}
			}
		}
	})
}
