package assembly

// Doubt from the two halves. The model the engine searches with is
// learnt from its own assignment, and where timing cannot tell the
// candidates apart it learns whatever that assignment holds and then
// prefers it: the search's posterior is the model's, and it is sure of
// what the model is sure of, right or not. The cross-fitted models
// (crossfit.go) are two estimates of the same model, each fitted on half
// the node's requests. Where the data determine the model, a search under
// either half gives the answer a search under the other gives; where
// they do not, the answers differ, and that difference is a direct,
// label-free measure of how much the answer rests on the model's
// estimate rather than on the data.
//
// So in the last pass a node that has cross-fitted models is searched
// twice more, once under each half alone (shadow searches: summing, as
// the last pass's, but deciding nothing: their posteriors go to
// run.shadowPost, and the assignment stays the main search's), and each
// call's posterior is the mean of the three: the main search's and the
// two halves'. This is the posterior averaged over the model's
// uncertainty, as bagging or a bootstrap estimate it, with the two halves
// standing for draws of the model (each fitted on half the data, they
// vary more than the model fitted on all of it does, so the mean, if
// anything, doubts too much; each half scores the blocks it was fitted
// on with itself, which pulls it towards the assignment it was fitted
// on, so it doubts too little there).
//
// Where the single-call matching was kept in the last pass, its calls'
// shadow posteriors are instead the matching's under each half
// (singleShadows, singles.go): the searches' beams are about the
// assignment the matching overruled.
//
// A node with too few requests to cross-fit has no halves and keeps the
// main search's posterior. The shadow searches cost two more searches in
// the last pass of those nodes.

// noShadow marks, in run.shadowPost, a call no shadow search decided.
const noShadow = -2

// shadows runs node n's shadow searches over its timeline evs, under
// each of x's models, when it has them.
func (r *run) shadows(n int32, evs []event, x *crossFit) {
	if x == nil || r.noShadows {
		return
	}
	for k := range x.ms {
		// the half's own likelihood ratios of the evidence (the main
		// search's halves share the ones fitted on everything)
		hm := *x.ms[k]
		hm.tok, hm.rid, hm.thr, hm.fifo = x.own[k][0], x.own[k][1], x.own[k][2], x.own[k][3]
		s := newSearch(r, n, &hm)
		s.sum = true
		s.shadow = r.shadowPost[k]
		s.unforced = map[int32]bool{}
		s.run(evs)
	}
}
