package assembly

import (
	"maps"
	"math"
	"slices"

	"github.com/wirepath/wirepath/internal/parallel"
	"github.com/wirepath/wirepath/trace"
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

// isoSample is one isolated request and its calls, in order of send.
type isoSample struct {
	p    int32
	kids []int32
}

// isolatedSamples returns node n's isolated requests with their calls.
func (r *run) isolatedSamples(n int32) []isoSample {
	iso := r.isolated(n)
	if len(iso) == 0 {
		return nil
	}
	ks := make(map[int32][]int32, len(iso))
	r.sweep(n, func(c int32, cands []int32) {
		if len(cands) == 1 && iso[cands[0]] {
			ks[cands[0]] = append(ks[cands[0]], c)
		}
	})
	out := make([]isoSample, 0, len(iso))
	for _, p := range r.parentsOf[n] { // by arrival: a fixed order
		if !iso[p] {
			continue
		}
		k := ks[p]
		slices.SortStableFunc(k, func(a, b int32) int { return cmpTime(r.sendOf(a), r.sendOf(b)) })
		out = append(out, isoSample{p, k})
	}
	return out
}

// isolatedModel returns the call graph of node n's isolated requests and
// of its replicas' (replicaSamples), in a model of its own, and how many
// requests it was learnt from.
func (r *run) isolatedModel(n int32) (*nodeModel, int) {
	own := r.isoSamples[n]
	if own == nil {
		own = r.isolatedSamples(n)
	}
	borrowed := r.replicaSamples(n)
	if len(own)+len(borrowed) == 0 {
		return nil, 0
	}
	m := newNodeModel(1, 0)
	rate := r.arrivalRate(n)
	for _, s := range own {
		pc := &r.calls[s.p]
		r.observeRequestAs(m, s.p, s.kids, func(int32) float64 { return 1 }, isoWeight(rate, pc.rep-pc.arr), nil)
	}
	// each replica's rate once, not once per request borrowed from it
	rates := map[int32]float64{}
	for _, b := range borrowed {
		pc := &r.calls[b.p]
		rate, ok := rates[pc.callee]
		if !ok {
			rate = r.arrivalRate(pc.callee)
			rates[pc.callee] = rate
		}
		r.observeRequestAs(m, b.p, b.kids, func(int32) float64 { return 1 }, isoWeight(rate, pc.rep-pc.arr), b.kindAt)
	}
	m.assoc.finish()
	return m, len(own) + len(borrowed)
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
		// in order of the next kind: md.n is a float sum, the same bits
		// on every run
		for _, next := range slices.Sorted(maps.Keys(d.c)) {
			md.add(next, d.c[next]*scale)
		}
	}
	clear(m.tcache)
	clear(m.scorers)
}

// Replicas: a caller that sends one labelled kind of request (a route) to
// several callees is balancing it over replicas of one service, and the
// replicas make the same calls for it. Each replica has few isolated
// requests where it is busy (a backend with a queue: 0 to 10 of 400), and
// a node without one for a kind of request learns that kind's call graph
// from its own first passes alone, which keep their mistakes: on one
// testbed run a backend whose 405 part requests each made one query, and
// which had no isolated part request while its two replicas had 7 and 5,
// ended with 328 of them making none and 63 making three or more. Each
// node therefore also learns from its replicas' isolated requests, their
// calls mapped to the node's own kinds by callee and label; a request
// with a call the node never makes (or an unlabelled one) is not used.

// replicaKey identifies a labelled kind of request by its caller, across
// the callees it is sent to.
type replicaKey struct {
	caller string
	label  trace.Sym
}

// borrowedSample is a replica's isolated request, with the kinds of its
// calls at the node that borrows it.
type borrowedSample struct {
	p      int32
	kids   []int32
	kindAt func(k int32) int32
}

// collectIsolated computes every node's isolated requests (isoSamples)
// and indexes them by replica key (isoByKey), for replicaSamples.
func (r *run) collectIsolated(workers int) {
	nn := len(r.parentsOf)
	r.isoSamples = make([][]isoSample, nn)
	parallel.Each(nn, workers, func(n int) {
		if r.entry[n] || len(r.childrenOf[n]) == 0 {
			return
		}
		r.isoSamples[n] = r.isolatedSamples(int32(n))
	})
	r.isoByKey = map[replicaKey][]int32{}
	for n, ss := range r.isoSamples {
		keys := map[replicaKey]bool{}
		for _, s := range ss {
			if k, ok := r.replicaKeyOf(s.p); ok {
				keys[k] = true
			}
		}
		for k := range keys {
			r.isoByKey[k] = append(r.isoByKey[k], int32(n))
		}
	}
}

// replicaKeyOf returns the replica key of request p's kind, if labelled.
func (r *run) replicaKeyOf(p int32) (replicaKey, bool) {
	kk := r.kinds.keys[r.calls[p].kind]
	if kk.label == 0 || kk.caller == "" {
		return replicaKey{}, false
	}
	return replicaKey{kk.caller, kk.label}, true
}

// replicaSamples returns the isolated requests of node n's replicas, for
// the kinds of request n serves, with their calls' kinds mapped to n's.
func (r *run) replicaSamples(n int32) []borrowedSample {
	if r.isoByKey == nil || len(r.childrenOf[n]) == 0 {
		return nil
	}
	// the kinds of request n serves, and of call it makes, by key
	mine := map[replicaKey]int32{}
	for _, p := range r.parentsOf[n] {
		if k, ok := r.replicaKeyOf(p); ok {
			mine[k] = r.calls[p].kind
		}
	}
	type childKey struct {
		callee string
		label  trace.Sym
	}
	kidKinds := map[childKey]int32{}
	for _, c := range r.childrenOf[n] {
		kk := r.kinds.keys[r.calls[c].kind]
		if kk.label != 0 {
			kidKinds[childKey{kk.callee, kk.label}] = r.calls[c].kind
		}
	}
	var out []borrowedSample
	for _, key := range slices.SortedFunc(maps.Keys(mine), cmpReplicaKey) {
		pk := mine[key]
		for _, o := range r.isoByKey[key] {
			if o == n {
				continue
			}
			mp := map[int32]int32{}
			kindAt := func(k int32) int32 { return mp[k] }
			for _, s := range r.isoSamples[o] {
				if k, ok := r.replicaKeyOf(s.p); !ok || k != key {
					continue
				}
				mp[r.calls[s.p].kind] = pk
				usable := true
				for _, c := range s.kids {
					kk := r.kinds.keys[r.calls[c].kind]
					mk, ok := kidKinds[childKey{kk.callee, kk.label}]
					if kk.label == 0 || !ok {
						usable = false
						break
					}
					mp[r.calls[c].kind] = mk
				}
				if usable {
					out = append(out, borrowedSample{s.p, s.kids, kindAt})
				}
			}
		}
	}
	return out
}
