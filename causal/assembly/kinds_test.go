package assembly

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestRareLabels covers the kinds of labelled calls: a label with at
// least minLabelCalls calls and 1 % of those between its caller and
// callee is a kind of its own; a rarer one (a route whose identifier was
// not normalised: one label per value) is a kind by signature, learnt
// with the other rare ones of its size.
func TestRareLabels(t *testing.T) {
	cases := []struct {
		name   string
		common int // calls labelled "GET /item/{id}"
		rare   []int
		// want: whether each rare label keeps a kind of its own
		want []bool
	}{
		{"one call each", 100, []int{1, 1, 1}, []bool{false, false, false}},
		{"four calls", 100, []int{4}, []bool{false}},
		{"five calls", 100, []int{5}, []bool{true}},
		{"under 1 %", 900, []int{6, 10}, []bool{false, true}},
		{"all rare", 0, []int{2, 3}, []bool{false, false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newTB()
			at := 0.0
			label := func(i int32, s string) { b.ev(i).Label = b.t.Intern(s) }
			var common int32 = -1
			for i := range tc.common {
				c, _ := b.rpc(at, at+1, "web", "w:1", "app", "a:80", fmt.Sprintf("c%d", i), 200)
				label(c, "GET /item/{id}")
				common = c
				at += 2
			}
			var rare []int32
			for j, n := range tc.rare {
				for i := range n {
					c, _ := b.rpc(at, at+1, "web", "w:1", "app", "a:80", fmt.Sprintf("r%d.%d", j, i), 201)
					label(c, fmt.Sprintf("GET /item/x%d", j))
					if i == 0 {
						rare = append(rare, c)
					}
					at += 2
				}
			}
			_, r := runOn(t, b, DefaultOptions())
			kind := func(m int32) int32 { return r.calls[r.callOf(m)].kind }
			for j, m := range rare {
				own := r.kinds.name(kind(m)) == fmt.Sprintf("GET /item/x%d", j)
				if own != tc.want[j] {
					t.Errorf("label %d (%d calls): own kind %v (%s), want %v", j, tc.rare[j], own, r.kinds.name(kind(m)), tc.want[j])
				}
				if common >= 0 && kind(m) == kind(common) {
					t.Errorf("label %d shares the common label's kind", j)
				}
			}
			// the rare labels of one size are one kind
			for j := 1; j < len(rare); j++ {
				if !tc.want[j] && !tc.want[0] && kind(rare[j]) != kind(rare[0]) {
					t.Errorf("rare labels 0 and %d: kinds %s and %s, want one", j, r.kinds.name(kind(rare[0])), r.kinds.name(kind(rare[j])))
				}
			}
		})
	}
}

// TestRareLabelsNoCalls: requests whose labels are each seen once (an
// identifier in the route) answer at once and make no call, while the
// node serves requests of a common label, each making one call, whose
// calls wait for their turn. Each rare label learnt as its own kind
// learns from the one request's assignment, and a call the search gave
// it is then confirmed; learnt together as one kind they make no calls.
func TestRareLabelsNoCalls(t *testing.T) {
	b := newTB()
	rng := rand.New(rand.NewPCG(3, 4))
	type req struct{ call, kid int32 }
	var reqs []req
	var bad []int32
	at := 0.0
	for i := range 300 {
		arr := at
		if i%4 == 3 {
			c, _ := b.rpc(arr, arr+0.5+3*rng.Float64(), "web", fmt.Sprintf("w:%d", i), "app", "a:80", fmt.Sprintf("b%d", i), 201)
			b.ev(c).Label = b.t.Intern(fmt.Sprintf("GET /item/x%d", i))
			bad = append(bad, c)
		} else {
			send := arr + 0.2 + 2*rng.Float64()
			back := send + 0.3 + 0.2*rng.Float64()
			rep := back + 0.2 + 0.5*rng.Float64()
			c, _ := b.rpc(arr, rep, "web", fmt.Sprintf("w:%d", i), "app", "a:80", fmt.Sprintf("q%d", i), 200)
			b.ev(c).Label = b.t.Intern("GET /item/{id}")
			k, _ := b.rpc(send, back-0.1, "app", fmt.Sprintf("a:%d", 1000+i), "store", "s:11211", fmt.Sprintf("k%d", i), 13)
			reqs = append(reqs, req{c, k})
		}
		at += 0.4 + 0.8*rng.Float64()
	}
	_, r := runOn(t, b, DefaultOptions())
	given := 0
	for _, c := range bad {
		p := r.callOf(c)
		for _, k := range r.childrenOf[r.calls[p].callee] {
			if r.parent[k] == p {
				given++
			}
		}
	}
	right := 0
	for _, q := range reqs {
		if r.parentMsg(q.kid) == q.call {
			right++
		}
	}
	if given > len(bad)/20 {
		t.Errorf("%d calls given to the %d requests that made none", given, len(bad))
	}
	t.Logf("%d of %d calls right, %d given to requests that made none", right, len(reqs), given)
}
