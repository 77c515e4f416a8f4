package report

import (
	"cmp"
	"container/heap"
	"slices"

	"github.com/wirepath/wirepath/causal"
)

// SlowestRequests keeps, of the requests a windowed run's merger hands it
// (causal.ResultMerger.SendRequests), the slowest ones the HTML report
// lists, and of every request only what numbers it in the merged result
// (its start and whether it is background: 16 bytes), so that memory does
// not grow with the requests' trees and a slow request of the last window
// is listed however many came before it.
type SlowestRequests struct {
	max   int
	kept  slowHeap
	order []mergeKey
}

// mergeKey is what orders a request in a merged result.
type mergeKey struct {
	start int64
	seq   int32
	bg    bool
}

// slowRequest is a kept request and its place in the order of arrival.
type slowRequest struct {
	q   causal.Request
	seq int32
}

// slowHeap is a min-heap of the kept requests by latency: its top is the
// first to give way to a slower one.
type slowHeap []slowRequest

func (h slowHeap) Len() int           { return len(h) }
func (h slowHeap) Less(i, j int) bool { return slower(&h[j], &h[i]) }
func (h slowHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *slowHeap) Push(x any)        { *h = append(*h, x.(slowRequest)) }
func (h *slowHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// latencyOf is a request's latency for ordering, 0 when unknown (as the
// request list shows it).
func latencyOf(q *causal.Request) float64 {
	if q.Latency == nil {
		return 0
	}
	return *q.Latency
}

// compareSlow orders requests as the list does: slower first, as slow in
// order of arrival (the list's stable sort).
func compareSlow(a, b *slowRequest) int {
	return cmp.Or(cmp.Compare(latencyOf(&b.q), latencyOf(&a.q)), cmp.Compare(a.seq, b.seq))
}

// slower reports whether a comes before b in the list.
func slower(a, b *slowRequest) bool { return compareSlow(a, b) < 0 }

// NewSlowestRequests returns a keeper of the slowest requests the HTML
// report lists.
func NewSlowestRequests() *SlowestRequests { return &SlowestRequests{max: maxHTMLRequests} }

// Add takes one window's requests, in the engine's order.
func (s *SlowestRequests) Add(rs []causal.Request) error {
	for i := range rs {
		r := slowRequest{q: rs[i], seq: int32(len(s.order))}
		s.order = append(s.order, mergeKey{start: r.q.StartNS, seq: r.seq, bg: r.q.Background})
		switch {
		case len(s.kept) < s.max:
			heap.Push(&s.kept, r)
		case slower(&r, &s.kept[0]):
			s.kept[0] = r
			heap.Fix(&s.kept, 0)
		}
	}
	return nil
}

// Total returns how many requests were added.
func (s *SlowestRequests) Total() int { return len(s.order) }

// Requests returns the kept requests, slowest first, each with the ID it
// has in the merged result (causal.MergedRequestOrder over every request
// added).
func (s *SlowestRequests) Requests() []causal.Request {
	order := slices.Clone(s.order)
	slices.SortStableFunc(order, func(a, b mergeKey) int {
		return cmp.Or(causal.MergedRequestOrder(a.bg, b.bg, a.start, b.start), cmp.Compare(a.seq, b.seq))
	})
	id := make([]int32, len(order))
	for i, k := range order {
		id[k.seq] = int32(i)
	}
	kept := slices.Clone(s.kept)
	slices.SortFunc(kept, func(a, b slowRequest) int { return compareSlow(&a, &b) })
	out := make([]causal.Request, len(kept))
	for i := range kept {
		out[i] = kept[i].q
		out[i].ID = int(id[kept[i].seq])
	}
	return out
}
