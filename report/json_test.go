package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/causal"

	"github.com/wirepath/wirepath/internal/fuzzseed"
)

func TestReadJSONErrors(t *testing.T) {
	good, err := os.ReadFile(filepath.Join("testdata", "shop.result.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, doc string
		want      string
		is        error
	}{
		{"empty", "", "r.json: byte 0: empty file", nil},
		{"syntax", `{"version": 1, "engine": }`, "r.json: byte 25: invalid character '}'", nil},
		{"type", `{"version": "1"}`, "r.json: byte 15: json: cannot unmarshal string", nil},
		{"truncated", string(good[:len(good)/2]), "truncated", io.ErrUnexpectedEOF},
		{"no version", `{"engine": "x", "patterns": []}`, "not a wirepath result", ErrNotResult},
		{"newer", `{"version": 7, "engine": "x", "patterns": []}`, "version 7, this build reads up to 2", ErrNewerVersion},
		{"trailing", `{"version": 1, "engine": "x", "patterns": []} {}`, "data after the result object", nil},
		{"bad parent", strings.Replace(string(good), `"parent": 0`, `"parent": 3`, 1), "hop 1: parent 3 is not an earlier hop", nil},
		{"no hops", `{"version": 1, "engine": "x", "patterns": [{"rank": 1, "hops": []}]}`, "patterns[0] (rank 1): no hops", nil},
	} {
		_, err := ReadJSON(strings.NewReader(c.doc), "r.json")
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
	extra := strings.Replace(string(good), `"engine": "linking",`, `"engine": "linking", "future_field": [1, 2],`, 1)
	if _, err := ReadJSON(strings.NewReader(extra), "r.json"); err != nil {
		t.Errorf("an unknown field was refused: %v", err)
	}
}

// FuzzReadJSON feeds arbitrary bytes to the result reader and, when it
// accepts them, to every renderer: none may panic, and what is accepted
// must survive a write/read round trip unchanged in shape.
func FuzzReadJSON(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	fuzzseed.Files(f, "report/testdata/*.result.json", "cmd/wirepath/testdata/report/*.json")
	// Small, compact seeds keep the fuzzer (and its minimiser) fast: the
	// cache-hit path, the lookup path with its untraced DNS server, and one
	// convolution hop with delays.
	t, insts := shopTrace()
	for _, sel := range [][2]int{{shopPageN + shopLookupN, shopPageN + shopLookupN + 1}, {shopPageN, shopPageN + 1}} {
		res := resultOf(t, insts[sel[0]:sel[1]], "linking", false, 0)
		res.Trace, res.Accounting, res.Warnings, res.Params = causal.TraceSummary{}, nil, nil, nil
		for i := range res.Patterns[0].Hops {
			res.Patterns[0].Hops[i].Bytes = nil
		}
		raw, err := json.Marshal(res)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Add([]byte(`{"version": 1, "engine": "x", "patterns": [{"rank": 1, "signature": "A->B", "hops": [{"id": 0, "parent": null, "from": "A", "to": "B", "kind": "-", "start_us": null}]}]}`)) // one hop, no timing
	f.Add([]byte(`{"version": 1, "engine": "x", "patterns": [{"rank": 1, "hops": [{"id": 0, "from": "A", "to": "B"}, {"id": 1, "parent": 0, "from": "B", "to": "A", "kind": "RETURN"}]}]}`))   // unpaired RETURN
	f.Add([]byte(`{"version": 2}`))                                                                                                                                                            // newer version
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := ReadJSON(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		for _, fm := range Formats {
			if err := Write(io.Discard, fm, res, Options{}); err != nil {
				t.Fatalf("%s: %v", fm, err)
			}
		}
		var buf bytes.Buffer
		if err := WriteJSON(&buf, res); err != nil {
			return // e.g. NaN cannot be written; not a reader bug
		}
		back, err := ReadJSON(&buf, "again")
		if err != nil {
			t.Fatalf("re-reading written result: %v", err)
		}
		if len(back.Patterns) != len(res.Patterns) {
			t.Fatalf("%d patterns after round trip, want %d", len(back.Patterns), len(res.Patterns))
		}
	})
}

// FuzzReadResults feeds arbitrary bytes to the reader of one result or an
// envelope of several: it must not panic, and what it accepts must be
// rendered by every format and come back unchanged in number and shape
// from a write/read round trip.
func FuzzReadResults(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	fuzzseed.Files(f, "report/testdata/*.result.json", "cmd/wirepath/testdata/report/*.json")
	one := `{"version": 1, "engine": "x", "patterns": [{"rank": 1, "signature": "A->B", "hops": [{"id": 0, "parent": null, "from": "A", "to": "B", "kind": "-", "start_us": null}]}]}`
	f.Add([]byte(one))                                                                                                // a plain result
	f.Add([]byte(`{"wirepath_analysis": 1, "engines": ["x", "y"], "results": [` + one + `, ` + one + `]}`))           // an envelope of two
	f.Add([]byte(`{"wirepath_analysis": 1, "engines": [], "results": []}`))                                           // empty envelope
	f.Add([]byte(`{"wirepath_analysis": 2, "results": [` + one + `]}`))                                               // newer envelope
	f.Add([]byte(`{"wirepath_analysis": 1, "results": [{"version": 1, "engine": "x", "patterns": [{"hops": []}]}]}`)) // bad pattern inside
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
		for _, fm := range Formats {
			if err := WriteAll(io.Discard, fm, rs, Options{}); err != nil {
				t.Fatalf("%s: %v", fm, err)
			}
		}
		var buf bytes.Buffer
		if err := WriteAll(&buf, FormatJSON, rs, Options{}); err != nil {
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
			if back[i].Engine != rs[i].Engine || len(back[i].Patterns) != len(rs[i].Patterns) {
				t.Fatalf("result %d changed in the round trip", i)
			}
		}
	})
}
