package assembly

import (
	"cmp"
	"math"
	"slices"
)

// Single-call matching: a global search for nodes whose requests make
// one call each.
//
// A proxy in front of a pool (a web tier forwarding each request over a
// pool of connections to an application server) makes one call per
// request, and when the pool is saturated each call leaves as soon as a
// connection is freed, whatever request it carries: at the send every
// waiting request scores alike. What tells them apart comes later: the
// proxy replies right after its call's reply, tens of milliseconds and
// dozens of sends on. The beam has to decide each call at its send and
// keeps only a few orders of the waiting requests, so a request given
// the wrong call early shifts the calls of every request after it by
// one, and no later reply can bring the order back (on the generated
// worker pool at 64 in flight, 990 of the proxy's 1,000 calls went to
// the request next to theirs, although under the model fitted on the
// truth the truth is 9,100 nats likelier than that answer).
//
// With one call per request the whole assignment is a bipartite
// matching between requests and calls, and each pair's score is all of
// the request's replay: the call as the request's first (its delay from
// the arrival or from the connection's handoff, the call graph, the
// sizes, the shared tokens: search.linkScore) and the request's reply
// after that call's (search.endScore). A request may make no call (its
// reply after its arrival alone) and a call may belong to no request (at
// the model's background rate). The matching is solved exactly (lap.go)
// for the whole node. The FIFO evidence depends on the other requests'
// calls, so a pair holds it in the context of the current assignment
// (fifoInContext: the request's rank among the older candidates with no
// call sent yet); the candidate is refined by the local search and kept,
// as the chain matching's (chains.go), only where the node's whole
// objective, FIFO included, is higher than the current assignment's. It
// is tried again in every pass, also where it lost before: a candidate
// that lost under one pass's model can win under the next, and the last
// pass's is the one that counts (kept at the in-flight web tier at 64 in
// flight in 3 of 4 passes, the last among them).

const (
	// singleMaxMulti bounds, as a share of a node's requests, how many
	// more calls than requests it may make (calls made by no request)
	// and how many of its requests the current assignment may give more
	// than one call, for its requests to be taken to make one call each.
	singleMaxMulti = 0.05
	// singleMinCalls is, as a share of a node's requests, the fewest
	// calls it must make and the fewest of its requests the current
	// assignment must give exactly one, for the matching to be worth
	// trying.
	singleMinCalls = 0.5
	// singleMinHanded is the share of a node's calls handed a pooled
	// connection from which its pool is taken to be saturated and its
	// sends not to tell its requests apart (the unseen shapes' proxies
	// and gateways at 64 in flight: 96 to 99 %; the in-flight sweep's
	// web tier 99 %). Below it the beam decides well at the sends: on
	// the testbed's backends at 64 in flight (46 to 82 % handed, learnt
	// FIFO ratios sharper than the truth's) the matching cost up to 2.9
	// points of requests.
	singleMinHanded = 0.9
	// singleMinRequests is the fewest requests a node is matched with.
	singleMinRequests = 10
	// singleNever is the cost of a pair that must not be taken (an exact
	// call as background, a request's reply it cannot follow), finite so
	// that a perfect matching always exists.
	singleNever = 1e6
)

// singleCalls reports whether node n's requests make one call each and
// its sends cannot tell them apart: it made about as many calls as it
// served requests, its current assignment gives most requests one call
// and few more than one, and at least singleMinHanded of its calls were
// handed a pooled connection (handoff.go).
func (r *run) singleCalls(n int32) bool {
	reqs, calls := len(r.parentsOf[n]), len(r.childrenOf[n])
	if reqs < singleMinRequests || float64(calls) > (1+singleMaxMulti)*float64(reqs) ||
		float64(calls) < singleMinCalls*float64(reqs) {
		return false
	}
	by := make(map[int32]int, reqs)
	handed := 0
	for _, c := range r.childrenOf[n] {
		if p := r.parent[c]; p >= 0 {
			by[p]++
		}
		if r.freed[c] != noTime {
			handed++
		}
	}
	one, multi := 0, 0
	for _, k := range by {
		if k == 1 {
			one++
		} else {
			multi++
		}
	}
	return float64(multi) <= singleMaxMulti*float64(reqs) && float64(one) >= singleMinCalls*float64(reqs) &&
		float64(handed) >= singleMinHanded*float64(calls)
}

