package main

import "testing"

// TestSkewGolden: the skewer shifts the named nodes' clocks (send times on
// the sender's clock, receive times on the receiver's) and the offsets the
// trace knows move with them; --deskew removes known offsets; the
// evidence is kept; mistakes are usage errors.
func TestSkewGolden(t *testing.T) {
	const tr = "testdata/traces/skew.tsv"
	runGolden(t, []cliCase{
		{name: "skew-node", args: []string{"skew", tr, "--node", "db=1us", "--node", "client=-100ns"}},
		{name: "skew-deskew", args: []string{"skew", tr, "--deskew", "--format", "jsonl"}},
		{name: "skew-unknown-node", args: []string{"skew", tr, "--node", "cache=1ms"}, wantCode: 1},
		{name: "skew-no-action", args: []string{"skew", tr}, wantCode: 2},
		{name: "skew-bad-duration", args: []string{"skew", tr, "--node", "db=fast"}, wantCode: 2},
		// The evidence of each message stays as it was.
		{name: "skew-evidence-node", args: []string{"skew", "testdata/traces/skew-evidence.tsv", "--node", "db=1us"}},
		{name: "skew-evidence-deskew", args: []string{"skew", "testdata/traces/skew-evidence.tsv", "--deskew", "--format", "jsonl"}},
	})
}
