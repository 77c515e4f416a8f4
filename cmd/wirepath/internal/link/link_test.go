package link

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/linking"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/cmd/wirepath/internal/enginecmd"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// testdata/multitier.tsv was written by the linking tests' fixture
// generator of the time (causal/internal/synth, removed after commit
// c209f89) with -system multitier -rate 20 -duration 1500ms -seed 7. Its
// successor writes an equivalent trace of the same system with another
// random stream:
//
//	go run ./tools/gentrace -fixture lan -rate 20 -duration 1500ms -seed 7 -o cmd/wirepath/internal/link/testdata/multitier.tsv
//
// (then rewrite the goldens with -update).

// runLink runs the link command in process, as main does.
func runLink(args ...string) (stdout, stderr string, code int) {
	var out, errOut bytes.Buffer
	ios := &cmdutil.IOStreams{Out: &out, ErrOut: &errOut}
	cmd := NewCmd(ios)
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmd.Execute()
	if err != nil {
		cmdutil.PrintError(&errOut, err)
	}
	return out.String(), errOut.String(), cmdutil.ExitCode(err)
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it)\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestLinkGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"text", []string{"testdata/multitier.tsv", "--top", "4"}, 0},
		{"json", []string{"testdata/multitier.tsv", "--format", "json", "--max-patterns", "2", "--instances", "1"}, 0},
		{"rank-count", []string{"testdata/multitier.tsv", "--top", "3", "--rank", "count", "--try-both-budget", "0"}, 0},
		{"bad-line", []string{"testdata/badline.tsv"}, 3},
		{"bad-flag", []string{"testdata/multitier.tsv", "--try-both-low", "0.8"}, 2},
		{"pure", []string{"testdata/multitier.tsv", "--top", "3", "--pure-wap5"}, 0},
		{"pure-conflict", []string{"testdata/multitier.tsv", "--pure-wap5", "--iterations", "2"}, 2},
		{"bad-delay-model", []string{"testdata/multitier.tsv", "--delay-model", "gamma"}, 2},
		{"bad-format", []string{"testdata/multitier.tsv", "--format", "xml"}, 2},
		{"missing", []string{"testdata/nonexistent.tsv"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runLink(tc.args...)
			if code != tc.code {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
			golden(t, tc.name+".stdout", stdout)
			golden(t, tc.name+".stderr", stderr)
		})
	}
}

// TestLinkOutputFile checks that -o writes what stdout would show, and
// that the JSON result is the documented contract.
func TestLinkOutputFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "res.json")
	stdout, stderr, code := runLink("testdata/multitier.tsv", "--format", "json", "-o", path)
	if code != 0 || stdout != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	direct, _, _ := runLink("testdata/multitier.tsv", "--format", "json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != direct {
		t.Error("-o FILE differs from stdout")
	}
	var res causal.Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.Version != causal.ResultVersion || res.Engine != "linking" || len(res.Patterns) == 0 || res.Trace.Messages != 124 {
		t.Errorf("result %+v", res.Trace)
	}
	for _, p := range res.Patterns {
		if _, err := causal.ParseSignature(p.Signature); err != nil || p.Hops[0].Parent != nil {
			t.Errorf("pattern %q: %v", p.Signature, err)
		}
	}
}

// TestLinkFlags checks that every flag reaches the engine's options.
func TestLinkFlags(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		check func(o linking.Options) bool
	}{
		{nil, func(o linking.Options) bool {
			d := linking.DefaultOptions()
			return o.Window == d.Window && o.SpontaneousFactor == d.SpontaneousFactor && o.TryBothBudget == d.TryBothBudget &&
				o.ClientRoots && o.Aggregate.MaxPatterns == 10000 && o.Rank == causal.RankExpected
		}},
		{[]string{"--window", "100ms"}, func(o linking.Options) bool { return o.Window == 100*time.Millisecond }},
		{[]string{"--spontaneous-factor", "2.5"}, func(o linking.Options) bool { return o.SpontaneousFactor == 2.5 }},
		{[]string{"--try-both-budget", "7"}, func(o linking.Options) bool { return o.TryBothBudget == 7 }},
		{[]string{"--try-both-low", "0.2", "--try-both-high", "0.9"}, func(o linking.Options) bool { return o.TryBothLow == 0.2 && o.TryBothHigh == 0.9 }},
		{[]string{"--min-link", "0.01"}, func(o linking.Options) bool { return o.MinLinkProbability == 0.01 }},
		{[]string{"--iterations", "3"}, func(o linking.Options) bool { return o.Iterations == 3 }},
		{[]string{"--max-tree", "50"}, func(o linking.Options) bool { return o.MaxTreeSize == 50 }},
		{[]string{"--max-patterns", "0"}, func(o linking.Options) bool { return o.Aggregate.MaxPatterns == 0 }},
		{[]string{"--link-clients"}, func(o linking.Options) bool { return !o.ClientRoots }},
		{[]string{"--workers", "3"}, func(o linking.Options) bool { return o.Workers == 3 }},
		{[]string{"--rank", "max-probability"}, func(o linking.Options) bool { return o.Rank == causal.RankMaxProbability }},
		{nil, func(o linking.Options) bool {
			d := linking.DefaultOptions()
			return o.Calls && o.DelayModel == d.DelayModel && o.Iterations == d.Iterations && o.NormalizeRoots && o.Reparent
		}},
		{[]string{"--calls=false"}, func(o linking.Options) bool { return !o.Calls }},
		{[]string{"--delay-model", "exponential"}, func(o linking.Options) bool { return o.DelayModel == linking.DelayExponential }},
		{[]string{"--normalize-roots=false", "--reparent=false"}, func(o linking.Options) bool { return !o.NormalizeRoots && !o.Reparent }},
		{[]string{"--pure-wap5", "--window", "1s"}, func(o linking.Options) bool {
			p := linking.PureWAP5Options()
			return o.Calls == p.Calls && o.DelayModel == p.DelayModel && o.Iterations == p.Iterations &&
				o.NormalizeRoots == p.NormalizeRoots && o.Reparent == p.Reparent && o.Window == time.Second
		}},
		{[]string{"--no-aggregate-clients", "--keep-ephemeral-ports"}, func(o linking.Options) bool {
			return !o.Aggregate.Naming.AggregateClients && !o.Aggregate.Naming.EphemeralPorts
		}},
	} {
		var got linking.Options
		ios := &cmdutil.IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}
		cmd := newCmd(ios, func(_ context.Context, _ *cmdutil.IOStreams, _ *enginecmd.Options, eng causal.Engine) error {
			got = eng.(*linking.Engine).Options()
			return nil
		})
		cmd.SetArgs(append([]string{"trace.tsv"}, tc.args...))
		if err := cmd.Execute(); err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if !tc.check(got) {
			t.Errorf("%s: options %+v", strings.Join(tc.args, " "), got)
		}
	}
}
