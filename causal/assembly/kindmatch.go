package assembly

import (
	"math"
	"slices"
)

// The kind matching: a global move for the calls of one kind.
//
// At high concurrency the beam loses the calls of a kind that every
// request makes once (the testbed app's DNS lookups, one per /search
// request) in long shifts: a lookup taken by the request next to its
// own, whose lookup goes to the next, and so on, the first of the row
// from background and the last to it. On the testbed's
// http/ids/sniffed run at 64 in flight 130 of the app's 281 wrong calls
// not exactly linked are in 14 such sets of five calls or more, and moving each set to the
// truth at once gains under the engine's own cross-fitted objective for
// 13 of them, while no move of the local search (one call, a swap of
// two, the tails of two requests) can (TestDiagnoseMoveSets). The local
// search's moves also only reach a call's alternatives, which the beam
// pruned for the requests those shifts went wrong at.
//
// With the node's other calls where they are, and each request holding
// at most one call of kind k that is not exactly linked, giving the
// node's calls of kind k to its requests is a bipartite matching whose
// pair scores are exact: request q's replay with call c among its other
// calls (the delay of c from q's previous event, q's next call's delay
// from c's reply, the call graph with c in its place, q's reply), minus
// its replay without any call of k; a call may go to none (the
// background rate) and a request may get none. The matching is solved
// exactly (lap.go) for each kind in turn, and the assignment it gives,
// refined by the local search, is kept where the node's whole objective
// (local.objective, the FIFO evidence included, which the matching's
// pairs leave out) is higher than before by at least kindMatchMinGain
// nats per call it moved. A matching that moves many calls for a small
// gain is an optimum of the model, not more often right: on the unseen
// event loop at 16 in flight one moved 37 calls for 9.6 nats and 13 more
// requests were wrong, on the fan-out at 64 one moved 522 for 71.4 and
// 10 more were wrong, while the testbed's matchings gained 0.7 to 4.8
// nats per call moved, but for two at tier2 (grpc/opaque/preload at 16
// in flight, 0.44 and 0.18). A node whose requests make one call each
// (singleCalls) is left to the single-call matching (singles.go), whose
// pairs weigh the FIFO evidence in context: there the kind matching
// took the unseen event loop at 64 in flight from 128 requests right to
// 104. The calls' confidences are then those of their requests
// in the search's posterior (posterior.go), as for any call the local
// search moves.

const (
	// kindMatchMinCalls is the fewest movable calls of a kind the
	// kind matching is tried with.
	kindMatchMinCalls = 8
	// kindMatchMaxMulti is the largest share of the requests holding a
	// call of the kind that may hold more than one for the kind to be
	// matched (one call of the kind per request).
	kindMatchMaxMulti = 0.05
	// kindMatchMinGain is the least gain of the node's objective, in nats
	// per call moved, for a matching to be kept.
	kindMatchMinGain = 0.5
)

// kindMatchCounts are the kind matchings' counts at a node: kinds tried,
// kinds whose matching was kept, and calls it gave another request.
type kindMatchCounts = trialCounts

// kindMatch tries the kind matching of node n under model m (x: the
// cross-fitted models, if any) for each kind of call the node makes,
// and keeps each where the node's objective rises by kindMatchMinGain
// per call moved.
func (r *run) kindMatch(n int32, m *nodeModel, x *crossFit, cnt *kindMatchCounts) {
	if r.singleCalls(n) {
		return // the single-call matching's (singles.go)
	}
	kids := r.childrenOf[n]
	var kinds []int32
	for _, c := range kids {
		if r.exact[c] < 0 && !slices.Contains(kinds, r.calls[c].kind) {
			kinds = append(kinds, r.calls[c].kind)
		}
	}
	for _, k := range kinds {
		ls := newLocal(r, n, m, x)
		if !ls.kindMatchable(k) {
			continue
		}
		cnt.tried++
		base := ls.objective()
		before := r.parentsOfCalls(kids)
		if !ls.matchKind(k) {
			continue
		}
		r.keepIfGain(n, m, x, base, before, cnt)
	}
}

// keepIfGain refines node n's assignment by the local search (under model
// m, x: the cross-fitted models, if any) and keeps it where the node's
// objective rises above base by kindMatchMinGain per call moved from
// before (its calls' parents, in childrenOf's order); otherwise it puts
// before back. It counts what it kept in cnt and reports whether it kept.
func (r *run) keepIfGain(n int32, m *nodeModel, x *crossFit, base float64, before []int32, cnt *trialCounts) bool {
	kids := r.childrenOf[n]
	after := newLocal(r, n, m, x)
	after.sweepAll(20)
	moved := 0
	for i, c := range kids {
		if r.parent[c] != before[i] {
			moved++
		}
	}
	if after.objective() <= base+kindMatchMinGain*float64(moved)+improveEps {
		r.setParentsOfCalls(kids, before)
		return false
	}
	cnt.kept++
	cnt.changed += int64(moved)
	return true
}

