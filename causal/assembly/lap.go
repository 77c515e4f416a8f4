package assembly

import "math"

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

// lapHeap is a binary min-heap of columns by distance: container/heap's
// algorithm (the same comparisons and swaps, so the same order of pops
// among equal distances) on the concrete type, without boxing each
// item pushed into an interface (an allocation a push).
type lapHeap []lapItem

// push adds it, as heap.Push does.
func (h *lapHeap) push(it lapItem) {
	*h = append(*h, it)
	q := *h
	for j := len(q) - 1; ; {
		i := (j - 1) / 2 // parent
		if i == j || !(q[j].d < q[i].d) {
			break
		}
		q[i], q[j] = q[j], q[i]
		j = i
	}
}

// pop removes and returns the nearest item, as heap.Pop does.
func (h *lapHeap) pop() lapItem {
	q := *h
	n := len(q) - 1
	q[0], q[n] = q[n], q[0]
	for i := 0; ; {
		j1 := 2*i + 1
		if j1 >= n || j1 < 0 {
			break
		}
		j := j1
		if j2 := j1 + 1; j2 < n && q[j2].d < q[j1].d {
			j = j2
		}
		if !(q[j].d < q[i].d) {
			break
		}
		q[i], q[j] = q[j], q[i]
		i = j
	}
	it := q[n]
	*h = q[:n]
	return it
}

// lapSolver is the state of solveLAP: the dual potentials, the
// matching, and the shortest-path search's buffers.
type lapSolver struct {
	p                *lapProblem
	u, v             []float64
	col4row, row4col []int32
	shortest         []float64
	path             []int32
	done             []bool
	touched, sr, sc  []int32
	h                lapHeap
	pops, budget     int
}

// solveLAP returns the column of each row in a perfect matching of least
// cost, its cost, and false when there is none (a row or column without
// a way to be matched) or the search met more than budget heap pops
// (0: no bound).
func solveLAP(p *lapProblem, budget int) (col4row []int32, total float64, ok bool) {
	n := p.n
	s := &lapSolver{p: p, u: make([]float64, n), v: make([]float64, n), col4row: make([]int32, n), row4col: make([]int32, n),
		shortest: make([]float64, n), path: make([]int32, n), done: make([]bool, n), budget: budget}
	// column reduction: the cheapest cost into each column is its first
	// potential, so that every reduced cost starts non-negative
	for j := range s.v {
		s.v[j] = math.Inf(1)
	}
	for e, j := range p.col {
		s.v[j] = min(s.v[j], p.cost[e])
	}
	for j := range s.v {
		if math.IsInf(s.v[j], 1) {
			return nil, 0, false
		}
		s.shortest[j] = math.Inf(1)
		s.col4row[j], s.row4col[j] = -1, -1
	}
	for cur := range int32(n) {
		if !s.augment(cur) {
			return nil, 0, false
		}
	}
	for i := range int32(n) {
		total += linkCost(p, i, s.col4row[i])
	}
	return s.col4row, total, true
}

// augment matches row cur by the shortest augmenting path from it to a
// free column, and updates the potentials; false when there is none or
// the budget is spent.
func (s *lapSolver) augment(cur int32) bool {
	p := s.p
	minVal, i, sink := 0.0, cur, int32(-1)
	for sink < 0 {
		s.sr = append(s.sr, i)
		for e := p.start[i]; e < p.start[i+1]; e++ {
			j := p.col[e]
			if s.done[j] {
				continue
			}
			if r := minVal + p.cost[e] - s.u[i] - s.v[j]; r < s.shortest[j] {
				if math.IsInf(s.shortest[j], 1) {
					s.touched = append(s.touched, j)
				}
				s.shortest[j], s.path[j] = r, i
				s.h.push(lapItem{r, j})
			}
		}
		j := s.nearest()
		if j < 0 || s.budget > 0 && s.pops > s.budget {
			return false
		}
		minVal = s.shortest[j]
		s.done[j] = true
		s.sc = append(s.sc, j)
		if s.row4col[j] < 0 {
			sink = j
		} else {
			i = s.row4col[j]
		}
	}
	s.u[cur] += minVal
	for _, i := range s.sr[1:] {
		s.u[i] += minVal - s.shortest[s.col4row[i]]
	}
	for _, j := range s.sc {
		s.v[j] -= minVal - s.shortest[j]
	}
	for j := sink; ; {
		i := s.path[j]
		s.row4col[j] = i
		s.col4row[i], j = j, s.col4row[i]
		if i == cur {
			break
		}
	}
	for _, j := range s.touched {
		s.shortest[j], s.done[j] = math.Inf(1), false
	}
	s.touched, s.sr, s.sc, s.h = s.touched[:0], s.sr[:0], s.sc[:0], s.h[:0]
	return true
}

// nearest pops the column nearest to the search's rows not yet reached,
// -1 when there is none.
func (s *lapSolver) nearest() int32 {
	for len(s.h) > 0 {
		it := s.h.pop()
		s.pops++
		if !s.done[it.j] && it.d <= s.shortest[it.j] {
			return it.j
		}
	}
	return -1
}

// linkCost is the cost of row i taking column j in p.
func linkCost(p *lapProblem, i, j int32) float64 {
	for e := p.start[i]; e < p.start[i+1]; e++ {
		if p.col[e] == j {
			return p.cost[e]
		}
	}
	return math.Inf(1)
}
