package assembly

import "math"

// replay scores request p with its calls ks.
func (r *run) replay(s *search, p int32, ks []int32) float64 {
	pc := &r.calls[p]
	sl := slot{p: p, lastKid: -1, lastRet: -1, prev: noKind, last: pc.arr}
	if pc.callMsg < 0 {
		lo, _ := r.window(p, r.openSpan(pc.callee))
		sl.last = lo + r.tol
	}
	type step struct {
		t   int64
		typ uint8
		c   int32
	}
	var steps []step
	for _, c := range ks {
		cc := &r.calls[c]
		steps = append(steps, step{r.sendOf(c), evSend, c})
		if cc.callMsg >= 0 && cc.retMsg >= 0 && cc.flags&flagOneWay == 0 {
			steps = append(steps, step{max(cc.back, cc.send), evBack, c})
		}
	}
	// insertion sort: few steps
	for i := 1; i < len(steps); i++ {
		for j := i; j > 0; j-- {
			a, b := steps[j-1], steps[j]
			if a.t < b.t || a.t == b.t && (a.typ < b.typ || a.typ == b.typ && a.c < b.c) {
				break
			}
			steps[j-1], steps[j] = b, a
		}
	}
	total := 0.0
	for _, st := range steps {
		cc := &r.calls[st.c]
		if st.typ == evBack {
			sl.out--
			sl.last = max(sl.last, cc.back)
			sl.lastRet, sl.ret = st.c, retClass(cc.repBytes)
			continue
		}
		total += s.linkScore(st.c, &sl)
		sl = s.extend(&sl, st.c)
	}
	if pc.retMsg >= 0 && pc.flags&flagOneWay == 0 && sl.out > 0 {
		return math.Inf(-1)
	}
	return total + s.endScore(&sl)
}
