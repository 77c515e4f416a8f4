package assembly

import (
	"cmp"
	"math"
	"slices"
)

// Chain matching: a global search for sequential nodes.
//
// A node whose requests make their calls one at a time (a threaded
// server, one thread per request: a cache read, then another, then the
// next tier) serves each request as a chain of events at the node:
//
//	arrival → call 1 sent … call 1's reply back → call 2 sent … → reply
//
// Calls are paired CALL with RETURN, so an assignment of the node's
// calls to its requests is the same thing as choosing, for every
// predecessor event (a request's arrival or a call's reply coming back),
// its successor (the same request's next call sent, or its reply), one
// to one. That is a bipartite assignment problem: rows are predecessors,
// columns successors, and a perfect matching in which every successor
// comes after its predecessor is a set of chains, one from each arrival
// to a reply. A call that no request made closes on itself (its reply's
// row takes its own send's column) at the model's background rate.
//
// The weight of a pair is the search's own link score (search.linkScore;
// search.endScore for a reply) of the successor in the state the
// predecessor leaves its request in: the delay from the predecessor, the
// call graph's transition from the predecessor's kind and reply class,
// the size relations, the tokens shared with the predecessor's call and
// reply. What a pair cannot know is which request the chain belongs to
// beyond its first link, so the request's kind, arrival, position and
// the kinds it made so far are those of the predecessor's request in the
// current assignment (a reply's own request, for the link to a reply). Pairs are restricted to successors after their
// predecessor that can share a request with it (their candidate requests
// intersect), the chainScan nearest of them, the chainKeep best kept.
//
// The matching is solved exactly (lap.go) for the whole node, so the
// evidence that tells two interleaved requests apart (which reply comes
// right after which call's return, many events later) is weighed jointly
// with everything else, where the beam had to drop the true assignment
// before that evidence arrived. But the pairwise links match each layer
// of the chains (arrival to first call, a reply to the next call, the
// last reply to the request's reply) on its own: a chain read from an
// arrival may end at another request's reply (it crossed another chain
// somewhere). Such a chain is cut at its weakest link, the calls before
// going to the request it started from, those after to the one it ended
// at; the link cut is made chainPenalty nats dearer and the matching
// solved again, chainPenalties times, which halves the crossings (on the
// testbed's app at 64 in flight, 331 of 860 chains to 219), and the
// tails of each crossing's two requests are exchanged where that
// improves.
//
// The result is only a candidate: refined by the local search, the
// node's whole objective (the local search's: replays, background and
// FIFO evidence, with the cross-fitted models) is computed for it and for
// the current assignment, and it replaces the current one only when it
// scores higher. The objective can only improve. Up to chainRounds
// rounds are run, each in the context of the last kept candidate; a node
// where the candidate lost is not tried again in later passes.

const (
	// chainMaxOverlap is the share of calls sent while another call of
	// their request was outstanding below which a node is taken to make
	// its calls one at a time.
	chainMaxOverlap = 0.2
	// chainMinCalls is the mean number of calls per request from which a
	// node's requests are chains worth matching: where a request makes one
	// call (a backend's query), the matching only pairs arrivals and
	// replies with calls, which the beam does as well, and a candidate
	// kept in the first pass moved EM elsewhere (on the testbed's gRPC
	// backends at 64 in flight, 4.6 points of requests lost).
	chainMinCalls = 1.5
	// chainScan is how many successors, in time order, are looked at
	// after each predecessor; chainKeep is how many of the best are kept.
	chainScan = 128
	chainKeep = 24
	// chainRounds bounds the rounds of matching: each after the first
	// takes its context (a link's request beyond the chain's first) from
	// the last round's refined candidate, and rounds stop when one does
	// not improve the objective.
	chainRounds = 3
	// chainPenalties is how many times the matching is solved again with
	// the links its crossed chains were cut at made chainPenalty nats
	// dearer (more times or dearer links: fewer crossings, no better
	// candidates on the testbed)
	chainPenalties = 2
	chainPenalty   = 1.0
	// chainBudget bounds the solver's work, in heap pops per row.
	chainBudget = 2000
)

// chainCounts count the chain matchings of a node, over its passes.
type chainCounts struct {
	tried, kept, failed int64
	crossings           int64
	// changed is how many calls the kept matchings gave another
	// request than the beam had
	changed int64
}

// sumChainCounts returns the counts of the nodes' matchings cs added up.
func sumChainCounts(cs []chainCounts) chainCounts {
	var s chainCounts
	for _, c := range cs {
		s.tried += c.tried
		s.kept += c.kept
		s.failed += c.failed
		s.crossings += c.crossings
		s.changed += c.changed
	}
	return s
}

