package assembly

import "testing"

// TestReplayMemoFor checks that a node's local searches share a replay
// memo only under the same models: the same m and x give the memo held
// (with its scores), another m or x a new one, another node its own, and
// a run without the per-node table (tests' runs) a fresh memo each time.
func TestReplayMemoFor(t *testing.T) {
	m1, m2 := newNodeModel(1, 1), newNodeModel(1, 1)
	x1 := &crossFit{ms: [2]*nodeModel{m1, m2}}
	r := &run{replays: make([]nodeReplays, 2)}
	first := r.replayMemoFor(0, m1, nil, 3)
	first.put(1, 7, []int32{4, 5}, -2.5)
	tests := []struct {
		name  string
		n     int32
		m     *nodeModel
		x     *crossFit
		share bool
	}{
		{"same models", 0, m1, nil, true},
		{"same models again", 0, m1, nil, true},
		{"another node", 1, m1, nil, false},
		{"another model", 0, m2, nil, false},
		{"cross-fitted", 0, m2, x1, false},
		{"cross-fitted again", 0, m2, x1, true},
		{"back to the first", 0, m1, nil, false},
	}
	var prev *replayMemo
	for _, tc := range tests {
		got := r.replayMemoFor(tc.n, tc.m, tc.x, 3)
		if tc.share {
			want := first
			if prev != nil && tc.x != nil {
				want = prev
			}
			if got != want {
				t.Fatalf("%s: a new memo, want the one held", tc.name)
			}
		} else if got == first || got == prev {
			t.Fatalf("%s: the memo of other models", tc.name)
		}
		if got == first {
			if v, ok := got.get(1, 7, []int32{4, 5}); !ok || v != -2.5 {
				t.Fatalf("%s: score held %v %v, want -2.5", tc.name, v, ok)
			}
		}
		prev = got
	}
	var bare run
	if a, b := bare.replayMemoFor(0, m1, nil, 3), bare.replayMemoFor(0, m1, nil, 3); a == b {
		t.Fatal("a run without the table shared a memo")
	}
}
