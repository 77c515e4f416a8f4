package assembly

import (
	"math"
	"testing"
)

// calibRun returns a run whose node 0 received 10 requests (calls 0–9,
// of kind 0) and made 10 calls (10–19, of kind 1), the first `empty`
// requests given none (their calls going to the last request), with a
// first model that expects noCall of every 10 requests to make none.
func calibRun(empty, noCall int) *run {
	r := &run{calls: make([]call, 20), parent: make([]int32, 20), parentsOf: make([][]int32, 2), childrenOf: make([][]int32, 2)}
	for i := range int32(10) {
		r.parentsOf[0] = append(r.parentsOf[0], i)
		r.childrenOf[0] = append(r.childrenOf[0], 10+i)
		r.calls[10+i].kind = 1
		r.parent[i] = -1
		r.parent[10+i] = i
		if int(i) < empty {
			r.parent[10+i] = 9
		}
	}
	m := newNodeModel(2, 1e9)
	for i := range 1000 {
		next := int32(1)
		if i%10 < noCall {
			next = endKind
		}
		m.observe(ctxKey{pk: 0, prev: noKind}, next, 1e5, 1e5, 1, 1)
	}
	r.firstModels = []*nodeModel{m, nil}
	return r
}

func TestBacking(t *testing.T) {
	for _, tc := range []struct {
		name          string
		empty, noCall int
		// want: the share of the posterior backed (-1: 1 less the
		// excess of the empty requests over the first model's)
		want float64
	}{
		{"every request made a call", 0, 0, 1},
		{"as many empty as the first model expects", 3, 3, 1},
		{"fewer empty than expected", 1, 3, 1},
		{"more empty than expected", 6, 1, -1},
		{"one more empty than expected, within chance", 4, 3, 1},
		{"every request but one empty", 9, 0, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := calibRun(tc.empty, tc.noCall)
			left, expect := r.noCallExcess(0)
			if left != float64(tc.empty) {
				t.Fatalf("left %v, want %d", left, tc.empty)
			}
			if math.Abs(expect-float64(tc.noCall)) > 0.1 {
				t.Fatalf("expect %v, want about %d", expect, tc.noCall)
			}
			want := tc.want
			if want < 0 {
				p := expect / 10
				want = 1 - (left-expect-math.Sqrt(10*p*(1-p)))/10
			}
			if got := r.backing(0); math.Abs(got-want) > 1e-9 || got > 1 {
				t.Fatalf("backing %v, want %v", got, want)
			}
			if got := r.backing(1); got != 1 {
				t.Fatalf("a node with no requests: backing %v, want 1", got)
			}
		})
	}
}

func TestUnback(t *testing.T) {
	for _, tc := range []struct {
		backed float64
		ps     []float64
		want   []float64
	}{
		{1, []float64{0.1, 0.9}, []float64{0.1, 0.9}},
		{0.5, []float64{0, 1}, []float64{0.25, 0.75}},
		{0.6, []float64{0, 0.2, 0.8}, []float64{0.4 / 3, 0.12 + 0.4/3, 0.48 + 0.4/3}},
		{0, []float64{0, 0, 1, 0}, []float64{0.25, 0.25, 0.25, 0.25}},
	} {
		ps := append([]float64(nil), tc.ps...)
		unback(ps, tc.backed)
		for i := range ps {
			if math.Abs(ps[i]-tc.want[i]) > 1e-12 {
				t.Errorf("unback(%v, %v) = %v, want %v", tc.ps, tc.backed, ps, tc.want)
				break
			}
		}
	}
}
