package assembly

import (
	"container/heap"
	"math"
)

// A sparse linear assignment problem: n rows, n columns, and for each
// row the columns it may take with their costs; find the perfect
// matching (every row one column, every column one row) of least total
// cost. It is solved by shortest augmenting paths (the Hungarian method
// in Jonker-Volgenant's form, as Crouse describes it for SciPy's
// linear_sum_assignment), on the sparse graph: each row in turn is
// matched by a Dijkstra search over reduced costs from it to the nearest
// free column, stopped as soon as that column is reached, and the dual
// potentials are updated so that reduced costs stay non-negative. The
// chain matching (chains.go) is its user.

// lapProblem is a sparse assignment problem in compressed rows: row i may
// take columns col[start[i]:start[i+1]] at costs cost[start[i]:start[i+1]],
// each column at most once per row.
type lapProblem struct {
	n     int
	start []int32
	col   []int32
	cost  []float64
}

// lapItem is a column in the search's heap, at its tentative distance.
type lapItem struct {
	d float64
	j int32
}

type lapHeap []lapItem

func (h lapHeap) Len() int           { return len(h) }
func (h lapHeap) Less(a, b int) bool { return h[a].d < h[b].d }
func (h lapHeap) Swap(a, b int)      { h[a], h[b] = h[b], h[a] }
func (h *lapHeap) Push(x any)        { *h = append(*h, x.(lapItem)) }
func (h *lapHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}

// solveLAP returns the column of each row in a perfect matching of least
// cost, its cost, and false when there is none (a row or column without
// a way to be matched) or the search met more than budget heap pops
// (0: no bound).
func solveLAP(p *lapProblem, budget int) (col4row []int32, total float64, ok bool) {
	n := p.n
	u, v := make([]float64, n), make([]float64, n)
	for j := range v {
		v[j] = math.Inf(1)
	}
	// column reduction: the cheapest cost into each column is its first
	// potential, so that every reduced cost starts non-negative
	for i := range n {
		for e := p.start[i]; e < p.start[i+1]; e++ {
			v[p.col[e]] = min(v[p.col[e]], p.cost[e])
		}
	}
	for j := range v {
		if math.IsInf(v[j], 1) {
			return nil, 0, false
		}
	}
	col4row, row4col := make([]int32, n), make([]int32, n)
	for i := range col4row {
		col4row[i], row4col[i] = -1, -1
	}
	shortest, path := make([]float64, n), make([]int32, n)
	done := make([]bool, n)
	for j := range shortest {
		shortest[j] = math.Inf(1)
	}
	var touched, sr, sc []int32
	var h lapHeap
	pops := 0
	for cur := int32(0); int(cur) < n; cur++ {
		minVal, i, sink := 0.0, cur, int32(-1)
		for sink < 0 {
			sr = append(sr, i)
			for e := p.start[i]; e < p.start[i+1]; e++ {
				j := p.col[e]
				if done[j] {
					continue
				}
				if r := minVal + p.cost[e] - u[i] - v[j]; r < shortest[j] {
					if math.IsInf(shortest[j], 1) {
						touched = append(touched, j)
					}
					shortest[j], path[j] = r, i
					heap.Push(&h, lapItem{r, j})
				}
			}
			j := int32(-1)
			for h.Len() > 0 {
				it := heap.Pop(&h).(lapItem)
				pops++
				if !done[it.j] && it.d <= shortest[it.j] {
					j = it.j
					break
				}
			}
			if j < 0 || budget > 0 && pops > budget {
				return nil, 0, false
			}
			minVal = shortest[j]
			done[j] = true
			sc = append(sc, j)
			if row4col[j] < 0 {
				sink = j
			} else {
				i = row4col[j]
			}
		}
		u[cur] += minVal
		for _, i := range sr[1:] {
			u[i] += minVal - shortest[col4row[i]]
		}
		for _, j := range sc {
			v[j] -= minVal - shortest[j]
		}
		for j := sink; ; {
			i := path[j]
			row4col[j] = i
			col4row[i], j = j, col4row[i]
			if i == cur {
				break
			}
		}
		for _, j := range touched {
			shortest[j], done[j] = math.Inf(1), false
		}
		touched, sr, sc, h = touched[:0], sr[:0], sc[:0], h[:0]
	}
	for i := range n {
		for e := p.start[i]; e < p.start[i+1]; e++ {
			if p.col[e] == col4row[i] {
				total += p.cost[e]
				break
			}
		}
	}
	return col4row, total, true
}
