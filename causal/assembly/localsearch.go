package assembly

import (
	"math"
	"slices"
)

// The local search improves a node's assignment by exact moves, each
// scored by replaying the requests it changes: a call moved to another
// candidate request (or to none), two calls of one kind swapped between
// their requests, and the tails of two overlapping requests (every call
// after some instant) exchanged, which undoes the crossing of two
// interleaved sequences that a beam search, deciding call by call, makes.
// It accepts improving moves until none is left (or maxSweeps).

// local is the state of the local search of one node.
type local struct {
	r      *run
	s      *search // for the scores
	n      int32
	kids   map[int32][]int32 // request -> calls, in order of send
	ps     map[int32]float64 // request -> its replay score
	cands  map[int32][]int32 // call -> candidate requests
	buf    []int32
	moves  int64
	sweeps int
}

const improveEps = 1e-9

func (r *run) improve(n int32, m *nodeModel, maxSweeps int) int64 {
	ls := &local{r: r, s: &search{r: r, m: m}, n: n, kids: map[int32][]int32{}, ps: map[int32]float64{}, cands: map[int32][]int32{}}
	r.sweep(n, func(c int32, cands []int32) { ls.cands[c] = slices.Clone(cands) })
	for _, c := range r.childrenOf[n] {
		if p := r.parent[c]; p >= 0 {
			ls.kids[p] = append(ls.kids[p], c)
		}
	}
	for _, p := range r.parentsOf[n] {
		ks := ls.kids[p]
		slices.SortStableFunc(ks, func(a, b int32) int { return cmpTime(r.sendOf(a), r.sendOf(b)) })
		ls.ps[p] = r.replay(ls.s, p, ks)
	}
	for ls.sweeps = 0; ls.sweeps < maxSweeps; ls.sweeps++ {
		before := ls.moves
		ls.moveSweep()
		ls.swapSweep()
		ls.tailSweep()
		if ls.moves == before {
			break
		}
	}
	return ls.moves
}

// with returns ks with c inserted in order of send (into ls.buf).
func (ls *local) with(ks []int32, c int32) []int32 {
	t := ls.r.sendOf(c)
	out := ls.buf[:0]
	done := false
	for _, k := range ks {
		if !done && ls.r.sendOf(k) > t {
			out = append(out, c)
			done = true
		}
		out = append(out, k)
	}
	if !done {
		out = append(out, c)
	}
	ls.buf = out
	return out
}

func without(ks []int32, c int32) []int32 {
	out := make([]int32, 0, len(ks))
	for _, k := range ks {
		if k != c {
			out = append(out, k)
		}
	}
	return out
}

func (ls *local) canMove(c int32) bool { return ls.r.exact[c] < 0 }

func (ls *local) fitsIn(c, p int32) bool { return slices.Contains(ls.cands[c], p) }

// score of request p with calls ks (-Inf if infeasible); bg for p < 0.
func (ls *local) score(p int32, ks []int32) float64 {
	return ls.r.replay(ls.s, p, ks)
}

func (ls *local) bg(c int32) float64 { return ls.s.m.logBackground(ls.r.calls[c].kind) }

// set replaces request p's calls.
func (ls *local) set(p int32, ks []int32, sc float64) {
	ls.kids[p] = ks
	ls.ps[p] = sc
	for _, k := range ks {
		ls.r.parent[k] = p
	}
}

func (ls *local) moveSweep() {
	r := ls.r
	for _, c := range r.childrenOf[ls.n] {
		if !ls.canMove(c) {
			continue
		}
		a := r.parent[c]
		var aKids []int32
		aOld, aNew := ls.bg(c), 0.0
		if a >= 0 {
			aKids = without(ls.kids[a], c)
			aOld, aNew = ls.ps[a], ls.score(a, aKids)
		}
		best, bestQ := improveEps, int32(-2)
		var bestSc float64
		for _, q := range ls.cands[c] {
			if q == a {
				continue
			}
			qs := ls.score(q, ls.with(ls.kids[q], c))
			if d := aNew + qs - aOld - ls.ps[q]; d > best {
				best, bestQ, bestSc = d, q, qs
			}
		}
		if a >= 0 {
			if d := aNew + ls.bg(c) - aOld; d > best {
				best, bestQ = d, -1
			}
		}
		if bestQ == -2 {
			continue
		}
		if a >= 0 {
			ls.set(a, aKids, aNew)
		}
		if bestQ >= 0 {
			ls.set(bestQ, slices.Clone(ls.with(ls.kids[bestQ], c)), bestSc)
		} else {
			r.parent[c] = -1
		}
		ls.moves++
	}
}

func (ls *local) swapSweep() {
	r := ls.r
	for _, c := range r.childrenOf[ls.n] {
		a := r.parent[c]
		if a < 0 || !ls.canMove(c) {
			continue
		}
		kc := r.calls[c].kind
		for _, q := range ls.cands[c] {
			if q == a {
				continue
			}
			for _, d := range ls.kids[q] {
				if d == c || r.calls[d].kind != kc || !ls.canMove(d) || !ls.fitsIn(d, a) {
					continue
				}
				ak := slices.Clone(ls.with(without(ls.kids[a], c), d))
				qk := slices.Clone(ls.with(without(ls.kids[q], d), c))
				as, qs := ls.score(a, ak), ls.score(q, qk)
				if as+qs-ls.ps[a]-ls.ps[q] > improveEps {
					ls.set(a, ak, as)
					ls.set(q, qk, qs)
					ls.moves++
					break
				}
			}
			if r.parent[c] != a {
				break
			}
		}
	}
}

// tailSweep exchanges, for pairs of requests that overlap, every call
// after some instant.
func (ls *local) tailSweep() {
	r := ls.r
	for _, p := range r.parentsOf[ls.n] {
		pk := ls.kids[p]
		for _, c := range pk {
			for _, q := range ls.cands[c] {
				if q == p {
					continue
				}
				if ls.tailSwap(p, q, r.sendOf(c)) {
					pk = ls.kids[p]
					break
				}
			}
		}
	}
}

// tailSwap exchanges the calls of p and q sent at or after t, if that is
// feasible and better.
func (ls *local) tailSwap(p, q int32, t int64) bool {
	r := ls.r
	split := func(ks []int32) (head, tail []int32) {
		i := slices.IndexFunc(ks, func(k int32) bool { return r.sendOf(k) >= t })
		if i < 0 {
			return ks, nil
		}
		return ks[:i], ks[i:]
	}
	ph, pt := split(ls.kids[p])
	qh, qt := split(ls.kids[q])
	if len(pt) == 0 && len(qt) == 0 {
		return false
	}
	for _, k := range pt {
		if !ls.canMove(k) || !ls.fitsIn(k, q) {
			return false
		}
	}
	for _, k := range qt {
		if !ls.canMove(k) || !ls.fitsIn(k, p) {
			return false
		}
	}
	np := append(slices.Clone(ph), qt...)
	nq := append(slices.Clone(qh), pt...)
	slices.SortStableFunc(np, func(a, b int32) int { return cmpTime(r.sendOf(a), r.sendOf(b)) })
	slices.SortStableFunc(nq, func(a, b int32) int { return cmpTime(r.sendOf(a), r.sendOf(b)) })
	ps, qs := ls.score(p, np), ls.score(q, nq)
	if math.IsInf(ps, -1) || math.IsInf(qs, -1) || ps+qs-ls.ps[p]-ls.ps[q] <= improveEps {
		return false
	}
	ls.set(p, np, ps)
	ls.set(q, nq, qs)
	ls.moves++
	return true
}
