package pipeline

import (
	"fmt"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/flows"
	"github.com/wirepath/wirepath/trace"
)

// TestCheckRun builds the situations each warning is for and checks that
// exactly those warnings come out, naming what they are about.
func TestCheckRun(t *testing.T) {
	msg := func(tr *trace.Trace, src, dst string, send, recv bool) {
		m := trace.Message{SrcNode: tr.Intern(src), DstNode: tr.Intern(dst), SendTS: trace.NoTime, RecvTS: trace.NoTime}
		if send {
			m.SendTS = 1
		}
		if recv {
			m.RecvTS = 2
		}
		tr.Messages = append(tr.Messages, m)
	}
	clean := func() *trace.Trace {
		tr := &trace.Trace{}
		msg(tr, "client", "web", true, true)
		msg(tr, "web", "client", true, true)
		tr.Meta.Clocks = []trace.Clock{{Name: "a.pcap", Kind: "sniffer", Reference: "a.pcap", Known: true, Method: "reference"}}
		return tr
	}
	tests := []struct {
		name  string
		setup func(tr *trace.Trace, res *Result)
		want  []string // substrings, one per warning, in order
	}{
		{"clean", func(*trace.Trace, *Result) {}, nil},
		{"unknown sniffer", func(tr *trace.Trace, _ *Result) {
			tr.Meta.Clocks = append(tr.Meta.Clocks, trace.Clock{Name: "b.pcap", Kind: "sniffer", Reference: "a.pcap"})
		}, []string{"sniffer b.pcap: its clock offset is unknown"}},
		{"sniffer offsets off", func(tr *trace.Trace, res *Result) {
			tr.Meta.Clocks = append(tr.Meta.Clocks, trace.Clock{Name: "b.pcap", Kind: "sniffer", Reference: "a.pcap"})
		}, []string{"sniffer b.pcap: its clock offset against a.pcap was neither estimated (offsets are off) nor given"}},
		{"unknown traced host", func(tr *trace.Trace, _ *Result) {
			tr.Meta.Clocks = append(tr.Meta.Clocks, trace.Clock{Name: "cache", Kind: "host", Reference: "a.pcap"})
		}, []string{"traced host cache: its clock offset is unknown"}},
		{"one-sided node", func(tr *trace.Trace, _ *Result) {
			msg(tr, "web", "db", true, false)
			msg(tr, "db", "web", false, true)
			msg(tr, "web", "cache", true, false)
		}, []string{"node db is seen on one side only: no capture point on its side saw any of its messages (2 of 2)",
			"node cache is seen on one side only: no capture point on its side saw any of its messages (1 of 1)"}},
		{"partly one-sided", func(tr *trace.Trace, _ *Result) {
			msg(tr, "client", "web", false, true)
		}, []string{"node client is seen on one side only: no capture point on its side saw some of its messages (1 of 3)"}},
		{"gaps and mid-stream", func(_ *trace.Trace, res *Result) {
			res.Flows = &flows.Stats{GapsAcked: 1, GapsEnd: 2, GapBytes: 4000, MidStream: 5}
		}, []string{"3 gaps in TCP streams (4000 bytes no sniffer saw)", "5 connections were already open"}},
		{"TLS not decrypted, a rejected detection", func(_ *trace.Trace, res *Result) {
			res.Flows = &flows.Stats{DetectRejected: 1, Protocols: map[string]*flows.ProtoStats{
				"tls": {Conns: 3, Decrypted: 1, NoKeyLog: 2}, "h2": {Conns: 2}}}
		}, []string{"2 of 3 TLS connections were not decrypted (give their key log with --tls-keylog)",
			"1 connections looked like a protocol"}},
		{"TLS decrypted", func(_ *trace.Trace, res *Result) {
			res.Flows = &flows.Stats{Protocols: map[string]*flows.ProtoStats{"tls": {Conns: 3, Decrypted: 3}}}
		}, nil},
	}
	for _, tc := range tests {
		tr, res := clean(), &Result{Flows: &flows.Stats{}}
		tc.setup(tr, res)
		cfg := &Config{}
		cfg.Capture.NoOffsets = tc.name == "sniffer offsets off"
		got := checkRun(cfg, res, tr)
		if len(got) != len(tc.want) {
			t.Errorf("%s: %d warnings %q, want %d", tc.name, len(got), got, len(tc.want))
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%s: warning %d %q lacks %q", tc.name, i, got[i], w)
			}
		}
	}

	// Many one-sided nodes: the worst few by name, then a count.
	tr := clean()
	for i := range maxOneSided + 3 {
		msg(tr, "web", fmt.Sprintf("s%d", i), true, false)
	}
	got := oneSided(tr)
	if len(got) != maxOneSided+1 || !strings.Contains(got[maxOneSided], "and 3 more nodes") || !strings.Contains(got[0], "node s0 ") {
		t.Errorf("many one-sided nodes: %q", got)
	}
}
