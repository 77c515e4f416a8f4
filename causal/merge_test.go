package causal_test

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"testing"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/engines"
	"github.com/wirepath/wirepath/internal/genfix"
	"github.com/wirepath/wirepath/trace"
)

// TestWindowsMergeToWhole checks SetWindow and causal.ResultMerger: an
// engine run once per window of root send times, the results merged,
// gives the whole run's patterns: the same counts and expected counts,
// the same extremes and means, percentiles exact where a distribution
// has at most 256 samples and within 2% (its bins' width, twice) beyond;
// and every instance is counted in exactly one window.
func TestWindowsMergeToWhole(t *testing.T) {
	tr, _, err := genfix.Generate(genfix.RPC{Clients: 8, Messages: 8000, Seed: 5}.Config())
	if err != nil {
		t.Fatal(err)
	}
	// Request labels, so that the results have request types: three,
	// by message index.
	labels := []trace.Sym{tr.Intern("GET /a"), tr.Intern("GET /b"), tr.Intern("POST /c")}
	for i := range tr.Messages {
		tr.Messages[i].Label = labels[i%3]
	}
	first, last, _ := trace.TimeRange(tr)
	for _, name := range []string{"linking", "nesting"} {
		for _, windows := range []int{1, 3, 7} {
			eo := engines.DefaultOptions()
			eo.SetWorkers(1)
			eng, err := eo.New(name)
			if err != nil {
				t.Fatal(err)
			}
			whole, err := eng.Infer(context.Background(), tr)
			if err != nil {
				t.Fatal(err)
			}
			m := causal.NewResultMerger(eo.Common(name).Rank, 0)
			span := (int64(last)-int64(first))/int64(windows) + 1
			outside := int64(0)
			for w := range windows {
				from := int64(first) - 1e9 + int64(w)*span // the first window also takes roots before the first message
				to := from + span
				if w == 0 {
					from -= 1e12
				}
				if w == windows-1 {
					to += 1e12
				}
				weo := eo
				weo.SetWindow(from, to)
				e, err := weo.New(name)
				if err != nil {
					t.Fatal(err)
				}
				r, err := e.Infer(context.Background(), tr)
				if err != nil {
					t.Fatal(err)
				}
				outside += countOf(r, "instances_outside_window")
				m.Add(r)
			}
			got := m.Result()
			if m.Windows() != windows {
				t.Errorf("%s/%d: %d windows merged", name, windows, m.Windows())
			}
			if outside == 0 && windows > 1 {
				t.Errorf("%s/%d: no instance counted outside its window", name, windows)
			}
			comparePatterns(t, name, windows, whole.Patterns, got.Patterns)
			compareTypes(t, name, windows, whole, got)
		}
	}
}

// compareTypes checks the merged request types against the whole run's:
// the same labels in the same order, counts, expected counts, latencies
// (compareDist: percentiles too, where windows used to give none) and
// patterns (by structure).
func compareTypes(t *testing.T, name string, windows int, want, got *causal.Result) {
	t.Helper()
	if len(want.RequestTypes) == 0 {
		t.Fatalf("%s/%d: the whole run has no request types", name, windows)
	}
	if len(got.RequestTypes) != len(want.RequestTypes) {
		t.Fatalf("%s/%d: %d request types, want %d", name, windows, len(got.RequestTypes), len(want.RequestTypes))
	}
	keys := func(r *causal.Result, ranks []int) map[string]bool {
		out := map[string]bool{}
		for _, rk := range ranks {
			k, _ := causal.StructureOf(&r.Patterns[rk-1])
			out[k] = true
		}
		return out
	}
	for i := range want.RequestTypes {
		w, g := &want.RequestTypes[i], &got.RequestTypes[i]
		if g.Label != w.Label || g.Count != w.Count || math.Abs(g.Expected-w.Expected) > 1e-6*w.Expected {
			t.Errorf("%s/%d: type %d: %q %d %g, want %q %d %g", name, windows, i, g.Label, g.Count, g.Expected, w.Label, w.Count, w.Expected)
			continue
		}
		compareDist(t, fmt.Sprintf("%s/%d: type %q latency", name, windows, w.Label), g.Latency, w.Latency)
		if gk, wk := keys(got, g.Patterns), keys(want, w.Patterns); !maps.Equal(gk, wk) {
			t.Errorf("%s/%d: type %q: patterns %v, want %v", name, windows, w.Label, g.Patterns, w.Patterns)
		}
	}
}

// countOf returns the result's counter called name (0 if none).
func countOf(r *causal.Result, name string) int64 {
	for _, c := range r.Accounting {
		if c.Name == name {
			return c.Value
		}
	}
	return 0
}

