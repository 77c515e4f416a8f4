package assembly

import (
	"math"
	"slices"
)

// A request that a node served alone — no other request of the node was
// open at any time while it was — made every call the node sent in that
// time (background calls aside), and its calls are known without any
// search. Such requests are a sample of the call graph that no mistake of
// the search can bias: in the first passes the search's assignments are
// poor, and a call graph learnt from them alone keeps their mistakes (a
// request that took another's call made two, the other none). Calls
// handed a pooled connection make the timeline's deconvolution see one
// call follow another's reply as if it were a serial request's next
// call, for the same reason. The isolated requests' call graph is given
// as much weight as the rest of the data wherever the node has some.

// isolatedModel returns the call graph of node n's isolated requests, in
// a model of its own, and how many of them there were.
func (r *run) isolatedModel(n int32) (*nodeModel, int) {
	iso := r.isolated(n)
	if len(iso) == 0 {
		return nil, 0
	}
	ks := make(map[int32][]int32, len(iso))
	r.sweep(n, func(c int32, cands []int32) {
		if len(cands) == 1 && iso[cands[0]] {
			ks[cands[0]] = append(ks[cands[0]], c)
		}
	})
	m := newNodeModel(1, 0)
	rate := r.arrivalRate(n)
	for p := range iso {
		k := ks[p]
		slices.SortStableFunc(k, func(a, b int32) int { return cmpTime(r.sendOf(a), r.sendOf(b)) })
		pc := &r.calls[p]
		r.observeRequest(m, p, k, func(int32) float64 { return 1 }, isoWeight(rate, pc.rep-pc.arr))
	}
	return m, len(iso)
}

// maxIsoWeight bounds the weight of one isolated request.
const maxIsoWeight = 50

// isoWeight weighs an isolated request that lasted d ns at a node whose
// requests arrive at rate per ns by the inverse of the chance that no
// other arrived while it was open (Poisson arrivals: e^(-rate·d)): a long
// request, one that made more calls, is less often alone, and without the
// weight the isolated requests would teach that requests make fewer
// calls than they do.
func isoWeight(rate float64, d int64) float64 {
	return min(math.Exp(rate*float64(max(d, 0))), maxIsoWeight)
}

// arrivalRate returns how many requests per ns node n received over the
// time they spanned (0 for fewer than two).
func (r *run) arrivalRate(n int32) float64 {
	ps := r.parentsOf[n]
	lo, hi, k := int64(math.MaxInt64), int64(math.MinInt64), 0
	for _, p := range ps {
		if a := r.calls[p].arr; a != noTime {
			lo, hi, k = min(lo, a), max(hi, a), k+1
		}
	}
	if k < 2 || hi <= lo {
		return 0
	}
	return float64(k-1) / float64(hi-lo)
}

// isolated returns the requests of node n, with their arrival and reply
// seen, whose time at n (within the tolerance) no other such request's
// overlaps (a request whose arrival or reply was lost is left out).
func (r *run) isolated(n int32) map[int32]bool {
	ps := r.parentsOf[n] // by arrival
	span := r.openSpan(n)
	out := map[int32]bool{}
	hiBefore := int64(noTime) // the latest end of the requests before
	seen := func(p int32) bool {
		pc := &r.calls[p]
		return pc.callMsg >= 0 && pc.retMsg >= 0 && pc.flags&flagOneWay == 0
	}
	for i, p := range ps {
		if !seen(p) {
			// its arrival or reply was lost: where it ends is not known,
			// and taking the longest it could have lasted would leave no
			// request isolated after one loss
			continue
		}
		lo, hi := r.window(p, span)
		alone := lo > hiBefore
		for j := i + 1; alone && j < len(ps); j++ {
			if seen(ps[j]) {
				nlo, _ := r.window(ps[j], span)
				alone = nlo > hi
				break
			}
		}
		if alone {
			out[p] = true
		}
		hiBefore = max(hiBefore, hi)
	}
	return out
}

// maxIsoScale bounds how much an isolated request's call graph is
// multiplied: a few isolated requests are a noisy sample, and multiplied
// a hundredfold they would make what they did not happen to do (an
// optional call) impossible.
const maxIsoScale = 10

// addTrans adds the call graph of iso to m's at the levels that know the
// request's kind, scaled so that it weighs as much as m's own (at least
// its own count, at most maxIsoScale times it).
func addTrans(m, iso *nodeModel) {
	all := tKey{lvl: 8}
	own, theirs := 0.0, 0.0
	if d := m.trans[all]; d != nil {
		own = d.n
	}
	if d := iso.trans[all]; d != nil {
		theirs = d.n
	}
	if theirs == 0 {
		return
	}
	scale := min(max(1, own/theirs), maxIsoScale)
	for k, d := range iso.trans {
		if k.lvl > 1 {
			continue
		}
		md := m.trans[k]
		if md == nil {
			md = &dist{}
			m.trans[k] = md
		}
		for next, v := range d.c {
			md.add(next, v*scale)
		}
	}
	clear(m.tcache)
	clear(m.scorers)
}
