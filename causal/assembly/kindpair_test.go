package assembly

import (
	"slices"
	"testing"
)

// TestKindPairMatch: the kind-pair matching puts back, in one step, a
// shift spanning two kinds (each request's call to s and call to t
// given the request before its own, the first request's to none), which
// neither the local search nor the kind matching of one kind (the other
// held where it is) undoes; it keeps nothing where the assignment is
// already right.
func TestKindPairMatch(t *testing.T) {
	r, n, kids, right, toS := kindMatchRun(t)
	m := r.models[n]
	ix := make(map[int32]int, len(kids))
	for i, c := range kids {
		ix[c] = i
	}
	var toT []int32
	for _, c := range kids {
		if !slices.Contains(toS, c) {
			toT = append(toT, c)
		}
	}
	slices.SortFunc(toT, func(x, y int32) int { return cmpTime(r.sendOf(x), r.sendOf(y)) })
	// shifted: each call to s and to t given the request of the call of
	// its kind before it, the first of each to none
	shifted := slices.Clone(right)
	for _, cs := range [][]int32{toS, toT} {
		for j := len(cs) - 1; j >= 0; j-- {
			if j == 0 {
				shifted[ix[cs[j]]] = -1
			} else {
				shifted[ix[cs[j]]] = right[ix[cs[j-1]]]
			}
		}
	}
	r.setParentsOfCalls(kids, shifted)
	r.improve(n, m, nil, 20)
	var km kindMatchCounts
	r.kindMatch(n, m, nil, &km)
	if slices.Equal(r.parentsOfCalls(kids), right) {
		t.Fatal("the local search and the kind matching undid the shift: the case does not test the kind-pair matching")
	}
	for _, tc := range []struct {
		name          string
		current, want []int32
		tried, kept   int64
		changedLeast  int64
	}{
		{"a shift of two kinds is matched back, a second round keeps nothing", shifted, right, 2, 1, int64(len(kids) - 2)},
		{"a right assignment is kept as it is", right, right, 1, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r.setParentsOfCalls(kids, tc.current)
			var cnt kindPairCounts
			r.kindPairMatch(n, m, nil, &cnt)
			if cnt.tried != tc.tried || cnt.kept != tc.kept || cnt.changed < tc.changedLeast {
				t.Errorf("counts %+v, want %d tried, %d kept, at least %d changed", cnt, tc.tried, tc.kept, tc.changedLeast)
			}
			if got := r.parentsOfCalls(kids); !slices.Equal(got, tc.want) {
				t.Errorf("assignment %v, want %v", got, tc.want)
			}
		})
	}
}

// TestKindPairSets: the sets of kinds tried are those that follow each
// other in enough requests, the most frequent first, a set of three
// before a pair at a tie.
func TestKindPairSets(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []int32
		want kindSet
	}{
		{"a pair in order", []int32{3, 1}, kindSet{1, 3, -1, -1}},
		{"three kinds in order", []int32{7, 2, 5}, kindSet{2, 5, 7, -1}},
		{"four kinds in order", []int32{7, 2, 5, 0}, kindSet{0, 2, 5, 7}},
	} {
		if got := newKindSet(tc.in...); got != tc.want {
			t.Errorf("%s: newKindSet(%v) = %v, want %v", tc.name, tc.in, got, tc.want)
		}
	}
	r, n, _, _, _ := kindMatchRun(t)
	ls := newLocal(r, n, r.models[n], nil)
	sets := ls.kindPairs()
	if len(sets) != 1 || sets[0][2] != -1 || !sets[0].has(r.calls[r.childrenOf[n][0]].kind) {
		t.Errorf("sets %v, want the one pair of the node's two kinds", sets)
	}
}

// TestKindPairAccounting: the accounting sums the nodes' kind-pair
// matchings.
func TestKindPairAccounting(t *testing.T) {
	r := &run{kindPairs: []kindPairCounts{{tried: 2, kept: 1, changed: 5}, {}, {tried: 3, kept: 2, changed: 4}}}
	got := map[string]int64{}
	r.countKindPairMatches(func(name string, v int64) { got[name] = v })
	want := map[string]int64{"kind_pair_matchings": 5, "kind_pair_matchings_kept": 3, "kind_pair_calls_moved": 9}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d", k, got[k], v)
		}
	}
}

// TestMoveSets: the bundles that change request are grouped by the
// requests that link them; those that stay are in no set.
func TestMoveSets(t *testing.T) {
	for _, tc := range []struct {
		name     string
		from, to []int32
		want     [][]int
	}{
		{"nothing moves", []int32{1, 2}, []int32{1, 2}, nil},
		{"a shift along three requests from background", []int32{-1, 1, 2, 3}, []int32{1, 2, 3, -1}, [][]int{{0, 1, 2, 3}}},
		{"a swap and a move apart", []int32{1, 2, 5, 7}, []int32{2, 1, 6, 7}, [][]int{{0, 1}, {2}}},
		{"two from background to two requests", []int32{-1, -1}, []int32{4, 5}, [][]int{{0}, {1}}},
	} {
		if got := moveSets(tc.from, tc.to); !slices.EqualFunc(got, tc.want, slices.Equal) {
			t.Errorf("%s: moveSets = %v, want %v", tc.name, got, tc.want)
		}
	}
}
