package assembly

import (
	"cmp"
	"math"
	"slices"
)

// The kind-pair matching: a global move for the calls of two to four
// kinds that follow each other, moved together.
//
// After the kind matching (kindmatch.go) the testbed's app at 64 in
// flight still has shifts that span two kinds: a request's memcached
// call and its DNS lookup both taken by the request next to its own,
// along a row of requests. A matching of one kind, the other held where
// it is, cannot undo them: with the lookups shifted, a memcached call
// fits best the request holding the lookup it follows, so each kind's
// matching keeps the other's shift. On the http/ids/sniffed run at 64 in
// flight 11 of the app's sets of wrong calls that must move together
// span two kinds or more (82 calls), and moving 10 of them to the truth
// gains under the engine's cross-fitted objective (TestDiagnoseMoveSets);
// most hold three kinds (a lookup, a memcached get, a redis call).
//
// The calls of such a set of kinds (two to four that follow each other)
// move as bundles: each request's movable calls of the set, in order of
// send, cut where a kind repeats (a request holding another's calls and
// then its own holds two bundles), and each movable call of the set left
// to background alone. The bundles are matched to the requests in one
// exact matching (lap.go), as the kind matching matches calls: the pair
// score of bundle B and request q is q's replay with B's calls in place
// of its own of the set (its other calls held), minus its replay without
// any; a bundle may go to none (its calls' background rates) and a
// request may take one bundle or none. A shift of two kinds moved
// together is a shift of bundles, which the matching undoes as the kind
// matching undoes a shift of one kind. Of the matching's moves only the
// sets that move together (bundles linked by a request one leaves and
// another enters) whose replays gain kindMatchMinGain nats per call they
// move are made: a matching's few long shifts undone are not lost to the
// many small moves it makes elsewhere for little. Each kind of the set
// is then matched alone (the kind matching: a call left to background,
// which no bundle of its request's other calls holds, goes to the
// request now holding them), and the assignment, refined by the local
// search, is kept where the node's whole objective (the FIFO evidence
// included) rises by kindMatchMinGain nats per call moved, the kind
// matching's discipline.
//
// The sets tried are those of two to four kinds whose calls follow each
// other (each the next movable call after the other in a request) in at
// least kindMatchMinCalls requests, every kind matchable
// (kindMatchable), the most frequent first, at most kindPairMax of them;
// after a round that kept a matching the sets are tried once more (a
// shift undone for one set lets another's bundles be cut right).

const (
	// kindPairMax is the most sets of kinds the kind-pair matching tries
	// at a node in a round (the testbed's app has 10).
	kindPairMax = 12
	// kindPairRounds is the most rounds of the kind-pair matching at a
	// node: a round after one that kept a matching tries the sets again,
	// from the assignment it left (the sets' bundles cut anew).
	kindPairRounds = 2
)

// kindPairCounts are the kind-pair matchings' counts at a node: sets of
// kinds tried, sets whose matching was kept, and calls it gave another
// request.
type kindPairCounts = trialCounts

// kindPairMatch tries the kind-pair matching of node n under model m (x:
// the cross-fitted models, if any) for the sets of kinds that follow
// each other (kindPairs), and keeps each where the node's objective rises
// by kindMatchMinGain per call moved; in kindPairRounds rounds at most,
// the next tried only when one kept a matching.
func (r *run) kindPairMatch(n int32, m *nodeModel, x *crossFit, cnt *kindPairCounts) {
	if r.singleCalls(n) {
		return // the single-call matching's (singles.go)
	}
	for round := 0; round < kindPairRounds; round++ {
		if !r.kindPairRound(n, m, x, cnt) {
			break
		}
	}
}

// kindPairRound tries the kind-pair matching of node n once for each set
// of kinds (kindPairs, taken from the current assignment) and reports
// whether it kept any.
func (r *run) kindPairRound(n int32, m *nodeModel, x *crossFit, cnt *kindPairCounts) bool {
	kids := r.childrenOf[n]
	kept := false
	ls := newLocal(r, n, m, x)
	for _, pr := range ls.kindPairs() {
		cnt.tried++
		base := ls.objective()
		before := r.parentsOfCalls(kids)
		if !ls.matchPair(pr) {
			continue
		}
		for _, k := range pr {
			if k >= 0 {
				if lk := newLocal(r, n, m, x); lk.kindMatchable(k) {
					lk.matchKind(k)
				}
			}
		}
		if r.keepIfGain(n, m, x, base, before, cnt) {
			kept = true
			ls = newLocal(r, n, m, x)
		}
	}
	return kept
}

