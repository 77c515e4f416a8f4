package assembly

// Robust delay models. A delay histogram learnt per context (40 bins a
// decade, backed off to coarser contexts) puts almost no mass where its
// context was never seen to wait: on the testbed's backends, whose
// queries are sent at once unless the pool of two connections is busy, a
// query that waited 2 ms for the pool got a density e^-26 per ns from
// its request's arrival, less than a request that made no query at all
// and a query of no request together, so the engine took it for
// background. Each context's delays are therefore mixed with the node's
// (all its delays, whatever the context) at weight gapRobust: a delay
// that is rare in its context but common at the node costs a few nats,
// not twenty. The mass at zero (a message stamped with its trigger's
// tick, or before it) stays the context's own: it says how the clock and
// the capture order the two events, which the node's other contexts do
// not tell.
const gapRobust = 0.2

// robustMix mixes a context's delay mass with the node's (both sum to
// one) at weight gapRobust, keeping the context's mass at zero.
func robustMix(mass, node *[nGapBins]float64) {
	rest := 0.0
	for b := 1; b < nGapBins; b++ {
		rest += node[b]
	}
	if rest <= 0 {
		return
	}
	scale := (1 - mass[0]) / rest
	for b := 1; b < nGapBins; b++ {
		mass[b] = (1-gapRobust)*mass[b] + gapRobust*node[b]*scale
	}
}
