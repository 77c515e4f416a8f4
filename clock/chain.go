package clock

import (
	"container/heap"
	"math"
)

// Edge is a pairwise estimate: clock B's offset against clock A.
type Edge struct {
	A, B int
	Estimate
}

// Root is a clock whose offset against the reference is known before
// chaining: the reference itself (at 0), or one given by the user or
// estimated elsewhere, with its uncertainty.
type Root struct {
	Clock               int
	Offset, Uncertainty int64
}

// Options tune Chain. The zero value chains along the least summed
// uncertainty alone.
type Options struct {
	// HopCost is added to a path's cost for every edge, so that a direct
	// estimate wins over a chain of nearly as good ones (pcapio's 1 µs).
	HopCost int64
}

// Offset is one clock's offset against the reference, as Chain found it.
type Offset struct {
	// Known is false for a clock no path from a root reaches.
	Known bool
	// Offset is the clock's reading minus the reference's, in ns: the
	// root's offset plus the edges' along the path.
	Offset int64
	// Uncertainty is the root's plus the edges' along the path, in ns.
	Uncertainty int64
	// Samples is the fewest samples of an edge along the path (0 for a
	// root).
	Samples int
	// Hops counts the edges along the path.
	Hops int
	// Root is the root the path starts from, Prev the clock before this
	// one on it and Edge the index of the edge that reached it (all -1
	// for an unknown clock; Prev and Edge -1 for a root).
	Root, Prev, Edge int
}

// Chain returns every clock's offset against the reference (clocks are
// 0..n-1): from the roots along the path of least cost, the summed
// uncertainty plus opts.HopCost per edge (Dijkstra). Ties go to the path
// with fewer hops, then to the one through the clock settled first (the
// lower cost, fewer hops, lower index), then to the edge given first. An
// edge is used both ways; a root's offset is never replaced. Edges or
// roots naming a clock out of range and edges not Known are ignored; of
// two roots of one clock, the first counts.
func Chain(n int, roots []Root, edges []Edge, opts Options) []Offset {
	out := make([]Offset, n)
	cost := make([]int64, n)
	for i := range out {
		out[i] = Offset{Root: -1, Prev: -1, Edge: -1}
	}
	adj := adjacency(n, edges)
	done := make([]bool, n)
	root := make([]bool, n)
	var q queue
	for _, r := range roots {
		if r.Clock < 0 || r.Clock >= n || root[r.Clock] {
			continue
		}
		root[r.Clock] = true
		out[r.Clock] = Offset{Known: true, Offset: r.Offset, Uncertainty: r.Uncertainty, Samples: math.MaxInt, Root: r.Clock, Prev: -1, Edge: -1}
		cost[r.Clock] = r.Uncertainty
		heap.Push(&q, item{clock: r.Clock, cost: r.Uncertainty})
	}
	for q.Len() > 0 {
		it := heap.Pop(&q).(item)
		u := it.clock
		if done[u] {
			continue
		}
		done[u] = true
		for _, ei := range adj[u] {
			e := &edges[ei]
			v, off := e.B, e.Offset
			if v == u {
				v, off = e.A, -e.Offset
			}
			if done[v] || root[v] {
				continue
			}
			c, hops := cost[u]+e.Uncertainty+opts.HopCost, out[u].Hops+1
			if out[v].Known && (c > cost[v] || c == cost[v] && hops >= out[v].Hops) {
				continue
			}
			from := out[u]
			out[v] = Offset{Known: true, Offset: from.Offset + off, Uncertainty: from.Uncertainty + e.Uncertainty,
				Samples: min(from.Samples, e.Samples), Hops: hops, Root: from.Root, Prev: u, Edge: ei}
			cost[v] = c
			heap.Push(&q, item{clock: v, cost: c, hops: hops})
		}
	}
	for i := range out {
		if out[i].Samples == math.MaxInt || !out[i].Known {
			out[i].Samples = 0
		}
	}
	return out
}

// adjacency lists, per clock, the usable edges that touch it, in order.
func adjacency(n int, edges []Edge) [][]int {
	adj := make([][]int, n)
	for i, e := range edges {
		if !e.Known || e.A < 0 || e.B < 0 || e.A >= n || e.B >= n || e.A == e.B {
			continue
		}
		adj[e.A] = append(adj[e.A], i)
		adj[e.B] = append(adj[e.B], i)
	}
	return adj
}

// Path returns the clocks on c's path, from its root to c itself; nil
// when c is unknown.
func Path(offs []Offset, c int) []int {
	if c < 0 || c >= len(offs) || !offs[c].Known {
		return nil
	}
	var p []int
	for x := c; x >= 0; x = offs[x].Prev {
		p = append(p, x)
	}
	for i, j := 0, len(p)-1; i < j; i, j = i+1, j-1 {
		p[i], p[j] = p[j], p[i]
	}
	return p
}

// item is a clock waiting in Chain's queue at a cost.
type item struct {
	clock int
	cost  int64
	hops  int
}

// queue orders items by cost, then hops, then clock.
type queue []item

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	a, b := q[i], q[j]
	if a.cost != b.cost {
		return a.cost < b.cost
	}
	if a.hops != b.hops {
		return a.hops < b.hops
	}
	return a.clock < b.clock
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(item)) }
func (q *queue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}