// countKindMatches counts the kind matchings, summed over the nodes:
// kinds tried, kinds whose matching was kept, and the calls the kept ones
// gave another request.
func (r *run) countKindMatches(count countFunc) {
	countTrials(count, r.kindMatches, "kind_matchings", "kind_matchings_kept", "kind_matching_calls_moved")
}

// kindMatchable reports whether kind k's calls at the node are worth
// matching: at least kindMatchMinCalls of them movable, and requests
// making one call of the kind each (oneKindPerRequest).
func (ls *local) kindMatchable(k int32) bool {
	r := ls.r
	movable := 0
	for _, c := range r.childrenOf[ls.n] {
		if r.calls[c].kind == k && r.exact[c] < 0 && len(ls.candsOf(c)) > 0 {
			movable++
		}
	}
	if movable < kindMatchMinCalls {
		return false
	}
	return ls.oneKindPerRequest(k)
}

// matchKind gives the node's movable calls of kind k the requests of the
// best matching (see above) and reports whether it found one.
func (ls *local) matchKind(k int32) bool {
	r := ls.r
	var calls []int32
	for _, c := range r.childrenOf[ls.n] {
		if r.calls[c].kind == k && r.exact[c] < 0 && len(ls.candsOf(c)) > 0 {
			calls = append(calls, c)
		}
	}
	// the requests: every candidate of a call, but those holding a call
	// of k exactly linked (their one call of k is taken)
	reqIx := map[int32]int32{}
	var reqs []int32
	for _, c := range calls {
		for _, q := range ls.candsOf(c) {
			if _, ok := reqIx[q]; !ok && !ls.holdsExact(q, k) {
				reqIx[q] = int32(len(reqs))
				reqs = append(reqs, q)
			}
		}
	}
	p := ls.kindProblem(k, calls, reqs, reqIx)
	col4row, _, ok := solveLAP(p, chainBudget*p.n)
	if !ok {
		return false
	}
	nr, nc := len(reqs), len(calls)
	for i, c := range calls {
		if col4row[nr+i] == int32(i) {
			r.parent[c] = -1
		}
	}
	for j, q := range reqs {
		if i := col4row[j]; i < int32(nc) {
			r.parent[calls[i]] = q
		}
	}
	return true
}

// holdsExact reports whether request q holds a call of kind k exactly
// linked to it.
func (ls *local) holdsExact(q, k int32) bool {
	for _, c := range ls.kidsOf(q) {
		if ls.r.calls[c].kind == k && ls.r.exact[c] >= 0 {
			return true
		}
	}
	return false
}

// kindProblem is the assignment problem of the calls of kind k to the
// requests reqs, as singleProblem's (singles.go): rows are the requests
// (taking a call, or their own column of none) and then the calls
// (taking their own column, background, or the none column of a
// candidate request, freed when that request took a call). A pair is
// listed only where it scores above the call's background rate: below
// it, the call to none and the request without it score higher.
func (ls *local) kindProblem(k int32, calls, reqs []int32, reqIx map[int32]int32) *lapProblem {
	nr, nc := len(reqs), len(calls)
	p := &lapProblem{n: nr + nc, start: []int32{0}}
	add := func(col int32, w float64) {
		p.col = append(p.col, col)
		p.cost = append(p.cost, -max(w, -singleNever))
	}
	bgs := make([]float64, nc)
	callIx := make(map[int32]int32, nc)
	for i, c := range calls {
		bgs[i] = math.Round(ls.bg(c)*1e6) / 1e6
		callIx[c] = int32(i)
	}
	byReq := make([][]int32, nr)
	for i, c := range calls {
		for _, q := range ls.candsOf(c) {
			if j, ok := reqIx[q]; ok {
				byReq[j] = append(byReq[j], int32(i))
			}
		}
	}
	var base, with []int32
	for j, q := range reqs {
		base = base[:0]
		for _, c := range ls.kidsOf(q) {
			if _, ok := callIx[c]; !ok {
				base = append(base, c)
			}
		}
		s0 := ls.score(q, base) - ls.force[q] // force: usualcall.go
		for _, i := range byReq[j] {
			w := min(ls.score(q, ls.with(&with, base, calls[i]))-s0, singleNever)
			if !math.IsInf(w, -1) && w > bgs[i] {
				add(i, w)
			}
		}
		add(int32(nc+j), 0)
		p.start = append(p.start, int32(len(p.col)))
	}
	for i, c := range calls {
		add(int32(i), bgs[i])
		for _, q := range ls.candsOf(c) {
			if j, ok := reqIx[q]; ok {
				add(int32(nc)+j, 0)
			}
		}
		p.start = append(p.start, int32(len(p.col)))
	}
	return p
}
