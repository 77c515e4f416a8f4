package assembly

import (
	"slices"
)

const undecided int32 = -2

// initHook, set by tests, sees each node's initial model.
var initHook func(r *run, n int32, m *nodeModel)

// initialModel fits node n's first model from what is known before any
// search: the call graph and the delays deconvolved from the node's
// timeline (deconvolve), and the evidence likelihoods and size relations
// of the exact links and the calls that fit in one request only, learnt
// on the requests whose every candidate call is so decided (so that their
// sequences of calls are complete).
func (r *run) initialModel(n int32) *nodeModel {
	asg := make(map[int32]int32)
	complete := make(map[int32]bool)
	for _, p := range r.parentsOf[n] {
		complete[p] = true
	}
	alone := make(map[int32]bool) // sent with no request open
	r.sweep(n, func(c int32, cands []int32) {
		if len(cands) == 0 {
			alone[c] = true
		}
		switch {
		case r.exact[c] >= 0:
			asg[c] = r.exact[c]
		case len(cands) == 1:
			asg[c] = cands[0]
		default:
			asg[c] = undecided
			for _, p := range cands {
				complete[p] = false
			}
		}
	})
	m := r.fitWith(n, func(c int32) int32 {
		if a, ok := asg[c]; ok && (a < 0 || complete[a]) {
			return a
		}
		return undecided
	}, func(int32) float64 { return 1 }, one, func(p int32) bool { return complete[p] }, false, false)
	// The complete requests are a biased sample where the node is busy
	// (mostly those that made no call at all): keep their delays, not
	// their call graph.
	clear(m.trans)
	clear(m.ov)
	if r.opt.Init == InitCluster {
		// the delays are the cluster estimate's alone, the densities
		// computed from it (adding the complete requests' delays, a
		// sample biased to short delays on a busy node, measured 1.3
		// points of requests less over the testbed's 32 runs)
		clear(m.gaps[anchorLast])
		clear(m.gaps[anchorArrival])
		r.deconvolve(n, m)
		m.resetCaches()
	} else {
		// The densities finishAnchors computed from the complete requests'
		// delays stay cached (gcache): the search reads their contexts'
		// delays from them, and the deconvolved delays elsewhere.
		// Computing them again from the deconvolution alone measured -1.4
		// points of requests over the testbed's 32 runs.
		clear(m.gaps[anchorLast])
		clear(m.gaps[anchorArrival])
		m.gapsChanged(anchorLast)
		m.gapsChanged(anchorArrival)
		r.deconvolve(n, m)
	}
	// The calls sent with no request open are background for certain:
	// they give the first background rate (there was none: every call
	// was in doubt, and the first pass gave every background call an open
	// request could hold to that request, whose call graph then learnt
	// it) and the first background rhythm (periodic.go).
	for c := range alone {
		m.bg[r.calls[c].kind]++
	}
	r.fitRhythms(n, m, func(c int32) bool { return alone[c] })
	if initHook != nil {
		initHook(r, n, m)
	}
	return m
}

// fit fits node n's model from the last pass's assignment (hard EM), or
// with soft from the last pass's posterior of each call's request (soft
// EM: softfit.go). The call graph is learnt from the requests in
// proportion to how sure their calls are (trust).
func (r *run) fit(n int32, soft bool) *nodeModel {
	return r.fitOn(n, func(int32) bool { return true }, soft)
}

// fitOn is fit on the requests include accepts.
func (r *run) fitOn(n int32, include func(p int32) bool, soft bool) *nodeModel {
	w := one
	if soft {
		w = r.parentProb
	}
	tw := r.trust(n)
	trust := func(p int32) float64 {
		if v, ok := tw[p]; ok {
			return v
		}
		return 1
	}
	return r.fitWith(n, func(c int32) int32 { return r.parent[c] }, w, trust, include, true, soft)
}

// one weighs every request alike.
func one(int32) float64 { return 1 }

