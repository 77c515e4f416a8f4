package assembly

import (
	"container/heap"
	"math"
	"slices"
)

// Queueing at a node of limited concurrency (issue 11).
//
// A server with k worker threads serves at most k requests at once; a
// request that arrives while all k are busy waits, first come first
// served, until one of them replies. Its first call then leaves a delay
// after the *start* of its service, not after its arrival, and that delay
// is short and regular while the time from the arrival is mostly queueing:
// a delay model measured from the arrival cannot tell which of the waiting
// requests a call belongs to. The start times are a function of what the
// capture shows, given k: with the node's requests taken in order of
// arrival, request i starts at the later of its arrival and the moment
// the first of the k threads frees (a request holds its thread until its
// reply leaves),
//
//	begin_i = max(a_i, min over threads of free time); that thread is then free at max(d_i, begin_i)
//
// (the textbook FCFS k-server recursion; d_i is when i's reply left).
// k is learnt per node from the engine's own assignment after each pass
// (queueFit): the k under which the requests' first events (a first call,
// or the reply of a request that made none) are best explained, against
// no queue at all, by the likelihood of a log-time histogram of those
// delays, with a penalty for the extra parameter. Where no k explains
// them better (a node that serves every request at once, the testbed's Go
// backends) the model is off and nothing changes.

// queueBinsPerDecade is the resolution of the log-time histograms that
// compare the values of k.
const queueBinsPerDecade = 10

// queueMinRequests is the fewest requests with a first event a node needs
// for its queue to be learnt.
const queueMinRequests = 50

// queueState is node n's learnt queue: its thread count k (0: none) and
// the log probability that a request's first event comes before the start
// the recursion gives it (the order of service was not that of arrival).
type queueState struct {
	k       int
	logViol float64
}

// queued returns the anchors of an event of request p at time t whose
// latest trigger was at last and which arrived at arr, when p's node
// queues (queueFit): measured from the start of p's service once it has
// started; an event before that start is read from the anchors as they
// are, at the cost of the learnt probability of the order being broken.
// Where p did not wait (or its node does not queue) nothing changes.
func (r *run) queued(p int32, t, last, arr int64) (l, a int64, pen float64) {
	b := r.qbegin[p]
	if b == noTime || b <= arr {
		return last, arr, 0
	}
	if t < b {
		return last, arr, r.queue[r.calls[p].callee].logViol
	}
	return max(last, b), b, 0
}

// timeHeap is a min-heap of times (the threads' free times).
type timeHeap []int64

func (h timeHeap) Len() int           { return len(h) }
func (h timeHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h timeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timeHeap) Push(x any)        { *h = append(*h, x.(int64)) }
func (h *timeHeap) Pop() any {
	old := *h
	v := old[len(old)-1]
	*h = old[:len(old)-1]
	return v
}

// queueRequests returns node n's requests the queue can reason about (an
// arrival and a reply seen), in order of arrival (parentsOf's order).
func (r *run) queueRequests(n int32) []int32 {
	var ps []int32
	for _, p := range r.parentsOf[n] {
		c := &r.calls[p]
		if c.callMsg >= 0 && c.retMsg >= 0 && c.flags&flagOneWay == 0 && c.arr != noTime && c.rep != noTime {
			ps = append(ps, p)
		}
	}
	return ps
}

// queueStarts returns the start of service of each request of ps (in
// order of arrival) at a node of k threads serving first come first
// served, into out.
func (r *run) queueStarts(ps []int32, k int, out []int64, h *timeHeap) []int64 {
	out = out[:0]
	*h = (*h)[:0]
	for _, p := range ps {
		c := &r.calls[p]
		b := c.arr
		if h.Len() == k {
			b = max(b, heap.Pop(h).(int64))
		}
		heap.Push(h, max(c.rep, b))
		out = append(out, b)
	}
	return out
}