// sequential reports whether node n's requests make their calls one at
// a time in its current assignment: of the calls sent by requests that
// made more than one, fewer than chainMaxOverlap left while another of
// the request's calls was outstanding (what the model's overlap
// probability, nodemodel.go, learns; measured here so that the first
// pass, whose model was not fitted on an assignment, can be judged).
func (r *run) sequential(n int32) bool {
	by := map[int32][]int32{}
	for _, c := range r.childrenOf[n] {
		if p := r.parent[c]; p >= 0 && r.twoWay(c) {
			by[p] = append(by[p], c)
		}
	}
	busy, all := r.overlapCounts(by)
	calls := 0
	for _, c := range r.childrenOf[n] {
		if r.parent[c] >= 0 {
			calls++
		}
	}
	return all >= 10 && float64(busy) < chainMaxOverlap*float64(all) && float64(calls) >= chainMinCalls*float64(len(r.parentsOf[n]))
}

// overlapCounts counts, over the requests of byParent (calls by request)
// that made more than one two-way call, those calls (all) and the ones
// sent while another call of their request was outstanding (busy); each
// request's calls are put in order of send.
func (r *run) overlapCounts(byParent map[int32][]int32) (busy, all int) {
	for _, ks := range byParent {
		if len(ks) < 2 {
			continue
		}
		slices.SortStableFunc(ks, func(a, b int32) int { return cmpTime(r.sendOf(a), r.sendOf(b)) })
		out := int64(math.MinInt64)
		for _, k := range ks {
			if !r.twoWay(k) {
				continue
			}
			if r.calls[k].send < out {
				busy++
			}
			out = max(out, r.calls[k].back)
			all++
		}
	}
	return busy, all
}

// chainNode is the matching problem of one node.
type chainNode struct {
	r     *run
	s     *search
	x     *crossFit
	reqs  []int32 // requests in the matching (arrival and reply seen)
	calls []int32 // calls in the matching (send and reply seen), by send
	// reqAt, callAt: by position at the node (run.parentPos, childPos),
	// 1 + the index of a request in reqs and of a call in calls, 0 when
	// not in the matching (reqIx, callIx)
	reqAt, callAt []int32
	cands         [][]int32         // by index in calls: candidate requests
	kids          map[int32][]int32 // the beam's calls of each request, by send
	succ          []chainSucc       // the successors, by time
}

// chainSucc is one successor event: a call's send (call ≥ 0) or a
// request's reply (req ≥ 0), at time t.
type chainSucc struct {
	t         int64
	call, req int32
}

// parentsOfCalls returns the current request of each of calls, in order
// (a snapshot to restore or compare an assignment with).
func (r *run) parentsOfCalls(calls []int32) []int32 {
	ps := make([]int32, len(calls))
	for i, c := range calls {
		ps[i] = r.parent[c]
	}
	return ps
}

// setParentsOfCalls gives each of calls its request in ps (what
// parentsOfCalls returned).
func (r *run) setParentsOfCalls(calls, ps []int32) {
	for i, c := range calls {
		r.parent[c] = ps[i]
	}
}

// chainMatch tries the chain matching on node n after a pass's search
// and local search, with model m (x: the cross-fitted models, if any).
// The candidate is refined by the local search, first by exchanging the
// tails of the two requests each crossing joined, and replaces the
// current assignment only where the node's whole objective is higher.
func (r *run) chainMatch(n int32, m *nodeModel, x *crossFit, cnt *chainCounts) {
	if cnt.tried > cnt.kept || !r.sequential(n) {
		return // a node where the matching lost once keeps its search's answers
	}
	cnt.tried++
	kids := r.childrenOf[n]
	before := r.parentsOfCalls(kids)
	base := newLocal(r, n, m, x).objective()
	best, bestAsg, crossings := base, []int32(nil), 0
	for range chainRounds {
		after, crossed, ok := r.chainRound(n, m, x)
		if !ok {
			cnt.failed++
			break
		}
		if after <= best+improveEps {
			break
		}
		best, crossings = after, crossed
		bestAsg = bestAsg[:0]
		for _, c := range kids {
			bestAsg = append(bestAsg, r.parent[c])
		}
	}
	if bestAsg == nil {
		r.setParentsOfCalls(kids, before)
		return
	}
	cnt.kept++
	cnt.crossings += int64(crossings)
	for i, c := range kids {
		r.parent[c] = bestAsg[i]
		if bestAsg[i] != before[i] {
			cnt.changed++
		}
	}
}

