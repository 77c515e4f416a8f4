package assembly

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"testing"
)

// boxedHeap is lapHeap under container/heap, the order lapHeap's push and
// pop must keep.
type boxedHeap []lapItem

func (h boxedHeap) Len() int           { return len(h) }
func (h boxedHeap) Less(a, b int) bool { return h[a].d < h[b].d }
func (h boxedHeap) Swap(a, b int)      { h[a], h[b] = h[b], h[a] }
func (h *boxedHeap) Push(x any)        { *h = append(*h, x.(lapItem)) }
func (h *boxedHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}

// TestLapHeapOrder checks that lapHeap pops the same items in the same
// order as container/heap, ties and NaN included (the order of equal
// distances decides which column the LAP reaches first).
func TestLapHeapOrder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dists []float64
	}{
		{"distinct", []float64{5, 3, 8, 1, 9, 2}},
		{"ties", []float64{1, 1, 1, 0, 0, 2, 1, 0}},
		{"nan", []float64{2, math.NaN(), 1, math.NaN(), 0, 1}},
		{"inf", []float64{math.Inf(1), 0, math.Inf(1), -1}},
		{"random", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			d := tc.dists
			if d == nil {
				for range 500 {
					d = append(d, float64(rng.IntN(20)))
				}
			}
			var a lapHeap
			var b boxedHeap
			// pushes and pops interleaved: a pop after every third push
			for i, x := range d {
				a.push(lapItem{x, int32(i)})
				heap.Push(&b, lapItem{x, int32(i)})
				if i%3 == 2 {
					if g, w := a.pop(), heap.Pop(&b).(lapItem); g.j != w.j {
						t.Fatalf("pop after push %d: column %d, container/heap %d", i, g.j, w.j)
					}
				}
			}
			for len(a) > 0 {
				if g, w := a.pop(), heap.Pop(&b).(lapItem); g.j != w.j {
					t.Fatalf("draining: column %d, container/heap %d", g.j, w.j)
				}
			}
			if len(b) != 0 {
				t.Fatalf("container/heap has %d items left", len(b))
			}
		})
	}
}

// TestLapHeapAllocs guards that a push and a pop allocate nothing once
// the heap has grown (container/heap boxed every item pushed).
func TestLapHeapAllocs(t *testing.T) {
	h := make(lapHeap, 0, 16)
	if a := testing.AllocsPerRun(100, func() {
		h.push(lapItem{3, 1})
		h.push(lapItem{1, 2})
		h.pop()
		h.pop()
	}); a != 0 {
		t.Fatalf("%v allocations a push and pop, want 0", a)
	}
}
