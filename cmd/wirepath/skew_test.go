package main

import "testing"

// TestSkewGolden: the skewer shifts the named nodes' clocks (send times on
// the sender's clock, receive times on the receiver's) and the offsets the
// trace knows move with them; --deskew removes known offsets; mistakes are
// usage errors.
func TestSkewGolden(t *testing.T) {
	const tr = "testdata/traces/skew.tsv"
	runGolden(t, []cliCase{
		{name: "skew-node", args: []string{"skew", tr, "--node", "db=1us", "--node", "client=-100ns"}},
		{name: "skew-deskew", args: []string{"skew", tr, "--deskew", "--format", "jsonl"}},
		{name: "skew-unknown-node", args: []string{"skew", tr, "--node", "cache=1ms"}, wantCode: 1},
		{name: "skew-no-action", args: []string{"skew", tr}, wantCode: 2},
		{name: "skew-bad-duration", args: []string{"skew", tr, "--node", "db=fast"}, wantCode: 2},
	})
}