// countKindPairMatches counts the kind-pair matchings, summed over the
// nodes: sets tried, sets whose matching was kept, and the calls the
// kept ones gave another request.
func (r *run) countKindPairMatches(count countFunc) {
	countTrials(count, r.kindPairs, "kind_pair_matchings", "kind_pair_matchings_kept", "kind_pair_calls_moved")
}

// movable reports whether the kind matchings may move call c.
func (ls *local) movable(c int32) bool {
	return ls.r.exact[c] < 0 && len(ls.candsOf(c)) > 0
}

// kindSetSize is the most kinds in a set the kind-pair matching moves
// together.
const kindSetSize = 4

// kindSet is a set of two to kindSetSize kinds, in increasing order, the
// missing ones -1 at the end.
type kindSet [kindSetSize]int32

// has reports whether kind k is in the set.
func (ks kindSet) has(k int32) bool { return k >= 0 && slices.Contains(ks[:], k) }

// newKindSet returns the set of kinds ks (two to kindSetSize, distinct).
func newKindSet(ks ...int32) kindSet {
	var out kindSet
	for i := range out {
		out[i] = -1
	}
	copy(out[:], ks)
	slices.Sort(out[:len(ks)])
	return out
}

// kindPairs returns the sets of kinds the kind-pair matching tries at
// the node: two to kindSetSize distinct kinds whose calls follow each
// other (each the next movable call after the other in a request) in at
// least kindMatchMinCalls requests, every kind matchable, the most
// frequent first (more kinds first at a tie), at most kindPairMax.
func (ls *local) kindPairs() []kindSet {
	r := ls.r
	count := map[kindSet]int{}
	var seq []int32
	for _, ks := range ls.kids {
		seq = seq[:0]
		for _, c := range ks {
			if ls.movable(c) {
				seq = append(seq, r.calls[c].kind)
			}
		}
		seen := map[kindSet]bool{}
		for i := range seq {
			// the runs of distinct kinds ending at i
			for j := i - 1; j >= 0 && i-j < kindSetSize && !slices.Contains(seq[j+1:i+1], seq[j]); j-- {
				seen[newKindSet(seq[j:i+1]...)] = true
			}
		}
		for k := range seen {
			count[k]++
		}
	}
	ok := map[int32]bool{}
	matchable := func(k int32) bool {
		v, seen := ok[k]
		if !seen {
			v = ls.kindMatchable(k)
			ok[k] = v
		}
		return v
	}
	var out []kindSet
	for ks, n := range count {
		if n >= kindMatchMinCalls && !slices.ContainsFunc(ks[:], func(k int32) bool { return k >= 0 && !matchable(k) }) {
			out = append(out, ks)
		}
	}
	slices.SortFunc(out, func(a, b kindSet) int {
		if c := cmp.Compare(count[b], count[a]); c != 0 {
			return c
		}
		for i := kindSetSize - 1; i >= 0; i-- {
			if c := cmp.Compare(b[i], a[i]); c != 0 {
				return c
			}
		}
		return 0
	})
	return out[:min(len(out), kindPairMax)]
}

