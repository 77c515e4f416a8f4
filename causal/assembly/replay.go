package assembly

import (
	"math"
	"slices"
)

// replay scores request p with its calls ks.
func (r *run) replay(s *search, p int32, ks []int32) float64 {
	pc := &r.calls[p]
	sl := slot{p: p, lastKid: -1, lastRet: -1, prev: noKind, last: pc.arr}
	if pc.callMsg < 0 {
		lo, _ := r.window(p, r.openSpan(pc.callee))
		sl.last = lo + r.tolAt(pc.callee)
	}
	steps := r.steps(s.stepBuf[:0], ks)
	s.stepBuf = steps
	total := 0.0
	for _, st := range steps {
		cc := &r.calls[st.c]
		if st.back {
			sl.backFrom(st.c, cc)
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

// step is one event of a request's calls: a send, or a reply's arrival.
type step struct {
	t    int64
	rank uint8
	back bool
	c    int32
}

// steps returns the sends and replies of the calls ks in the order the
// search takes them (cmpEvent), appended to buf.
func (r *run) steps(buf []step, ks []int32) []step {
	steps := slices.Grow(buf, 2*len(ks))
	for _, c := range ks {
		cc := &r.calls[c]
		steps = append(steps, step{r.sendOf(c), evSend, false, c})
		if cc.callMsg >= 0 && cc.retMsg >= 0 && cc.flags&flagOneWay == 0 {
			t, rank := backAt(cc.send, cc.back)
			steps = append(steps, step{t, rank, true, c})
		}
	}
	slices.SortFunc(steps, func(a, b step) int { return cmpEvent(a.t, b.t, a.rank, b.rank, a.c, b.c, a.back, b.back) })
	return steps
}
