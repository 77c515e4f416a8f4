package assembly

import (
	"maps"
	"math"
	"slices"
	"sort"
)

// Periodic background. A health check, a cache refresh or a keep-alive
// ping is made by a timer, not by a request: each call of such a source
// follows the one before it after a fixed interval, either from send to
// send (a timer that fires every T) or from the reply's return to the
// next send (a loop that sleeps T after each answer). Background calls
// are modelled as a renewal process per kind of call at the node: the
// density f of the interval between consecutive background calls of the
// kind, learnt from the calls the last assignment left to no request. A
// Poisson process (no rhythm) has f(g) = λe^(−λg), and adding a call at
// time t between background calls at p and q changes the process's
// likelihood by f(t−p)·f(q−t)/f(q−p), which is λ: the background rate the
// engine uses without a rhythm. With a rhythm (f peaked at the period),
// a call on the beat, between two background calls a period before and
// after it or filling the gap of two periods they leave, gains several
// nats, and a request's call of the same kind (a cache read with the
// refresh's label), off the beat, loses them. A kind whose background
// intervals do not fit a peaked density better than the exponential, by
// minRhythmGain nats an interval left out of the fit (leave-one-out),
// keeps the rate.

const (
	// minRhythmCalls is how many background calls a kind needs for its
	// rhythm to be learnt.
	minRhythmCalls = 8
	// minRhythmGain is the mean log likelihood ratio, per interval, of the
	// learnt density against the exponential from which a kind has a
	// rhythm.
	minRhythmGain = 2.0
	// rhythmEps is the exponential's share in the rhythm's density: a
	// background call off the beat (a second source, a missed beat) stays
	// possible.
	rhythmEps = 0.1
	// rhythmStep is the width of the density's bins in log time (0.25 %).
	rhythmStep = 0.0025
	// rhythmLo and rhythmHi bound the intervals modelled: 1 µs to 10^4 s.
	rhythmLo, rhythmHi = 3 * math.Ln10, 13 * math.Ln10
	// rhythmClamp bounds a call's background score around the rate's.
	rhythmClamp = 20
)

// rhythmBins is the number of bins of a rhythm's density.
var rhythmBins = int(math.Ceil((rhythmHi - rhythmLo) / rhythmStep))

// rhythmWidths are the kernels' widths tried, in log time.
var rhythmWidths = []float64{0.01, 0.03, 0.1, 0.3}

// rhythm is the learnt density of the interval between a kind's
// background calls, from one anchor (the previous call's send or its
// reply's return).
type rhythm struct {
	back    bool // from the previous call's reply's return
	dens    []float64
	lambda  float64 // the kind's background rate, per ns
	samples int
}

// logF is the log density of an interval of g ns.
func (h *rhythm) logF(g int64) float64 {
	exp := h.lambda * math.Exp(-h.lambda*float64(max(g, 0)))
	if g <= 0 {
		return math.Log(rhythmEps * exp)
	}
	u := math.Log(float64(g))
	k := 0.0
	if b := int((u - rhythmLo) / rhythmStep); b >= 0 && b < len(h.dens) {
		k = h.dens[b] / float64(g) // density in log time to density in time
	}
	return math.Log((1-rhythmEps)*k + rhythmEps*exp)
}

// kdeBins returns the kernel density of the log intervals us, with a
// Gaussian kernel of width w, at every bin, and each sample's bin: the
// samples are binned first, so that the cost is bounded by the bins, not
// the samples.
func kdeBins(us []float64, w float64) (dens []float64, at []int) {
	at = make([]int, len(us))
	for i, u := range us {
		at[i] = int((u - rhythmLo) / rhythmStep)
	}
	bins := slices.Clone(at)
	slices.Sort(bins) // a fixed order of addition: the same sums every run
	r := int(math.Ceil(4 * w / rhythmStep))
	ker := make([]float64, 2*r+1)
	n := float64(len(us))
	for i := range ker {
		x := float64(i-r) * rhythmStep / w
		ker[i] = math.Exp(-x*x/2) / (w * math.Sqrt(2*math.Pi)) / n
	}
	dens = make([]float64, rhythmBins)
	for i := 0; i < len(bins); {
		b, c := bins[i], 0.0
		for ; i < len(bins) && bins[i] == b; i++ {
			c++
		}
		for j, k := range ker {
			if x := b + j - r; x >= 0 && x < len(dens) {
				dens[x] += c * k
			}
		}
	}
	return dens, at
}

