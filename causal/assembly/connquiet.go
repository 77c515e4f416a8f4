package assembly

import "slices"

// A node quiet between two arrivals (issue 11).
//
// crossOrder (connorder.go) leaves open, by the gap between them, the
// order of two requests that came on different connections close
// together: a node that reads each connection on its own starts them in
// whatever order its readers are woken. They are woken together only
// where the node did not run between the two arrivals. Measured on the
// saved testbed runs (/tmp/tb-s7, backends b1 and b2 of opaque/preload/16,
// opaque/sniffed/16 and ids/preload/64 over HTTP/1.1: pairs of requests
// both still waiting for their query when the later came, the order of
// their true queries; TestDiagnoseQuietPairs): where the node sent a
// message (a call or a reply) between the two arrivals, the earlier was
// served first in 31 of 40 pairs below 1.6 ms apart and in 931 of 953
// pairs 1.6–12.8 ms apart; where it sent nothing, the later was served
// first in 70–80 % of the pairs below 1.6 ms (opaque/preload/16 b1 151 of
// 214, ids/preload/64 b1 393 of 502). So the pairs the node was active
// between are counted apart (crossOrder.active, the same bins and bounds,
// learnt on the same first assignment): where few of them were swapped
// their order stays strict, and a node that serves in either order
// whether it ran or not learns that.

// quietBetween reports whether the node of requests q and p sent nothing
// between their arrivals (true where that is not known).
func (r *run) quietBetween(q, p int32) bool {
	if r.quietUntil == nil {
		return true
	}
	if r.arrivedBefore(p, q) {
		q, p = p, q
	}
	u := r.quietUntil[q]
	return u == noTime || u >= r.arrOf(p)
}

// nodeQuiet returns, for every request p, the first send by its node (a
// call it made or a reply it sent) after p's arrival, noTime when none
// (and for calls that are no node's request).
func (r *run) nodeQuiet() []int64 {
	quiet := make([]int64, len(r.calls))
	for i := range quiet {
		quiet[i] = noTime
	}
	var out []int64
	for n := range r.parentsOf {
		out = out[:0]
		for _, c := range r.childrenOf[n] {
			if t := r.sendOf(c); t != noTime {
				out = append(out, t)
			}
		}
		for _, p := range r.parentsOf[n] {
			if c := &r.calls[p]; c.retMsg >= 0 && c.rep != noTime {
				out = append(out, c.rep)
			}
		}
		slices.Sort(out)
		for _, p := range r.parentsOf[n] {
			if i, _ := slices.BinarySearch(out, r.arrOf(p)+1); i < len(out) {
				quiet[p] = out[i]
			}
		}
	}
	return quiet
}

// pairOrder is the part of x that counts requests q and p: x itself where
// their node was quiet between their arrivals, else x.active, made where
// add (counting) and nil otherwise (read while searches run in parallel).
func (x *crossOrder) pairOrder(r *run, q, p int32, add bool) *crossOrder {
	if r.quietBetween(q, p) {
		return x
	}
	if x.active == nil && add {
		x.active = &crossOrder{}
	}
	return x.active
}