// chainRound solves the chain matching of node n in the context of its
// current assignment, puts its candidate in place, refined, and returns
// its objective and how many of its chains crossed; false when the
// solver gave up.
func (r *run) chainRound(n int32, m *nodeModel, x *crossFit) (objective float64, crossings int, ok bool) {
	cn := r.newChainNode(n, m, x)
	p := cn.problem()
	var cand []int32
	var crossed []crossing
	for it := 0; ; it++ {
		col4row, _, ok := solveLAP(p, chainBudget*p.n)
		if !ok {
			return 0, 0, false
		}
		cand, crossed = cn.decode(p, col4row)
		if it == chainPenalties || len(crossed) == 0 {
			break
		}
		for _, cr := range crossed {
			penalize(p, cr.row, col4row[cr.row], chainPenalty)
		}
	}
	if r.onChains != nil {
		r.onChains(n, cn.calls, cand, len(crossed))
	}
	for i, c := range cn.calls {
		r.parent[c] = cand[i]
	}
	ls := newLocal(r, n, m, x)
	ls.toPicked = true
	for _, cr := range crossed {
		for _, t := range cr.at {
			if ls.tailSwap(cr.q, cr.e, t) {
				break
			}
		}
	}
	ls.sweepAll(20)
	return ls.objective(), len(crossed), true
}

// objective is the node's whole objective under the local search's
// current assignment: every request's replay, every call left to no
// request at the background rate, and the FIFO evidence.
func (ls *local) objective() float64 {
	r := ls.r
	total := 0.0
	for _, v := range ls.ps {
		total += v
	}
	for _, c := range r.childrenOf[ls.n] {
		if r.parent[c] < 0 {
			total += ls.bg(c)
		}
	}
	if ls.fifoSpread() > 0 {
		all := make([]int, len(ls.order))
		for i := range all {
			all[i] = i
		}
		total += ls.fifo(all)
	}
	return total
}

// crossing is a chain from request q's arrival to request e's reply,
// with the sends of its calls.
type crossing struct {
	q, e int32
	at   []int64
	row  int32 // the row of the link cut
}

// penalize adds pen to the cost of row i taking column j.
func penalize(p *lapProblem, i, j int32, pen float64) {
	for e := p.start[i]; e < p.start[i+1]; e++ {
		if p.col[e] == j {
			p.cost[e] += pen
		}
	}
}

// twoWay reports whether call c's send and reply were both seen.
func (r *run) twoWay(c int32) bool {
	cc := &r.calls[c]
	return cc.callMsg >= 0 && cc.retMsg >= 0 && cc.flags&flagOneWay == 0
}

func (r *run) newChainNode(n int32, m *nodeModel, x *crossFit) *chainNode {
	cn := &chainNode{r: r, s: &search{r: r, m: m}, x: x, kids: map[int32][]int32{},
		reqAt: make([]int32, len(r.parentsOf[n])), callAt: make([]int32, len(r.childrenOf[n]))}
	for _, p := range r.parentsOf[n] {
		if r.twoWay(p) {
			cn.reqs = append(cn.reqs, p)
			cn.reqAt[r.parentPos[p]] = int32(len(cn.reqs))
		}
	}
	r.sweep(n, func(c int32, cands []int32) {
		// a call whose request is outside the matching stays where it is
		if !r.twoWay(c) {
			return
		}
		if p := r.parent[c]; p >= 0 {
			if !cn.inMatching(p) {
				return
			}
		}
		var in []int32
		for _, q := range cands {
			if cn.inMatching(q) {
				in = append(in, q)
			}
		}
		cn.calls = append(cn.calls, c)
		cn.callAt[r.childPos[c]] = int32(len(cn.calls))
		cn.cands = append(cn.cands, in)
	})
	for _, c := range r.childrenOf[n] {
		if p := r.parent[c]; p >= 0 {
			cn.kids[p] = append(cn.kids[p], c)
		}
	}
	for _, ks := range cn.kids {
		slices.SortStableFunc(ks, func(a, b int32) int { return cmpTime(r.sendOf(a), r.sendOf(b)) })
	}
	for _, c := range cn.calls {
		cn.succ = append(cn.succ, chainSucc{r.calls[c].send, c, -1})
	}
	for _, p := range cn.reqs {
		cn.succ = append(cn.succ, chainSucc{r.calls[p].rep, -1, p})
	}
	slices.SortStableFunc(cn.succ, func(a, b chainSucc) int { return cmpTime(a.t, b.t) })
	return cn
}