// A rhythm is a period: a timer's calls are spread evenly, most
// intervals between them within beatWidth of the median, and the median
// at least beatSpread of the mean (a timer's beats fill the time it
// runs; a missed beat only makes one interval twice as long). A kind's
// calls that come in bursts (a request's pipelined cache commands 18 µs
// apart, then milliseconds of nothing; two queries of one request) also
// fit a peaked density better than the exponential, and their peak can
// be the median, but the bursts' intervals leave most of the time empty.
const (
	beatWidth  = 0.1
	beatShare  = 0.5
	beatSpread = 0.5
)

// onBeat reports whether the intervals gs are a timer's: at least
// beatShare of them within beatWidth of their median, which is at least
// beatSpread of their mean.
func onBeat(gs []int64) bool {
	s := slices.Clone(gs)
	slices.Sort(s)
	med := float64(s[len(s)/2])
	sum := 0.0
	for _, g := range s {
		sum += float64(g)
	}
	if med < beatSpread*sum/float64(len(s)) {
		return false
	}
	lo := sort.Search(len(s), func(i int) bool { return float64(s[i]) >= med*(1-beatWidth) })
	hi := sort.Search(len(s), func(i int) bool { return float64(s[i]) > med*(1+beatWidth) })
	return float64(hi-lo) >= beatShare*float64(len(s))
}

// fitRhythm learns the rhythm of the intervals gs (ns, all positive)
// between background calls at rate lambda, or returns nil when they have
// none: a peaked density that, left out one interval at a time, beats the
// exponential by minRhythmGain nats an interval. With pooled, the
// calls waited for a connection, and a floor will do (floorbeat.go).
func fitRhythm(gs []int64, lambda float64, back, pooled bool) (*rhythm, float64) {
	if len(gs) < minRhythmCalls-1 {
		return nil, 0
	}
	ok, need := rhythmGate(gs, pooled)
	if !ok {
		return nil, 0
	}
	us := make([]float64, len(gs))
	for i, g := range gs {
		us[i] = math.Log(float64(g))
	}
	n := float64(len(us))
	var best *rhythm
	bestGain := math.Inf(-1)
	for _, w := range rhythmWidths {
		dens, at := kdeBins(us, w)
		self := 1 / (w * math.Sqrt(2*math.Pi) * n) // a sample's own kernel at its bin
		gain := 0.0
		for i, g := range gs {
			exp := lambda * math.Exp(-lambda*float64(g))
			k := 0.0
			if b := at[i]; b >= 0 && b < len(dens) {
				k = max(0, dens[b]-self) * n / (n - 1) / float64(g)
			}
			gain += math.Log((1-rhythmEps)*k+rhythmEps*exp) - math.Log(exp)
		}
		gain /= n
		if gain > bestGain {
			bestGain = gain
			best = &rhythm{back: back, dens: dens, lambda: lambda, samples: len(gs)}
		}
	}
	if bestGain < need {
		return nil, bestGain
	}
	return best, bestGain
}

