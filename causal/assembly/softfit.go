package assembly

import (
	"slices"
)

// Soft EM (Options.EM). Hard EM fits each node's model on the last
// pass's best assignment; a call whose request was in doubt then teaches
// the delay of the request the search chose, and the search chose the
// one whose delay the model found likely, so the fitted delays are
// sharper than the true ones (a mixture fitted on its most likely
// components). Soft EM fits the expected statistics instead: each call
// counts in its final request with the posterior probability the last
// pass gave that request (its search and local search: posterior.go),
// its delays count in each other request its posterior lists with that
// request's probability (in the state that request was in when the call
// left, its other calls as assigned), and its probability of none counts
// as background. The call graph, sizes and evidence are learnt from the
// final requests, each weighted by that probability. Cross-fitting is
// kept: a model fitted on one parity of blocks takes a call's
// alternatives in those blocks only. EMAuto (the default) fits a node by
// soft EM while the mean posterior of its calls' requests is below
// softBelow (the first passes at many requests in flight), by hard EM
// once the assignment is sure.

// softBelow is the mean posterior probability of a node's calls'
// requests below which EMAuto re-fits the node by soft EM.
const softBelow = 0.5

// softPass reports whether node n's models are re-fitted from the pass
// just run by soft EM.
func (r *run) softPass(n int32) bool {
	switch r.opt.EM {
	case EMSoft:
		return true
	case EMAuto:
		return r.meanParentProb(n) < softBelow
	}
	return false
}

// meanParentProb returns the mean posterior probability of the final
// requests of node n's calls whose request was in doubt (1 if none was).
func (r *run) meanParentProb(n int32) float64 {
	s, k := 0.0, 0
	for _, c := range r.childrenOf[n] {
		if r.exact[c] >= 0 || r.nCand[c] < 2 {
			continue
		}
		s += r.parentProb(c)
		k++
	}
	if k == 0 {
		return 1
	}
	return s / float64(k)
}

// postOf returns call c's posterior over its requests as the last pass
// left it: the request the search picked with its confidence, then the
// listed alternatives (-1: none).
func (r *run) postOf(buf []alt, c int32) []alt {
	k := searchAlts
	buf = append(buf[:0], alt{r.picked[c], r.conf[c]})
	for _, a := range r.alts[int(c)*k : int(c)*k+k] {
		if a.prob > 0 && a.p != r.picked[c] {
			buf = append(buf, a)
		}
	}
	return buf
}

// parentProb returns the posterior probability of call c's final request
// (1 for an exact link or a call with one candidate): a call the local
// search moved has the probability its new request had in the search's
// posterior.
func (r *run) parentProb(c int32) float64 {
	if r.exact[c] >= 0 || r.nCand[c] < 2 {
		return 1
	}
	var buf [8]alt
	return probOf(r.postOf(buf[:0], c), r.parent[c], int(r.nCand[c]))
}

// observeAlternatives records in m, for every call of node n whose
// request was in doubt, its delays in each other request its posterior
// lists (among those include accepts), weighted by that request's
// probability, and its probability of none as background. byParent holds
// each request's calls under asg, in order of send.
func (r *run) observeAlternatives(n int32, m *nodeModel, asg func(int32) int32, byParent map[int32][]int32, include func(int32) bool) {
	var post []alt
	var ks []int32
	var buf []step
	for _, c := range r.childrenOf[n] {
		if r.exact[c] >= 0 || r.nCand[c] < 2 {
			continue
		}
		post = r.postOf(post, c)
		for _, a := range post {
			switch {
			case a.p == asg(c) || a.prob <= 0:
			case a.p < 0:
				m.bg[r.calls[c].kind] += float64(a.prob)
			case include(a.p):
				ks = append(ks[:0], byParent[a.p]...)
				i, _ := slices.BinarySearchFunc(ks, r.sendOf(c), func(k int32, t int64) int { return cmpTime(r.sendOf(k), t) })
				ks = slices.Insert(ks, i, c)
				buf = r.observeAsIf(m, a.p, ks, c, float64(a.prob), buf)
			}
		}
	}
}

// observeAsIf walks request p with calls ks (in order of send, c among
// them) as observeRequest does, up to c's send, and records c's delays
// in that state with weight w.
func (r *run) observeAsIf(m *nodeModel, p int32, ks []int32, c int32, w float64, buf []step) []step {
	pc := &r.calls[p]
	sl := slot{p: p, lastKid: -1, lastRet: -1, prev: noKind, last: pc.arr}
	if pc.callMsg < 0 && len(ks) > 0 {
		sl.last = r.sendOf(ks[0])
	}
	buf = r.steps(buf[:0], ks)
	for _, st := range buf {
		cc := &r.calls[st.c]
		switch {
		case st.back:
			sl.last = max(sl.last, cc.back)
			sl.ret = retClass(cc.repBytes)
		case st.c == c:
			cx := ctxKey{pk: pc.kind, prev: sl.prev, pos: min(sl.pos, maxPos), ret: sl.ret}
			last, arr := r.queued(p, cc.send, sl.last, r.arrOf(p))
			if gl, ga, waited := r.observedGaps(m, c, last, arr); waited >= 0 {
				m.addHand(waited, w)
			} else if waited == -1 {
				m.observeGaps(cx, cc.kind, gl, ga, w)
			}
			return buf
		default:
			sl.pos++
			sl.prev = cc.kind
		}
	}
	return buf
}
