package report

import (
	"testing"

	"github.com/wirepath/wirepath/causal"
)

// TestTimelineUntraced checks which visits become diamonds, from which
// delays are missing, on hand-made patterns.
func TestTimelineUntraced(t *testing.T) {
	d := func(v float64) *causal.Dist { return &causal.Dist{N: 1, Weight: 1, Mean: v} }
	ip := func(i int) *int { return &i }
	for _, c := range []struct {
		name     string
		hops     []causal.Hop
		untraced []bool // per visit: root sender, then one per hop
		unseen   []bool
		combined map[int]float64 // hop -> delay through its untraced sender
	}{
		{
			name: "traced",
			hops: []causal.Hop{
				{ID: 0, From: "C", To: "A", Start: d(0), NetDelay: d(10)},
				{ID: 1, Parent: ip(0), From: "A", To: "C", Start: d(30), NodeDelay: d(20), NetDelay: d(10)},
			},
			untraced: []bool{false, false, false}, unseen: []bool{false, false, false},
		},
		{
			// A -> X -> A with X never sniffed: X's visit is a diamond from
			// A's send (10) to A's receipt of the answer (70).
			name: "untraced middle",
			hops: []causal.Hop{
				{ID: 0, From: "C", To: "A", Start: d(0), NetDelay: d(5)},
				{ID: 1, Parent: ip(0), From: "A", To: "X", Start: d(10), NodeDelay: d(5)},
				{ID: 2, Parent: ip(1), From: "X", To: "A", Start: d(70)},
				{ID: 3, Parent: ip(2), From: "A", To: "C", Start: d(75), NodeDelay: d(5), NetDelay: d(5)},
			},
			untraced: []bool{false, false, true, false, false}, unseen: []bool{false, false, false, false, false},
			combined: map[int]float64{2: 60},
		},
		{
			// A sends to X and nothing more is seen of it.
			name: "unseen leaf",
			hops: []causal.Hop{
				{ID: 0, From: "C", To: "A", Start: d(0), NetDelay: d(5)},
				{ID: 1, Parent: ip(0), From: "A", To: "X", Start: d(10), NodeDelay: d(5)},
			},
			untraced: []bool{false, false, true}, unseen: []bool{false, false, true},
		},
		{
			// The client was not sniffed: the root's send is unknown, A's
			// side is seen.
			name: "untraced root sender",
			hops: []causal.Hop{
				{ID: 0, From: "C", To: "A", Start: d(0)},
				{ID: 1, Parent: ip(0), From: "A", To: "B", Start: d(7), NodeDelay: d(7), NetDelay: d(3)},
			},
			untraced: []bool{true, false, false}, unseen: []bool{false, false, false},
		},
	} {
		p := &causal.Pattern{Rank: 1, Hops: c.hops}
		if !p.WellFormed() {
			t.Fatalf("%s: fixture is not a valid pattern", c.name)
		}
		tl := buildTimeline(p, meanTimes(p))
		for i, v := range tl.Visits {
			if v.Untraced != c.untraced[i] || v.Unseen != c.unseen[i] {
				t.Errorf("%s: visit %d (%s) untraced=%v unseen=%v, want %v %v", c.name, i, v.Node, v.Untraced, v.Unseen, c.untraced[i], c.unseen[i])
			}
		}
		for h, want := range c.combined {
			if got := tl.combined(h); got != want {
				t.Errorf("%s: combined delay before hop %d = %v, want %v", c.name, h, got, want)
			}
		}
	}
}