// trust returns, for the requests node n served whose calls were in
// doubt, how sure the last pass was of the calls they made and of those
// they did not make: the least confidence of a call assigned to it and
// the least 1 - p of a call it was an alternative of with probability p.
// A request whose calls the search was unsure of would teach the call
// graph the search's mistakes (a second query where one request took
// another's, none where it lost it), and EM would keep them.
func (r *run) trust(n int32) map[int32]float64 {
	tw := map[int32]float64{}
	lower := func(p int32, v float64) {
		if old, ok := tw[p]; !ok || v < old {
			tw[p] = v
		}
	}
	k := searchAlts
	for _, c := range r.childrenOf[n] {
		if r.exact[c] >= 0 {
			continue
		}
		if p := r.parent[c]; p >= 0 {
			lower(p, float64(r.conf[c]))
		}
		for _, a := range r.alts[int(c)*k : int(c)*k+k] {
			if a.p >= 0 && a.p != r.parent[c] {
				lower(a.p, 1-float64(a.prob))
			}
		}
	}
	return tw
}

// fitWith fits node n's model from the assignment asg (a call's request,
// -1 for none, undecided to leave it out), weighting each call by w and
// each request's call graph by trust, on the requests include accepts.
// bg says whether calls of no request count as background; soft adds
// each call's delays in the other requests of its posterior and its
// posterior of none (observeAlternatives).
func (r *run) fitWith(n int32, asg func(c int32) int32, w, trust func(int32) float64, include func(p int32) bool, bg, soft bool) *nodeModel {
	kids := r.childrenOf[n]
	if bg && !soft {
		asg = r.timerAsg(n, asg)
	}
	kindSet := map[int32]bool{}
	lo, hi := int64(0), int64(0)
	for i, c := range kids {
		cc := &r.calls[c]
		kindSet[cc.kind] = true
		t := r.sendOf(c)
		if i == 0 || t < lo {
			lo = t
		}
		hi = max(hi, t)
	}
	m := newNodeModel(len(kindSet), float64(hi-lo))
	m.res = float64(r.l.res)
	if r.l.sendSp != nil {
		// spread times (spreadTicks) are read at their finest spacing
		m.res = float64(r.l.spacing)
		m.tick = float64(r.l.res)
	}
	for _, c := range kids {
		cc := &r.calls[c]
		addSize(m.retSizes, cc.kind, cc.repBytes)
		addSize(m.reqSizes, cc.kind, cc.reqBytes)
	}
	byParent := map[int32][]int32{}
	for _, c := range kids {
		a := asg(c)
		switch {
		case a >= 0 && include(a):
			byParent[a] = append(byParent[a], c)
		case a == -1 && bg:
			m.bg[r.calls[c].kind] += w(c)
		}
	}
	for _, p := range r.parentsOf[n] {
		addSize(m.repSizes, r.calls[p].kind, r.calls[p].repBytes)
		addSize(m.arrSizes, r.calls[p].kind, r.calls[p].reqBytes)
	}
	m.handApart = r.handApart(n)
	for _, p := range r.parentsOf[n] {
		if !include(p) {
			continue
		}
		ks := byParent[p]
		slices.SortStableFunc(ks, func(a, b int32) int { return cmpTime(r.sendOf(a), r.sendOf(b)) })
		r.observeRequest(m, p, ks, w, trust(p))
	}
	m.fanStart = m.parallel() && r.handedShare(n) < kindSetMaxHanded
	if soft {
		r.observeAlternatives(n, m, asg, byParent, include)
	}
	r.observeOthers(n, m, asg, byParent, w)
	if bg {
		r.idleBackgroundFit(n, m, lo, hi)
		r.fitRhythms(n, m, func(c int32) bool { return asg(c) == -1 })
	}
	m.finishSizes()
	m.finishOrigin()
	m.finishAnchors()
	m.assoc.finish()
	m.sets.finish()
	if m.sets.informative && (!m.parallel() || r.handedShare(n) >= kindSetMaxHanded) {
		m.sets.informative = false
	}
	return m
}

// observeRequest walks request p with its calls ks (in order of send) as
// the search does and records each step in m.
func (r *run) observeRequest(m *nodeModel, p int32, ks []int32, w func(int32) float64, wt float64) {
	r.observeRequestAs(m, p, ks, w, wt, nil)
}

