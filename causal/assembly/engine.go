package assembly

import (
	"cmp"
	"context"
	"math"
	"slices"
	"sync"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/internal/parallel"
	"github.com/wirepath/wirepath/trace"
)

// Engine is the per-request assembly engine.
type Engine struct {
	opt Options
}

// New returns an assembly engine with the given options, or the
// *causal.OptionError of the first option out of range.
func New(opt Options) (*Engine, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	return &Engine{opt: opt}, nil
}

// Name returns "assembly".
func (e *Engine) Name() string { return Name }

// Options returns the engine's options.
func (e *Engine) Options() Options { return e.opt }

// Link evidence: what decided a call's request.
const (
	evNone       uint8 = iota
	evRoot             // a call into the system: its caller serves no request (entryNodes)
	evBackground       // no request made it
	evExactID          // the only candidate request carrying its request id
	evThread           // the thread that served the request sent it, and served no other
	evOnly             // the only request it fits in
	evJoint            // the joint assignment of the node's calls
	evTokens           // the joint assignment, with shared content tokens deciding
)

// evidenceNames name the evidence in requests.
var evidenceNames = [...]string{"", "root", "background", "exact-id", "thread", "only-candidate", "joint-timing", "tokens"}

// alt is one alternative request of a call and its probability.
type alt struct {
	p    int32
	prob float32
}

// run is one run of the engine.
type run struct {
	opt Options
	tol int64
	// tols is every node's tolerance where it was learnt (tolerance.go)
	tols  tolState
	l     *loader
	calls []call
	kinds kinds
	// by node: the calls it receives (by arrival) and makes (by send)
	parentsOf  [][]int32
	childrenOf [][]int32
	// parentPos[c], childPos[c]: call c's index in parentsOf of its
	// callee and in childrenOf of its caller (positions)
	parentPos, childPos []int32
	// swept[n] holds node n's candidates while it is solved (sweep)
	swept []*swept
	// replays[n] holds node n's replay scores while it is solved
	// (replayMemoFor)
	replays []nodeReplays
	// entry[n]: node n serves no request, so the calls it makes enter the
	// system (solveNode)
	entry []bool
	spans []int64
	// sendAt[c] is sendOf(c), arrAt[c] arrOf(c)
	sendAt, arrAt []int64
	// ev[c] is what features reads of call c's CALL, retTok[c] its
	// RETURN's content tokens
	ev     []callEvid
	retTok [][]uint64
	// per call: when the serial connection it left on was freed just
	// before (handoffs), noTime if not
	freed []int64
	// per call, as a request: the start of its service where its node
	// queues (queue.go), noTime if not; per node, its queue
	qbegin []int64
	queue  []queueState
	// per call, as a child
	parent []int32
	exact  []int32
	evid   []uint8
	conf   []float32
	alts   []alt // searchAlts per call
	// picked is the search's request for each call (before the local
	// search), which conf and alts were computed for
	picked []int32
	nCand  []int32
	// per call, from the last pass's search: the share of its
	// candidates' mass its beam kept (sendW) and its best
	// searchAlts+1 requests at its send (sendPost): pruned.go
	sendW    []float32
	sendPost []alt
	// per member of the ensemble (members.go): each call's probability of
	// its final request, where posterior set it (posted), its likeliest
	// rivals, and each call's doubts from the calls given elsewhere
	// (rivals.go)
	mconf  [nMembers][]float32
	mriv   [nMembers][][]rivalP
	mback  [nMembers]rivalDoubts
	posted []bool
	// shadowPost holds, per call, the posterior of each shadow search
	// (shadow.go): searchAlts+1 per call, noShadow where none ran
	shadowPost [2][]alt
	// noShadows turns the shadow searches off, for tests
	noShadows bool
	// content tokens and their IDF, when the trace has any; whether any
	// message carries a request id or a thread
	idf    map[uint64]float64
	hasIDs bool
	// every node's isolated requests, and the nodes with isolated requests
	// of each replicated kind of request (isolated.go)
	isoSamples [][]isoSample
	isoByKey   map[replicaKey][]int32
	// the kinds of call with a rhythm of their own, by node, computed
	// once each (periodic.go)
	rhythms    []map[int32]*rhythm
	rhythmOnce []sync.Once
	// counters by node: the search's, and the passes run
	search []searchCounts
	passes []int32
	chains []chainCounts
	// singles are the single-call matchings' counts (singles.go)
	singles []chainCounts
	// restarts are the last pass's second starts' counts (restart.go)
	restarts []restartCounts
	// fifoStarts are the first-come starts' counts (fifostart.go)
	fifoStarts []restartCounts
	// crossFirst is each node's first crossOrder, kept for its later
	// passes (connorder.go)
	crossFirst []*crossOrder
	// kindMatches are the kind matchings' counts (kindmatch.go)
	kindMatches []kindMatchCounts
	// kindPairs are the kind-pair matchings' counts (kindpair.go)
	kindPairs []kindPairCounts
	// usualFills are the usual-call fills' counts (usualcall.go)
	usualFills []usualFillCounts
	// models of the last pass, by node, and a hook after each pass, for
	// tests
	models []*nodeModel
	// firstModels are the nodes' first models (calib.go)
	firstModels []*nodeModel
	// xfits are the cross-fitted models each node's last pass searched
	// with (nil where it had none), for the diagnostics
	xfits  []*crossFit
	onPass func(n int32, pass int)
	// onChains sees each chain matching's candidate (chains.go), for tests
	onChains func(n int32, calls, cand []int32, crossings int)
}