// singleMatch tries the single-call matching on node n after a pass's
// search and local search, with model m (x: the cross-fitted models, if
// any), and keeps its refined candidate where the node's objective is
// higher. The counts are kept in cnt.
func (r *run) singleMatch(n int32, m *nodeModel, x *crossFit, cnt *chainCounts, last bool) {
	if !r.singleCalls(n) {
		return
	}
	cnt.tried++
	kids := r.childrenOf[n]
	before := r.parentsOfCalls(kids)
	base := newLocal(r, n, m, x).objective()
	cn := r.newChainNode(n, m, x)
	clear(cn.kids) // every request makes its first call
	p := cn.singleProblem()
	col4row, _, ok := solveLAP(p, chainBudget*p.n)
	if !ok {
		cnt.failed++
		return
	}
	nr, nc := len(cn.reqs), len(cn.calls)
	for i, c := range cn.calls {
		if col4row[nr+i] == int32(i) {
			r.parent[c] = -1
		}
	}
	for j, q := range cn.reqs {
		if c := col4row[j]; c < int32(nc) {
			r.parent[cn.calls[c]] = q
		}
	}
	ls := newLocal(r, n, m, x)
	ls.sweepAll(20)
	if ls.objective() <= base+improveEps {
		r.setParentsOfCalls(kids, before)
		return
	}
	cnt.kept++
	for i, c := range kids {
		if r.parent[c] != before[i] {
			cnt.changed++
		}
	}
	if last {
		cn.posterior()
	}
}

// posterior sets the search's posterior (picked, conf, alts: what the
// confidences are computed from, posterior.go) of each call of the
// matching to the matching's own, the beam's being about an assignment
// the matching overruled: the call's final request against each
// exchange, giving it to none or to another candidate request, whose
// own call is displaced in turn (displaced), each weighed by the
// replays it changes and, as the matching's pairs, the FIFO evidence in
// the context of the final assignment (fifoInContext; without it a
// proxy whose calls the first-come start put in order, fifostart.go,
// had them stated 0.78 for 0.98 right). The shadow members do the same
// under each half of the cross-fitted model (singleShadows).
func (cn *chainNode) posterior() {
	r := cn.r
	k := searchAlts
	sp := cn.finalPost()
	var post []alt
	for i := range int32(len(cn.calls)) {
		c := cn.calls[i]
		p := r.parent[c]
		if !sp.posted(i, p) {
			continue
		}
		var conf float32
		post, conf = sp.of(i, p, post[:0])
		r.picked[c], r.conf[c], r.sendW[c] = p, conf, 1
		as := r.alts[int(c)*k : int(c)*k+k]
		for a := range as {
			as[a] = alt{-1, 0}
			if a < len(post) {
				as[a] = post[a]
			}
		}
	}
}

// posted reports whether call i of the matching, with request p in the
// final assignment (-1: none), takes the matching's posterior: a joint
// link (not exact, more than one candidate) whose request, if any, is in
// the matching with i as its one call.
func (sp *singlePost) posted(i, p int32) bool {
	r, c := sp.cn.r, sp.cn.calls[i]
	return r.exact[c] < 0 && r.nCand[c] >= 2 && (p < 0 || sp.cn.inMatching(p) && sp.own(p) == i)
}

// of returns the posterior of call i, now with request p (-1: none):
// its alternatives (the exchanges of one step), most probable first,
// appended to post, and p's probability.
func (sp *singlePost) of(i, p int32, post []alt) ([]alt, float32) {
	var lp []float64
	post, lp = sp.exchanges(i, p, post, lp)
	sum := 1.0
	for _, d := range lp {
		sum += math.Exp(min(d, 700))
	}
	for a := range post {
		post[a].prob = float32(math.Exp(min(lp[a], 700)) / sum)
	}
	slices.SortFunc(post, func(a, b alt) int { return cmp.Compare(b.prob, a.prob) })
	return post, float32(1 / sum)
}

// finalPost returns the posterior's state of the final assignment: each
// request's one call as r.parent has it.
func (cn *chainNode) finalPost() *singlePost {
	r := cn.r
	sp := newSinglePost(cn)
	for i, c := range cn.calls {
		if p := r.parent[c]; p >= 0 && cn.inMatching(p) {
			sp.callOf[cn.reqIx(p)] = int32(i)
		}
	}
	return sp
}

