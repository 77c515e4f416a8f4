package assembly

// The first-come start (issue 11). Where a node's requests make one call
// each and the calls wait for a saturated pool (fifoSingle), a call leaves when a connection frees and goes to the
// request that has waited longest, whatever its own delays: on the unseen
// event loop at 64 requests in flight (causal/accuracy/testdata/unseen/
// eventloop.yaml) the gateway's 1,000 calls to the api each wait a median
// 19 ms for one of 8 connections, and of the open requests that made no
// such call the true one arrived first for 976 of them. The beam, which
// decides at each send and learns the FIFO ratio from its own answer,
// left 428 of them to another request, and the true assignment scored
// 303 nats above its answer under its own final model.
//
// The same holds for one kind of call at a node that makes others too:
// on the unseen fan-out at 64 in flight the aggregator's calls to the
// shards s1 and s2, which every request makes once, wait for their
// pools (77 and 92 % handed), and 482 and 473 of their 1,000 were
// wrong, where giving each call to the earliest open request without
// one gets 902 and 934 right.
//
// So every pass also starts from the first-come assignment: the
// matching of the node's calls to its requests that minimises the sum of
// the squared waits (each call's send less its request's arrival) over
// the pairs the times allow (the call sent after the request arrived and
// answered before its reply). A convex cost of the wait makes the best
// matching keep the order: of two calls and two requests, the earlier
// call goes to the earlier request. It is refined by the local search
// (under the cross-fitted models in the last pass) and kept, as the
// second start (restart.go), only where the node's whole objective is
// higher than that of the pass's search and local search; the next pass
// learns its model from it. Tried only in the last pass, it was kept
// there, but the models learnt from the earlier passes' answers had
// moved the local search 44 calls off it and the single-call matching
// (singles.go) after it 260; every pass, the gateway's calls are 6 of
// 1,000 wrong and the event loop's requests right 12.8 → 19.0 %; the
// worker pool's proxy at 64 in flight 67.5 → 82.6 %.

// fifoStartMiss is the cost, in squared milliseconds of wait, of leaving
// a request without a call or a call without a request in the
// first-come matching.
const fifoStartMiss = 1e7

// fifoStart builds node n's first-come assignment, refines it with the
// cross-fitted models x (model m) and returns it (in childrenOf's order)
// with its objective under x; the run's assignment is left as the local
// search made it. At a single-call node (fifoSingle) all its calls are
// matched; elsewhere, one kind after another, the calls of each kind its
// requests make once each over a saturated pool (fifoKinds), the other
// calls left where they are. It returns nil where nothing is matched or
// a matching fails.
func (r *run) fifoStart(n int32, m *nodeModel, x *crossFit) ([]int32, float64) {
	var groups [][]int32
	if r.fifoSingle(n) {
		groups = [][]int32{r.childrenOf[n]}
	} else {
		groups = r.fifoKinds(n)
	}
	if len(groups) == 0 {
		return nil, 0
	}
	cands := map[int32][]int32{}
	r.sweep(n, func(c int32, cs []int32) { cands[c] = append([]int32(nil), cs...) })
	for _, g := range groups {
		if !r.fifoMatch(r.parentsOf[n], g, cands) {
			return nil, 0
		}
	}
	r.improve(n, m, x, 20)
	return r.parentsOfCalls(r.childrenOf[n]), newLocal(r, n, m, x).objective()
}

// fifoSingle reports whether node n's requests make one call each and
// its calls wait for a saturated pool, from the counts alone (not the
// current assignment, as singleCalls also does): about as many calls as
// requests, within singleMaxMulti of them, and at least singleMinHanded
// of its calls handed a pooled connection (handoff.go).
func (r *run) fifoSingle(n int32) bool {
	reqs, calls := float64(len(r.parentsOf[n])), float64(len(r.childrenOf[n]))
	return reqs >= singleMinRequests && calls >= (1-singleMaxMulti)*reqs && calls <= (1+singleMaxMulti)*reqs &&
		r.handedShare(n) >= singleMinHanded
}

// fifoKindHanded is the least share of a kind's calls handed a pooled
// connection for fifoKinds to match them.
const fifoKindHanded = 0.75

