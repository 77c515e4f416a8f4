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
//
// k is learnt per node from the engine's own assignment (queueFit): the
// k under which the requests' first events (a first call, or the reply of
// a request that made none) are most likely, held out (each half of the
// requests scored by a log-time histogram fitted on the other half), read
// from their starts (an event before its start, where the order of
// service was not that of arrival, from its arrival at the cost of the
// share of such events), against reading every one from its arrival.
// The first pass's assignment, made by a model that knows no queue, only
// hints at one (queueStep): a node where it does is solved again from a
// first model whose deconvolution reads the starts, and the queue is kept
// only if, learnt again after each pass, it pays queueWaitCost for every
// request it says waited; else the node is solved once more without it.
// Where no queue is found or kept (a node that serves every request at
// once; the testbed's Go backends) the answer is the one the engine gives
// without queues, byte for byte.
//
// Once learnt, a request's latest trigger is the start of its service
// (queued): the delay models weigh the reading from it against the one
// from the arrival, per context, as they do for every request's latest
// trigger and arrival.

// queueBinsPerDecade is the resolution of the log-time histograms that
// compare the values of k.
const queueBinsPerDecade = 10

// queueWaitCost is what the claim that a request waited costs, in nats,
// when a queue tried is judged before the node's last pass: it is kept
// only where it makes its requests' first events, on average, more than e
// times as likely each as read from their arrival. A guard: what keeps a
// limit elsewhere (the testbed's Go backends wait for database connections
// given to waiters at random) from costing requests is the held-out
// comparison and the queue's use only from the first pass's hint
// (docs/causal-assembly.md); 0, 0.5 and 2 gave the same requests.
var queueWaitCost = 1.0

// queueMinRequests is the fewest requests with a first event a node needs
// for its queue to be learnt.
const queueMinRequests = 50

// queueState is a node's learnt queue: its thread count k (0: none) and
// how many of its requests waited under it; tried is whether its first
// pass showed one.
type queueState struct {
	k      int
	waited int
	tried  bool
}