// observeRequestAs is observeRequest with the kinds of p and its calls
// mapped by kindAt (nil: as they are), for a replica's request (isolated.go).
func (r *run) observeRequestAs(m *nodeModel, p int32, ks []int32, w func(int32) float64, wt float64, kindAt func(int32) int32) {
	// A replica's request (kindAt given: isolatedModel borrows it) is read
	// from its arrival: the replica's queue (qbegin) is its own solve's,
	// learnt by another worker at the same time.
	queued := r.queued
	own := kindAt == nil
	if kindAt != nil {
		queued = func(_ int32, _, last, arr int64) (int64, int64) { return last, arr }
	} else {
		kindAt = func(k int32) int32 { return k }
	}
	pc := &r.calls[p]
	pk := kindAt(pc.kind)
	sl := slot{p: p, lastKid: -1, lastRet: -1, prev: noKind, last: pc.arr}
	if pc.callMsg < 0 && len(ks) > 0 {
		sl.last = r.sendOf(ks[0])
	}
	steps := r.steps(nil, ks)
	wp := 1.0
	var made uint64
	for _, st := range steps {
		cc := &r.calls[st.c]
		if st.back {
			sl.backFrom(st.c, cc)
			continue
		}
		wc := w(st.c)
		ck := kindAt(cc.kind)
		wp = min(wp, wc)
		cx := ctxKey{pk: pk, prev: sl.prev, pos: min(sl.pos, maxPos), ret: sl.ret}
		last, arr := queued(p, cc.send, sl.last, r.arrOf(p))
		if gl, ga, waited := r.observedGaps(m, st.c, last, arr); waited != -1 {
			m.observeTrans(cx, ck, wc*wt)
			if waited >= 0 {
				m.addHand(waited, wc)
			}
		} else {
			m.observe(cx, ck, gl, ga, wc, wc*wt)
		}
		m.addOverlap(pk, sl.out > 0, wc)
		m.rep.addLink(repeatBin(made, kindBit(ck)), wc)
		m.sets.add(pk, made, sl.pos, ck, wc)
		made |= kindBit(ck)
		if sl.lastRet >= 0 {
			if lr := &r.calls[sl.lastRet]; lr.repBytes >= 0 && cc.reqBytes >= 0 {
				m.addSizeLink(kindAt(lr.kind), ck, pk, cc.reqBytes-lr.repBytes, wc)
			}
		}
		m.observeOrigin(pc, ck, cc.reqBytes, wc)
		tok, rid, thr := r.features(st.c, p, sl.lastKid, sl.lastRet)
		if tok >= 0 {
			m.tok.addLink(tok, wc)
		}
		if rid >= 0 {
			m.rid.addLink(rid, wc)
		}
		if thr >= 0 {
			m.thr.addLink(thr, wc)
		}
		if own && r.idf != nil {
			m.assoc.addLink(pk, ck, r.ev[p].tok, r.ev[st.c].tok, wc)
		}
		sl.pos++
		sl.prev, sl.lastKid = ck, st.c
		if cc.retMsg >= 0 && cc.flags&flagOneWay == 0 {
			sl.out++
		}
	}
	if pc.retMsg < 0 || pc.flags&flagOneWay != 0 {
		return
	}
	cx := ctxKey{pk: pk, prev: sl.prev, pos: min(sl.pos, maxPos), ret: sl.ret}
	last, arr := queued(p, pc.rep, sl.last, r.arrOf(p))
	m.observe(cx, endKind, pc.rep-last, pc.rep-arr, wp, wp*wt)
	m.sets.add(pk, made, sl.pos, endKind, wp)
	m.observeOrigin(pc, endKind, pc.repBytes, wp)
	if sl.lastRet >= 0 {
		if lr := &r.calls[sl.lastRet]; lr.repBytes >= 0 && pc.repBytes >= 0 {
			m.addSizeLink(kindAt(lr.kind), endKind, pk, pc.repBytes-lr.repBytes, wp)
		}
	}
}