// fifoKinds returns node n's calls of each kind that its requests make
// once each (about as many as requests, within singleMaxMulti) and at
// least fifoKindHanded of which were handed a pooled connection.
func (r *run) fifoKinds(n int32) [][]int32 {
	reqs := float64(len(r.parentsOf[n]))
	if reqs < singleMinRequests {
		return nil
	}
	byKind := map[int32][]int32{}
	var kinds []int32
	for _, c := range r.childrenOf[n] {
		k := r.calls[c].kind
		if _, ok := byKind[k]; !ok {
			kinds = append(kinds, k)
		}
		byKind[k] = append(byKind[k], c)
	}
	var out [][]int32
	for _, k := range kinds {
		cs, h := byKind[k], 0
		for _, c := range cs {
			if r.freed[c] != noTime {
				h++
			}
		}
		nc := float64(len(cs))
		if nc >= (1-singleMaxMulti)*reqs && nc <= (1+singleMaxMulti)*reqs && float64(h) >= fifoKindHanded*nc {
			out = append(out, cs)
		}
	}
	return out
}

// fifoMatch gives calls to slots (requests, each taking at most one)
// by the matching that minimises the squared waits (ms²) over the pairs
// cands allow (a call's candidate requests), fifoStartMiss for a slot
// left empty or a call left to none; an exactly linked call goes to its
// request, or stays where it is when it has no slot. It reports whether
// the matching was solved.
func (r *run) fifoMatch(slots, calls []int32, cands map[int32][]int32) bool {
	ns, nc := len(slots), len(calls)
	slotsOf := map[int32][]int32{}
	for j, q := range slots {
		slotsOf[q] = append(slotsOf[q], int32(j))
	}
	byCall := make([][]int32, nc)
	bySlot := make([][]int32, ns)
	for i, c := range calls {
		for _, q := range cands[c] {
			if e := r.exact[c]; e >= 0 && e != q {
				continue
			}
			for _, j := range slotsOf[q] {
				byCall[i] = append(byCall[i], j)
				bySlot[j] = append(bySlot[j], int32(i))
			}
		}
	}
	p := &lapProblem{n: ns + nc, start: []int32{0}}
	add := func(col int32, w float64) {
		p.col = append(p.col, col)
		p.cost = append(p.cost, w)
	}
	for j, q := range slots {
		for _, i := range bySlot[j] {
			w := float64(r.sendOf(calls[i])-r.arrOf(q)) / 1e6
			if w < 0 {
				// sent before the request arrived: only within the clock error
				w = 1e3 * (1 - w)
			}
			add(i, w*w)
		}
		add(int32(nc+j), fifoStartMiss)
		p.start = append(p.start, int32(len(p.col)))
	}
	for i, c := range calls {
		w := fifoStartMiss
		if r.exact[c] >= 0 {
			w = 100 * fifoStartMiss
		}
		add(int32(i), w)
		for _, j := range byCall[i] {
			add(int32(nc)+j, 0)
		}
		p.start = append(p.start, int32(len(p.col)))
	}
	col4row, _, ok := solveLAP(p, chainBudget*p.n)
	if !ok {
		return false
	}
	for i, c := range calls {
		if col4row[ns+i] == int32(i) && r.exact[c] < 0 {
			r.parent[c] = -1
		}
	}
	for j, q := range slots {
		if i := col4row[j]; i < int32(nc) {
			r.parent[calls[i]] = q
		}
	}
	return true
}

// tryFIFOStart puts fifoStart's answer in place of node n's current
// assignment where its objective is higher (keepBetterStart), and
// reports whether it did.
func (r *run) tryFIFOStart(n int32, m *nodeModel, x *crossFit) bool {
	kids := r.childrenOf[n]
	before := r.parentsOfCalls(kids)
	asg, obj := r.fifoStart(n, m, x)
	r.setParentsOfCalls(kids, before)
	if asg == nil {
		return false
	}
	kept := r.fifoStarts[n].kept
	r.keepBetterStart(n, m, x, asg, obj, &r.fifoStarts[n])
	return r.fifoStarts[n].kept > kept
}

// fifoPosterior sets, where the last pass kept the first-come start at
// node n and no single-call matching after it, the calls' posterior to
// the single-call matching's (singles.go: each call's request against
// the exchanges of one step), where the current assignment gives its
// requests one call each (singleCalls); the beam's is about the
// assignment the start overruled (on the worker pool at 64 in flight,
// seed 21: the proxy's calls stated 0.00 for 99 % right). It returns
// 1 where it did (the matchings kept, for the shadow members'
// posterior: singleShadows), else 0.
func (r *run) fifoPosterior(n int32, m *nodeModel, x *crossFit) int64 {
	if !r.singleCalls(n) {
		return 0
	}
	cn := r.newChainNode(n, m, x)
	clear(cn.kids)
	cn.posterior()
	return 1
}

// countFIFOStarts counts the first-come starts: the passes of nodes
// where one was tried, those where its assignment was kept, and the
// calls the kept ones gave another request.
func (r *run) countFIFOStarts(count countFunc) {
	countTrials(count, r.fifoStarts, "fifo_starts", "fifo_starts_kept", "fifo_start_calls_moved")
}
