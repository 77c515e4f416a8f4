package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/wirepath/wirepath/causal"
)

// TestAssembleGolden runs the assemble command on the traces in
// testdata/traces and compares both output streams with the golden files.
func TestAssembleGolden(t *testing.T) {
	const dir = "testdata/traces/"
	runGolden(t, []cliCase{
		{name: "assemble-fig3", args: []string{"assemble", dir + "fig3.tsv"}},
		{name: "assemble-fig3-json", args: []string{"assemble", "--format", "json", dir + "fig3.tsv"}},
		{name: "assemble-rpc-small", args: []string{"assemble", "--top", "3", dir + "rpc-small.tsv"}},
		{name: "assemble-bad-line", args: []string{"assemble", dir + "bad-line.tsv"}, wantCode: 3},
		{name: "assemble-bad-flag", args: []string{"assemble", "--beam", "0", dir + "fig3.tsv"}, wantCode: 2},
		{name: "assemble-bad-em", args: []string{"assemble", "--em", "sometimes", dir + "fig3.tsv"}, wantCode: 2},
		{name: "analyze-asm-bad-flag", args: []string{"analyze", "--engine", "assembly", "--asm-passes", "0", "testdata/nat/lb.pcap"}, wantCode: 2},
	})
}

// TestAssembleJSONHasRequests: the JSON result lists every request, each
// a tree of the trace's messages, and every message with a timestamp is
// in one request.
func TestAssembleJSONHasRequests(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := runArgs(&out, &errOut, "assemble", "--format", "json", "testdata/traces/rpc-small.tsv"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var res causal.Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if res.Version != causal.ResultVersion || res.Engine != "assembly" || len(res.Requests) == 0 {
		t.Fatalf("version %d engine %q, %d requests", res.Version, res.Engine, len(res.Requests))
	}
	seen := map[int]int{}
	for _, q := range res.Requests {
		for i, m := range q.Messages {
			if i > 0 && (m.Parent < 0 || m.Parent >= i) {
				t.Fatalf("request %d message %d: parent %d", q.ID, i, m.Parent)
			}
			if m.Msg >= 0 {
				seen[m.Msg]++
			}
		}
	}
	if len(seen) != res.Trace.Messages {
		t.Errorf("%d of %d messages in requests", len(seen), res.Trace.Messages)
	}
	for m, n := range seen {
		if n != 1 {
			t.Errorf("message %d in %d requests", m, n)
		}
	}
}
