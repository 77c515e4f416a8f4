package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/resultjson"
	"github.com/wirepath/wirepath/internal/fuzzseed"
)

// readJSON reads the one result in r through the result reader.
func readJSON(r io.Reader, name string) (*causal.Result, error) {
	rs, err := resultjson.ReadResults(r, name)
	if err != nil {
		return nil, err
	}
	if len(rs) != 1 {
		return nil, fmt.Errorf("%s: %d results, want one", name, len(rs))
	}
	return rs[0], nil
}

// FuzzReadJSON feeds arbitrary bytes to the result reader (one result) and, when it
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
		res, err := readJSON(bytes.NewReader(data), "fuzz")
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
		back, err := readJSON(&buf, "again")
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
		rs, err := resultjson.ReadResults(bytes.NewReader(data), "fuzz")
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
		back, err := resultjson.ReadResults(&buf, "again")
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
