package assembly

// The ensemble. A call's posterior is the mean over three members: the
// main search's (mixed with its send's distribution for what its beam
// let go: pruned.go) and the two shadow searches', one under each half of
// the cross-fitted model (shadow.go); where a node has no halves, the
// three are the main search's. The link's confidence and alternatives
// are that mean.
//
// A request's confidence is the mean over the members of the probability
// each gives its whole tree: over its calls and their rivals (the other
// requests a call's children or the calls given to them could belong
// to: rivals.go), one less the largest doubt from each rival, each
// exchange counted once. The mean of the products, not the product of the
// means: a member that is right about a request tends to be right about
// all its links at once, and a product of averaged links, each doubted
// for the halves' disagreement, doubts a request as many times as it has
// links (over the testbed's 32 runs that made the requests
// under-confident, stated 78 % for 85 % right).

// nMembers is the size of the ensemble: the main search and two halves.
const nMembers = 3

// members sets call c's confidence and alternatives (request a, its
// candidates cands) from the ensemble, each member's probability of a in
// mconf, and what each gives the other requests as their rivals
// (noteRivals). post is the main search's posterior (its request, then its
// alternatives); each member's is spread by the share 1 − backed of it
// the node's evidence does not back (calib.go).
func (r *run) members(c, a int32, post []alt, cands []int32, backed float64) {
	qs := make([]int32, 0, len(cands)+1)
	qs = append(append(qs, -1), cands...)
	var ps [nMembers][]float64
	for e := range ps {
		ps[e] = make([]float64, len(qs))
	}
	mean := make([]float64, len(qs))
	for i, q := range qs {
		ps[0][i] = r.mixedProb(c, post, q, len(cands))
	}
	for e := 1; e < nMembers; e++ {
		if !r.shadowOf(e-1, c, qs, ps[e], len(cands)) {
			copy(ps[e], ps[0])
		}
	}
	for e := range ps {
		normalize(ps[e])
		unback(ps[e], backed)
		r.noteRivals(e, c, a, qs, ps[e])
		for i, q := range qs {
			p := ps[e][i]
			mean[i] += p * memberW(e)
			if q == a {
				r.mconf[e][c] = float32(p)
			}
		}
	}
	r.posted[c] = true
	r.repost(c, a, qs, mean)
}

// shadowOf sets ps to shadow search k's probability of each of qs among
// call c's nCand candidates (and none), and reports whether that search
// decided c.
func (r *run) shadowOf(k int, c int32, qs []int32, ps []float64, nCand int) bool {
	k1 := searchAlts + 1
	post := r.shadowPost[k][int(c)*k1 : int(c)*k1+k1]
	if post[0].p == noShadow {
		return false
	}
	m := len(post)
	for m > 0 && post[m-1].prob <= 0 {
		m--
	}
	for i, q := range qs {
		ps[i] = probOf(post[:m], q, nCand)
	}
	return true
}

// memberW returns member e's weight in the ensemble: the main search
// one half, each shadow search one quarter. Each half of the model is
// fitted on half the data, so it varies about twice as much as the
// model fitted on all of it: the two halves together stand for one draw
// of the model, the main search for the other.
func memberW(e int) float64 {
	if e == 0 {
		return 0.5
	}
	return 0.25
}

// normalize scales ps to sum to 1 (when it sums to more than 0).
func normalize(ps []float64) {
	s := 0.0
	for _, p := range ps {
		s += p
	}
	if s <= 0 {
		return
	}
	for i := range ps {
		ps[i] /= s
	}
}