// fitRhythms gives every call node n makes, of a kind whose background
// calls (isBg) have a rhythm, or all of whose calls have one that the
// node's requests do not (kindRhythms), its background score from the
// renewal model (m.bgCall).
func (r *run) fitRhythms(n int32, m *nodeModel, isBg func(c int32) bool) {
	byKind := r.callsByKind(n)
	whole := r.kindRhythms(n)
	for _, k := range slices.Sorted(maps.Keys(byKind)) {
		cs := byKind[k]
		if h := whole[k]; h != nil {
			r.scoreRhythm(m, h, cs, cs)
			continue
		}
		var bg []int32
		for _, c := range cs {
			if isBg(c) {
				bg = append(bg, c)
			}
		}
		if len(bg) < minRhythmCalls {
			continue
		}
		// the rate of the calls taken for background (the initial model
		// has none: every call is still in doubt)
		lambda := (max(m.bg[k], float64(len(bg))) + 0.5) * math.Exp(-m.logSpan)
		h := r.learnRhythm(bg, lambda)
		if h != nil {
			r.scoreRhythm(m, h, cs, bg)
		}
	}
}

// callsByKind returns node n's calls by kind, each in order of send.
func (r *run) callsByKind(n int32) map[int32][]int32 {
	byKind := map[int32][]int32{}
	for _, c := range r.childrenOf[n] {
		byKind[r.calls[c].kind] = append(byKind[r.calls[c].kind], c)
	}
	for _, cs := range byKind {
		slices.SortStableFunc(cs, func(a, b int32) int { return cmpTime(r.sendOf(a), r.sendOf(b)) })
	}
	return byKind
}

// learnRhythm fits the rhythm of the consecutive calls seq (in order of
// send) at rate lambda, from the anchor that fits best; nil without one.
func (r *run) learnRhythm(seq []int32, lambda float64) *rhythm {
	if len(seq) < minRhythmCalls {
		return nil
	}
	var best *rhythm
	bestGain := math.Inf(-1)
	pooled := r.mostHanded(seq)
	for _, back := range []bool{false, true} {
		var gs []int64
		for i := 1; i < len(seq); i++ {
			if g, ok := r.rhythmGap(seq[i-1], seq[i], back); ok && g > 0 {
				gs = append(gs, g)
			}
		}
		if h, gain := fitRhythm(gs, lambda, back, pooled); h != nil && gain > bestGain {
			best, bestGain = h, gain
		}
	}
	return best
}

// kindRhythms returns, for node n, the kinds of call whose calls all
// together have a rhythm (a kind that only a timer makes), learnt without
// any assignment: the kinds whose rhythm the node's requests do not
// explain. Where requests arrive with a rhythm (a load generator at a
// fixed rate), the calls made for them repeat with it too; a kind of call
// at least half of whose calls were sent while a request of a rhythmic
// kind was open (or any request, where all the node's arrivals together
// have a rhythm) is taken for theirs. A rhythmic kind of request that
// makes no calls (health checks served at this node) explains nothing.
// Computed once per node.
func (r *run) kindRhythms(n int32) map[int32]*rhythm {
	r.rhythmOnce[n].Do(func() {
		span := r.callSpan(n)
		if span <= 0 {
			return
		}
		all, kinds := r.arrivalRhythms(n)
		explained := r.explainedKinds(n, all, kinds)
		out := map[int32]*rhythm{}
		byKind := r.callsByKind(n)
		for _, k := range slices.Sorted(maps.Keys(byKind)) {
			if explained[k] {
				continue
			}
			cs := byKind[k]
			if h := r.learnRhythm(cs, float64(len(cs))/float64(span)); h != nil {
				out[k] = h
			}
		}
		r.rhythms[n] = out
	})
	return r.rhythms[n]
}

// explainedKinds returns the kinds of call of node n at least half of
// whose calls had a candidate request of one of the kinds rhythmic (any
// candidate, with all).
func (r *run) explainedKinds(n int32, all bool, rhythmic map[int32]bool) map[int32]bool {
	if !all && len(rhythmic) == 0 {
		return nil
	}
	total, near := map[int32]int{}, map[int32]int{}
	r.sweep(n, func(c int32, cands []int32) {
		k := r.calls[c].kind
		total[k]++
		for _, p := range cands {
			if all || rhythmic[r.calls[p].kind] {
				near[k]++
				break
			}
		}
	})
	out := map[int32]bool{}
	for k, t := range total {
		if 2*near[k] >= t {
			out[k] = true
		}
	}
	return out
}

