package assembly

import (
	"cmp"
	"slices"
)

// A request's doubt counted once per rival (issue 11).
//
// A call's link is wrong when the call belongs to another request, its
// rival; the engine's errors are exchanges between a request and its
// rivals, and one exchange moves every call of the request it touches
// at once: at an event loop whose readiness order two requests swap,
// both the calls each makes after its first return go to the other
// (a chain: auth, then todo), and a request of a fan-out whose arrival
// was read on the wrong side of another's has its reads to every shard
// exchanged with that other's. Multiplied slot by slot as if
// independent (a slot: a call and a kind of child, the smaller of its
// links' product and of its keep, one less what each call of the kind
// given elsewhere gives it, multiplied), the request is doubted once
// per call the exchange moves, where it is wrong once: on the unseen event loop at 16
// in flight the requests were stated 0.41 for 0.71 right, on the
// fan-out 0.29 for 0.43 and on TraceWeaver's media trace 0.71 for 0.81,
// their links 0.73–0.92 for 0.86–0.93.
//
// So a call's doubt is grouped by rival. Per member, for a call c (a
// parent) and each rival q (another request at c's node), the doubt
// that c and q exchanged calls is the largest of the probabilities, in
// that member, that one of c's children is q's and that a call given to
// q is c's (the two ends of an exchange, as the slots' Fréchet bound
// took them: a swap doubted once); the call's children's probabilities
// of no request, of a rival past the searchAlts likeliest, and of the
// calls given to none are each a doubt of their own. The call has
// exactly its own children with the product over rivals of one less
// their doubt, times the product of the others. The largest of a
// rival's doubts is the largest joint probability of the exchanges with
// it the marginals allow (an upper Fréchet bound, where the slots took
// it per kind; docs/accuracy.md, "One doubt per rival"): where a
// request's exchanges with one rival are separate events it states too
// much. Nothing is fitted; the links, their
// alternatives and the assignment are as before.

// rivalP is a rival request (its call, or -1: none) and a probability.
type rivalP struct {
	q int32
	p float64
}

// rivalDoubts holds, per call (as a parent), the doubt from each rival
// the calls given elsewhere list it against (the other end of an
// exchange: the call's request), and the product of one less the doubts
// from rivals past the likeliest (tail). Indexed by call, as the nodes'
// posteriors, run concurrently, each write their own requests'.
type rivalDoubts struct {
	by   [][]rivalP
	tail []float64
}

// newRivalDoubts returns the rival doubts of n calls, none yet.
func newRivalDoubts(n int) rivalDoubts {
	d := rivalDoubts{by: make([][]rivalP, n), tail: make([]float64, n)}
	for i := range d.tail {
		d.tail[i] = 1
	}
	return d
}

// add doubts call c for rival q with probability p: the largest of its
// doubts for a request, every doubt for none (each call given to none
// is an exchange of its own).
func (d rivalDoubts) add(c, q int32, p float64) {
	xs := d.by[c]
	if q >= 0 {
		for i := range xs {
			if xs[i].q == q {
				xs[i].p = max(xs[i].p, p)
				return
			}
		}
	}
	d.by[c] = append(xs, rivalP{q, p})
}

// clone returns a copy of d whose slices are its own.
func (d rivalDoubts) clone() rivalDoubts {
	c := rivalDoubts{by: make([][]rivalP, len(d.by)), tail: slices.Clone(d.tail)}
	for q, xs := range d.by {
		if len(xs) > 0 {
			c.by[q] = slices.Clone(xs)
		}
	}
	return c
}

// noteRivals records, for member e, call c's (given to request a)
// probabilities ps of the candidates qs: its searchAlts likeliest rivals
// as c's own (run.mriv) and as doubts of those rivals against a
// (run.mback), the rest in those rivals' tails.
func (r *run) noteRivals(e int, c, a int32, qs []int32, ps []float64) {
	var top []rivalP
	for i, q := range qs {
		if q >= 0 && q != a && ps[i] > 0 {
			top = append(top, rivalP{q, ps[i]})
		}
	}
	slices.SortFunc(top, func(x, y rivalP) int {
		if c := cmp.Compare(y.p, x.p); c != 0 {
			return c
		}
		return cmp.Compare(x.q, y.q)
	})
	for i, x := range top {
		if i >= searchAlts {
			r.mback[e].tail[x.q] *= 1 - x.p
			continue
		}
		r.mback[e].add(x.q, a, x.p)
	}
	r.mriv[e][c] = slices.Clip(top[:min(len(top), searchAlts)])
}

// backDoubts returns member's rival doubts: what posterior recorded
// (run.mback), and the alternatives of the calls it did not post.
func (r *run) backDoubts(member int) rivalDoubts {
	d := r.mback[member].clone()
	k := searchAlts
	for c := range r.calls {
		for _, a := range r.alts[c*k : c*k+k] {
			if a.p >= 0 && a.prob > 0 && a.p != r.parent[c] && !r.posted[c] {
				d.add(a.p, r.parent[c], float64(a.prob))
			}
		}
	}
	return d
}

// rivalsOf returns member m's likeliest rivals of call d's request.
func (r *run) rivalsOf(m int, d int32, buf []rivalP) []rivalP {
	if r.posted[d] {
		return r.mriv[m][d]
	}
	buf = buf[:0]
	k := searchAlts
	for _, a := range r.alts[int(d)*k : int(d)*k+k] {
		if a.p >= 0 && a.prob > 0 && a.p != r.parent[d] {
			buf = append(buf, rivalP{a.p, float64(a.prob)})
		}
	}
	return buf
}

// rivalsProb returns member m's probability that call c has exactly its
// own children, kids being those it was given (a child whose parent is
// no longer c does not count): the product over its rivals of one less
// the largest doubt from each, times one less each doubt of no rival.
func (b *builder) rivalsProb(m int, c int32, kids []int32) float64 {
	r := b.r
	doubt := b.rivBuf[:0]
	p := 1.0
	for _, d := range kids {
		if r.parent[d] != c {
			continue
		}
		left := 1 - r.linkProb(m, d)
		rs := r.rivalsOf(m, d, b.altBuf)
		if !r.posted[d] {
			b.altBuf = rs
		}
		for _, x := range rs {
			if x.q == c {
				continue
			}
			doubt = maxDoubt(doubt, x)
			left -= x.p
		}
		if left > 0 {
			p *= 1 - min(1, left)
		}
	}
	back := b.back[m]
	p *= back.tail[c]
	for _, x := range back.by[c] {
		if x.q < 0 {
			p *= 1 - x.p
			continue
		}
		doubt = maxDoubt(doubt, x)
	}
	for _, x := range doubt {
		p *= 1 - min(1, x.p)
	}
	b.rivBuf = doubt
	return max(0, p)
}

// maxDoubt merges x into ds, the largest doubt per rival.
func maxDoubt(ds []rivalP, x rivalP) []rivalP {
	for i := range ds {
		if ds[i].q == x.q {
			ds[i].p = max(ds[i].p, x.p)
			return ds
		}
	}
	return append(ds, x)
}

// linkProb returns member m's probability of call c's link to its
// parent: the member's where posterior set it, else the link's
// confidence (an exact link's 1).
func (r *run) linkProb(m int, c int32) float64 {
	if r.posted[c] {
		return float64(r.mconf[m][c])
	}
	return float64(r.conf[c])
}
