package assembly

import (
	"math"
	"slices"
)

// objective is the log likelihood of an assignment of node n's calls
// (asg: a call's request, -1 none) under model m, computed request by
// request as the search scores it: the reference the search is checked
// against. It is -Inf when the assignment breaks a hard constraint.
func (r *run) objective(n int32, m *nodeModel, asg func(c int32) int32) float64 {
	span := r.openSpan(n)
	byParent := map[int32][]int32{}
	total := 0.0
	for _, c := range r.childrenOf[n] {
		p := asg(c)
		if p < 0 {
			if r.exact[c] >= 0 {
				return math.Inf(-1)
			}
			total += m.logBackgroundOf(c, r.calls[c].kind)
			continue
		}
		if r.exact[c] >= 0 && r.exact[c] != p {
			return math.Inf(-1)
		}
		lo, hi := r.window(p, span)
		if t := r.sendOf(c); t < lo || t > hi || !r.fits(c, p) {
			return math.Inf(-1)
		}
		byParent[p] = append(byParent[p], c)
	}
	s := &search{r: r, m: m}
	for _, p := range r.parentsOf[n] {
		total += r.replay(s, p, byParent[p])
	}
	return total + r.fifoObjective(n, m, asg)
}

// fifoObjective is the FIFO evidence of an assignment (search.fifoBins),
// computed call by call over the requests open when each call left.
func (r *run) fifoObjective(n int32, m *nodeModel, asg func(c int32) int32) float64 {
	span := r.openSpan(n)
	kids := append([]int32(nil), r.childrenOf[n]...)
	// in the order the search takes the sends: by time, then call
	slices.SortFunc(kids, func(a, b int32) int { return cmpEvent(r.sendOf(a), r.sendOf(b), evSend, evSend, a, b, false, false) })
	made := map[int32]uint64{}  // request -> kind bits of the calls it made so far
	sent := map[int32][]int32{} // request -> the calls it made so far
	ready := func(q int32, t int64) readyEv {
		ev := r.arrivalEv(q)
		for _, e := range sent[q] {
			if b := r.calls[e].back; b != noTime && b < t && b > ev.t {
				ev = readyEv{b, r.calls[e].retMsg}
			}
		}
		return ev
	}
	total := 0.0
	for _, c := range kids {
		p := asg(c)
		kb := kindBit(r.calls[c].kind)
		t := r.sendOf(c)
		if p >= 0 && made[p]&kb == 0 {
			x := fifoCtx{kinds: func(q int32) uint64 { return made[q] }, ready: func(q int32) readyEv { return ready(q, t) }}
			f, _ := r.fifoOf(m, p, nil, x, func(yield func(int32)) {
				for _, q := range r.parentsOf[n] {
					lo, hi := r.window(q, span)
					if q != p && lo <= t && t <= hi && made[q]&kb == 0 && r.fits(c, q) {
						yield(q)
					}
				}
			})
			total += f
		}
		if p >= 0 {
			made[p] |= kb
			sent[p] = append(sent[p], c)
		}
	}
	return total
}
