package assembly

import (
	"fmt"
	"slices"
	"testing"
)

// usualRun is a node a serving 300 overlapping requests (each open 25 ms,
// one every 10 ms), each making a call to s and then one to t; every
// 25th request makes its call to s late, 8 ms after it arrived (the
// others 1 to 1.6 ms). It returns the run, the node, its calls (in
// childrenOf's order), their right requests and the late calls to s.
func usualRun(t *testing.T) (r *run, n int32, kids, right, late []int32) {
	t.Helper()
	b := newTB()
	var pairs []callKid
	var lateMsgs []int32
	for i := range 300 {
		at := float64(i) * 10
		c, _ := b.rpc(at, at+25, "front", fmt.Sprintf("f:%d", i), "a", "a:80", fmt.Sprintf("r%d", i), 100)
		d := 1 + float64(i%3)*0.3
		if i%25 == 7 {
			d = 8
		}
		k1, _ := b.rpc(at+d, at+d+1, "a", fmt.Sprintf("a:%d", 1000+i), "s", "s:80", fmt.Sprintf("s%d", i), 60)
		k2, _ := b.rpc(at+d+4, at+d+5, "a", fmt.Sprintf("a:%d", 2000+i), "t", "t:80", fmt.Sprintf("t%d", i), 80)
		pairs = append(pairs, callKid{c, k1}, callKid{c, k2})
		if i%25 == 7 {
			lateMsgs = append(lateMsgs, k1)
		}
	}
	_, r = runOn(t, b, DefaultOptions())
	if got := r.rightParents(pairs); got != len(pairs) {
		t.Fatalf("%d of %d calls given their request before the test, want all", got, len(pairs))
	}
	n = r.calls[r.callOf(pairs[0].kid)].caller
	kids = r.childrenOf[n]
	right = r.parentsOfCalls(kids)
	for _, m := range lateMsgs {
		late = append(late, r.callOf(m))
	}
	return r, n, kids, right, late
}

// TestUsualFill: the usual-call fill puts back the calls to s that an
// assignment left in the background, their requests reading their call
// to t as their first, when the models fitted on that assignment have
// learnt it (the local search and the kind matching under those models
// do not put them back); it tries
// nothing where every request holds its call to s, and nothing when too
// few requests hold one for the call to be usual.
func TestUsualFill(t *testing.T) {
	r, n, kids, right, late := usualRun(t)
	ix := make(map[int32]int, len(kids))
	for i, c := range kids {
		ix[c] = i
	}
	lost := slices.Clone(right)
	for _, c := range late {
		lost[ix[c]] = -1
	}
	// rare: only every third request holds its call to s, the rest of
	// them in the background
	rare := slices.Clone(right)
	sKind := r.calls[late[0]].kind
	j := 0
	for i, c := range kids {
		if r.calls[c].kind == sKind {
			if j%3 != 0 {
				rare[i] = -1
			}
			j++
		}
	}
	fitOn := func(asg []int32) (*nodeModel, *crossFit) {
		r.setParentsOfCalls(kids, asg)
		m := r.fit(n, false)
		return m, r.crossFitModels(n, nil, m, false)
	}
	m, x := fitOn(lost)
	if x == nil {
		t.Fatal("no cross-fitted models: too few requests for the test")
	}
	r.improve(n, m, x, 20)
	if slices.Equal(r.parentsOfCalls(kids), right) {
		t.Fatal("the local search alone put the calls back: the case does not test the fill")
	}
	r.setParentsOfCalls(kids, lost)
	var km kindMatchCounts
	r.kindMatch(n, m, x, &km)
	if slices.Equal(r.parentsOfCalls(kids), right) {
		t.Fatal("the kind matching alone put the calls back: the case does not test the fill")
	}
	for _, tc := range []struct {
		name        string
		current     []int32
		want        []int32
		tried, kept int64
	}{
		{"the calls left in the background are put back", lost, right, 1, 1},
		{"a right assignment is left as it is", right, right, 0, 0},
		{"a call few requests hold is not usual", rare, rare, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, x := fitOn(tc.current)
			var cnt usualFillCounts
			m2, x2 := r.usualFill(n, 3, nil, &fifoOnce{}, m, x, &cnt)
			if cnt.tried != tc.tried || cnt.kept != tc.kept {
				t.Errorf("counts %+v, want %d tried, %d kept", cnt, tc.tried, tc.kept)
			}
			if got := r.parentsOfCalls(kids); !slices.Equal(got, tc.want) {
				t.Errorf("assignment %v, want %v", got, tc.want)
			}
			if kept := m2 != m || x2 != x; kept != (tc.kept > 0) {
				t.Errorf("models replaced %v, want %v", kept, tc.kept > 0)
			}
		})
	}
}

// TestUsualFillAccounting: the accounting sums the nodes' fills.
func TestUsualFillAccounting(t *testing.T) {
	r := &run{usualFills: []usualFillCounts{{tried: 1, kept: 1, changed: 5}, {}, {tried: 2, kept: 0, changed: 0}}}
	got := map[string]int64{}
	r.countUsualFills(func(name string, v int64) { got[name] = v })
	want := map[string]int64{"usual_fills": 3, "usual_fills_kept": 1, "usual_fill_calls_moved": 5}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d", k, got[k], v)
		}
	}
}