func newRun(opt Options, ms trace.Messages, nm *causal.Namer) *run {
	r := &run{opt: opt, tol: statedTolerance(opt, ms)}
	r.l = load(ms, r.tol, opt.Aggregate.Naming)
	r.calls = r.l.calls
	r.kinds = kinds{ids: make(map[kindKey]int32), syms: ms.Symbols()}
	r.kinds.cluster(r.l, nm, r.calls)
	for i := range r.calls {
		c := &r.calls[i]
		c.kind = r.kinds.kindOf(r.l, nm, c)
		c.retClass = retClass(c.repBytes)
	}
	nn := len(r.l.nodeSym)
	r.parentsOf = make([][]int32, nn)
	r.childrenOf = make([][]int32, nn)
	for i := range r.calls {
		c := &r.calls[i]
		r.parentsOf[c.callee] = append(r.parentsOf[c.callee], int32(i))
		r.childrenOf[c.caller] = append(r.childrenOf[c.caller], int32(i))
	}
	for n := range nn {
		slices.SortStableFunc(r.parentsOf[n], func(a, b int32) int { return cmpTime(r.calls[a].arr, r.calls[b].arr) })
	}
	r.parentPos, r.childPos = positions(len(r.calls), r.parentsOf, r.childrenOf)
	r.sendAt = sendTimes(r.calls)
	r.swept = make([]*swept, nn)
	r.replays = make([]nodeReplays, nn)
	r.entry = entryNodes(r.calls, r.parentsOf)
	n := len(r.calls)
	r.parent = make([]int32, n)
	r.exact = make([]int32, n)
	r.evid = make([]uint8, n)
	r.conf = make([]float32, n)
	r.picked = make([]int32, n)
	r.alts = make([]alt, n*searchAlts)
	r.nCand = make([]int32, n)
	r.sendW = make([]float32, n)
	r.sendPost = make([]alt, n*(searchAlts+1))
	r.posted = make([]bool, n)
	for e := range r.mconf {
		r.mconf[e] = make([]float32, n)
		r.mriv[e] = make([][]rivalP, n)
		r.mback[e] = newRivalDoubts(n)
	}
	for i := range r.parent {
		r.parent[i], r.exact[i] = -1, -1
		r.sendW[i] = 1
	}
	for i := range r.sendPost {
		r.sendPost[i].p = -1
	}
	for k := range r.shadowPost {
		r.shadowPost[k] = make([]alt, n*(searchAlts+1))
		for i := range r.shadowPost[k] {
			r.shadowPost[k][i].p = noShadow
		}
	}
	for i := range r.alts {
		r.alts[i].p = -1
	}
	r.qbegin = make([]int64, n)
	for i := range r.qbegin {
		r.qbegin[i] = noTime
	}
	r.queue = make([]queueState, nn)
	r.openSpans()
	r.learnTolerances(statesClock(opt, ms))
	r.freed = r.handoffs()
	r.arrAt = r.arrivals()
	r.idf = tokenIDF(r.l)
	r.ev, r.retTok = r.evidence()
	r.hasIDs = r.hasIDsOrThreads()
	r.search = make([]searchCounts, nn)
	r.passes = make([]int32, nn)
	r.chains = make([]chainCounts, nn)
	r.singles = make([]chainCounts, nn)
	r.restarts = make([]restartCounts, nn)
	r.fifoStarts = make([]restartCounts, nn)
	r.crossFirst = make([]*crossOrder, nn)
	r.kindMatches = make([]kindMatchCounts, nn)
	r.kindPairs = make([]kindPairCounts, nn)
	r.usualFills = make([]usualFillCounts, nn)
	r.models = make([]*nodeModel, nn)
	r.firstModels = make([]*nodeModel, nn)
	r.xfits = make([]*crossFit, nn)
	r.rhythms = make([]map[int32]*rhythm, nn)
	r.rhythmOnce = make([]sync.Once, nn)
	return r
}

