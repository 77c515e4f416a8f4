package assembly

import (
	"fmt"
	"slices"
	"testing"
)

// kindMatchRun is a node a serving 40 overlapping requests (each open
// 25 ms, one every 10 ms), each making a call to s (one kind) and then
// one to t (another); it returns the run, the node, its calls (in
// childrenOf's order), their right requests and the calls to s.
func kindMatchRun(t *testing.T) (r *run, n int32, kids, right []int32, toS []int32) {
	t.Helper()
	b := newTB()
	var pairs []callKid
	for i := range 40 {
		at := float64(i) * 10
		c, _ := b.rpc(at, at+25, "front", fmt.Sprintf("f:%d", i), "a", "a:80", fmt.Sprintf("r%d", i), 100)
		d := 1 + float64(i%3)*0.3
		k1, _ := b.rpc(at+d, at+d+1, "a", fmt.Sprintf("a:%d", 1000+i), "s", "s:80", fmt.Sprintf("s%d", i), 60)
		k2, _ := b.rpc(at+d+4, at+d+5, "a", fmt.Sprintf("a:%d", 2000+i), "t", "t:80", fmt.Sprintf("t%d", i), 80)
		pairs = append(pairs, callKid{c, k1}, callKid{c, k2})
	}
	_, r = runOn(t, b, DefaultOptions())
	if got := r.rightParents(pairs); got != len(pairs) {
		t.Fatalf("%d of %d calls given their request before the test, want all", got, len(pairs))
	}
	n = -1
	for i, ks := range r.childrenOf {
		if len(ks) == len(pairs) {
			n = int32(i)
		}
	}
	if n < 0 {
		t.Fatal("no node makes the calls")
	}
	kids = r.childrenOf[n]
	right = r.parentsOfCalls(kids)
	for _, c := range kids {
		if r.calls[c].kind == r.calls[r.callOf(pairs[0].kid)].kind {
			toS = append(toS, c)
		}
	}
	slices.SortFunc(toS, func(x, y int32) int { return cmpTime(r.sendOf(x), r.sendOf(y)) })
	return r, n, kids, right, toS
}

// TestKindMatch: the kind matching puts back, in one step, the calls of
// a kind that the assignment shifted by one request (each call to s
// given the request before its own, the first to none), a shift the
// local search alone does not undo; it keeps nothing where the
// assignment is already right; it puts back the calls of a kind a few
// requests hold twice (5 of 40, over kindMatchMaxMulti), and is not
// tried for a kind that the requests holding it hold twice as a rule.
func TestKindMatch(t *testing.T) {
	r, n, kids, right, toS := kindMatchRun(t)
	m := r.models[n]
	ix := make(map[int32]int, len(kids))
	for i, c := range kids {
		ix[c] = i
	}
	// shifted: each call to s given the request of the call to s before
	// it, the first to none
	shifted := slices.Clone(right)
	for j := len(toS) - 1; j >= 0; j-- {
		if j == 0 {
			shifted[ix[toS[j]]] = -1
		} else {
			shifted[ix[toS[j]]] = right[ix[toS[j-1]]]
		}
	}
	// doubled: the first 5 requests of 40 (over 5 %) also hold the next
	// request's call to s, which is left with none: the search's
	// mistakes, a few requests of the kind holding two (kindmulti.go)
	doubled := slices.Clone(right)
	for j := range 5 {
		doubled[ix[toS[2*j+1]]] = right[ix[toS[2*j]]]
	}
	// paired: every other request holds the next one's call to s too,
	// so that every request holding one holds two, as a rule
	paired := slices.Clone(right)
	for j := range len(toS) / 2 {
		paired[ix[toS[2*j+1]]] = right[ix[toS[2*j]]]
	}
	r.setParentsOfCalls(kids, shifted)
	r.improve(n, m, nil, 20)
	if slices.Equal(r.parentsOfCalls(kids), right) {
		t.Fatal("the local search alone undid the shift: the case does not test the kind matching")
	}
	for _, tc := range []struct {
		name          string
		current, want []int32
		tried, kept   int64
		changedLeast  int64
	}{
		{"a shifted kind is matched back", shifted, right, 2, 1, int64(len(toS))},
		{"a right assignment is kept as it is", right, right, 2, 0, 0},
		{"a kind a few requests hold twice is matched back", doubled, right, 2, 1, 5},
		{"a kind every request holding one holds twice is not tried", paired, nil, 1, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r.setParentsOfCalls(kids, tc.current)
			var cnt kindMatchCounts
			r.kindMatch(n, m, nil, &cnt)
			if cnt.tried != tc.tried || cnt.kept != tc.kept || cnt.changed < tc.changedLeast {
				t.Errorf("counts %+v, want %d tried, %d kept, at least %d changed", cnt, tc.tried, tc.kept, tc.changedLeast)
			}
			if got := r.parentsOfCalls(kids); tc.want != nil && !slices.Equal(got, tc.want) {
				t.Errorf("assignment %v, want %v", got, tc.want)
			}
		})
	}
}

// TestKindMatchAccounting: the accounting sums the nodes' kind matchings.
func TestKindMatchAccounting(t *testing.T) {
	r := &run{kindMatches: []kindMatchCounts{{tried: 2, kept: 1, changed: 5}, {}, {tried: 3, kept: 2, changed: 4}}}
	got := map[string]int64{}
	r.countKindMatches(func(name string, v int64) { got[name] = v })
	want := map[string]int64{"kind_matchings": 5, "kind_matchings_kept": 3, "kind_matching_calls_moved": 9}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d", k, got[k], v)
		}
	}
}
