package assembly

import (
	"slices"
	"testing"
)

// TestSearchAfterFill: a last pass whose fill was kept is followed by
// one more, once, which keeps the fill's assignment to compare with.
func TestSearchAfterFill(t *testing.T) {
	r, n, kids, right, _ := kindMatchRun(t)
	m := r.models[n]
	r.setParentsOfCalls(kids, right)
	r.usualFills = make([]usualFillCounts, len(r.childrenOf))
	var rf refill
	if r.searchAfterFill(n, 0, m, nil, &rf) {
		t.Fatal("a pass after a fill that was not kept")
	}
	r.usualFills[n].kept = 1
	if !r.searchAfterFill(n, 0, m, nil, &rf) {
		t.Fatal("no pass after a kept fill")
	}
	if !slices.Equal(rf.asg, right) || rf.obj != newLocal(r, n, m, nil).objective() {
		t.Errorf("the fill's assignment kept %v (objective %v), want %v", rf.asg, rf.obj, right)
	}
	r.usualFills[n].kept = 2
	if r.searchAfterFill(n, 1, m, nil, &rf) {
		t.Error("a second pass after a fill: one is given")
	}
}

// TestKeepFill: in the pass after a kept fill, the fill's assignment
// replaces the pass's where it scores higher, and not where lower; it is
// compared once.
func TestKeepFill(t *testing.T) {
	r, n, kids, right, toS := kindMatchRun(t)
	m := r.models[n]
	ix := make(map[int32]int, len(kids))
	for i, c := range kids {
		ix[c] = i
	}
	// worse: the first calls to s given the request of the call after
	// them, the last to none
	worse := slices.Clone(right)
	for j := range 4 {
		worse[ix[toS[j]]] = right[ix[toS[j+1]]]
	}
	worse[ix[toS[4]]] = -1
	objOf := func(asg []int32) float64 {
		r.setParentsOfCalls(kids, asg)
		return newLocal(r, n, m, nil).objective()
	}
	if objOf(worse) >= objOf(right) {
		t.Fatal("the shifted assignment scores as high as the right one: the case does not test keepFill")
	}
	for _, tc := range []struct {
		name            string
		fill, pass, out []int32
	}{
		{"the fill's higher: put back", right, worse, right},
		{"the pass's higher: kept", worse, right, right},
		{"the same: the pass's kept", right, right, right},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rf := refill{done: true, asg: slices.Clone(tc.fill), obj: objOf(tc.fill)}
			r.setParentsOfCalls(kids, tc.pass)
			r.keepFill(n, m, nil, &rf)
			if got := r.parentsOfCalls(kids); !slices.Equal(got, tc.out) {
				t.Errorf("assignment %v, want %v", got, tc.out)
			}
			if rf.asg != nil {
				t.Error("the fill's assignment still kept after the comparison")
			}
			// a second call (no fill kept to compare with) changes nothing
			r.setParentsOfCalls(kids, worse)
			r.keepFill(n, m, nil, &rf)
			if got := r.parentsOfCalls(kids); !slices.Equal(got, worse) {
				t.Errorf("keepFill with nothing kept moved calls: %v", got)
			}
		})
	}
}