// observeOthers records the evidence every call gives for the candidate
// requests it was not assigned to, each in its state when the call left.
func (r *run) observeOthers(n int32, m *nodeModel, asg func(int32) int32, byParent map[int32][]int32, w func(int32) float64) {
	r.observeFIFO(n, m, asg, byParent, w)
	r.observeWaiters(n, m, asg, byParent, w)
	if r.idf == nil && !r.hasIDs {
		return
	}
	r.sweep(n, func(c int32, cands []int32) {
		a := asg(c)
		if a == undecided {
			return
		}
		t := r.sendOf(c)
		for _, q := range cands {
			if q == a {
				continue
			}
			lastKid, lastRet := r.stateAt(byParent[q], t)
			tok, rid, thr := r.features(c, q, lastKid, lastRet)
			wc := w(c)
			if tok >= 0 {
				m.tok.addOther(tok, wc)
			}
			if rid >= 0 {
				m.rid.addOther(rid, wc)
			}
			if thr >= 0 {
				m.thr.addOther(thr, wc)
			}
		}
	})
}

// stateAt returns the last call sent and the last call answered before t
// among ks (in order of send).
func (r *run) stateAt(ks []int32, t int64) (lastKid, lastRet int32) {
	lastKid, lastRet = -1, -1
	var lastBack int64
	for _, k := range ks {
		if r.sendOf(k) >= t {
			break
		}
		lastKid = k
		if kc := &r.calls[k]; kc.retMsg >= 0 && kc.back <= t && (lastRet < 0 || kc.back > lastBack) {
			lastRet, lastBack = k, kc.back
		}
	}
	return lastKid, lastRet
}

// hasIDsOrThreads reports whether any message carries a request id or a
// thread.
func (r *run) hasIDsOrThreads() bool {
	for i := range r.l.msgs {
		m := &r.l.msgs[i]
		if m.ReqID != 0 || m.Sender.Known() || m.Receiver.Known() {
			return true
		}
	}
	return false
}

// observeFIFO records the FIFO bins (search.fifoBins) of every call for
// the request it was assigned to and for its other candidates, each in its
// state when the call left.
func (r *run) observeFIFO(n int32, m *nodeModel, asg func(int32) int32, byParent map[int32][]int32, w func(int32) float64) {
	var es []int32
	var rs []readyEv // when each of es became ready (fifotie.go)
	fan := r.fanOrder(m)
	// the order's weight is learnt at fine timestamps only, and not where
	// requests fan out (fifoOrder)
	cond := m.tick == 0 && !m.parallel()
	var fo fifoOrder
	var rk readyRanks
	r.sweep(n, func(c int32, cands []int32) {
		a := asg(c)
		if a == undecided {
			return
		}
		t, k := r.sendOf(c), r.calls[c].kind
		es, rs = es[:0], rs[:0]
		for _, q := range cands {
			made := false
			var kinds uint64
			rd := r.arrivalEv(q)
			if fan {
				rd = r.fanStartEv(q, byParent[q], t)
			}
			for _, d := range byParent[q] {
				if r.sendOf(d) >= t {
					break
				}
				made = made || r.calls[d].kind == k
				kinds |= kindBit(r.calls[d].kind)
				if b := r.calls[d].back; b != noTime && b < t && b > rd.t && r.l.arrLo != nil {
					rd = readyEv{b, r.calls[d].retMsg}
				}
			}
			if !made {
				es, rs = append(es, q), append(rs, rd)
			}
			if q != a {
				m.rep.addOther(repeatBin(kinds, kindBit(k)), w(c))
			}
		}
		nbs := rk.of(r, es, rs)
		for i, e := range es {
			if r.observeCrossRank(n, m, a, e, es, rs, i, w(c)) {
				continue
			}
			b := min(nbs[i], fifoBins-1)
			if e == a {
				m.fifo.addLink(b, w(c))
			} else {
				m.fifo.addOther(b, w(c))
			}
		}
		if cond {
			r.observeOrder(&fo, a, c, t, k, cands, es, rs, byParent, w(c))
		}
		if !fan {
			r.observeCross(n, m, a, k, es, byParent, w(c))
		}
	})
	if cond {
		m.fifoDamp = 1 - fo.weight()
	}
	r.keepCross(n, m)
}