// inMatching reports whether request p of the node is in the matching.
func (cn *chainNode) inMatching(p int32) bool { return cn.reqAt[cn.r.parentPos[p]] > 0 }

// reqIx returns request p's index in reqs (0 when p is not in the
// matching).
func (cn *chainNode) reqIx(p int32) int32 { return max(0, cn.reqAt[cn.r.parentPos[p]]-1) }

// callIx returns call c's index in calls (0 when c is not in the
// matching).
func (cn *chainNode) callIx(c int32) int32 { return max(0, cn.callAt[cn.r.childPos[c]]-1) }

// model returns the model that scores request p (the local search's
// choice: the one not fitted on p's block).
func (cn *chainNode) model(p int32) *nodeModel {
	if cn.x == nil {
		return cn.s.m
	}
	return cn.x.scoring(cn.r.arrOf(p))
}

// callModel returns the model that scores call c as background (the
// local search's choice: the one not fitted on the block c was sent in).
func (cn *chainNode) callModel(c int32) *nodeModel {
	if cn.x == nil {
		return cn.s.m
	}
	return cn.x.scoring(cn.r.sendOf(c))
}

// after returns the state request p is in right after call k's reply
// came back, taking p's earlier calls from the beam's assignment.
func (cn *chainNode) after(p, k int32) slot {
	r := cn.r
	kc := &r.calls[k]
	sl := slot{p: p, lastKid: k, lastRet: k, prev: kc.kind, last: kc.back, ret: retClass(kc.repBytes)}
	sl.pos, sl.kinds = 1, kindBit(kc.kind)
	for _, e := range cn.kids[p] {
		if e != k && r.sendOf(e) < r.sendOf(k) {
			sl.pos = min(sl.pos+1, math.MaxUint8)
			sl.kinds |= kindBit(r.calls[e].kind)
		}
	}
	return sl
}

// start returns the state of request p when it arrived.
func (cn *chainNode) start(p int32) slot {
	return slot{p: p, lastKid: -1, lastRet: -1, prev: noKind, last: cn.r.calls[p].arr}
}

// weight is the log likelihood of successor f in state sl (-Inf when it
// cannot follow).
//
// Weights are rounded to a millionth of a nat: the models' sums over
// maps differ in their last bits from run to run, and where two
// matchings tie, such a difference chose between them, and EM took the
// difference on to other assignments.
func (cn *chainNode) weight(sl *slot, f chainSucc) float64 {
	cn.s.m = cn.model(sl.p)
	var w float64
	if f.req >= 0 {
		w = cn.s.endScore(sl)
	} else {
		w = cn.s.linkScore(f.call, sl)
	}
	return math.Round(w*1e6) / 1e6
}

// problem builds the matching's rows (the requests' arrivals, then the
// calls' replies) and columns (the calls' sends, then the requests'
// replies) with costs the negated weights.
func (cn *chainNode) problem() *lapProblem {
	nr, nc := len(cn.reqs), len(cn.calls)
	p := &lapProblem{n: nr + nc, start: []int32{0}}
	type edge struct {
		j int32
		w float64
	}
	var es []edge
	colOf := func(f chainSucc) int32 {
		if f.req >= 0 {
			return int32(nc) + cn.reqIx(f.req)
		}
		return cn.callIx(f.call)
	}
	emit := func(must edge) {
		slices.SortFunc(es, func(a, b edge) int { return cmp.Compare(b.w, a.w) })
		if len(es) > chainKeep {
			es = es[:chainKeep]
		}
		if !slices.ContainsFunc(es, func(e edge) bool { return e.j == must.j }) && !math.IsInf(must.w, -1) {
			es = append(es, must)
		}
		for _, e := range es {
			p.col = append(p.col, e.j)
			p.cost = append(p.cost, -e.w)
		}
		p.start = append(p.start, int32(len(p.col)))
		es = es[:0]
	}
	for _, q := range cn.reqs {
		sl := cn.start(q)
		own := edge{int32(nc) + cn.reqIx(q), math.Inf(-1)}
		cn.scan(cn.r.calls[q].arr, func(f chainSucc) {
			switch {
			case f.req == q:
			case f.call >= 0 && slices.Contains(cn.cands[cn.callIx(f.call)], q):
				if w := cn.weight(&sl, f); !math.IsInf(w, -1) {
					es = append(es, edge{colOf(f), w})
				}
			}
		})
		// the request's own reply, whatever its distance: a reply must be
		// reachable
		if own.w = cn.weight(&sl, chainSucc{req: q, call: -1}); math.IsInf(own.w, -1) {
			own.w = -1e6
		}
		emit(own)
	}
	for i, k := range cn.calls {
		kc := cn.r.calls[k]
		self := edge{int32(i), math.Round(cn.callModel(k).logBackgroundOf(k, kc.kind)*1e6) / 1e6}
		if cn.r.exact[k] >= 0 {
			self.w = -1e6 // an exact link is never background
		}
		cn.scan(kc.back, func(f chainSucc) {
			w := math.Inf(-1)
			switch {
			case f.req >= 0:
				if slices.Contains(cn.cands[i], f.req) {
					sl := cn.after(f.req, k)
					w = cn.weight(&sl, f)
				}
			case len(cn.cands[i]) > 0 && cn.r.sendOf(f.call) > cn.r.sendOf(k) && intersects(cn.cands[i], cn.cands[cn.callIx(f.call)]):
				q := cn.r.parent[k]
				if q < 0 || !slices.Contains(cn.cands[i], q) {
					q = cn.cands[i][0]
				}
				sl := cn.after(q, k)
				w = cn.weight(&sl, f)
			}
			if !math.IsInf(w, -1) {
				es = append(es, edge{colOf(f), w})
			}
		})
		emit(self)
	}
	return p
}