// singleShadows sets, where node n's single-call matching was kept in
// the last pass, the shadow members' posterior (run.shadowPost) of each
// call that took the matching's (posterior) to the matching's under each
// half of the cross-fitted model x (m: the node's model), as the shadow searches (shadow.go)
// give each half's search's: the node's calls matched again under the
// half (its own evidence ratios, scoring every request with itself), and
// each call's posterior over the exchanges of one step from the half's
// matching. The shadow searches' own posteriors, about the beam the
// matching overruled, gave the matched calls' requests almost nothing
// (on the generated worker pool at 64 in flight the proxy's: 0.025 for
// 0.79 right) and, with half the ensemble's weight, pulled their
// confidence to half the matching's.
func (r *run) singleShadows(n int32, m *nodeModel, x *crossFit) {
	if x == nil || r.noShadows {
		return
	}
	final := r.newChainNode(n, m, nil).finalPost()
	k1 := searchAlts + 1
	var post []alt
	for k := range x.ms {
		hm := *x.ms[k]
		hm.tok, hm.rid, hm.thr, hm.fifo = x.own[k][0], x.own[k][1], x.own[k][2], x.own[k][3]
		cn := r.newChainNode(n, &hm, nil)
		clear(cn.kids)
		lp := cn.singleProblem()
		col4row, _, ok := solveLAP(lp, chainBudget*lp.n)
		if !ok {
			continue // the shadow search's posterior stands
		}
		sp := newSinglePost(cn)
		reqOf := make([]int32, len(cn.calls))
		for i := range reqOf {
			reqOf[i] = -1
		}
		for j, q := range cn.reqs {
			if i := col4row[j]; i < int32(len(cn.calls)) {
				sp.callOf[j], reqOf[i] = i, q
			}
		}
		for i := range int32(len(cn.calls)) {
			c := cn.calls[i]
			if !final.posted(i, r.parent[c]) {
				continue
			}
			var conf float32
			post, conf = sp.of(i, reqOf[i], post[:0])
			out := r.shadowPost[k][int(c)*k1 : int(c)*k1+k1]
			out[0] = alt{reqOf[i], conf}
			for a := 1; a < k1; a++ {
				out[a] = alt{-1, 0}
				if a-1 < len(post) {
					out[a] = post[a-1]
				}
			}
		}
	}
}

// singlePost is the single-call matching's posterior's state: each
// request's one call in the matching (by index in reqs; -1 none) and
// the replays scored.
type singlePost struct {
	cn     *chainNode
	callOf []int32
	memo   map[[2]int32]float64
	first  []int64        // the requests' first sends (firstSends), for the FIFO evidence
	step   [][]singleStep // per call, steps' (nil: not computed yet)
}

// newSinglePost returns the posterior's state of matching cn with no
// request given a call yet.
func newSinglePost(cn *chainNode) *singlePost {
	sp := &singlePost{cn: cn, memo: map[[2]int32]float64{}, callOf: make([]int32, len(cn.reqs))}
	for j := range sp.callOf {
		sp.callOf[j] = -1
	}
	return sp
}

// own returns request q's one call in the matching (-1: none).
func (sp *singlePost) own(q int32) int32 { return sp.callOf[sp.cn.reqIx(q)] }

// w returns request q's replay with call i of the matching (-1: none).
func (sp *singlePost) w(q, i int32) float64 {
	key := [2]int32{q, i}
	if v, ok := sp.memo[key]; ok {
		return v
	}
	cn := sp.cn
	sl := cn.start(q)
	var v float64
	if i < 0 {
		v = cn.weight(&sl, chainSucc{req: q, call: -1})
	} else {
		if sp.first == nil {
			sp.first = cn.firstSends()
		}
		v = cn.singleWeight(&sl, cn.calls[i]) + cn.fifoInContext(q, i, sp.first)
	}
	v = max(v, -singleNever)
	sp.memo[key] = v
	return v
}