// arrivalRhythms reports whether node n's requests' arrivals all
// together have a rhythm, and which kinds of request arrive with one.
func (r *run) arrivalRhythms(n int32) (all bool, kinds map[int32]bool) {
	byKind := map[int32][]int64{}
	var every []int64
	for _, p := range r.parentsOf[n] { // by arrival
		if a := r.calls[p].arr; a != noTime {
			byKind[r.calls[p].kind] = append(byKind[r.calls[p].kind], a)
			every = append(every, a)
		}
	}
	rhythmic := func(ts []int64) bool {
		if len(ts) < minRhythmCalls || ts[len(ts)-1] <= ts[0] {
			return false
		}
		gs := make([]int64, 0, len(ts)-1)
		for i := 1; i < len(ts); i++ {
			if g := ts[i] - ts[i-1]; g > 0 {
				gs = append(gs, g)
			}
		}
		h, _ := fitRhythm(gs, float64(len(ts))/float64(ts[len(ts)-1]-ts[0]), false, false)
		return h != nil
	}
	kinds = map[int32]bool{}
	for k, ts := range byKind {
		if rhythmic(ts) {
			kinds[k] = true
		}
	}
	return rhythmic(every), kinds
}

// callSpan is the time from node n's first call sent to its last.
func (r *run) callSpan(n int32) int64 {
	kids := r.childrenOf[n]
	if len(kids) == 0 {
		return 0
	}
	lo, hi := r.sendOf(kids[0]), r.sendOf(kids[0])
	for _, c := range kids {
		lo, hi = min(lo, r.sendOf(c)), max(hi, r.sendOf(c))
	}
	return hi - lo
}

// scoreRhythm sets the background score of each call of cs (one kind, in
// order of send) under the rhythm h of the sequence seq: the renewal
// likelihood's change when the call joins seq between its neighbours
// there (itself left out).
func (r *run) scoreRhythm(m *nodeModel, h *rhythm, cs, seq []int32) {
	if m.bgCall == nil {
		m.bgCall = map[int32]float64{}
	}
	base := math.Log(h.lambda)
	sends := make([]int64, len(seq))
	for i, c := range seq {
		sends[i] = r.sendOf(c)
	}
	for _, c := range cs {
		t := r.sendOf(c)
		prev, _ := slices.BinarySearch(sends, t)
		prev--
		next, _ := slices.BinarySearch(sends, t+1)
		var p, q int32 = -1, -1
		if prev >= 0 {
			p = seq[prev]
		}
		if next < len(seq) {
			q = seq[next]
		}
		v := base
		gp, okp := r.rhythmGap(p, c, h.back)
		gq, okq := r.rhythmGap(c, q, h.back)
		switch {
		case okp && okq:
			v = h.logF(gp) + h.logF(gq)
			if gpq, ok := r.rhythmGap(p, q, h.back); ok {
				v -= h.logF(gpq)
			}
		case okp:
			v = h.logF(gp)
		case okq:
			v = h.logF(gq)
		}
		m.bgCall[c] = min(base+rhythmClamp, max(base-rhythmClamp, v))
	}
}

// rhythmGap is the interval from call a (its send, or with back its
// reply's return) to call b's send; ok is false where a is -1 or the
// anchor is unknown.
func (r *run) rhythmGap(a, b int32, back bool) (int64, bool) {
	if a < 0 || b < 0 {
		return 0, false
	}
	t := r.sendOf(a)
	if back {
		ac := &r.calls[a]
		if ac.retMsg < 0 || ac.flags&flagOneWay != 0 {
			return 0, false
		}
		t = ac.back
	}
	return r.sendOf(b) - t, true
}
