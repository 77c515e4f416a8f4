package assembly

import (
	"math"
	"slices"
)

// Derived tokens: a call whose content carries a value derived from its
// request's (a database key computed from a query parameter, a cache key
// hashed from a user id, a shard name) shares no token with its request,
// so the shared-token evidence (features) says nothing, but the same
// request token comes with the same call token again and again: on the
// testbed's backends each part request's query parameter (16 values)
// always gives the same PostgreSQL key (16 values, hashed), where the
// timing alone got 60–80 % of the queries right at 16 in flight.
//
// Each node's model learns, from the assignment it is fitted on, per
// context (the request's kind and the call's kind), how often a call
// carrying token b is made by a request carrying token a, against how
// often the calls of that context carry b: the lift P(b | a, context) /
// P(b | context), smoothed towards 1 with a weight of assocKappa links.
// Only request tokens that predict a call token count: seen on at least
// assocSupport links of the context (a request's own unique id, whose one
// link would only confirm itself, does not), most of them (assocPredict)
// with one call token, at least twice as common with them as in the
// context (finish). Tokens that say only what kind of request it is
// (the context already does) or that go with many call tokens (a host
// name, a user agent) lift nothing. A call's evidence for a request is the
// log lift of the pair of its tokens and the request's predictive tokens
// with the largest magnitude: positive where the request's token predicts
// the call's, negative where it predicts another. Tokens the call shares
// with the request itself are the shared-token evidence's and left out.
// A pair seen on fewer than assocStray of the links of its request token's
// commonest pair is taken for a wrong link of the assignment the counts
// come from and dropped: at a saturated pool the engine's own misplaced
// queries had made stray pairs that softened the penalty of a key derived
// from another value (docs/accuracy.md, "Derived keys at a saturated
// pool").
// Cross-fitting (crossfit.go) scores each block with the lifts learnt on
// the other blocks, so a lift is not learnt from the link it scores.

const (
	assocKappa   = 2.0 // links of chance the lift is smoothed with
	assocSupport = 5.0 // links a request token needs to count
	assocPredict = 0.3 // share of its links a request token's commonest call token needs
	assocCap     = 5.0 // the largest log lift used, either way
	// assocStray is the share of its request token's commonest pair below
	// which a pair is taken for a wrong link of the assignment the counts
	// come from and dropped (scored as never seen)
	assocStray = 0.2
)

// assocCtx is the context of a link: the request's kind and the call's.
type assocCtx struct{ pk, ck int32 }

// assocTok is a token in a context.
type assocTok struct {
	assocCtx
	t uint64
}

// assocPair is a (request token, call token) pair in a context.
type assocPair struct {
	assocCtx
	a, b uint64
}

// tokAssoc holds the counts the derived-token lift is computed from.
type tokAssoc struct {
	pair map[assocPair]float64 // links from a request with a to a call with b
	req  map[assocTok]float64  // links from a request with token a (predictive ones, once finished)
	call map[assocTok]float64  // links to a call with token b
	ctx  map[assocCtx]float64  // links
	// pred holds the contexts with a predictive request token (finish)
	pred map[assocCtx]bool
	// kappa is each such context's smoothing weight (fitKappas)
	kappa map[assocCtx]float64
}

func newTokAssoc() *tokAssoc {
	return &tokAssoc{pair: make(map[assocPair]float64), req: make(map[assocTok]float64),
		call: make(map[assocTok]float64), ctx: make(map[assocCtx]float64)}
}

// addLink counts a link of weight w from a request of kind pk with tokens
// pt to a call of kind ck with tokens ct (both sorted).
func (t *tokAssoc) addLink(pk, ck int32, pt, ct []uint64, w float64) {
	if len(pt) == 0 || len(ct) == 0 || w <= 0 {
		return
	}
	x := assocCtx{pk, ck}
	t.ctx[x] += w
	for _, b := range ct {
		t.call[assocTok{x, b}] += w
	}
	for _, a := range pt {
		t.req[assocTok{x, a}] += w
		for _, b := range ct {
			if _, shared := slices.BinarySearch(pt, b); shared {
				continue
			}
			t.pair[assocPair{x, a, b}] += w
		}
	}
}

// finish keeps the predictive request tokens and their pairs: those seen
// on assocSupport links or more, most of them (assocPredict) with one call
// token that is at least twice as common with them as in their context.
func (t *tokAssoc) finish() {
	pred := make(map[assocTok]bool, len(t.req))
	for k, n := range t.pair {
		a := assocTok{k.assocCtx, k.a}
		na := t.req[a]
		if na < assocSupport || n < assocPredict*na {
			continue
		}
		if share, pb := n/na, t.call[assocTok{k.assocCtx, k.b}]/t.ctx[k.assocCtx]; share >= 2*pb {
			pred[a] = true
		}
	}
	t.pred = make(map[assocCtx]bool)
	for a := range t.req {
		if !pred[a] {
			delete(t.req, a)
		} else {
			t.pred[a.assocCtx] = true
		}
	}
	top := make(map[assocTok]float64, len(t.req))
	for k, n := range t.pair {
		a := assocTok{k.assocCtx, k.a}
		if _, ok := t.req[a]; !ok {
			delete(t.pair, k)
		} else {
			top[a] = max(top[a], n)
		}
	}
	t.fitKappas()
	for k, n := range t.pair {
		if n < assocStray*top[assocTok{k.assocCtx, k.a}] {
			delete(t.pair, k)
		}
	}
}

// score is the log lift of the pair of the tokens ct of a call of kind ck
// and the predictive tokens pt of a request of kind pk (both sorted) with
// the largest magnitude, 0 when no pair counts.
func (t *tokAssoc) score(pk, ck int32, pt, ct []uint64) float64 {
	if t == nil || len(t.req) == 0 || len(pt) == 0 || len(ct) == 0 {
		return 0
	}
	x := assocCtx{pk, ck}
	if !t.pred[x] {
		return 0
	}
	nx, kappa := t.ctx[x], t.kappaOf(x)
	best := 0.0
	for _, b := range ct {
		if _, shared := slices.BinarySearch(pt, b); shared {
			continue
		}
		// P(b | context), with half a link of b so that a token never
		// seen in the context is not infinitely unlikely
		pb := (t.call[assocTok{x, b}] + 0.5) / (nx + 0.5)
		for _, a := range pt {
			na, ok := t.req[assocTok{x, a}]
			if !ok {
				continue
			}
			v := math.Log((t.pair[assocPair{x, a, b}] + kappa*pb) / ((na + kappa) * pb))
			if math.Abs(v) > math.Abs(best) {
				best = v
			}
		}
	}
	return max(-assocCap, min(assocCap, best))
}
