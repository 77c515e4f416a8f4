package accuracy

import (
	"slices"
	"strconv"
	"testing"

	"github.com/wirepath/wirepath/causal/engines"
	"github.com/wirepath/wirepath/causal/gen"
	"github.com/wirepath/wirepath/causal/score"
	"github.com/wirepath/wirepath/trace"
)

// oracle returns the true assignment of a generated trace.
func oracle(out *gen.Output) Assignment {
	tr := out.Truth
	parents := score.TruthCallParents(tr)
	a := make(Assignment, len(out.Trace.Messages))
	for i, o := range tr.Observed {
		if o < 0 {
			continue
		}
		a[o] = -1
		if p := parents[i]; p >= 0 {
			a[o] = tr.Observed[p]
		}
	}
	return a
}

func mustTW(t *testing.T, c TWCase) *gen.Output {
	t.Helper()
	out, err := c.Generate()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestExactRequests checks TraceWeaver's metric: the truth scores every
// request right; one call hung under another request's call spoils both
// requests; one call placed nowhere spoils its own; a request with a
// message the trace lost cannot be right.
func TestExactRequests(t *testing.T) {
	out := mustTW(t, TWCase{"hotel", 150, 1, 200, false})
	a := oracle(out)
	s := ExactRequests(out, a)
	if s.Requests != 200 || s.Right != 200 || s.Calls != s.CallsRight || s.Calls < 1000 {
		t.Fatalf("the truth scores %+v", s)
	}
	tr := out.Truth
	byObs := tr.ByObserved()
	// Two calls to search, of different requests: swap one's parent.
	var x, y int = -1, -1
	for o, m := range out.Trace.Messages {
		if m.Kind == trace.KindCall && out.Trace.Str(m.DstNode) == "search" {
			if x < 0 {
				x = o
			} else if tr.Instance[byObs[o]] != tr.Instance[byObs[x]] {
				y = o
				break
			}
		}
	}
	b := slices.Clone(a)
	b[x] = a[y]
	if s := ExactRequests(out, b); s.Right != 198 || s.CallsRight != s.Calls-1 {
		t.Errorf("one call moved to another request: %+v, want 198 right", s)
	}
	b = slices.Clone(a)
	b[x] = Unplaced
	if s := ExactRequests(out, b); s.Right != 199 {
		t.Errorf("one call unplaced: %+v, want 199 right", s)
	}
	// Loss: the requests that lost a message are wrong whatever is said.
	c := TWCase{"hotel", 150, 1, 200, false}
	cfg, _ := gen.LoadConfig(c.Config)
	cfg.Rate, cfg.Instances = c.Load, c.Instances
	cfg.Drop = gen.Drop{Random: 0.01}
	lossy, err := gen.Generate(cfg, gen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hit := map[int32]bool{}
	for i, o := range lossy.Truth.Observed {
		if o < 0 {
			hit[lossy.Truth.Instance[i]] = true
		}
	}
	if s := ExactRequests(lossy, oracle(lossy)); len(hit) == 0 || s.Right != s.Requests-len(hit) {
		t.Errorf("with %d requests hit by loss: %+v", len(hit), s)
	}
}

// TestFCFS runs both baselines on hand-made traces of one service B
// (clients call B; B calls C) and checks each assignment.
func TestFCFS(t *testing.T) {
	type call struct {
		from, to             string
		send, arrive, rs, rb int64 // CALL sent and arrived, RETURN sent and back, ms
	}
	build := func(cs []call) *trace.Trace {
		tr := &trace.Trace{}
		for i, c := range cs {
			id := tr.Intern(string(rune('a' + i)))
			src, dst := tr.Intern(c.from+":1"), tr.Intern(c.to+":80")
			fn, tn := tr.Intern(c.from), tr.Intern(c.to)
			ms := func(v int64) trace.Timestamp { return trace.Timestamp(v * 1e6) }
			tr.Messages = append(tr.Messages,
				trace.Message{SendTS: ms(c.send), RecvTS: ms(c.arrive), Src: src, Dst: dst, SrcNode: fn, DstNode: tn, CallID: id, Kind: trace.KindCall},
				trace.Message{SendTS: ms(c.rs), RecvTS: ms(c.rb), Src: dst, Dst: src, SrcNode: tn, DstNode: fn, CallID: id, Kind: trace.KindReturn})
		}
		return tr
	}
	for _, tc := range []struct {
		name       string
		calls      []call
		want, rank []int32 // the parent CALL of each call, by call index (-1 root, -2 unplaced)
	}{
		{
			// X arrives first but replies before the call to C comes
			// back: only Y encloses it. Rank matching gives it to X.
			name: "overtaking",
			calls: []call{
				{"X", "B", 0, 1, 5, 6},
				{"Y", "B", 2, 3, 20, 21},
				{"B", "C", 4, 5, 6, 7}, // Y's
			},
			want: []int32{-1, -1, 1},
			rank: []int32{-1, -1, 0},
		},
		{
			// X skips its call to C (a cache hit): rank matching shifts Y's
			// call onto X; in time, X has replied before the call is sent.
			name: "optional",
			calls: []call{
				{"X", "B", 0, 1, 2, 3},
				{"Y", "B", 4, 5, 9, 10},
				{"B", "C", 6, 7, 7, 8}, // Y's
			},
			want: []int32{-1, -1, 1},
			rank: []int32{-1, -1, 0},
		},
		{
			// One request calls C twice: the second call goes to it again
			// (no other request encloses it); rank matching has no request
			// left for it.
			name: "repeated",
			calls: []call{
				{"X", "B", 0, 1, 9, 10},
				{"B", "C", 2, 3, 3, 4},
				{"B", "C", 5, 6, 6, 7},
			},
			want: []int32{-1, 0, 0},
			rank: []int32{-1, 0, -2},
		},
		{
			// B's clock is 5 ms behind C's: C's RETURN is stamped before
			// B's CALL and comes first in the trace; the pair still holds.
			name: "skewed return",
			calls: []call{
				{"X", "B", 0, 1, 9, 10},
				{"B", "C", 2, 8, 6, 3},
			},
			want: []int32{-1, 0},
			rank: []int32{-1, 0},
		},
	} {
		tr := build(tc.calls)
		for _, v := range []struct {
			rank bool
			want []int32
		}{{false, tc.want}, {true, tc.rank}} {
			a := FCFS(tr, v.rank)
			for k, w := range v.want {
				if w >= 0 {
					w *= 2 // the CALL of call w
				}
				if a[2*k] != w {
					t.Errorf("%s (rank %v): call %d assigned to message %d, want %d", tc.name, v.rank, k, a[2*k], w)
				}
			}
		}
	}
}

// TestTraceWeaverComparison is the short version of the published
// comparison (the sweep's table in docs/accuracy.md has 1,000 requests per
// case): every engine of the registry is measured (or says why not), and
// the bounds sit under what is measured, to catch regressions. FCFS in
// time gets most requests of the simple Node.js-like chain and about half
// of the hotel's at load 150, like TraceWeaver's FCFS on its traces, and
// loses them as arrivals are compressed. The papers' engines do poorly on
// these traces: at 1 ms resolution linking loses its delays (on the node
// trace 85% with microseconds, a third with milliseconds), and nesting,
// which compares timestamps of different hosts, does not survive clocks
// 2 ms apart. The assembly engine's bounds sit a few points under what it
// gets on these 300-request traces (node 90 %, hotel 88 %, media 71 %,
// hotel ×4 66 %; before the ticks were spread, media 30 % and ×4 56 %,
// and media 65 % before the repeat evidence).
func TestTraceWeaverComparison(t *testing.T) {
	skipUnderRace(t)
	for _, tc := range []struct {
		c              TWCase
		fcfs, fcfsRank [2]float64 // bounds on requests exactly right
		linking        float64    // at least
		assembly       float64    // at least
	}{
		{TWCase{"node", 150, 1, 300, false}, [2]float64{0.8, 1}, [2]float64{0.8, 1}, 0.2, 0.86},
		{TWCase{"hotel", 150, 1, 300, false}, [2]float64{0.35, 0.7}, [2]float64{0, 0.05}, 0.1, 0.85},
		{TWCase{"media", 150, 1, 300, false}, [2]float64{0.3, 0.65}, [2]float64{0, 0.05}, 0, 0.68},
		{TWCase{"hotel", 150, 4, 300, false}, [2]float64{0, 0.15}, [2]float64{0, 0.05}, 0, 0.6},
	} {
		r, err := RunTraceWeaver(ctx, tc.c, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		line := ""
		for _, m := range r.Methods {
			names = append(names, m.Method)
			if m.Err != "" {
				line += " " + m.Method + ": " + m.Err + ";"
				continue
			}
			line += " " + m.Method + " " + pct(m.Score.Share()) + ";"
		}
		t.Logf("%s (%d messages, %.2f in progress):%s", tc.c.Label(), r.Stats.Messages, r.Stats.Parallelism, line)
		if want := append([]string{MethodFCFS, MethodFCFSRank}, engines.Names...); !slices.Equal(names, want) {
			t.Fatalf("methods %v, want the baselines and every engine of the registry %v", names, want)
		}
		check := func(name string, lo, hi float64) {
			m, _ := r.Method(name)
			if s := m.Score.Share(); m.Err != "" || s < lo || s > hi {
				t.Errorf("%s: %s gets %s of the requests right (%s), want %s to %s", tc.c.Label(), name, pct(s), m.Err, pct(lo), pct(hi))
			}
		}
		check(MethodFCFS, tc.fcfs[0], tc.fcfs[1])
		check(MethodFCFSRank, tc.fcfsRank[0], tc.fcfsRank[1])
		check("linking", tc.linking, 1)
		check("assembly", tc.assembly, 1)
		if m, _ := r.Method(MethodFCFS); m.Score.Requests != tc.c.Instances {
			t.Errorf("%s: %d requests scored, generated %d", tc.c.Label(), m.Score.Requests, tc.c.Instances)
		}
	}
}

func pct(v float64) string { return fmtPct(v) }

func fmtPct(v float64) string { return strconv.FormatFloat(100*v, 'f', 1, 64) + "%" }
