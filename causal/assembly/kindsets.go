package assembly

import (
	"cmp"
	"maps"
	"math"
	"slices"
)

// Kind sets: which kinds of call a request makes, taken together. A
// request that fans out in parallel sends its calls in any order, so the
// call graph, which conditions each call on the last one and how many
// came before it, cannot say that the kinds come in fixed combinations
// (a query asks all four shards, a lookup two of them and perhaps a
// ranker; none asks three shards and the ranker): it scores a request
// holding calls of two combinations nearly as well as either.
//
// The kinds a request already made are the context of a second
// prediction of its next event (a call of each kind, or its reply): its
// log likelihood ratio against the same prediction from the number of
// calls made alone, log P(next | kind, kinds made) − log P(next | kind,
// calls made), the first smoothed towards the second with the weight of
// kindSetPrior observations. It is scored at every call and at the
// reply, so that the beam, which decides each call at its send, sees it
// when it decides (scored only at the reply, as the ratio of the whole
// set, it came too late: on the generated fan-out at 64 in flight the
// beam's answer was 170 nats below the truth under its own model, and
// the aggregator's calls wrong went from 1,214 to 1,638). Where the
// kinds made say nothing beyond their number (a cache read, then a
// database read on a miss) the ratio is about one; a repeat is left to
// the repeat evidence (repeat.go), and the prediction from the number
// made is taken among the events that are not repeats, so that what the
// repeat evidence says is not counted twice (counted twice, it cost the
// testbed's parallel tier2 5 points of its links to the backends at 16
// in flight).
//
// It is used at a node only where at least kindSetMinRequests requests
// of the assignment were observed and they gain on average more than
// kindSetMinGain nats by it, where the requests fan out (parallel: on
// the testbed's sequential app tier, whose kinds of request make
// different sets, it cost 4 points of requests at 16 in flight), and
// where fewer than kindSetMaxHanded of the node's calls were handed a
// pooled connection: at a saturated pool a call leaves when a connection
// frees, whatever request it carries, the evidence learnt from the
// engine's own assignment decides the call alone at its send, and
// confirms itself (the generated fan-out at 64 in flight: 44 requests of
// 1,000 right without it, 14 to 27 with it).

const (
	// kindSetPrior is the weight, in observations, of the prediction
	// from the number of calls in the smoothed prediction from the kinds.
	kindSetPrior = 2.0
	// kindSetMinGain is the mean log ratio, summed over a request's
	// events, from which the kinds made are informative at the node.
	kindSetMinGain = 0.3
	// kindSetMinRequests is the fewest requests (weights summed) the
	// ratio is learnt from at a node.
	kindSetMinRequests = 20
)

// setCtx is a context of the prediction from the kinds made.
type setCtx struct {
	pk   int32
	made uint64
}

// posCtx is a context of the prediction from the number of calls made.
type posCtx struct {
	pk  int32
	pos uint8
}

type setLRKey struct {
	c    setCtx
	pos  uint8
	next int32
}

// kindSets holds the two predictions' counts.
type kindSets struct {
	bySet       map[setCtx]*dist
	byPos       map[posCtx]*dist
	kinds       map[int32]bool // the kinds seen (and endKind), for the prior
	nReq        float64        // requests observed (weights summed)
	informative bool
	cache       map[setLRKey]float64
}

func newKindSets() *kindSets {
	return &kindSets{bySet: map[setCtx]*dist{}, byPos: map[posCtx]*dist{}, kinds: map[int32]bool{endKind: true},
		cache: map[setLRKey]float64{}}
}

// add records the next event (a call's kind, or endKind) of a request of
// kind pk that made the kinds made in pos calls, with weight w.
func (ks *kindSets) add(pk int32, made uint64, pos uint8, next int32, w float64) {
	ds := ks.bySet[setCtx{pk, made}]
	if ds == nil {
		ds = &dist{}
		ks.bySet[setCtx{pk, made}] = ds
	}
	ds.add(next, w)
	pc := posCtx{pk, min(pos, maxPos)}
	dp := ks.byPos[pc]
	if dp == nil {
		dp = &dist{}
		ks.byPos[pc] = dp
	}
	dp.add(next, w)
	ks.kinds[next] = true
	if next == endKind {
		ks.nReq += w
	}
}

