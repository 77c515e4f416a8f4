package accuracy

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/causal/gen"
	"github.com/wirepath/wirepath/causal/score"
	"github.com/wirepath/wirepath/trace"
)

// TestCLIParity checks that the command line's path (gen writes a TSV,
// assemble reads it, score matches it to the truth in its default view of
// trees of messages) reports, as its call-tree row, the harness's requests
// exactly right on the in-memory trace: the TSV round trip loses nothing
// the engine uses, and the two scorers agree.
func TestCLIParity(t *testing.T) {
	for _, tc := range []struct {
		config    string
		clients   int
		instances int
	}{
		{"fanout", 16, 200},
		{"fanout", 64, 400},
		{"background", 4, 150},
	} {
		t.Run(tc.config, func(t *testing.T) {
			cfg, err := UnseenConfig(tc.config)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Clients, cfg.Instances = tc.clients, tc.instances
			out, res := assembleGenerated(ctx, t, cfg)
			a, _ := EngineAssignment(res, out.Trace)
			want := ExactRequests(out, a)

			var buf bytes.Buffer
			if err := trace.WriteTSV(&buf, out.Trace); err != nil {
				t.Fatal(err)
			}
			rt, err := trace.ReadTSV(&buf, "x.tsv", trace.ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			res2, err := Assembly()().Infer(ctx, rt)
			if err != nil {
				t.Fatal(err)
			}
			a2, _ := EngineAssignment(res2, rt)
			if !slices.Equal(a, a2) {
				t.Errorf("the assembly of the TSV round trip differs from the in-memory trace's")
			}
			opt := score.DefaultOptions()
			m, st := gen.MatchTrace(rt, out.Truth, int64(1e9))
			if st.Unmatched > 0 {
				t.Fatalf("%d messages of the round trip match no true message", st.Unmatched)
			}
			opt.TraceToTruth = m
			rep, err := score.Score(res2, out.Truth, opt)
			if err != nil {
				t.Fatal(err)
			}
			if rep.CallTrees == nil || rep.Instances == nil {
				t.Fatalf("instances not scored: %v", rep.Warnings)
			}
			if rep.CallTrees.Correct != want.Right+want.BackgroundRgt {
				t.Errorf("score's call trees: %d instances right, the harness: %d requests and %d background trees", rep.CallTrees.Correct, want.Right, want.BackgroundRgt)
			}
			if rep.Instances.Correct > rep.CallTrees.Correct {
				t.Errorf("trees of messages right %d > call trees right %d", rep.Instances.Correct, rep.CallTrees.Correct)
			}
			var txt bytes.Buffer
			if err := score.WriteText(&txt, rep, score.TextOptions{}); err != nil {
				t.Fatal(err)
			}
			if row := fmt.Sprintf("  as calls %9d %9d %9d", rep.CallTrees.Truth, rep.CallTrees.Inferred, rep.CallTrees.Correct); !strings.Contains(txt.String(), row) {
				t.Errorf("the text lacks the call-tree row %q:\n%s", row, txt.String())
			}
			t.Logf("%s at %d: harness %d+%d, score: %d as trees of messages, %d as call trees", tc.config, tc.clients, want.Right, want.BackgroundRgt, rep.Instances.Correct, rep.CallTrees.Correct)
		})
	}
}
