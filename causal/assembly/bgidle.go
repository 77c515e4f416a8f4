package assembly

import (
	"slices"
)

// The background rate read where no request can hold a call.
//
// A kind's background rate is learnt from the calls the last pass gave
// no request (fitWith), and EM confirms it: a request's call the search
// left to background raises the rate, and the next pass leaves more of
// that kind there. Nothing in the assignment tells such calls from
// background work, but the timeline does. Background work does not wait
// for the node's requests: while no request is open at the node it goes
// on at its rate, and every call it makes then has no candidate request
// (the calls the first model counts as background for certain). Those
// calls over the idle time are an estimate of the rate that no search
// decided, the assignment's count over the whole span one that the
// search's doubts move: up where it left requests' calls out, down where
// it hung background calls under requests. The rate fitted is the mean
// of a Gamma posterior: the assignment's rate as a prior worth
// bgIdleWeight of the span, updated by the calls counted in the idle
// time. Where the node is never idle (a saturated tier) the prior stands;
// where the assignment's rate is right, the idle time sees its calls at
// that rate and it stands too.
//
// On TraceWeaver-shaped hotel with arrivals compressed ×8 (no
// background at all) the passes left 26 database reads of the profile
// service to background, which made a read there 4 nats cheaper to leave
// out than with none, while the node was idle a fifth of its span and no
// such read came then; on media, 5 or 6 of nginx's calls of each of
// three kinds, the node idle 40 % of its span. The other way, on the
// generated background system at 4 requests in flight, the passes had
// hung refreshes and pings under requests: with the count raised by the
// idle time's, 435 of its 455 background trees are kept out (404).

const (
	// bgIdleWeight is the weight of the assignment's background rate,
	// as a share of the node's span observed idle.
	bgIdleWeight = 0.1
)

// idleBackground holds what the node's timeline says of its background,
// before any assignment: the time within [lo, hi] with no request open,
// and per kind the calls sent with no candidate request.
type idleBackground struct {
	idle  float64
	alone map[int32]float64
}

// idleOf returns node n's idle time within [lo, hi] (the span the model
// is fitted over) and its calls of no candidate by kind.
func (r *run) idleOf(n int32, lo, hi int64) idleBackground {
	ib := idleBackground{alone: r.aloneKinds(n)}
	span := r.openSpan(n)
	ws := make([][2]int64, 0, len(r.parentsOf[n]))
	for _, p := range r.parentsOf[n] {
		a, b := r.window(p, span)
		ws = append(ws, [2]int64{max(a, lo), min(b, hi)})
	}
	slices.SortFunc(ws, func(a, b [2]int64) int { return cmpTime(a[0], b[0]) })
	busy, end := int64(0), lo
	for _, w := range ws {
		if w[1] <= w[0] || w[1] <= end {
			continue
		}
		busy += w[1] - max(w[0], end)
		end = w[1]
	}
	ib.idle = float64(hi-lo) - float64(busy)
	return ib
}

// idleBackgroundFit sets m's background count of every kind to the Gamma
// posterior's mean given the kind's calls sent while node n was idle
// (idleCount). [lo, hi] is the model's span.
func (r *run) idleBackgroundFit(n int32, m *nodeModel, lo, hi int64) {
	if len(m.bg) == 0 || hi <= lo {
		return
	}
	ib := r.idleOf(n, lo, hi)
	f := ib.idle / float64(hi-lo)
	if f <= 0 {
		return
	}
	for k, b := range m.bg {
		m.bg[k] = idleCount(b, ib.alone[k], f)
	}
}

// idleCount is a kind's background count b, over a span a share f of
// which the node was idle with a of the kind's calls sent then: the
// Gamma posterior's mean, below b where a is fewer than b predicts,
// above where more.
func idleCount(b, a, f float64) float64 {
	if b <= 0 || f <= 0 {
		return b
	}
	return (b*bgIdleWeight + a) / (bgIdleWeight + f)
}