// finish decides whether the kinds made are informative: whether the
// requests observed gain on average more than kindSetMinGain nats by
// them (their events' ratios summed).
func (ks *kindSets) finish() {
	clear(ks.cache)
	ks.informative = true
	gain := 0.0
	// in the order of the contexts and kinds, so that the sum, and the
	// decision, are the same run after run (a map's order is not)
	ctxs := slices.SortedFunc(maps.Keys(ks.bySet), func(a, b setCtx) int {
		return cmp.Or(cmp.Compare(a.pk, b.pk), cmp.Compare(a.made, b.made))
	})
	for _, c := range ctxs {
		d := ks.bySet[c]
		for _, next := range slices.Sorted(maps.Keys(d.c)) {
			gain += d.c[next] * ks.lrAt(c, ks.posOf(c), next)
		}
	}
	clear(ks.cache)
	ks.informative = ks.nReq >= kindSetMinRequests && gain/ks.nReq > kindSetMinGain
}

// posOf returns the number of calls a request that made the kinds of c
// made, when each kind was made once (the context the ratio is taken
// against in finish).
func (ks *kindSets) posOf(c setCtx) uint8 {
	n := 0
	for b := c.made; b != 0; b &= b - 1 {
		n++
	}
	return uint8(min(n, maxPos))
}

// lr returns the log likelihood ratio of next (a kind of call, or
// endKind) for a request of kind pk that made the kinds made in pos
// calls: the prediction from the kinds made against that from pos (0
// where the kinds are not informative at the node).
func (ks *kindSets) lr(pk int32, made uint64, pos uint8, next int32) float64 {
	if !ks.informative {
		return 0
	}
	return ks.lrAt(setCtx{pk, made}, min(pos, maxPos), next)
}

func (ks *kindSets) lrAt(c setCtx, pos uint8, next int32) float64 {
	k := setLRKey{c, pos, next}
	if v, ok := ks.cache[k]; ok {
		return v
	}
	if next != endKind && c.made&kindBit(next) != 0 {
		// a repeat: the repeat evidence's to judge
		ks.cache[k] = 0
		return 0
	}
	u := 1 / float64(len(ks.kinds))
	pp := u
	if d := ks.byPos[posCtx{c.pk, pos}]; d != nil {
		// the prediction from the number made, among the events that
		// are not repeats: what the repeat evidence already says is not
		// counted again
		rest := 1.0
		for _, k := range slices.Sorted(maps.Keys(d.c)) {
			if k != endKind && c.made&kindBit(k) != 0 {
				rest -= (d.c[k] + u) / (d.n + 1)
			}
		}
		pp = (d.c[next] + u) / (d.n + 1) / max(rest, 1e-3)
	}
	ps := pp
	if d := ks.bySet[c]; d != nil {
		ps = (d.c[next] + kindSetPrior*pp) / (d.n + kindSetPrior)
	}
	v := math.Log(ps) - math.Log(pp)
	ks.cache[k] = v
	return v
}

// kindSetMinOverlap is the share of a node's calls sent while another
// call of their request was outstanding from which its requests are
// taken to fan out in parallel, and the kinds they made to be scored.
const kindSetMinOverlap = 0.5

// parallel reports whether the node's requests fan out: at least
// kindSetMinOverlap of their calls left while another call of their
// request was outstanding (the overlap counts the model learnt).
func (m *nodeModel) parallel() bool {
	busy, all := 0.0, 0.0
	for _, pk := range slices.Sorted(maps.Keys(m.ov)) {
		o := m.ov[pk]
		busy += o.n[0]
		all += o.n[1]
	}
	return all > 0 && busy >= kindSetMinOverlap*all
}

// kindSetMaxHanded is the share of a node's calls handed a pooled
// connection (handoff.go) from which the kinds made are not scored.
const kindSetMaxHanded = 0.5
