package main

import "testing"

func TestPreloadCLIGolden(t *testing.T) {
	runGolden(t, []cliCase{
		{name: "preload-summarize", args: []string{"preload", "summarize", "../../preload/testdata/sample.jsonl"}, wantCode: 0},
		{name: "preload-summarize-json", args: []string{"preload", "summarize", "--json", "../../preload/testdata/sample.jsonl"}, wantCode: 0},
		{name: "preload-summarize-bad", args: []string{"preload", "summarize", "../../preload/testdata/bad.jsonl"}, wantCode: 3},
		{name: "preload-summarize-strict", args: []string{"preload", "summarize", "--strict", "../../preload/testdata/bad.jsonl"}, wantCode: 1},
		{name: "preload-summarize-missing", args: []string{"preload", "summarize", "no/such/file.jsonl"}, wantCode: 1},
		{name: "preload-summarize-noargs", args: []string{"preload", "summarize"}, wantCode: 2},
		{name: "preload-strace", args: []string{"preload", "strace", "--host", "h", "../../preload/testdata/strace/udp.strace"}, wantCode: 0},
	})
}