// bg returns call i's log likelihood as background.
func (sp *singlePost) bg(i int32) float64 {
	cn := sp.cn
	c := cn.calls[i]
	if cn.r.exact[c] >= 0 {
		return -singleNever
	}
	return max(cn.callModel(c).logBackgroundOf(c, cn.r.calls[c].kind), -singleNever)
}

// exchanges appends to post and lp the exchanges of one step of call i,
// now with request p (-1: none), and each one's log likelihood against
// the current assignment.
func (sp *singlePost) exchanges(i, p int32, post []alt, lp []float64) ([]alt, []float64) {
	cn := sp.cn
	cur := sp.bg(i)
	if p >= 0 {
		cur = sp.w(p, i)
		post, lp = append(post, alt{-1, 0}), append(lp, sp.bg(i)+sp.w(p, -1)-cur)
	}
	for _, q := range cn.cands[i] {
		if q == p {
			continue
		}
		j := sp.own(q)
		if j >= 0 && cn.r.exact[cn.calls[j]] >= 0 {
			continue
		}
		post, lp = append(post, alt{q, 0}), append(lp, sp.w(q, i)-cur+sp.rest(p, q, i, j))
	}
	return post, lp
}

// rest is the change of the other terms when call i, now with request p
// (-1: none), goes to request q, whose call j (-1: none) goes to p if it
// can, else to no request: p's replay and j's.
func (sp *singlePost) rest(p, q, i, j int32) float64 {
	switch {
	case p < 0 && j < 0:
		return -sp.w(q, -1)
	case j < 0:
		return sp.w(p, -1) - sp.w(q, -1)
	}
	return sp.displaced(j, p, q, singleChain, nil) - sp.w(q, j)
}

// singleChain is how many more requests an exchange's chain of
// displaced calls may pass through (displaced), and singleBranch how
// many of a displaced call's requests it follows at each.
const (
	singleChain  = 3
	singleBranch = 3
)

// displaced returns the log of the summed likelihoods of the places
// for call j, displaced from its request, with request p (-1: none) left without
// its call: j to none (p then makes no call), j to p, j to a request
// that made no call, or j to another request q2 (not q, p or one of via)
// whose own call is displaced in turn, through at most d more requests and, at each, the singleBranch
// requests likeliest to take j against their own call: each a distinct
// matching, so that an exchange's probability is their sum, a marginal
// over the matchings listed, not the best of them. An exchange
// that shifts a run of requests' calls by one (the beam's mistake at a
// saturated pool: the pool's first calls, before it saturates, go out
// in no order of arrival) is such a chain; exchanges of one step alone
// gave the true requests of those calls nothing.
func (sp *singlePost) displaced(j, p, q int32, d int, via []int32) float64 {
	best := sp.bg(j)
	if p >= 0 {
		best += sp.w(p, -1)
		if slices.Contains(sp.cn.cands[j], p) {
			best = logAdd(best, sp.w(p, j))
		}
	}
	if d == 0 {
		return best
	}
	for _, st := range sp.steps(j) {
		if st.q == p || st.q == q || slices.Contains(via, st.q) {
			continue
		}
		switch {
		case st.k < 0 && p >= 0:
			best = logAdd(best, st.gain+sp.w(p, -1))
		case st.k < 0:
			best = logAdd(best, st.gain)
		default:
			best = logAdd(best, st.gain+sp.displaced(st.k, p, q, d-1, append(via, st.q)))
		}
	}
	return best
}

// singleStep is a displaced call's move to request q, whose own call k
// is displaced in turn (-1: q made none): gain is q's replay with the call against its
// replay with k.
type singleStep struct {
	q, k int32
	gain float64
}

// steps returns call j's singleBranch best moves (displaced), computed
// once.
func (sp *singlePost) steps(j int32) []singleStep {
	if sp.step == nil {
		sp.step = make([][]singleStep, len(sp.cn.calls))
	}
	if sp.step[j] != nil {
		return sp.step[j]
	}
	all := []singleStep{}
	for _, q := range sp.cn.cands[j] {
		switch k := sp.own(q); {
		case k < 0:
			all = append(all, singleStep{q, -1, sp.w(q, j) - sp.w(q, -1)})
		case k != j && sp.cn.r.exact[sp.cn.calls[k]] < 0:
			all = append(all, singleStep{q, k, sp.w(q, j) - sp.w(q, k)})
		}
	}
	slices.SortFunc(all, func(a, b singleStep) int {
		if c := cmp.Compare(b.gain, a.gain); c != 0 {
			return c
		}
		return cmp.Compare(a.q, b.q)
	})
	sp.step[j] = all[:min(len(all), singleBranch)]
	return sp.step[j]
}

