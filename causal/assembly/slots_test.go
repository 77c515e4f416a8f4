package assembly

import (
	"math"
	"testing"
)

// TestSlotsProb: a call's children are right, as a member sees it, with
// the product over its slots (a kind of child) of the smaller of the
// slot's links' product and its keep, and the keep alone of a slot it was
// given no call of; a child cut from it (its parent no longer the call)
// does not count. A swap (the call's child and a call given elsewhere
// that lists it, each doubted by the other's share) is doubted once.
func TestSlotsProb(t *testing.T) {
	const a = 0 // the parent call; 1-3 of kind 1, 4 of kind 2
	kinds := []int32{0, 1, 1, 1, 2}
	for _, tc := range []struct {
		name  string
		kids  []int32
		cut   []int32 // kids whose parent is no longer a
		links map[int32]float32
		keeps []slotKeep
		want  float64
	}{
		{"a swap, doubted once", []int32{1}, nil, map[int32]float32{1: 0.7}, []slotKeep{{1, 0.7}}, 0.7},
		{"the keep lower than the link", []int32{1}, nil, map[int32]float32{1: 0.9}, []slotKeep{{1, 0.5}}, 0.5},
		{"no doubt", []int32{1, 4}, nil, map[int32]float32{1: 1, 4: 1}, nil, 1},
		{"an empty slot keeps its keep", nil, nil, nil, []slotKeep{{2, 0.8}}, 0.8},
		{"two kinds", []int32{1, 4}, nil, map[int32]float32{1: 0.9, 4: 0.6}, []slotKeep{{1, 0.5}}, 0.5 * 0.6},
		{"two of a kind", []int32{1, 2}, nil, map[int32]float32{1: 0.9, 2: 0.8}, []slotKeep{{1, 0.9}}, 0.72},
		{"a kind given and one empty", []int32{1}, nil, map[int32]float32{1: 0.6}, []slotKeep{{1, 0.9}, {2, 0.5}}, 0.6 * 0.5},
		{"a cut child does not count", []int32{1, 3}, []int32{3}, map[int32]float32{1: 0.9, 3: 0.1}, nil, 0.9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := len(kinds)
			r := &run{calls: make([]call, n), parent: make([]int32, n), posted: make([]bool, n), conf: make([]float32, n)}
			for e := range r.mconf {
				r.mconf[e] = make([]float32, n)
			}
			for c, k := range kinds {
				r.calls[c].kind = k
				r.parent[c] = -1
			}
			for _, k := range tc.kids {
				r.parent[k] = a
				r.posted[k] = true
				for e := range r.mconf {
					r.mconf[e][k] = tc.links[k]
				}
			}
			for _, k := range tc.cut {
				r.parent[k] = -1
			}
			b := &builder{r: r}
			for e := range b.keep {
				b.keep[e] = make(slotKeeps, n)
				b.keep[e][a] = tc.keeps
			}
			if got := b.slotsProb(0, a, tc.kids); math.Abs(got-tc.want) > 1e-6 {
				t.Errorf("%g, want %g", got, tc.want)
			}
		})
	}
}

// TestSlotKeeps: lose multiplies a slot's keep by 1 − p, slots of
// different kinds apart, and a clone is a copy.
func TestSlotKeeps(t *testing.T) {
	s := make(slotKeeps, 3)
	s.lose(1, 7, 0.5)
	s.lose(1, 7, 0.5)
	s.lose(1, 8, 0.1)
	c := s.clone()
	c.lose(1, 8, 0.5)
	for _, tc := range []struct {
		s       slotKeeps
		q, kind int32
		want    float64
	}{{s, 1, 7, 0.25}, {s, 1, 8, 0.9}, {s, 1, 9, 1}, {s, 2, 7, 1}, {c, 1, 8, 0.45}, {c, 1, 7, 0.25}} {
		if got := tc.s.of(tc.q, tc.kind); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("keep of call %d, kind %d: %g, want %g", tc.q, tc.kind, got, tc.want)
		}
	}
}