// comparePatterns checks the merged patterns against the whole run's.
func comparePatterns(t *testing.T, name string, windows int, want, got []causal.Pattern) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s/%d: %d patterns, want %d", name, windows, len(got), len(want))
	}
	byKey := map[string]*causal.Pattern{}
	for i := range got {
		k, _ := causal.StructureOf(&got[i])
		byKey[k] = &got[i]
	}
	for i := range want {
		w := &want[i]
		k, wo := causal.StructureOf(w)
		g := byKey[k]
		if g == nil {
			t.Errorf("%s/%d: pattern %s missing", name, windows, w.Signature)
			continue
		}
		if g.Count != w.Count || math.Abs(g.Expected-w.Expected) > 1e-6*w.Expected || g.MaxProbability != w.MaxProbability {
			t.Errorf("%s/%d: %s: count %d expected %g max %g, want %d %g %g", name, windows, w.Signature, g.Count, g.Expected, g.MaxProbability, w.Count, w.Expected, w.MaxProbability)
		}
		if len(g.Hops) != len(w.Hops) {
			t.Fatalf("%s/%d: %s: %d hops, want %d", name, windows, w.Signature, len(g.Hops), len(w.Hops))
		}
		compareDist(t, w.Signature+" latency", g.Latency, w.Latency)
		_, gord := causal.StructureOf(g)
		for k := range wo {
			gh, wh := &g.Hops[gord[k]], &w.Hops[wo[k]]
			compareDist(t, w.Signature+" start", gh.Start, wh.Start)
			compareDist(t, w.Signature+" node", gh.NodeDelay, wh.NodeDelay)
			compareDist(t, w.Signature+" net", gh.NetDelay, wh.NetDelay)
			compareDist(t, w.Signature+" bytes", gh.Bytes, wh.Bytes)
		}
	}
}

// compareDist checks a merged distribution against the whole run's.
func compareDist(t *testing.T, what string, got, want *causal.Dist) {
	t.Helper()
	if (got == nil) != (want == nil) {
		t.Errorf("%s: %v, want %v", what, got, want)
		return
	}
	if want == nil {
		return
	}
	near := func(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(math.Abs(b), 1e-9) }
	if got.N != want.N || got.Min != want.Min || got.Max != want.Max || !near(got.Mean, want.Mean, 1e-9) || !near(got.Weight, want.Weight, 1e-9) {
		t.Errorf("%s: n %d min %g max %g mean %g, want %d %g %g %g", what, got.N, got.Min, got.Max, got.Mean, want.N, want.Min, want.Max, want.Mean)
	}
	tol := 0.0
	if want.N > 256 {
		tol = 0.02
	}
	for _, p := range [][2]float64{{got.P50, want.P50}, {got.P90, want.P90}, {got.P99, want.P99}} {
		if !near(p[0], p[1], tol) {
			t.Errorf("%s: percentiles %g %g %g, want %g %g %g", what, got.P50, got.P90, got.P99, want.P50, want.P90, want.P99)
			break
		}
	}
}

// TestMergeLimit checks that a merger holds at most its limit of
// patterns and counts the rest: patterns, instances and a warning.
func TestMergeLimit(t *testing.T) {
	tr, _, err := genfix.Generate(genfix.RPC{Clients: 8, Messages: 4000, Seed: 6}.Config())
	if err != nil {
		t.Fatal(err)
	}
	eo := engines.DefaultOptions()
	eo.SetWorkers(1)
	eo.SetWindow(-1<<62, 1<<62)
	e, err := eo.New("linking")
	if err != nil {
		t.Fatal(err)
	}
	r, err := e.Infer(context.Background(), tr)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Patterns) < 10 {
		t.Fatalf("only %d patterns", len(r.Patterns))
	}
	total := 0
	for _, p := range r.Patterns {
		total += p.Count
	}
	m := causal.NewResultMerger(causal.RankExpected, 0)
	causal.SetMergeLimit(m, 5)
	m.Add(r)
	got := m.Result()
	kept := 0
	for _, p := range got.Patterns {
		kept += p.Count
	}
	if len(got.Patterns) != 5 || countOf(got, "patterns_over_merge_limit") != int64(len(r.Patterns)-5) ||
		int64(kept)+countOf(got, "instances_over_merge_limit") != int64(total) || len(got.Warnings) == 0 {
		t.Errorf("%d patterns kept (%d instances), accounting %v, warnings %q; %d patterns, %d instances in", len(got.Patterns), kept, got.Accounting, got.Warnings, len(r.Patterns), total)
	}
}

