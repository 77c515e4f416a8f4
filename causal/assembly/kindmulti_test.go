package assembly

import "testing"

// TestFewOfRule: requests holding two calls of a kind count against the
// kind matching only in the kinds of request where most holders hold
// more than one.
func TestFewOfRule(t *testing.T) {
	for _, tc := range []struct {
		name string
		by   map[int32]holdCount
		want bool
	}{
		{"one each", map[int32]holdCount{1: {100, 0}}, true},
		{"the search's doubles, a few in each kind of request (13 of 150)", map[int32]holdCount{1: {100, 9}, 2: {50, 4}}, true},
		{"one kind of request holding two as a rule (15 of 120)", map[int32]holdCount{1: {100, 0}, 2: {20, 15}}, false},
		{"every holder holds two", map[int32]holdCount{1: {40, 40}}, false},
		{"a small kind of request holding two as a rule (3 of 204)", map[int32]holdCount{1: {200, 3}, 2: {4, 3}}, true},
		{"half its holders hold two: not a rule", map[int32]holdCount{1: {10, 5}}, true},
		{"nothing held", map[int32]holdCount{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fewOfRule(tc.by); got != tc.want {
				t.Errorf("fewOfRule(%v) = %v, want %v", tc.by, got, tc.want)
			}
		})
	}
}
