package assembly

import (
	"cmp"
	"maps"
	"math"
	"slices"
)

// How sure a derived key is: the smoothing of the derived-token lift
// (assoc.go) fitted per context. The lift of a pair never seen (a call
// carrying another value's key) is κ/(n_a+κ) for a request token seen on
// n_a links: with a fixed κ of 2 links of chance, −2.7 for a value of 27
// links at a testbed backend at 64 in flight, where the FIFO order learnt
// from the engine's own assignment weighs up to ±3.8 a call; on
// grpc/ids/preload/64 half of b1's 22 wrong queries went to another
// value's request with the true request's key scored 9 nats better and
// the pair decided by FIFO (TestDiagnoseTimelines). How often a value
// truly goes with another key is what the counts say: κ is chosen, per
// context, among assocKappas as the one under which every link's call
// token is best predicted by the other links (leave-one-out: the link's
// own count taken out of its pair, its request token and its call
// token), so that a map the assignment shows to be a function (every
// link of a value with its one key) is trusted as one, and a map with
// stray pairs (another key seen on a few links: the assignment's own
// mistakes, or a map that is not a function) keeps the smoothing they
// ask for. κ is never above assocKappa, the weight used before: a
// context whose links are scattered keeps it.

// assocKappas are the smoothing weights tried, in links of chance.
var assocKappas = [...]float64{1.0 / 16, 1.0 / 8, 1.0 / 4, 1.0 / 2, 1, assocKappa}

// fitKappas sets t.kappa per context with predictive request tokens, from
// the counts of the predictive tokens' pairs (finish calls it after
// dropping the tokens that predict nothing, before dropping stray pairs).
func (t *tokAssoc) fitKappas() {
	ll := make(map[assocCtx]*[len(assocKappas)]float64, len(t.pred))
	// the pairs in a fixed order, so the sums' last bits are the same
	// on every run (maporder.go)
	for _, k := range slices.SortedFunc(maps.Keys(t.pair), cmpAssocPair) {
		n := t.pair[k]
		x := k.assocCtx
		na := t.req[assocTok{x, k.a}]
		// P(b | context) without the link, with half a link of b as score has
		pb := (max(t.call[assocTok{x, k.b}]-1, 0) + 0.5) / (max(t.ctx[x]-1, 0) + 0.5)
		l := ll[x]
		if l == nil {
			l = new([len(assocKappas)]float64)
			ll[x] = l
		}
		for i, kap := range assocKappas {
			l[i] += n * math.Log((max(n-1, 0)+kap*pb)/(max(na-1, 0)+kap))
		}
	}
	t.kappa = make(map[assocCtx]float64, len(ll))
	for x, l := range ll {
		best := len(assocKappas) - 1
		for i := best - 1; i >= 0; i-- {
			if l[i] > l[best] {
				best = i
			}
		}
		t.kappa[x] = assocKappas[best]
	}
}

// kappaOf is the smoothing weight of context x's lifts.
func (t *tokAssoc) kappaOf(x assocCtx) float64 {
	if k, ok := t.kappa[x]; ok {
		return k
	}
	return assocKappa
}

// cmpAssocPair orders pairs by context, then request token, then call
// token.
func cmpAssocPair(p, q assocPair) int {
	return cmp.Or(cmp.Compare(p.pk, q.pk), cmp.Compare(p.ck, q.ck), cmp.Compare(p.a, q.a), cmp.Compare(p.b, q.b))
}