// maxOpen returns the most requests of ps open at once.
func (r *run) maxOpen(ps []int32) int {
	type ev struct {
		t int64
		d int
	}
	evs := make([]ev, 0, 2*len(ps))
	for _, p := range ps {
		c := &r.calls[p]
		evs = append(evs, ev{c.arr, 1}, ev{c.rep, -1})
	}
	slices.SortFunc(evs, func(a, b ev) int {
		if a.t != b.t {
			return cmpTime(a.t, b.t)
		}
		return a.d - b.d // a reply before an arrival at one instant
	})
	open, most := 0, 0
	for _, e := range evs {
		open += e.d
		most = max(most, open)
	}
	return most
}

// firstEvents returns, for each request of ps, the time of its first event
// under the current assignment (its first call's send, or its reply when
// it made none).
func (r *run) firstEvents(n int32, ps []int32) []int64 {
	first := make(map[int32]int64, len(ps))
	for _, c := range r.childrenOf[n] {
		p := r.parent[c]
		if p < 0 {
			continue
		}
		t := r.sendOf(c)
		if v, ok := first[p]; !ok || t < v {
			first[p] = t
		}
	}
	out := make([]int64, len(ps))
	for i, p := range ps {
		out[i] = r.calls[p].rep
		if v, ok := first[p]; ok && v < out[i] {
			out[i] = v
		}
	}
	return out
}

// queueLogLik is the log likelihood of the requests' first events read
// from the starts: those at or after their start by their delay from it,
// those before it (the order of service was not that of arrival) by their
// delay from the arrival, each share weighed by how often it occurs; the
// densities are log-time histograms fitted on the delays (in-sample). It
// returns how many came before their start.
func queueLogLik(first, begin, arr []int64) (ll float64, viol int) {
	ok, bad := map[int]int{}, map[int]int{}
	for i, t := range first {
		if g := t - begin[i]; g >= 0 {
			ok[queueBin(g)]++
			continue
		}
		viol++
		bad[queueBin(max(t-arr[i], 0))]++
	}
	n := float64(len(first))
	for _, h := range []map[int]int{ok, bad} {
		for b, c := range h {
			ll += float64(c) * math.Log(float64(c)/(n*queueBinWidth(b)))
		}
	}
	return ll, viol
}

// queueBin is the histogram bin of a delay of g ns (g >= 0): bin 0 up to
// 1 µs, then queueBinsPerDecade a decade.
func queueBin(g int64) int {
	if g < 1000 {
		return 0
	}
	return 1 + int(math.Log10(float64(g)/1000)*queueBinsPerDecade)
}

// queueBinWidth is bin b's width in ns.
func queueBinWidth(b int) float64 {
	if b == 0 {
		return 1000
	}
	lo := 1000 * math.Pow(10, float64(b-1)/queueBinsPerDecade)
	return lo * (math.Pow(10, 1.0/queueBinsPerDecade) - 1)
}

// queueFit learns node n's queue from the current assignment and sets the
// starts of its requests (qbegin) under it, or clears them where no
// thread count explains the requests' first events better than none. It
// reports whether the node queues.
func (r *run) queueFit(n int32) bool {
	ps := r.queueRequests(n)
	for _, p := range r.parentsOf[n] {
		r.qbegin[p] = noTime
	}
	r.queue[n] = queueState{}
	if len(ps) < queueMinRequests {
		return false
	}
	most := r.maxOpen(ps)
	if most < 2 {
		return false
	}
	first := r.firstEvents(n, ps)
	arr := make([]int64, len(ps))
	for i, p := range ps {
		arr[i] = r.calls[p].arr
	}
	base, _ := queueLogLik(first, arr, arr)
	best, bestK, bestViol := base, 0, 0
	var h timeHeap
	var begin []int64
	for k := 1; k < most; k++ {
		begin = r.queueStarts(ps, k, begin, &h)
		ll, viol := queueLogLik(first, begin, arr)
		if ll > best {
			best, bestK, bestViol = ll, k, viol
		}
	}
	// one parameter chosen among most-1 values
	penalty := 0.5*math.Log(float64(len(ps))) + math.Log(float64(most))
	if bestK == 0 || best-base <= penalty {
		return false
	}
	r.queue[n] = queueState{k: bestK, logViol: math.Log((float64(bestViol) + 0.5) / float64(len(ps)+1))}
	begin = r.queueStarts(ps, bestK, begin, &h)
	for i, p := range ps {
		r.qbegin[p] = begin[i]
	}
	return true
}