// TestMergeRequests checks that a ResultMerger keeps the windows'
// requests: in order of their roots' times, background trees last,
// numbered from 0, each with its window; past the limit they are left
// out and counted.
func TestMergeRequests(t *testing.T) {
	win := func(i int) *int { return &i }
	w0 := []causal.Request{{ID: 0, StartNS: 10, Window: win(0)}, {ID: 1, StartNS: 30, Window: win(0)}, {ID: 2, StartNS: 5, Background: true, Window: win(0)}}
	w1 := []causal.Request{{ID: 0, StartNS: 20, Window: win(1)}, {ID: 1, StartNS: 40, Window: win(1)}}
	cases := []struct {
		name   string
		limit  int
		starts []int64
		over   int64
	}{
		{"all", 0, []int64{10, 20, 30, 40, 5}, 0},
		{"limit 4", 4, []int64{10, 20, 30, 5}, 1},
		{"limit 1", 1, []int64{10}, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := causal.NewResultMerger(causal.RankCount, 0)
			if tc.limit > 0 {
				causal.SetMergeRequestLimit(m, tc.limit)
			}
			m.Add(&causal.Result{Version: causal.ResultVersion, Engine: "assembly", Requests: w0})
			m.Add(&causal.Result{Version: causal.ResultVersion, Engine: "assembly", Requests: w1})
			got := m.Result()
			var starts []int64
			for i, q := range got.Requests {
				starts = append(starts, q.StartNS)
				if q.ID != i || q.Window == nil {
					t.Errorf("request %d: id %d window %v", i, q.ID, q.Window)
				}
			}
			if fmt.Sprint(starts) != fmt.Sprint(tc.starts) || countOf(got, "requests_over_merge_limit") != tc.over {
				t.Errorf("starts %v, over %d; want %v, %d", starts, countOf(got, "requests_over_merge_limit"), tc.starts, tc.over)
			}
		})
		t.Run(tc.name+" sent", func(t *testing.T) {
			m := causal.NewResultMerger(causal.RankCount, 0)
			if tc.limit > 0 {
				causal.SetMergeRequestLimit(m, tc.limit)
			}
			var sent []causal.Request
			m.SendRequests(func(rs []causal.Request) error {
				sent = append(sent, rs...)
				return nil
			})
			m.Add(&causal.Result{Version: causal.ResultVersion, Engine: "assembly", Requests: w0})
			m.Add(&causal.Result{Version: causal.ResultVersion, Engine: "assembly", Requests: w1})
			got := m.Result()
			slices.SortStableFunc(sent, func(a, b causal.Request) int {
				return causal.MergedRequestOrder(a.Background, b.Background, a.StartNS, b.StartNS)
			})
			var starts []int64
			for _, q := range sent {
				starts = append(starts, q.StartNS)
			}
			if len(got.Requests) != 0 || m.Err() != nil || fmt.Sprint(starts) != fmt.Sprint(tc.starts) || countOf(got, "requests_over_merge_limit") != tc.over {
				t.Errorf("%d listed, err %v, sent starts %v, over %d; want none, %v, %d", len(got.Requests), m.Err(), starts, countOf(got, "requests_over_merge_limit"), tc.starts, tc.over)
			}
		})
	}
}

// TestMergeWarnings checks that the merger keeps one engine warning of
// each shape: the same text once, the same warning with each window's own
// numbers once, saying in how many windows it was given.
func TestMergeWarnings(t *testing.T) {
	cases := []struct {
		name    string
		windows [][]string
		want    []string
	}{
		{"same text", [][]string{{"no call ids"}, {"no call ids"}}, []string{"no call ids"}},
		{"numbers differ", [][]string{{"3 of 9 decisions approximate", "no call ids"}, {"12 of 40 decisions approximate"}, {}},
			[]string{"in 2 of 3 windows, numbers differing (the first's): 3 of 9 decisions approximate", "no call ids"}},
		{"numbers equal", [][]string{{"3 of 9 decisions approximate"}, {"3 of 9 decisions approximate"}}, []string{"3 of 9 decisions approximate"}},
		{"other words", [][]string{{"3 links unseen"}, {"4 nodes unseen"}}, []string{"3 links unseen", "4 nodes unseen"}},
		{"one window", [][]string{{"1 of 2 decisions approximate", "7 of 8 decisions approximate"}}, []string{"1 of 2 decisions approximate"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := causal.NewResultMerger(causal.RankCount, 0)
			for _, ws := range tc.windows {
				m.Add(&causal.Result{Version: causal.ResultVersion, Engine: "e", Warnings: ws})
			}
			if got := m.Result().Warnings; !slices.Equal(got, tc.want) {
				t.Errorf("warnings %q, want %q", got, tc.want)
			}
		})
	}
}
