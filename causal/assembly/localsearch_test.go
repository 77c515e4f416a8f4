package assembly

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/wirepath/wirepath/trace"
)

// TestReplayMemo checks that the local search's memo of replay scores
// answers only for the same request with the same calls: an entry under
// the same hash for another request or other calls is a miss.
func TestReplayMemo(t *testing.T) {
	var m replayMemo
	const h = 42 // one hash for every entry: collisions
	m.put(7, h, []int32{1, 2, 3}, -1.5)
	m.put(7, h, []int32{1, 2, 5}, -2.5)
	cases := []struct {
		name string
		p    int32
		ks   []int32
		want float64
		ok   bool
	}{
		{"same", 7, []int32{1, 2, 3}, -1.5, true},
		{"second", 7, []int32{1, 2, 5}, -2.5, true},
		{"other request", 8, []int32{1, 2, 3}, 0, false},
		{"request never held", 100, []int32{1, 2, 3}, 0, false},
		{"other calls", 7, []int32{1, 2, 4}, 0, false},
		{"fewer calls", 7, []int32{1, 2}, 0, false},
		{"no calls", 7, nil, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, ok := m.get(tc.p, h, tc.ks)
			if v != tc.want || ok != tc.ok {
				t.Errorf("get = %v, %v; want %v, %v", v, ok, tc.want, tc.ok)
			}
		})
	}
	if a, b := m.hash(7, []int32{1, 2}), m.hash(7, []int32{2, 1}); a == b {
		t.Errorf("hash ignores the order of the calls")
	}
}

// TestLocalScoreAllocs is the allocation guard of the local search's
// scoring: once warm, scoring a request again (its memo) and replaying
// it allocate nothing.
func TestLocalScoreAllocs(t *testing.T) {
	r := inferredRun(t, multitierTrace(t, 20*time.Second))
	tried := 0
	for n := range r.parentsOf {
		if r.entry[n] || r.models[n] == nil {
			continue
		}
		ls := newLocal(r, int32(n), r.models[n], nil)
		for _, p := range r.parentsOf[n] {
			ks := ls.kidsOf(p)
			if len(ks) < 2 {
				continue
			}
			tried++
			ls.score(p, ks)
			ls.s.m = ls.requestModel(p)
			r.replay(ls.s, p, ks)
			if a := testing.AllocsPerRun(50, func() { ls.score(p, ks) }); a != 0 {
				t.Errorf("node %d: scoring request %d again allocates %.1f times", n, p, a)
			}
			if a := testing.AllocsPerRun(50, func() { r.replay(ls.s, p, ks) }); a != 0 {
				t.Errorf("node %d: replaying request %d allocates %.1f times", n, p, a)
			}
			break
		}
	}
	if tried == 0 {
		t.Fatal("no request with calls")
	}
}

// TestSweepKept checks that a node's candidates kept while it is solved
// (run.swept) are the ones found from the times: on the first sweep that
// keeps them, on the next that reads them, and for a node with too many
// to keep.
func TestSweepKept(t *testing.T) {
	r := inferredRun(t, multitierTrace(t, 10*time.Second))
	collect := func(n int32) []int32 {
		var got []int32
		r.sweep(n, func(c int32, cands []int32) {
			got = append(got, c, int32(len(cands)))
			got = append(got, cands...)
		})
		return got
	}
	nodes := 0
	for n := range r.parentsOf {
		if len(r.childrenOf[n]) == 0 {
			continue
		}
		want := collect(int32(n)) // not solving: nothing kept
		if r.swept[n] != nil {
			t.Fatalf("node %d: a sweep outside solve was kept", n)
		}
		cases := []struct {
			name string
			mark *swept
		}{
			{"keeps", &sweepPending},
			{"kept", nil}, // what "keeps" left
			{"too many", &sweepTooMany},
		}
		for _, tc := range cases {
			if tc.mark != nil {
				r.swept[n] = tc.mark
			}
			if got := collect(int32(n)); !slices.Equal(got, want) {
				t.Errorf("node %d, %s: candidates differ", n, tc.name)
			}
		}
		r.swept[n] = nil
		nodes++
	}
	if nodes == 0 {
		t.Fatal("no node makes calls")
	}
}

// inferredRun runs the engine with its default options on tr and
// returns its state.
func inferredRun(t *testing.T, tr *trace.Trace) *run {
	t.Helper()
	e, err := New(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	_, r, err := e.infer(context.Background(), tr)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