// pairBundles returns the bundles of the kind-pair matching of the kinds
// of set: each request's movable calls of the set in order of send, cut
// where a kind repeats (but a request holding a call of the set exactly
// linked, whose calls stay), and each movable call of the set left to
// background alone; and the requests excluded.
func (ls *local) pairBundles(set kindSet) (bundles [][]int32, excluded map[int32]bool) {
	r := ls.r
	excluded = map[int32]bool{}
	for _, q := range r.parentsOf[ls.n] {
		for _, k := range set {
			if k >= 0 && ls.holdsExact(q, k) {
				excluded[q] = true
			}
		}
	}
	of := func(c int32) bool {
		return set.has(r.calls[c].kind) && ls.movable(c)
	}
	for i, q := range r.parentsOf[ls.n] {
		if excluded[q] {
			continue
		}
		var bd []int32
		for _, c := range ls.kids[i] {
			if !of(c) {
				continue
			}
			if slices.ContainsFunc(bd, func(e int32) bool { return r.calls[e].kind == r.calls[c].kind }) {
				bundles = append(bundles, bd)
				bd = nil
			}
			bd = append(bd, c)
		}
		if len(bd) > 0 {
			bundles = append(bundles, bd)
		}
	}
	for _, c := range r.childrenOf[ls.n] {
		if r.parent[c] < 0 && of(c) {
			bundles = append(bundles, []int32{c})
		}
	}
	return bundles, excluded
}

// bundleCands returns the requests that may take bundle bd: the
// candidates of all its calls, but the excluded.
func (ls *local) bundleCands(bd []int32, excluded map[int32]bool) []int32 {
	var out []int32
	for _, q := range ls.candsOf(bd[0]) {
		if excluded[q] {
			continue
		}
		all := true
		for _, c := range bd[1:] {
			if !ls.fitsIn(c, q) {
				all = false
				break
			}
		}
		if all {
			out = append(out, q)
		}
	}
	return out
}

// matchPair gives the bundles of the kinds of set (pairBundles) the
// requests of the best matching (see above), but the sets of moves that
// do not gain enough (bundleMoves), and reports whether it moved any.
func (ls *local) matchPair(set kindSet) bool {
	r := ls.r
	bundles, excluded := ls.pairBundles(set)
	if len(bundles) < 2 {
		return false
	}
	cands := make([][]int32, len(bundles))
	reqIx := map[int32]int32{}
	var reqs []int32
	for i, bd := range bundles {
		cands[i] = ls.bundleCands(bd, excluded)
		for _, q := range cands[i] {
			if _, ok := reqIx[q]; !ok {
				reqIx[q] = int32(len(reqs))
				reqs = append(reqs, q)
			}
		}
	}
	p := ls.bundleProblem(bundles, cands, reqs, reqIx)
	col4row, _, ok := solveLAP(p, chainBudget*p.n)
	if !ok {
		return false
	}
	nb := len(bundles)
	to := make([]int32, nb)
	for i := range to {
		to[i] = -1
	}
	for j, q := range reqs {
		if i := col4row[j]; i < int32(nb) {
			to[i] = q
		}
	}
	moves := ls.bundleMoves(bundles, to)
	for _, comp := range moves {
		for _, i := range comp {
			for _, c := range bundles[i] {
				r.parent[c] = to[i]
			}
		}
	}
	return len(moves) > 0
}

// bundleMoves returns the moves of the kind-pair matching worth making:
// the bundles (by index) that change request, bundle i to request to[i]
// (-1: none), in sets that move together (linked by a request one leaves
// and another enters), each set kept only where the replays of the
// requests it changes and the background rates gain kindMatchMinGain
// nats per call it moves (the FIFO evidence left to the whole
// objective's check): a matching's few long shifts undone are not lost
// to the many small moves it makes elsewhere for little gain.
func (ls *local) bundleMoves(bundles [][]int32, to []int32) [][]int {
	r := ls.r
	from := make([]int32, len(bundles))
	inProblem := map[int32]bool{}
	for i, bd := range bundles {
		from[i] = r.parent[bd[0]]
		for _, c := range bd {
			inProblem[c] = true
		}
	}
	comps := moveSets(from, to)
	into := map[int32]int{}
	for i, q := range to {
		if q >= 0 {
			into[q] = i
		}
	}
	var out [][]int
	var base, with []int32
	for _, comp := range comps {
		gain, moved := 0.0, 0
		for _, i := range comp {
			moved += len(bundles[i])
		}
		touched := map[int32]bool{}
		for _, i := range comp {
			for _, q := range []int32{from[i], to[i]} {
				if q < 0 || touched[q] {
					continue
				}
				touched[q] = true
				base = base[:0]
				for _, c := range ls.kidsOf(q) {
					if !inProblem[c] {
						base = append(base, c)
					}
				}
				with = append(with[:0], base...)
				if j, ok := into[q]; ok {
					with = append(with, bundles[j]...)
				}
				slices.SortStableFunc(with, func(x, y int32) int { return cmpTime(r.sendOf(x), r.sendOf(y)) })
				gain += ls.score(q, with) - ls.ps[r.parentPos[q]]
			}
			bg := 0.0
			for _, c := range bundles[i] {
				bg += ls.bg(c)
			}
			if from[i] < 0 {
				gain -= bg
			}
			if to[i] < 0 {
				gain += bg
			}
		}
		if gain > kindMatchMinGain*float64(moved)+improveEps {
			out = append(out, comp)
		}
	}
	return out
}

