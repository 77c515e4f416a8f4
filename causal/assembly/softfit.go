package assembly

import (
	"os"
	"slices"
)

// softMode is an experiment switch (temporary).
var softMode = os.Getenv("WIREPATH_SOFT")

// postOf returns call c's posterior over its requests as the last pass
// left it: the request the search picked with its confidence, then the
// listed alternatives (-1: none).
func (r *run) postOf(buf []alt, c int32) []alt {
	k := r.opt.Alternatives
	buf = append(buf[:0], alt{r.picked[c], r.conf[c]})
	for _, a := range r.alts[int(c)*k : int(c)*k+k] {
		if a.prob > 0 && a.p != r.picked[c] {
			buf = append(buf, a)
		}
	}
	return buf
}

// parentProb returns the posterior probability of call c's final request.
func (r *run) parentProb(c int32) float64 {
	if r.exact[c] >= 0 || r.nCand[c] < 2 {
		return 1
	}
	var buf [8]alt
	return probOf(r.postOf(buf[:0], c), r.parent[c], int(r.nCand[c]))
}

// observeAlternatives records, for every call node n made whose request
// was in doubt, the delay it would have had in each of the other
// requests its posterior gives it to (weighted by that probability, each
// request in its state when the call left, its other calls as assigned),
// and the probability of none as background: the expected delays of soft
// EM, where the assigned request alone would teach the delays the search
// chose.
func (r *run) observeAlternatives(n int32, m *nodeModel, byParent map[int32][]int32, include func(int32) bool, bgSoft bool) {
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
			case a.p == r.parent[c] || a.prob <= 0:
			case a.p < 0:
				if bgSoft {
					m.bg[r.calls[c].kind] += float64(a.prob)
				}
			case include(a.p):
				ks = append(ks[:0], byParent[a.p]...)
				ks = append(ks, c)
				slices.SortStableFunc(ks, func(x, y int32) int { return cmpTime(r.sendOf(x), r.sendOf(y)) })
				buf = r.observeAsIf(m, a.p, ks, c, float64(a.prob), buf)
			}
		}
	}
}

// observeAsIf walks request p with calls ks (in order of send, c among
// them) up to c's send and records c's delays in that state with weight
// w.
func (r *run) observeAsIf(m *nodeModel, p int32, ks []int32, c int32, w float64, buf []step) []step {
	pc := &r.calls[p]
	sl := slot{p: p, lastKid: -1, lastRet: -1, prev: noKind, last: pc.arr}
	if pc.callMsg < 0 && len(ks) > 0 {
		sl.last = r.sendOf(ks[0])
	}
	buf = r.steps(buf[:0], ks)
	for _, st := range buf {
		cc := &r.calls[st.c]
		if st.back {
			sl.last = max(sl.last, cc.back)
			sl.ret = retClass(cc.repBytes)
			continue
		}
		if st.c == c {
			cx := ctxKey{pk: pc.kind, prev: sl.prev, pos: min(sl.pos, maxPos), ret: sl.ret}
			gl, ga := r.observedGaps(c, sl.last, r.arrOf(p))
			m.observeGaps(cx, cc.kind, gl, ga, w)
			return buf
		}
		sl.pos++
		sl.prev = cc.kind
	}
	return buf
}
