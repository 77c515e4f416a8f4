package main

import "testing"

func TestNatGolden(t *testing.T) {
	const dir = "../../testdata/nat/"
	captures := []string{dir + "outside.pcap", dir + "inside.pcap", dir + "c1.pcapng", dir + "s1.pcap"}
	brnf := []string{dir + "brnf/outside.pcap", dir + "brnf/inside.pcap", dir + "brnf/c1.pcapng", dir + "brnf/s1.pcap"}
	runGolden(t, []cliCase{
		{name: "nat-text", args: append([]string{"nat"}, captures...), wantCode: 0},
		{name: "nat-json", args: append([]string{"nat", "--json"}, captures...), wantCode: 0},
		{name: "nat-brnf-all", args: append([]string{"nat", "--all"}, brnf...), wantCode: 0},
		{name: "nat-not-a-capture", args: []string{"nat", dir + "make.sh", dir + "outside.pcap", dir + "inside.pcap"}, wantCode: 3},
		{name: "nat-missing-file", args: []string{"nat", dir + "no-such.pcap"}, wantCode: 1},
		{name: "nat-bad-score", args: []string{"nat", "--min-score", "2", dir + "outside.pcap"}, wantCode: 2},
		{name: "nat-bad-window", args: []string{"nat", "--nat-window", "0s", dir + "outside.pcap"}, wantCode: 2},
		{name: "nat-bad-dedupe-window", args: []string{"nat", "--window", "0s", dir + "outside.pcap"}, wantCode: 2},
		{name: "nat-deprecated-flags", args: append([]string{"nat", "--no-clock-offsets", "--window", "6ms"}, captures...), wantCode: 0},
		{name: "nat-no-args", args: []string{"nat"}, wantCode: 2},
	})
}
