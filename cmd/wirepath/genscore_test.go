package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/gen"
	"github.com/wirepath/wirepath/causal/score"
	"github.com/wirepath/wirepath/trace"
)

func TestGenScoreGolden(t *testing.T) {
	runGolden(t, []cliCase{
		{name: "gen-list", args: []string{"gen", "--list"}, wantCode: 0},
		{name: "gen-no-config", args: []string{"gen"}, wantCode: 2},
		{name: "gen-bad-skew", args: []string{"gen", "multitier", "--skew", "WS2"}, wantCode: 2},
		{name: "gen-bad-config", args: []string{"gen", "testdata/gen-bad.yaml"}, wantCode: 1},
		{name: "score-one-arg", args: []string{"score", "x.json"}, wantCode: 2},
	})
}

// TestGenThenScore runs gen, builds a result from the true instances (what a
// perfect engine would report), and checks that score finds it perfect.
func TestGenThenScore(t *testing.T) {
	dir := t.TempDir()
	tracePath := filepath.Join(dir, "cc.tsv")
	var stdout, stderr bytes.Buffer
	code := runArgs(&stdout, &stderr, "gen", "children-d-cc", "--duration", "10s", "--seed", "7", "--skew", "B=5ms", "--drop-random", "0.01", "-o", tracePath)
	if code != 0 {
		t.Fatalf("gen: exit %d: %s", code, stderr.String())
	}
	tr, err := trace.ReadFile(tracePath, trace.ReadOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	truth, err := gen.ReadTruthFile(filepath.Join(dir, "cc.truth.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	if truth.Meta.Seed != 7 || truth.Meta.SkewNS["B"] != 5e6 || truth.Meta.Drop.Random != 0.01 || truth.Meta.Observed != len(tr.Messages) {
		t.Fatalf("flags not applied: %+v", truth.Meta)
	}
	agg := causal.NewAggregator(tr, causal.AggregateOptions{Naming: causal.DefaultNaming(), KeepInstances: true})
	lost := 0
	for _, in := range truth.Instances() {
		ok := true
		for k := range in.Nodes {
			if in.Nodes[k].Msg = truth.Observed[in.Nodes[k].Msg]; in.Nodes[k].Msg < 0 {
				ok = false
			}
		}
		if !ok {
			lost++
			continue
		}
		if err := agg.Add(in); err != nil {
			t.Fatal(err)
		}
	}
	res := &causal.Result{Version: causal.ResultVersion, Engine: "oracle", Trace: causal.Summarize(tr), Patterns: agg.Patterns(causal.RankExpected)}
	js, _ := json.Marshal(res)
	resPath := filepath.Join(dir, "res.json")
	os.WriteFile(resPath, js, 0o644)

	stdout.Reset()
	stderr.Reset()
	if code := runArgs(&stdout, &stderr, "score", resPath, filepath.Join(dir, "cc.truth.tsv"), "--json"); code != 0 {
		t.Fatalf("score: exit %d: %s", code, stderr.String())
	}
	var rep score.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Patterns.FalsePositives != 0 || rep.Patterns.FalseNegatives != 0 || rep.Instances == nil ||
		rep.Instances.FalsePositives != 0 || rep.Instances.FalseNegatives != lost || lost == 0 {
		t.Errorf("score of the true instances: %+v %+v (lost %d)", rep.Patterns, rep.Instances, lost)
	}
	stdout.Reset()
	if code := runArgs(&stdout, &stderr, "score", resPath, filepath.Join(dir, "cc.truth.tsv")); code != 0 || !strings.Contains(stdout.String(), "top-N") {
		t.Errorf("text score: exit %d:\n%s", code, stdout.String())
	}
	// A truth that is not one.
	if code := runArgs(&stdout, &stderr, "score", resPath, tracePath); code != 1 || !strings.Contains(stderr.String(), "cc.tsv:1") {
		t.Errorf("score with a trace as truth: exit %d: %s", code, stderr.String())
	}
}

func TestGenDump(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := runArgs(&stdout, &stderr, "gen", "penalty-breaker", "--dump"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	b, _ := gen.LookupBuiltin("penalty-breaker")
	if !bytes.Equal(stdout.Bytes(), b.Source) {
		t.Error("--dump does not print the shipped config")
	}
}

// TestGenPcapThenScoreWithTrace writes captures, then scores a perfect
// result through --trace, as the end-to-end tests of the capture pipeline
// will with the trace the pipeline rebuilt.
func TestGenPcapThenScoreWithTrace(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := runArgs(&stdout, &stderr, "gen", "children-0-2", "--duration", "3s", "--pcap", dir); code != 0 {
		t.Fatalf("gen: exit %d: %s", code, stderr.String())
	}
	for _, f := range []string{"mirror.pcapng", "trace.tsv", "truth.tsv"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", f, err)
		}
	}
	truth, err := gen.ReadTruthFile(filepath.Join(dir, "truth.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	if truth.Meta.Names != "addr" {
		t.Errorf("captures name nodes by %q, want addr", truth.Meta.Names)
	}
	tr, err := trace.ReadFile(filepath.Join(dir, "trace.tsv"), trace.ReadOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	// A "pipeline" trace: the same messages in reverse order.
	rev := &trace.Trace{}
	for i := len(tr.Messages) - 1; i >= 0; i-- {
		m := tr.Messages[i]
		m.Src, m.Dst, m.SrcNode, m.DstNode, m.CallID = rev.Intern(tr.Str(m.Src)), rev.Intern(tr.Str(m.Dst)), rev.Intern(tr.Str(m.SrcNode)), rev.Intern(tr.Str(m.DstNode)), 0
		rev.Messages = append(rev.Messages, m)
	}
	revPath := filepath.Join(dir, "rev.tsv")
	f, _ := os.Create(revPath)
	trace.WriteTSV(f, rev)
	f.Close()
	toTruth, _ := gen.MatchTrace(rev, truth, int64(time.Second))
	agg := causal.NewAggregator(rev, causal.AggregateOptions{Naming: causal.DefaultNaming(), KeepInstances: true})
	byTruth := make(map[int32]int32)
	for i, ti := range toTruth {
		byTruth[ti] = int32(i)
	}
	for _, in := range truth.Instances() {
		for k := range in.Nodes {
			in.Nodes[k].Msg = byTruth[in.Nodes[k].Msg]
		}
		agg.Add(in)
	}
	res := &causal.Result{Version: causal.ResultVersion, Engine: "oracle", Trace: causal.Summarize(rev), Patterns: agg.Patterns(causal.RankExpected)}
	js, _ := json.Marshal(res)
	resPath := filepath.Join(dir, "res.json")
	os.WriteFile(resPath, js, 0o644)
	stdout.Reset()
	if code := runArgs(&stdout, &stderr, "score", resPath, filepath.Join(dir, "truth.tsv"), "--trace", revPath, "--json"); code != 0 {
		t.Fatalf("score: exit %d: %s", code, stderr.String())
	}
	var rep score.Report
	json.Unmarshal(stdout.Bytes(), &rep)
	if rep.Instances == nil || rep.Instances.FalseNegatives != 0 || rep.Patterns.FalsePositives != 0 || rep.Patterns.FalseNegatives != 0 {
		t.Errorf("score through --trace: %+v %+v", rep.Patterns, rep.Instances)
	}
}
