package assembly

import (
	"cmp"
	"slices"
)

// The confidence of a joint link is the posterior probability of the
// call's request under the model: the last pass's search sums, for each
// request a call can go to, over the hypotheses of the beam that give it
// that request (search.sum: a marginal; the other passes keep the best
// hypothesis per request, a max-marginal, which leaves the rest of the
// beam's mass out). The local search then moves some calls; a moved
// call's confidence is that of its new request in the search's
// posterior (it kept the one of the request it left), the probability
// the posterior leaves to unlisted requests shared among them
// (posterior).

// posterior sets the confidence and alternatives of node n's joint links
// to the posterior of each call's final request: the mean over the
// ensemble's members (members.go) of the search's, mixed with the
// distribution at the call's send for the mass the beam let go
// (pruned.go), and of the shadow searches' (shadow.go), each spread for
// what the node's evidence does not back (calib.go).
func (r *run) posterior(n int32) {
	k := searchAlts
	var post []alt
	backed := r.backing(n)
	r.sweep(n, func(c int32, cands []int32) {
		a := r.parent[c]
		if r.exact[c] >= 0 || r.nCand[c] < 2 {
			return
		}
		post = append(post[:0], alt{r.picked[c], r.conf[c]})
		for _, al := range r.alts[int(c)*k : int(c)*k+k] {
			if al.prob > 0 {
				post = append(post, al)
			}
		}
		r.members(c, a, post, cands, backed)
	})
}

// probOf returns the probability of request e in posterior post; a
// request it does not list shares what the listed ones leave with the
// other unlisted candidates (of nCand, and none).
func probOf(post []alt, e int32, nCand int) float64 {
	left := 1.0
	for _, a := range post {
		if a.p == e {
			return float64(a.prob)
		}
		left -= float64(a.prob)
	}
	unlisted := nCand + 1 - len(post)
	if left <= 0 || unlisted <= 0 {
		return 0
	}
	return left / float64(unlisted)
}

// repost sets call c's confidence in request a and its alternatives
// from the probabilities ps of the candidates qs (requests, and -1:
// none).
func (r *run) repost(c, a int32, qs []int32, ps []float64) {
	type qv struct {
		q int32
		p float64
	}
	all := make([]qv, 0, len(qs))
	sum := 0.0
	for i, q := range qs {
		if p := ps[i]; p > 0 || q == a {
			all = append(all, qv{q, p})
			sum += p
		}
	}
	slices.SortFunc(all, func(x, y qv) int {
		if c := cmp.Compare(y.p, x.p); c != 0 {
			return c
		}
		return cmp.Compare(x.q, y.q)
	})
	if sum <= 0 {
		sum = 1
	}
	k := searchAlts
	i := 0
	for _, x := range all {
		switch {
		case x.q == a:
			r.conf[c] = float32(x.p / sum)
		case i < k:
			r.alts[int(c)*k+i] = alt{x.q, float32(x.p / sum)}
			i++
		}
	}
	for ; i < k; i++ {
		r.alts[int(c)*k+i] = alt{-1, 0}
	}
}
