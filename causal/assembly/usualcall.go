package assembly

import (
	"cmp"
	"math"
	"slices"
)

// The usual call put back: a move that refits the model.
//
// At 64 requests in flight on the testbed's sniffed runs the app makes
// a DNS lookup for every /search request, sometimes hundreds of
// milliseconds after the request arrived (Python threads waiting for
// the interpreter lock). The engine left some of those lookups in the
// background and read their requests' exactly linked HTTP calls as
// their first calls; fitted on that answer, the model learns that a
// /search request may start with its HTTP call, late, and then scores
// that reading well: on http/ids/sniffed/64 moving each such lookup to
// its true request loses 0.1 to 6.6 nats under the engine's own
// cross-fitted models and gains 9.8 to 14.4 under models fitted (the
// same way) on the truth. No move under a fixed model leaves that fixed
// point; the model has to move with the calls.
//
// So, in the last pass, for each kind of request at the node that
// nearly always makes a call of some kind (usualShare of the requests
// holding one), the requests of that kind holding none are each given
// one of the background calls of that kind that could be theirs (best
// single move first), the node's models are fitted again (and
// cross-fitted) on that assignment, the local search refines it under
// them, and the result is kept where its cross-fitted objective is
// higher than the current assignment's under models fitted the same way
// on it, by kindMatchMinGain nats per call moved. Both sides are scored
// by models fitted on their own assignment and never on the block they
// score (crossfit.go), so the comparison does not favour either.

const (
	// usualShare is the least share of a kind's requests holding a call
	// of a kind for the call to be usual for it.
	usualShare = 0.8
	// usualMinRequests is the fewest requests of a kind holding the call
	// for it to be usual.
	usualMinRequests = 16
)

// usualFillCounts are the usual-call fills' counts at a node.
type usualFillCounts = trialCounts

// usualFill tries the usual-call fill at node n in its last pass (pass),
// with the pass's models m and x, the isolated requests' call graph iso
// and the node's FIFO ratio learnt once fo; it returns the models the
// node's answer is to be scored with from now on (m and x, or those
// fitted on the fill where it was kept).
func (r *run) usualFill(n int32, pass int, iso *nodeModel, fo *fifoOnce, m *nodeModel, x *crossFit, cnt *usualFillCounts) (*nodeModel, *crossFit) {
	if x == nil {
		return m, x
	}
	moves := newLocal(r, n, m, x).usualMoves()
	if len(moves) == 0 {
		return m, x
	}
	cnt.tried++
	kids := r.childrenOf[n]
	before := r.parentsOfCalls(kids)
	refit := func() (*nodeModel, *crossFit) {
		mm := r.fit(n, false)
		fo.step(mm, pass, true)
		if iso != nil {
			addTrans(mm, iso)
		}
		return mm, r.crossFitModels(n, iso, mm, false)
	}
	mb, xb := refit()
	if xb == nil {
		return m, x
	}
	base := newLocal(r, n, mb, xb).objective()
	for _, mv := range moves {
		r.parent[mv[0]] = mv[1]
	}
	mn, xn := refit()
	if xn == nil {
		r.setParentsOfCalls(kids, before)
		return m, x
	}
	after := newLocal(r, n, mn, xn)
	after.sweepAll(20)
	moved := 0
	for i, c := range kids {
		if r.parent[c] != before[i] {
			moved++
		}
	}
	if after.objective() <= base+kindMatchMinGain*float64(moved)+improveEps {
		r.setParentsOfCalls(kids, before)
		return m, x
	}
	cnt.kept++
	cnt.changed += int64(moved)
	return mn, xn
}

// usualMoves returns the moves of the usual-call fill under the local
// search's current assignment: pairs of a background call and a request
// it could belong to that lacks a call of its kind usual for the
// request's kind, each call and request in one pair at most, the pairs
// whose single move gains most first.
func (ls *local) usualMoves() [][2]int32 {
	r := ls.r
	type kk struct{ req, call int32 }
	nReq := map[int32]int{}
	holds := map[kk]int{}
	var seen []int32
	for i, p := range r.parentsOf[ls.n] {
		rk := r.calls[p].kind
		nReq[rk]++
		seen = seen[:0]
		for _, c := range ls.kids[i] {
			if k := r.calls[c].kind; !slices.Contains(seen, k) {
				seen = append(seen, k)
				holds[kk{rk, k}]++
			}
		}
	}
	usual := func(p int32, k int32) bool {
		h := holds[kk{r.calls[p].kind, k}]
		return h >= usualMinRequests && float64(h) >= usualShare*float64(nReq[r.calls[p].kind])
	}
	type cand struct {
		c, p int32
		gain float64
	}
	var cs []cand
	for _, c := range r.childrenOf[ls.n] {
		if r.parent[c] >= 0 || !ls.canMove(c) {
			continue
		}
		k := r.calls[c].kind
		for _, p := range ls.candsOf(c) {
			if !usual(p, k) || slices.ContainsFunc(ls.kidsOf(p), func(d int32) bool { return r.calls[d].kind == k }) {
				continue
			}
			s := ls.score(p, ls.with(&ls.buf, ls.kidsOf(p), c))
			if math.IsInf(s, -1) {
				continue
			}
			cs = append(cs, cand{c, p, s - ls.ps[r.parentPos[p]] - ls.bg(c)})
		}
	}
	slices.SortStableFunc(cs, func(a, b cand) int { return cmp.Compare(b.gain, a.gain) })
	usedC, usedP := map[int32]bool{}, map[int32]bool{}
	var out [][2]int32
	for _, x := range cs {
		if usedC[x.c] || usedP[x.p] {
			continue
		}
		usedC[x.c], usedP[x.p] = true, true
		out = append(out, [2]int32{x.c, x.p})
	}
	return out
}