// singleProblem builds the single-call matching: rows are the requests,
// then one per call (the call left to no request); columns are the
// calls, then one per request (the request making no call). A request
// takes a call it can hold at the cost of its whole replay with that
// call, or its own column at that of its replay with none; a call's row
// takes its own call at the background rate, or the no-call column of a
// request that could hold it at no cost (the request then took the
// call). Costs are the negated log likelihoods.
func (cn *chainNode) singleProblem() *lapProblem {
	r := cn.r
	nr, nc := len(cn.reqs), len(cn.calls)
	p := &lapProblem{n: nr + nc, start: []int32{0}}
	byReq := make([][]int32, nr)
	for i := range cn.calls {
		for _, q := range cn.cands[i] {
			j := cn.reqIx(q)
			byReq[j] = append(byReq[j], int32(i))
		}
	}
	add := func(col int32, w float64) {
		p.col = append(p.col, col)
		p.cost = append(p.cost, -max(w, -singleNever))
	}
	first := cn.firstSends()
	for j, q := range cn.reqs {
		sl := cn.start(q)
		for _, i := range byReq[j] {
			if w := cn.singleWeight(&sl, cn.calls[i]); !math.IsInf(w, -1) {
				add(i, w+cn.fifoInContext(q, i, first))
			}
		}
		add(int32(nc+j), cn.weight(&sl, chainSucc{req: q, call: -1}))
		p.start = append(p.start, int32(len(p.col)))
	}
	for i, c := range cn.calls {
		w := cn.callModel(c).logBackgroundOf(c, r.calls[c].kind)
		if r.exact[c] >= 0 {
			w = -singleNever
		}
		add(int32(i), math.Round(w*1e6)/1e6)
		for _, q := range cn.cands[i] {
			if r.exact[c] < 0 || r.exact[c] == q {
				add(int32(nc)+cn.reqIx(q), 0)
			}
		}
		p.start = append(p.start, int32(len(p.col)))
	}
	return p
}

// singleWeight is the log likelihood of request sl.p's replay with call
// c as its one call: c as its first call, then its reply after c's.
func (cn *chainNode) singleWeight(sl *slot, c int32) float64 {
	r := cn.r
	if e := r.exact[c]; e >= 0 && e != sl.p {
		return math.Inf(-1)
	}
	w := cn.weight(sl, chainSucc{t: r.calls[c].send, call: c, req: -1})
	if math.IsInf(w, -1) || !r.twoWay(sl.p) {
		return w
	}
	after := cn.after(sl.p, c)
	return w + cn.weight(&after, chainSucc{req: sl.p, call: -1})
}

// firstSends returns, by index in reqs, when each request's first call
// in the current assignment was sent (noTime: none).
func (cn *chainNode) firstSends() []int64 {
	r := cn.r
	first := make([]int64, len(cn.reqs))
	for j := range first {
		first[j] = noTime
	}
	for _, c := range cn.calls {
		if p := r.parent[c]; p >= 0 && cn.inMatching(p) {
			j := cn.reqIx(p)
			if first[j] == noTime || r.sendOf(c) < first[j] {
				first[j] = r.sendOf(c)
			}
		}
	}
	return first
}

// fifoInContext is the FIFO evidence of call i going to request q, the
// other requests' calls as the current assignment has them: q's rank
// among the candidates of i that arrived before it and had no call
// sent before i's.
func (cn *chainNode) fifoInContext(q, i int32, first []int64) float64 {
	r := cn.r
	m := cn.model(q)
	if !m.fifoInformative() {
		return 0
	}
	send := r.sendOf(cn.calls[i])
	f, _ := r.fifoOf(m, q, nil, fifoCtx{}, func(yield func(int32)) {
		for _, o := range cn.cands[i] {
			if o == q || !cn.inMatching(o) {
				continue
			}
			if f := first[cn.reqIx(o)]; f == noTime || f >= send {
				yield(o)
			}
		}
	})
	return f
}