// scan calls fn for the first chainScan successors at or after t.
func (cn *chainNode) scan(t int64, fn func(f chainSucc)) {
	i, _ := slices.BinarySearchFunc(cn.succ, t, func(s chainSucc, t int64) int { return cmpTime(s.t, t) })
	for end := min(i+chainScan, len(cn.succ)); i < end; i++ {
		fn(cn.succ[i])
	}
}

// decode reads the chains of a matching of problem p: each call's
// request (-1: none), by index in cn.calls, and the chains that ended at
// another request's reply. A chain from request q's arrival to request
// e's reply (a crossing: the matching switched from one request's calls
// to another's somewhere) is cut at its weakest link among those where
// the calls before fit q and the calls after fit e: the calls before go
// to q, those after to e.
func (cn *chainNode) decode(p *lapProblem, col4row []int32) (asg []int32, crossed []crossing) {
	r := cn.r
	nr, nc := len(cn.reqs), len(cn.calls)
	asg = make([]int32, nc)
	for i, c := range cn.calls {
		asg[i] = r.parent[c] // a call no chain reaches stays
		if col4row[nr+i] == int32(i) {
			asg[i] = -1
		}
	}
	var chain []int32
	for qi, q := range cn.reqs {
		chain = chain[:0]
		j := col4row[qi]
		for j < int32(nc) && len(chain) <= nc {
			chain = append(chain, j)
			j = col4row[int32(nr)+j]
		}
		end := cn.reqs[j-int32(nc)]
		cut := len(chain)
		if end != q {
			cut = cn.cut(p, col4row, int32(qi), chain, q, end)
			row := int32(qi)
			if cut > 0 {
				row = int32(nr) + chain[cut-1]
			}
			cr := crossing{q: q, e: end, row: row}
			for _, ci := range chain {
				cr.at = append(cr.at, r.sendOf(cn.calls[ci]))
			}
			crossed = append(crossed, cr)
		}
		for k, ci := range chain {
			c := cn.calls[ci]
			first, second := q, end
			if k >= cut {
				first, second = end, q
			}
			switch {
			case r.exact[c] >= 0:
				asg[ci] = r.exact[c]
			case slices.Contains(cn.cands[ci], first):
				asg[ci] = first
			case slices.Contains(cn.cands[ci], second):
				asg[ci] = second
			}
		}
	}
	return asg, crossed
}

// cut returns where to cut the chain (call indices) from request q's
// arrival (row qi) to request e's reply: the calls before the cut fit q,
// those after fit e, and the link cut is the one of least weight; the
// chain's length when no cut fits both.
func (cn *chainNode) cut(p *lapProblem, col4row []int32, qi int32, chain []int32, q, e int32) int {
	best, bestCost := len(chain), math.Inf(-1)
	for s := 0; s <= len(chain); s++ {
		ok := true
		for k, ci := range chain {
			want := q
			if k >= s {
				want = e
			}
			if !slices.Contains(cn.cands[ci], want) {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		row := qi // the link into chain[s]: from q's arrival, or from chain[s-1]'s reply
		if s > 0 {
			row = int32(len(cn.reqs)) + chain[s-1]
		}
		if c := linkCost(p, row, col4row[row]); c > bestCost {
			best, bestCost = s, c
		}
	}
	return best
}

// intersects reports whether two lists of requests in order of arrival
// share one.
func intersects(a, b []int32) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}
