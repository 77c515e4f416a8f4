package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wirepath/wirepath/causal"
)

// TestRequestRows lists the shop's instances as requests: one per listed
// instance, in start order, with the measured latency.
func TestRequestRows(t *testing.T) {
	tr, insts := shopTrace()
	res := resultOf(tr, insts, "linking", false, -1)
	rows, err := RequestRows([]*causal.Result{res}, tr)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(insts) {
		t.Fatalf("%d rows, want one per instance (%d)", len(rows), len(insts))
	}
	slow := 0
	for i, r := range rows {
		if i > 0 && r.StartNS < rows[i-1].StartNS {
			t.Errorf("row %d starts before row %d", i, i-1)
		}
		if len(r.Messages) == 0 || r.Messages[0] != int(insts[i].Nodes[0].Msg) {
			t.Errorf("row %d: messages %v, want the instance's, from %d", i, r.Messages, insts[i].Nodes[0].Msg)
		}
		if r.Pattern == 1 {
			// client → web → cache, db → client: 2·200 + 300 + 350 +
			// 200 + 200 + db + 100 + 500 µs.
			want := 2*shopNetUS + shopWebInUS + 2*shopLANUS + shopCacheUS + shopWebMidUS + 2*shopLANUS + shopWebOutUS
			switch r.LatencyUS - want {
			case shopDBSlowUS:
				slow++
			case shopDBFastUS:
			default:
				t.Errorf("row %d: latency %v µs, want %v plus the db's", i, r.LatencyUS, want)
			}
			if r.Calls != 3 {
				t.Errorf("row %d: %d calls, want 3", i, r.Calls)
			}
		}
	}
	if slow != shopPageN/4 {
		t.Errorf("%d slow page requests, want %d", slow, shopPageN/4)
	}
	// Without listed instances there is nothing to list.
	plain := resultOf(tr, insts, "linking", false, 0)
	if _, err := RequestRows([]*causal.Result{plain}, tr); !errors.Is(err, ErrNoRequests) {
		t.Errorf("no instances: err %v, want ErrNoRequests", err)
	}
}

func TestRequestFilter(t *testing.T) {
	row := RequestRow{Pattern: 2, Label: "GET /cart", StartNS: 1000, LatencyUS: 1500}
	for _, tc := range []struct {
		name string
		f    RequestFilter
		want bool
	}{
		{"zero", RequestFilter{}, true},
		{"pattern", RequestFilter{Patterns: []int{1, 2}}, true},
		{"other pattern", RequestFilter{Patterns: []int{1}}, false},
		{"label", RequestFilter{Label: regexp.MustCompile(`^GET /c`)}, true},
		{"other label", RequestFilter{Label: regexp.MustCompile(`item`)}, false},
		{"min latency", RequestFilter{MinLatency: time.Millisecond}, true},
		{"min latency above", RequestFilter{MinLatency: 2 * time.Millisecond}, false},
		{"max latency", RequestFilter{MaxLatency: time.Millisecond}, false},
		{"from", RequestFilter{From: 1000}, true},
		{"from after", RequestFilter{From: 1001}, false},
		{"to", RequestFilter{To: 1000}, false},
		{"to after", RequestFilter{To: 1001}, true},
	} {
		if got := tc.f.Keep(&row); got != tc.want {
			t.Errorf("%s: Keep = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestWriteRequests writes the shop's requests in every format (golden
// files) and reads the JSON Lines and CSV back.
func TestWriteRequests(t *testing.T) {
	tr, insts := shopTrace()
	res := resultOf(tr, insts, "linking", false, -1)
	rows, err := RequestRows([]*causal.Result{res}, tr)
	if err != nil {
		t.Fatal(err)
	}
	rows = rows[:6]
	rows[0].Frames, rows[0].Filter = []int64{3, 4, 9}, "frame.number in {3..4, 9}"
	for _, f := range RequestFormats {
		var buf bytes.Buffer
		if err := WriteRequests(&buf, f, rows); err != nil {
			t.Fatal(err)
		}
		compareGolden(t, "shop.requests."+f, buf.Bytes())
		switch f {
		case RequestsJSONL:
			lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
			if lines[0] != `{"wirepath_requests":2}` || len(lines) != len(rows)+1 {
				t.Errorf("jsonl: header %q, %d lines", lines[0], len(lines))
			}
			var back RequestRow
			if err := json.Unmarshal([]byte(lines[1]), &back); err != nil || back.Filter != rows[0].Filter || len(back.Frames) != 3 {
				t.Errorf("jsonl: read back %+v, %v", back, err)
			}
		case RequestsCSV:
			recs, err := csv.NewReader(&buf).ReadAll()
			if err != nil || len(recs) != len(rows)+1 || len(recs[0]) != len(requestColumns) {
				t.Errorf("csv: %d records, %v", len(recs), err)
			}
		}
	}
	if err := WriteRequests(&bytes.Buffer{}, "xml", rows); err == nil {
		t.Error("an unknown format was accepted")
	}
}