// bundleProblem is the assignment problem of the bundles to the requests
// reqs (cands: each bundle's requests), as kindProblem's (kindmatch.go)
// with a bundle for a call: a bundle's background is the sum of its
// calls', and its pair score with request q is q's replay with the
// bundle's calls in place of its own of the bundles' kinds.
func (ls *local) bundleProblem(bundles, cands [][]int32, reqs []int32, reqIx map[int32]int32) *lapProblem {
	nr, nb := len(reqs), len(bundles)
	p := &lapProblem{n: nr + nb, start: []int32{0}}
	add := func(col int32, w float64) {
		p.col = append(p.col, col)
		p.cost = append(p.cost, -max(w, -singleNever))
	}
	inProblem := map[int32]bool{}
	bgs := make([]float64, nb)
	byReq := make([][]int32, nr)
	for i, bd := range bundles {
		s := 0.0
		for _, c := range bd {
			s += ls.bg(c)
			inProblem[c] = true
		}
		bgs[i] = math.Round(s*1e6) / 1e6
		for _, q := range cands[i] {
			byReq[reqIx[q]] = append(byReq[reqIx[q]], int32(i))
		}
	}
	var base, with []int32
	for j, q := range reqs {
		base = base[:0]
		for _, c := range ls.kidsOf(q) {
			if !inProblem[c] {
				base = append(base, c)
			}
		}
		s0 := ls.score(q, base)
		for _, i := range byReq[j] {
			with = append(append(with[:0], base...), bundles[i]...)
			slices.SortStableFunc(with, func(x, y int32) int { return cmpTime(ls.r.sendOf(x), ls.r.sendOf(y)) })
			w := min(ls.score(q, with)-s0, singleNever)
			if !math.IsInf(w, -1) && w > bgs[i] {
				add(int32(i), w)
			}
		}
		add(int32(nb+j), 0)
		p.start = append(p.start, int32(len(p.col)))
	}
	for i := range bundles {
		add(int32(i), bgs[i])
		for _, q := range cands[i] {
			add(int32(nb)+reqIx[q], 0)
		}
		p.start = append(p.start, int32(len(p.col)))
	}
	return p
}

// moveSets groups the bundles that change request (bundle i from
// request from[i] to to[i], -1 none) into the sets that move together:
// bundles linked by a request one leaves and another enters. The sets
// are in order of their first bundle.
func moveSets(from, to []int32) [][]int {
	up := make([]int, len(from))
	for i := range up {
		up[i] = i
	}
	var find func(i int) int
	find = func(i int) int {
		if up[i] != i {
			up[i] = find(up[i])
		}
		return up[i]
	}
	byReq := map[int32]int{}
	link := func(q int32, i int) {
		if q < 0 {
			return
		}
		if j, ok := byReq[q]; ok {
			up[find(i)] = find(j)
		} else {
			byReq[q] = i
		}
	}
	for i := range from {
		if from[i] != to[i] {
			link(from[i], i)
			link(to[i], i)
		}
	}
	at := map[int]int{}
	var out [][]int
	for i := range from {
		if from[i] == to[i] {
			continue
		}
		k := find(i)
		j, ok := at[k]
		if !ok {
			j = len(out)
			at[k] = j
			out = append(out, nil)
		}
		out[j] = append(out[j], i)
	}
	return out
}
