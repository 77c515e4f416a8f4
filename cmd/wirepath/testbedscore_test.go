package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/causal/score"
)

// The real testbed run kept as the scorer's fixture.
const (
	tbTruth = "../../causal/score/testdata/testbed/ids-8.truth.jsonl"
	tbTrace = "../../causal/score/testdata/testbed/ids-8.trace.tsv.gz"
)

// TestScoreTestbed runs nest on a testbed run's trace and scores it
// against the run's truth, in text and JSON.
func TestScoreTestbed(t *testing.T) {
	dir := t.TempDir()
	res := filepath.Join(dir, "nest.json")
	var stdout, stderr bytes.Buffer
	if code := runArgs(&stdout, &stderr, "nest", tbTrace, "--format", "json", "--instances", "-1", "-o", res); code != 0 {
		t.Fatalf("nest: exit %d: %s", code, stderr.String())
	}
	stdout.Reset()
	if code := runArgs(&stdout, &stderr, "score", res, tbTruth, "--trace", tbTrace); code != 0 {
		t.Fatalf("score: exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"truth: ids, sniffed, 8 in flight: 60 requests", "634 of 724 trace messages matched (634 by ordinal",
		"true messages not in the trace: 0", "engine nesting:", "app→redis", "(background, kept out)", "node delay"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, stdout.String())
		}
	}
	stdout.Reset()
	if code := runArgs(&stdout, &stderr, "score", res, tbTruth, "--trace", tbTrace, "--json"); code != 0 {
		t.Fatalf("score --json: exit %d: %s", code, stderr.String())
	}
	var s score.RequestScores
	if err := json.Unmarshal(stdout.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	if s.Version != score.RequestScoreVersion || len(s.Engines) != 1 || s.Engines[0].Engine != "nesting" ||
		s.Engines[0].Requests.All != 60 || !s.Engines[0].Instances || s.Mapping.Matched != 634 {
		t.Errorf("JSON score: %+v", s)
	}
}

func TestScoreTestbedUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := runArgs(&stdout, &stderr, "score", "x.json", tbTruth); code != 2 || !strings.Contains(stderr.String(), "--trace") {
		t.Errorf("a testbed truth without --trace: exit %d, %q", code, stderr.String())
	}
}