// queued returns the anchors of an event of request p at time t whose
// latest trigger was at last and which arrived at arr, when p's node
// queues (queueFit): once p's service has started, its latest trigger is
// at the latest that start, and the delay models weigh the reading from
// it against the one from the arrival, as they weigh a request's latest
// trigger against its arrival everywhere (nodemodel.go: learnt per
// context, so that where the start explains nothing the arrival reads
// the event as before). An event before the start (the order of service
// was not that of arrival) and a request that did not wait (or whose node
// does not queue) are read as they are.
func (r *run) queued(p int32, t, last, arr int64) (l, a int64) {
	if b := r.qbegin[p]; b != noTime && b > arr && t >= b {
		return max(last, b), arr
	}
	return last, arr
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

// queueNBins is the number of bins of the histograms queueFit compares
// (delays up to 100 s).
const queueNBins = 2 + 8*queueBinsPerDecade

// queueHist is a smoothed log-time histogram of delays: its log density.
type queueHist [queueNBins]float64

// fitQueueHist returns the log densities of the delays gs, smoothed by
// half an observation a bin.
func fitQueueHist(gs []int64) *queueHist {
	var c [queueNBins]float64
	for _, g := range gs {
		c[queueBin(g)]++
	}
	var h queueHist
	tot := float64(len(gs)) + 0.5*queueNBins
	for b := range h {
		h[b] = math.Log((c[b] + 0.5) / (tot * queueBinWidth(b)))
	}
	return &h
}

// queueRead is the model of the requests' first events queueFit
// compares: a share w of them at or after the start of their service,
// read from it (density fb), the others from their arrival (fa); without
// starts (fb nil), every one from its arrival.
type queueRead struct {
	w      float64
	fb, fa *queueHist
}

// logLik is the log likelihood of a first event whose delay from its
// start is gb (noTime: it came before) and from its arrival ga.
func (q *queueRead) logLik(gb, ga int64) float64 {
	switch {
	case q.fb == nil:
		return q.fa[queueBin(ga)]
	case gb == noTime:
		return math.Log1p(-q.w) + q.fa[queueBin(ga)]
	}
	return math.Log(q.w) + q.fb[queueBin(gb)]
}

// fitQueueRead fits the model on the requests at is, with the starts or
// (starts false) without.
func fitQueueRead(gb, ga []int64, is []int, starts bool) *queueRead {
	sa := make([]int64, 0, len(is))
	if !starts {
		for _, i := range is {
			sa = append(sa, ga[i])
		}
		return &queueRead{fa: fitQueueHist(sa)}
	}
	sb := make([]int64, 0, len(is))
	for _, i := range is {
		if gb[i] == noTime {
			sa = append(sa, ga[i])
		} else {
			sb = append(sb, gb[i])
		}
	}
	w := (float64(len(sb)) + 0.5) / (float64(len(is)) + 1)
	return &queueRead{w: w, fb: fitQueueHist(sb), fa: fitQueueHist(sa)}
}

// queueHeldOut is the log likelihood of the requests' first events read
// with the starts begin (starts false: from their arrival alone), each
// half of the requests (alternate ones) under the model fitted on the
// other half, so that models of more parts gain nothing by fitting their
// own sample.
func queueHeldOut(first, begin, arr []int64, starts bool) float64 {
	gb, ga := make([]int64, len(first)), make([]int64, len(first))
	var halves [2][]int
	for i, t := range first {
		ga[i] = max(t-arr[i], 0)
		gb[i] = t - begin[i]
		if gb[i] < 0 {
			gb[i] = noTime
		}
		halves[i%2] = append(halves[i%2], i)
	}
	ll := 0.0
	for h := range halves {
		q := fitQueueRead(gb, ga, halves[1-h], starts)
		for _, i := range halves[h] {
			ll += q.logLik(gb[i], ga[i])
		}
	}
	return ll
}

// queueBin is the histogram bin of a delay of g ns (g >= 0): bin 0 up to
// 1 µs, then queueBinsPerDecade a decade.
func queueBin(g int64) int {
	if g < 1000 {
		return 0
	}
	return min(1+int(math.Log10(float64(g)/1000)*queueBinsPerDecade), queueNBins-1)
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
func (r *run) queueFit(n int32, cost float64) bool {
	ps := r.queueRequests(n)
	for _, p := range r.parentsOf[n] {
		r.qbegin[p] = noTime
	}
	r.queue[n] = queueState{tried: r.queue[n].tried}
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
	base := queueHeldOut(first, arr, arr, false)
	best, bestK := base, 0
	var h timeHeap
	var begin []int64
	for k := 1; k < most; k++ {
		begin = r.queueStarts(ps, k, begin, &h)
		ll := queueHeldOut(first, begin, arr, true) - cost*float64(waited(begin, arr))
		if ll > best {
			best, bestK = ll, k
		}
	}
	// held out: only the choice of k among most-1 values to pay for
	penalty := math.Log(float64(most))
	if bestK == 0 || best-base <= penalty {
		return false
	}
	begin = r.queueStarts(ps, bestK, begin, &h)
	r.queue[n] = queueState{k: bestK, waited: waited(begin, arr), tried: true}
	for i, p := range ps {
		r.qbegin[p] = begin[i]
	}
	return true
}

// waited counts the requests whose start is after their arrival.
func waited(begin, arr []int64) int {
	n := 0
	for i := range begin {
		if begin[i] > arr[i] {
			n++
		}
	}
	return n
}

// queueMode is where a node is in learning its queue.
type queueMode uint8

const (
	// queueTry: no queue yet; the first pass's assignment may show one
	queueTry queueMode = iota
	// queueOn: a queue was found; it is learnt again after every pass
	// and must pay queueWaitCost for every request it says waited
	queueOn
	// queueOff: the queue found did not pay: none
	queueOff
)

// queueStep learns node n's queue after pass in mode qm and returns the
// mode the node's next pass is in. The first pass, under a model that
// knows no queue, gives requests that waited to whichever request's
// timing fitted best, so the queue it shows is only a hint: it is tried
// (the node solved again from a first model that reads the starts) and
// kept only where, fitted on the assignments it leads to, it pays.
func (r *run) queueStep(n int32, pass int, lastNext bool, qm queueMode) queueMode {
	switch qm {
	case queueTry:
		if pass == 0 && r.queueFit(n, 0) {
			return queueOn
		}
	case queueOn:
		cost := 0.0
		if lastNext {
			cost = queueWaitCost
		}
		if !r.queueFit(n, cost) {
			return queueOff
		}
	}
	return qm
}