func cmpTime(a, b int64) int {
	if a == noTime || b == noTime {
		return -cmpBool(a == noTime, b == noTime)
	}
	if a < b {
		return -1
	}
	if a > b {
		return 1
	}
	return 0
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// tokenIDF returns the inverse document frequency of every content token
// of the trace's messages, or nil when no message has tokens.
func tokenIDF(l *loader) map[uint64]float64 {
	n := 0
	for i := range l.msgs {
		if len(l.tokens(int32(i))) > 0 {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	// Counted in a map made for a token of its own per message (a
	// request's id, the common case of traced traffic), so that it does
	// not grow by doublings; the result is moved to a map of its size
	// when far fewer tokens are distinct.
	df := make(map[uint64]float64, n)
	for i := range l.msgs {
		for _, t := range l.tokens(int32(i)) {
			df[t]++
		}
	}
	idf := df
	if len(df) < n/4 {
		idf = make(map[uint64]float64, len(df))
	}
	for t, v := range df {
		idf[t] = math.Log(float64(n) / v)
	}
	return idf
}

// solve assigns every call its request.
func (r *run) solve(ctx context.Context) error {
	nn := len(r.l.nodeSym)
	var err error
	r.collectIsolated(parallel.Workers(r.opt.Workers))
	order := r.solveOrder()
	parallel.Each(nn, parallel.Workers(r.opt.Workers), func(i int) {
		n := order[i]
		if ctx.Err() != nil {
			return
		}
		r.swept[n] = &sweepPending // kept while the node is solved
		r.solveNode(n)
		r.swept[n] = nil
		r.replays[n] = nodeReplays{}
	})
	if e := ctx.Err(); e != nil {
		err = e
	}
	return err
}

// solveOrder returns the nodes in the order solve hands them to its
// goroutines: the most calls made first (a node's search costs about in
// proportion to them), so that the largest node does not start last
// while the other goroutines run out of work (on the scale benchmark's
// trace the last node of the index order was the largest, and one core
// solved it alone). Each node's answer depends on no other node's, so
// the order changes no result.
func (r *run) solveOrder() []int32 {
	order := make([]int32, len(r.childrenOf))
	for n := range order {
		order[n] = int32(n)
	}
	slices.SortStableFunc(order, func(a, b int32) int {
		return cmp.Compare(len(r.childrenOf[b])+len(r.parentsOf[b]), len(r.childrenOf[a])+len(r.parentsOf[a]))
	})
	return order
}

// entryNodes returns, by node, whether the node serves no request: it
// receives no call at all, or, when the trace has calls with replies, only
// one-way messages (a client that also exchanges datagrams with a server:
// the datagrams do not make its calls part of another request; they are
// leaves of their senders' trees).
func entryNodes(calls []call, parentsOf [][]int32) []bool {
	twoWay := func(c *call) bool { return c.flags&flagOneWay == 0 }
	anyTwoWay := false
	for i := range calls {
		if twoWay(&calls[i]) {
			anyTwoWay = true
			break
		}
	}
	entry := make([]bool, len(parentsOf))
	for n, ps := range parentsOf {
		entry[n] = true
		for _, p := range ps {
			if !anyTwoWay || twoWay(&calls[p]) {
				entry[n] = false
				break
			}
		}
	}
	return entry
}

// solveNode assigns the calls node n makes to the requests it receives.
func (r *run) solveNode(n int32) {
	kids := r.childrenOf[n]
	if r.entry[n] {
		for _, c := range kids {
			r.evid[c] = evRoot
			r.conf[c] = 1
		}
		return
	}
	if len(kids) == 0 {
		return
	}
	r.exactLinks(n)
	evs := r.timeline(n)
	iso, _ := r.isolatedModel(n)
	qm := queueTry
	for {
		m := r.initialModel(n)
		r.firstModels[n] = m
		if iso != nil {
			addTrans(m, iso)
		}
		var next queueMode
		if next = r.solvePasses(n, evs, iso, m, qm); next == qm {
			return
		}
		// the node's queue was learnt (start again from a first model
		// that reads its requests' delays from the starts of their
		// service), or rejected (start again without it: the answer is
		// the one the engine gives without queues)
		r.chains[n] = chainCounts{}
		r.singles[n] = chainCounts{}
		qm = next
	}
}

// solvePasses runs node n's passes of search and EM from the model m with its
// queue in mode qm (queue.go), and returns the mode its node must be
// solved again in, or qm when it is done.
func (r *run) solvePasses(n int32, evs []event, iso *nodeModel, m *nodeModel, qm queueMode) queueMode {
	var x *crossFit
	pl := r.newPassPlan(n)
	fo := r.newFIFOOnce(n, qm)
	var rf refill
	for pass := 0; ; pass++ {
		last := pl.last(pass)
		var start []int32
		var startObj float64
		if last && x != nil {
			start, startObj = r.fullStart(n, evs, m, x)
		}
		s := newSearch(r, n, m)
		s.sum = last
		s.x = x
		s.run(evs)
		s.cnt.moves = r.improve(n, m, x, 20)
		if start != nil {
			r.keepBetterStart(n, m, x, start, startObj, &r.restarts[n])
		}
		fifoKept := r.tryFIFOStart(n, m, x)
		if last {
			r.kindMatch(n, m, x, &r.kindMatches[n])
			r.kindPairMatch(n, m, x, &r.kindPairs[n])
			r.keepFill(n, m, x, &rf)
			kept := r.usualFills[n].kept
			m, x = r.usualFill(n, pass, iso, fo, m, x, &r.usualFills[n])
			if r.searchAfterFill(n, kept, m, x, &rf) {
				continue
			}
		}
		matched := r.singles[n].kept
		if pass > 0 {
			r.chainMatch(n, m, x, &r.chains[n])
			r.singleMatch(n, m, x, &r.singles[n], last)
		}
		matched = r.singles[n].kept - matched
		if r.onPass != nil {
			r.onPass(n, pass)
		}
		if last {
			r.search[n] = s.cnt
			r.passes[n] = int32(pass + 1)
			if matched == 0 && fifoKept {
				matched = r.fifoPosterior(n, m, x)
			}
			r.shadows(n, evs, x)
			if matched > 0 {
				r.singleShadows(n, m, x)
			}
			r.posterior(n)
			break
		}
		if pl.after(r, n, pass) {
			continue // the last pass keeps the model (passPlan)
		}
		if next := r.queueStep(n, pass, pl.last(pass+1), qm); next != qm {
			return next
		}
		// the pass's posterior is the beam's, which a kept single-call
		// matching overruled: fit on the matching's assignment
		soft := r.softPass(n) && matched == 0
		m = r.fit(n, soft)
		fo.step(m, pass, pl.last(pass+1))
		if iso != nil {
			addTrans(m, iso)
		}
		x = r.crossFitModels(n, iso, m, soft)
	}
	r.models[n] = m
	r.xfits[n] = x
	return qm
}

// openSpan is how long a request of node n whose arrival or reply was not
// seen (or a one-way message) is taken to have been open: half again the
// longest seen at the node, else at any node, at most MaxOpen.
func (r *run) openSpan(n int32) int64 { return r.spans[n] }

// openSpans computes openSpan for every node. A node that was never seen
// to serve a whole request (a DNS server whose datagrams are one-way
// messages, with one cut TCP call) takes the longest request of the
// trace: held open for MaxOpen, thousands of its datagrams were open at
// once and every call it made weighed them all.
func (r *run) openSpans() {
	r.spans = make([]int64, len(r.parentsOf))
	longest := make([]int64, len(r.parentsOf))
	anywhere := int64(0)
	for n, ps := range r.parentsOf {
		for _, p := range ps {
			c := &r.calls[p]
			if c.callMsg >= 0 && c.retMsg >= 0 && c.flags&flagOneWay == 0 {
				longest[n] = max(longest[n], c.rep-c.arr)
			}
		}
		anywhere = max(anywhere, longest[n])
	}
	for n := range r.spans {
		l := longest[n]
		if l <= 0 {
			l = anywhere
		}
		r.spans[n] = int64(r.opt.MaxOpen)
		if l > 0 {
			r.spans[n] = min(int64(r.opt.MaxOpen), l+l/2)
		}
	}
}

// timeline returns node n's events in time order: arrivals and replies
// of the requests it receives (widened by the tolerance), sends and
// replies of the calls it makes.
func (r *run) timeline(n int32) []event {
	span, tol := r.openSpan(n), r.tolAt(n)
	var evs []event
	for _, p := range r.parentsOf[n] {
		c := &r.calls[p]
		a, rep := c.arr, c.rep
		if c.callMsg < 0 {
			a = rep - span
		}
		if c.retMsg < 0 || c.flags&flagOneWay != 0 {
			rep = a + span
		}
		evs = append(evs, event{a - tol, evArr, p}, event{rep + tol, evRep, p})
	}
	for _, k := range r.childrenOf[n] {
		c := &r.calls[k]
		s := c.send
		if c.callMsg < 0 {
			s = c.back
		}
		evs = append(evs, event{s, evSend, k})
		if c.callMsg >= 0 && c.retMsg >= 0 && c.flags&flagOneWay == 0 {
			evs = append(evs, event{c.back, evBack, k})
		}
	}
	slices.SortFunc(evs, func(a, b event) int {
		at, ar := a.t, a.typ
		if a.typ == evBack {
			at, ar = backAt(r.calls[a.call].send, a.t)
		}
		bt, br := b.t, b.typ
		if b.typ == evBack {
			bt, br = backAt(r.calls[b.call].send, b.t)
		}
		return cmpEvent(at, bt, ar, br, a.call, b.call, a.typ == evBack, b.typ == evBack)
	})
	return evs
}

// assign records the decision for call c: request p (-1 none), with the
// best final score per request among the hypotheses (marg) and the best
// per request when c was sent (filt) (posteriorOf).
func (r *run) assign(c, p int32, marg, filt []altScore) {
	r.parent[c] = p
	r.picked[c] = p
	k := searchAlts
	var buf [8]alt
	post := buf[:0]
	if k+1 > len(buf) {
		post = make([]alt, 0, k+1)
	}
	post = posteriorOf(p, marg, filt, post[:k+1])
	r.conf[c] = post[0].prob
	copy(r.alts[int(c)*k:int(c)*k+k], post[1:])
	switch {
	case r.exact[c] >= 0:
		// evidence set by exactLinks
	case p < 0:
		r.evid[c] = evBackground
	case r.nCand[c] == 1:
		r.evid[c] = evOnly
	default:
		r.evid[c] = evJoint
	}
}

// searchAlts is the number of other requests the search ranks per call
// (its alternatives). It is fixed, not Options.Alternatives: the search's
// alternatives feed the refits' trust, the local search's moves and the
// posterior's mass, so the number listed must not change the assignment.
const searchAlts = 3

// posteriorOf returns in post (len K+1) request p's probability, then the
// K most probable other requests' (-1: none; prob 0 past the last), from
// the best final score per request among the hypotheses (marg) and the
// best per request when the call was sent (filt). A request pruned from
// the beam keeps its score at the send, relative to p's, and no better
// than the worst final one.
func posteriorOf(p int32, marg, filt []altScore, post []alt) []alt {
	var sp float64
	// the score of each request: marg's, then filt's requests not in
	// marg (a list, not a map: a call has a few; on the stack unless a
	// beam of more than 32 gives more)
	var buf [32]altScore
	scores := buf[:0]
	for _, a := range marg {
		scores = setScore(scores, a.p, a.score)
		if a.p == p {
			sp = a.score
		}
	}
	minMarg := sp
	for _, a := range marg {
		minMarg = min(minMarg, a.score)
	}
	fp := math.Inf(-1)
	for _, a := range filt {
		if a.p == p {
			fp = a.score
		}
	}
	for _, a := range filt {
		if hasScore(scores, a.p) || math.IsInf(fp, -1) {
			continue
		}
		scores = append(scores, altScore{a.p, min(sp+a.score-fp, minMarg)})
	}
	var vbuf [32]float64
	vals := vbuf[:0]
	for _, a := range scores {
		vals = append(vals, a.score)
	}
	// summed in one order whatever the list's: the confidences are the
	// same bits on every run
	slices.Sort(vals)
	lse := logSumExp(vals)
	post[0] = alt{p, float32(math.Exp(sp - lse))}
	others := scores[:0]
	for _, a := range scores {
		if a.p != p {
			others = append(others, a)
		}
	}
	slices.SortFunc(others, func(a, b altScore) int {
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		return int(a.p - b.p)
	})
	for i := 1; i < len(post); i++ {
		post[i] = alt{-1, 0}
		if i-1 < len(others) {
			post[i] = alt{others[i-1].p, float32(math.Exp(others[i-1].score - lse))}
		}
	}
	return post
}

// setScore sets request q's score in scores to v (a map's assignment).
func setScore(scores []altScore, q int32, v float64) []altScore {
	for i := range scores {
		if scores[i].p == q {
			scores[i].score = v
			return scores
		}
	}
	return append(scores, altScore{q, v})
}

// hasScore reports whether scores holds request q.
func hasScore(scores []altScore, q int32) bool {
	for i := range scores {
		if scores[i].p == q {
			return true
		}
	}
	return false
}
