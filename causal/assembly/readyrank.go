package assembly

import "slices"

// readyRanks is the FIFO rank observeFIFO learns from, for each of a
// call's candidates es (ready at rs): how many of the others were ready
// before it (readyBefore). Counted pair by pair, that is quadratic in the
// candidates, 4,000 comparisons a call at 64 requests in flight, for
// every call at every fit. readyBefore orders requests by ready time,
// then arrival, then number: a strict total order between different
// requests, so a candidate's count is the number of candidates whose
// key (ready time, arrival, request) is less than its own, which sorting
// gives, with a request listed twice counted as the pair count does (not
// before itself). Few candidates are still counted pair by pair.
// TestReadyRankCounts checks both against the pair count.
type readyRanks struct {
	nb  []int
	ord []int32
}

// pairRankMax is the number of candidates up to which readyRanks counts
// pair by pair.
const pairRankMax = 12

// of returns the counts, in a buffer reused by the next call.
func (rk *readyRanks) of(r *run, es []int32, rs []readyEv) []int {
	nb := rk.nb[:0]
	if len(es) <= pairRankMax {
		for i, e := range es {
			n := 0
			for j, o := range es {
				if o != e && r.readyBefore(o, e, rs[j], rs[i]) {
					n++
				}
			}
			nb = append(nb, n)
		}
		rk.nb = nb
		return nb
	}
	ord := rk.ord[:0]
	for i := range es {
		ord = append(ord, int32(i))
		nb = append(nb, 0)
	}
	less := func(a, b int32) bool { return es[a] != es[b] && r.readyBefore(es[a], es[b], rs[a], rs[b]) }
	slices.SortFunc(ord, func(a, b int32) int {
		switch {
		case less(a, b):
			return -1
		case less(b, a):
			return 1
		}
		return 0
	})
	for k, i := range ord {
		switch {
		case k == 0:
		case es[i] == es[ord[k-1]]:
			nb[i] = nb[ord[k-1]]
		default:
			nb[i] = k
		}
	}
	rk.nb, rk.ord = nb, ord
	return nb
}
