package assembly

import (
	"math"
	"testing"
)

// TestRivalsProb: a call's children are right, as a member sees it,
// with the product over its rivals of one less the largest doubt from
// each (its children's probabilities of the rival's request, and the
// calls given to the rival that list it), times one less each doubt of
// no rival (a child's share of no request, a call given to none that
// lists it); a child cut from it does not count. A swap is doubted
// once, and so is a chain of calls exchanged with one rival, which the
// slots' product (slots per kind multiplied) doubted once per call.
func TestRivalsProb(t *testing.T) {
	const a, b, c = 0, 5, 6 // the parent call; b and c: rival requests' calls
	kinds := []int32{0, 1, 1, 2, 2, 0, 0}
	for _, tc := range []struct {
		name  string
		kids  []int32
		cut   []int32 // kids whose parent is no longer a
		links map[int32]float32
		riv   map[int32][]rivalP // the kids' rivals
		back  []rivalP           // doubts from calls given elsewhere
		tail  float64
		want  float64
	}{
		{"a swap, doubted once", []int32{1}, nil, map[int32]float32{1: 0.7}, map[int32][]rivalP{1: {{b, 0.3}}}, []rivalP{{b, 0.3}}, 1, 0.7},
		{"the back doubt larger than the link's", []int32{1}, nil, map[int32]float32{1: 0.9}, map[int32][]rivalP{1: {{b, 0.1}}}, []rivalP{{b, 0.5}}, 1, 0.5},
		{"no doubt", []int32{1, 3}, nil, map[int32]float32{1: 1, 3: 1}, nil, nil, 1, 1},
		{"a chain exchanged with one rival", []int32{1, 3}, nil, map[int32]float32{1: 0.8, 3: 0.7}, map[int32][]rivalP{1: {{b, 0.2}}, 3: {{b, 0.3}}}, []rivalP{{b, 0.3}}, 1, 0.7},
		{"two rivals", []int32{1, 3}, nil, map[int32]float32{1: 0.8, 3: 0.7}, map[int32][]rivalP{1: {{b, 0.2}}, 3: {{c, 0.3}}}, nil, 1, 0.8 * 0.7},
		{"a share of no request", []int32{1}, nil, map[int32]float32{1: 0.6}, map[int32][]rivalP{1: {{b, 0.3}}}, nil, 1, 0.7 * 0.9},
		{"a call given to none", nil, nil, nil, nil, []rivalP{{-1, 0.2}, {-1, 0.5}}, 1, 0.8 * 0.5},
		{"the tail", []int32{1}, nil, map[int32]float32{1: 0.9}, map[int32][]rivalP{1: {{b, 0.1}}}, nil, 0.5, 0.9 * 0.5},
		{"a cut child does not count", []int32{1, 3}, []int32{3}, map[int32]float32{1: 0.9, 3: 0.1}, map[int32][]rivalP{1: {{b, 0.1}}, 3: {{c, 0.9}}}, nil, 1, 0.9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := len(kinds)
			r := &run{calls: make([]call, n), parent: make([]int32, n), posted: make([]bool, n), conf: make([]float32, n)}
			for e := range r.mconf {
				r.mconf[e] = make([]float32, n)
				r.mriv[e] = make([][]rivalP, n)
			}
			for i, k := range kinds {
				r.calls[i].kind = k
				r.parent[i] = -1
			}
			for _, k := range tc.kids {
				r.parent[k] = a
				r.posted[k] = true
				for e := range r.mconf {
					r.mconf[e][k] = tc.links[k]
					r.mriv[e][k] = tc.riv[k]
				}
			}
			for _, k := range tc.cut {
				r.parent[k] = -1
			}
			bl := &builder{r: r}
			for e := range bl.back {
				bl.back[e] = newRivalDoubts(n)
				for _, x := range tc.back {
					bl.back[e].add(a, x.q, x.p)
				}
				bl.back[e].tail[a] = tc.tail
			}
			if got := bl.rivalsProb(0, a, tc.kids); math.Abs(got-tc.want) > 1e-6 {
				t.Errorf("%g, want %g", got, tc.want)
			}
		})
	}
}

// TestRivalDoubts: add keeps the largest doubt per rival and every doubt
// of none, and a clone is a copy.
func TestRivalDoubts(t *testing.T) {
	d := newRivalDoubts(3)
	d.add(1, 2, 0.3)
	d.add(1, 2, 0.5)
	d.add(1, 2, 0.1)
	d.add(1, -1, 0.2)
	d.add(1, -1, 0.2)
	c := d.clone()
	c.add(1, 0, 0.4)
	c.tail[1] = 0.5
	want := []rivalP{{2, 0.5}, {-1, 0.2}, {-1, 0.2}}
	if len(d.by[1]) != len(want) || d.tail[1] != 1 {
		t.Fatalf("got %v (tail %g), want %v (tail 1)", d.by[1], d.tail[1], want)
	}
	for i, x := range want {
		if d.by[1][i] != x {
			t.Errorf("doubt %d: %v, want %v", i, d.by[1][i], x)
		}
	}
	if len(c.by[1]) != 4 {
		t.Errorf("the clone: %v, want 4 doubts", c.by[1])
	}
}

// TestNoteRivals: a posted call's likeliest rivals (its own request and
// none left out) are its own, and each is a doubt of that rival against
// the call's request; the rest go to the rivals' tails.
func TestNoteRivals(t *testing.T) {
	const n = 8
	r := &run{}
	for e := range r.mriv {
		r.mriv[e] = make([][]rivalP, n)
		r.mback[e] = newRivalDoubts(n)
	}
	qs := []int32{-1, 1, 2, 3, 4, 5}
	ps := []float64{0.1, 0.4, 0.2, 0.15, 0.1, 0.05}
	r.noteRivals(0, 7, 1, qs, ps)
	want := []rivalP{{2, 0.2}, {3, 0.15}, {4, 0.1}}
	if got := r.mriv[0][7]; len(got) != searchAlts || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("rivals %v, want %v", got, want)
	}
	for _, x := range want {
		if got := r.mback[0].by[x.q]; len(got) != 1 || got[0] != (rivalP{1, x.p}) {
			t.Errorf("rival %d's doubts %v, want [{1 %g}]", x.q, got, x.p)
		}
	}
	if got := r.mback[0].tail[5]; math.Abs(got-0.95) > 1e-12 {
		t.Errorf("rival 5's tail %g, want 0.95", got)
	}
}
