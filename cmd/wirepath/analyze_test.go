package main

import "testing"

// The small fixed input of analyze's golden tests: three sniffers of one
// client and server (testdata/captures/make.sh), the server's clock
// 137.25 s ahead.
var analyzeCaptures = []string{"../../testdata/captures/client.pcap", "../../testdata/captures/server.pcapng", "../../testdata/captures/router-any.pcap.zst"}

func TestAnalyzeGolden(t *testing.T) {
	args := func(extra ...string) []string {
		return append(append([]string{"analyze"}, analyzeCaptures...), extra...)
	}
	runGolden(t, []cliCase{
		// auto picks the assembly engine on this request/response traffic.
		{name: "analyze-text", args: args("--top", "2"), wantCode: 0},
		{name: "analyze-all", args: args("--engine", "all", "--top", "1"), wantCode: 0},
		{name: "analyze-linking-role", args: args("--engine", "linking", "--naming", "role", "--top", "2"), wantCode: 0},
		// A capture cut short: the rest is analysed, exit 3.
		{name: "analyze-cut", args: []string{"analyze", "../../testdata/captures/client.pcap", "testdata/captures/cut.pcap", "--top", "1"}, wantCode: 3},
		// Nothing readable: no report, exit 1.
		{name: "analyze-unreadable", args: []string{"analyze", "testdata/captures/notes.pcap"}, wantCode: 1},
		{name: "analyze-bad-engine", args: args("--engine", "tracing"), wantCode: 2},
		{name: "analyze-bad-engine-flag", args: args("--nest-bins", "0"), wantCode: 2},
		{name: "analyze-no-args", args: []string{"analyze"}, wantCode: 2},
		// Windows of 100 ms with 30 ms margins: the same patterns and
		// counts as the whole run, the window accounting in the report.
		{name: "analyze-windowed", args: args("--windowed", "100ms", "--windowed-margin", "30ms", "--top", "2"), wantCode: 0},
		{name: "analyze-windowed-conv", args: args("--windowed", "1m", "--engine", "convolution"), wantCode: 2},
		{name: "analyze-windowed-margin", args: args("--windowed", "1s", "--windowed-margin", "1s"), wantCode: 2},
		// Perfetto's tracks are the patterns' instances, which windows do
		// not keep (OTLP is written window by window: TestWindowedRequests).
		{name: "analyze-windowed-perfetto", args: args("--windowed", "1m", "--format", "perfetto"), wantCode: 2},
	})
}
