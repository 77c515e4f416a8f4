package clock

import (
	"math"
	"slices"
)

// Segment is one stretch of a Model between steps: B's offset against A
// as a line over A's time.
type Segment struct {
	// Start is the first A time the segment applies to: math.MinInt64
	// for the first; for a later one, midway between the last envelope
	// point before the step and the first after it.
	Start int64
	// From and To are the A times of the first and last envelope points
	// the segment was fitted to.
	From, To int64
	// Epoch is the A time at which Offset holds, the middle of From..To.
	Epoch int64
	// Offset is B's reading minus A's at Epoch, in ns.
	Offset int64
	// Rate is how much the offset grows per ns of A's time (the drift:
	// Rate·1e6 ppm); 0 when not RateKnown.
	Rate float64
	// Uncertainty bounds the error of Offset at Epoch: the widest the
	// data leave it over every rate consistent with them (for a constant
	// model, half the shortest round trip, as Estimate); the magnitude of
	// the inversion when Inconsistent.
	Uncertainty int64
	// RateUncertainty bounds the error of Rate: the range of rates
	// consistent with the data.
	RateUncertainty float64
	// RateKnown is false when the data spanned less than
	// FitOptions.MinDriftSpan, or left the rate open: Rate is then 0.
	RateKnown bool
	// Samples counts the samples the segment rests on.
	Samples int
	// Inconsistent is set when no line is consistent with the samples.
	Inconsistent bool
}

// At returns the segment's offset at A time t.
func (s *Segment) At(t int64) int64 {
	return s.Offset + int64(math.Round(s.Rate*float64(t-s.Epoch)))
}

// Model is clock B's offset against clock A as a function of A's time:
// a line per segment, the segments split where B's clock stepped. Models
// of a pair come from Pair.Fit; chained models from Compose. A Model
// that is not Known says nothing (At returns 0).
type Model struct {
	Known bool
	// Segments are in time order, the first from the beginning of time.
	Segments []Segment
	// Outliers counts the envelope points the fit left out.
	Outliers int
}

// Constant returns the model of a constant offset e.
func Constant(e Estimate) Model {
	if !e.Known {
		return Model{}
	}
	return Model{Known: true, Segments: []Segment{{Start: math.MinInt64, Offset: e.Offset, Uncertainty: e.Uncertainty,
		Samples: e.Samples, Inconsistent: e.Inconsistent}}}
}

// seg returns the segment that applies at A time t.
func (m *Model) seg(t int64) *Segment {
	i := len(m.Segments) - 1
	for i > 0 && m.Segments[i].Start > t {
		i--
	}
	return &m.Segments[i]
}

// At returns B's offset against A at A time t: B's reading then minus A's.
// Beyond the data the segment's line is extended.
func (m *Model) At(t int64) int64 {
	if !m.Known || len(m.Segments) == 0 {
		return 0
	}
	return m.seg(t).At(t)
}

// Local returns the A time at which B reads t: t minus the offset then
// (found by two fixed-point steps, exact to the nanosecond for rates
// below 1e-4).
func (m *Model) Local(t int64) int64 {
	if !m.Known || len(m.Segments) == 0 {
		return t
	}
	a := t - m.At(t)
	return t - m.At(a)
}

// Steps returns the number of steps (segments after the first).
func (m *Model) Steps() int { return max(0, len(m.Segments)-1) }

// Estimate summarises the model as a constant offset for Chain: the
// first segment's offset at its epoch, the largest uncertainty of any
// segment, the samples of all, Inconsistent if any is.
func (m *Model) Estimate() Estimate {
	if !m.Known || len(m.Segments) == 0 {
		return Estimate{}
	}
	e := Estimate{Known: true, Offset: m.Segments[0].Offset}
	for _, s := range m.Segments {
		e.Uncertainty = max(e.Uncertainty, s.Uncertainty)
		e.Samples += s.Samples
		e.Inconsistent = e.Inconsistent || s.Inconsistent
	}
	return e
}

// Reverse returns A's offset against B: the same lines negated (over B's
// time, which differs from A's by the offset: negligible for the rate,
// and the segment boundaries move with it).
func (m Model) Reverse() Model {
	if !m.Known {
		return m
	}
	out := Model{Known: true, Outliers: m.Outliers, Segments: slices.Clone(m.Segments)}
	for i := range out.Segments {
		s := &out.Segments[i]
		o := s.Offset
		s.Offset = -o
		s.Rate = -s.Rate
		s.Epoch += o
		s.From += o
		s.To += o
		if s.Start != math.MinInt64 {
			s.Start += o // B's time is A's plus the offset
		}
	}
	return out
}

// Add returns the offset of C against A over A's time from m (B against
// A, over A's time) and o (C against B, over B's time, which runs ahead of
// A's by m: o's times are moved onto A's first, or a drift of C against B
// would be read at the wrong time, 65 µs wrong per second of offset at
// 65 ppm). Segment boundaries are the union of both; each piece's epoch
// is the one of the operand that knows a rate (m's on ties), the other
// moved to it with its rate uncertainty added.
func (m Model) Add(o Model) Model {
	if !m.Known || !o.Known {
		return Model{}
	}
	o = o.onAxisOf(&m)
	starts := []int64{math.MinInt64}
	for _, s := range m.Segments[1:] {
		starts = append(starts, s.Start)
	}
	for _, s := range o.Segments[1:] {
		starts = append(starts, s.Start)
	}
	slices.Sort(starts)
	starts = slices.Compact(starts)
	out := Model{Known: true, Outliers: m.Outliers + o.Outliers}
	for _, st := range starts {
		a, b := *m.seg(st), *o.seg(st)
		if !a.RateKnown && b.RateKnown {
			a, b = b, a
		}
		moved := b.At(a.Epoch) - b.Offset
		s := Segment{
			Start: st, From: max(a.From, b.From), To: min(a.To, b.To), Epoch: a.Epoch,
			Offset:          a.Offset + b.Offset + moved,
			Rate:            a.Rate + b.Rate,
			Uncertainty:     a.Uncertainty + b.Uncertainty + int64(math.Ceil(b.RateUncertainty*math.Abs(float64(a.Epoch-b.Epoch)))),
			RateUncertainty: a.RateUncertainty + b.RateUncertainty,
			RateKnown:       a.RateKnown || b.RateKnown,
			Samples:         min(a.Samples, b.Samples),
			Inconsistent:    a.Inconsistent || b.Inconsistent,
		}
		if a.Samples == 0 {
			s.Samples = b.Samples
		} else if b.Samples == 0 {
			s.Samples = a.Samples
		}
		if s.From > s.To {
			s.From, s.To = a.From, a.To
		}
		out.Segments = append(out.Segments, s)
	}
	return out
}

// onAxisOf returns o with its times (on B's clock) moved onto A's, B
// running m ahead of A.
func (o Model) onAxisOf(m *Model) Model {
	o.Segments = slices.Clone(o.Segments)
	for i := range o.Segments {
		s := &o.Segments[i]
		// B's time runs 1 + m's rate as fast as A's.
		s.Rate *= 1 + m.seg(s.Epoch).Rate
		s.Epoch, s.From, s.To = m.Local(s.Epoch), m.Local(s.From), m.Local(s.To)
		if s.Start != math.MinInt64 {
			s.Start = m.Local(s.Start)
		}
	}
	return o
}

// Compose returns every clock's model against the reference along the
// paths Chain found (offs): the root's constant offset plus the models of
// the edges along the path, each used against the grain where the path
// takes it so. models[i] is edges[i]'s model (B against A); where it is
// not Known the edge's Estimate stands as a constant. A clock Chain did
// not reach has a model that is not Known.
func Compose(offs []Offset, roots []Root, edges []Edge, models []Model) []Model {
	out := make([]Model, len(offs))
	rootModel := func(c int) Model {
		for _, r := range roots {
			if r.Clock == c {
				return Constant(Estimate{Known: true, Offset: r.Offset, Uncertainty: r.Uncertainty})
			}
		}
		return Model{}
	}
	for c := range offs {
		if !offs[c].Known {
			continue
		}
		path := Path(offs, c)
		acc := rootModel(path[0])
		for _, x := range path[1:] {
			ei := offs[x].Edge
			e := edges[ei]
			em := Constant(e.Estimate)
			if ei < len(models) && models[ei].Known {
				em = models[ei]
			}
			if e.A != offs[x].Prev {
				em = em.Reverse()
			}
			acc = acc.Add(em)
		}
		out[c] = acc
	}
	return out
}

// Step is where a model's offset jumps.
type Step struct {
	// At is the A time of the step (the later segment's Start).
	At int64
	// By is how far the offset jumped there, in ns.
	By int64
}

// StepList returns the model's steps in time order.
func (m *Model) StepList() []Step {
	var out []Step
	for i := 1; i < len(m.Segments); i++ {
		s := &m.Segments[i]
		out = append(out, Step{At: s.Start, By: s.At(s.Start) - m.Segments[i-1].At(s.Start)})
	}
	return out
}

// Floor raises every segment's uncertainty to at least u (a timestamp
// resolution no estimate beats).
func (m *Model) Floor(u int64) {
	for i := range m.Segments {
		m.Segments[i].Uncertainty = max(m.Segments[i].Uncertainty, u)
	}
}

// Violations counts the envelope points of p (per bin, the smallest delay)
// that model m contradicts by more than tol ns: an event from A received
// on B sooner than m allows (its delay below m's offset at its send), or
// one from B received on A sooner (minus its delay above the offset at
// its receipt). A model consistent with every sample has none; comparing
// two hypotheses by their violations tells which the data support.
func (p *Pair) Violations(m *Model, tol int64) int {
	n := 0
	for _, b := range p.AB.bins {
		if b.s.Delay() < m.At(b.s.Send)-tol {
			n++
		}
	}
	for _, b := range p.BA.bins {
		if -b.s.Delay() > m.At(b.s.Recv)+tol {
			n++
		}
	}
	return n
}

// Consensus returns the constant offset that contradicts the fewest of
// p's envelope points (Violations with no tolerance): the midpoint of the
// first interval of such offsets, half its width as the uncertainty, and
// how many points it contradicts. Not Known without samples both ways.
func (p *Pair) Consensus() (Estimate, int) {
	if p.AB.N == 0 || p.BA.N == 0 {
		return Estimate{}, 0
	}
	var ups, lows []int64
	for _, b := range p.AB.bins {
		ups = append(ups, b.s.Delay())
	}
	for _, b := range p.BA.bins {
		lows = append(lows, -b.s.Delay())
	}
	slices.Sort(ups)
	slices.Sort(lows)
	// An offset c contradicts the upper points below it and the lower
	// points above it; that count changes only at the points' values.
	viol := func(c int64) int {
		below, _ := slices.BinarySearch(ups, c)
		above := len(lows) - upperBound(lows, c)
		return below + above
	}
	vals := slices.Concat(ups, lows)
	slices.Sort(vals)
	vals = slices.Compact(vals)
	// The values and the midpoints between them, in order: the count is
	// constant between two values, so the first run of the least count
	// among them is the first interval of least contradiction.
	cands := make([]int64, 0, 2*len(vals))
	for i, v := range vals {
		if i > 0 && v-vals[i-1] > 1 {
			cands = append(cands, vals[i-1]+FloorHalf(v-vals[i-1]))
		}
		cands = append(cands, v)
	}
	best, lo, hi, run := math.MaxInt, int64(0), int64(0), false
	for _, c := range cands {
		v := viol(c)
		switch {
		case v < best:
			best, lo, hi, run = v, c, c, true
		case v == best && run:
			hi = c
		default:
			run = false
		}
	}
	e := Estimate{Known: true, Offset: lo + FloorHalf(hi-lo), Uncertainty: CeilHalf(hi - lo), Samples: p.AB.N + p.BA.N}
	return e, best
}

// upperBound returns the index of the first element of sorted xs above x.
func upperBound(xs []int64, x int64) int {
	i, _ := slices.BinarySearch(xs, x+1)
	return i
}

// Consistent returns a Pair of the envelope points of p that m does not
// contradict (Violations with tolerance tol): each bin's sample with
// smallest delay, the bin's samples counted.
func (p *Pair) Consistent(m *Model, tol int64) Pair {
	var q Pair
	for _, b := range p.AB.bins {
		if b.s.Delay() >= m.At(b.s.Send)-tol {
			q.AB.addCounted(b)
		}
	}
	for _, b := range p.BA.bins {
		if -b.s.Delay() <= m.At(b.s.Recv)+tol {
			q.BA.addCounted(b)
		}
	}
	return q
}

// addCounted adds bin b's sample as b.n samples.
func (w *Way) addCounted(b bin) {
	w.Add(b.s)
	w.N += int(b.n) - 1
	i, _ := slices.BinarySearchFunc(w.bins, b.s.Send>>w.shift, func(x bin, k int64) int { return cmpInt(x.key, k) })
	if i < len(w.bins) {
		w.bins[i].n += b.n - 1
	}
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// UnknownRate is the drift assumed, for choosing among estimates, of a
// clock whose drift the samples did not tell (100 ppm: most quartz
// oscillators stay within it).
const UnknownRate = 100e-6

// UncertaintyOver bounds the model's error at any A time from from to to:
// per segment, where it applies, its offset's uncertainty plus its rate's
// (UnknownRate where the rate is not known) times the farthest such time
// from its epoch. An estimate fitted to a short stretch of samples is
// exact there and uncertain far from it; chaining by this bound prefers
// estimates that hold over the whole capture.
func (m *Model) UncertaintyOver(from, to int64) int64 {
	var u int64
	for i := range m.Segments {
		s := &m.Segments[i]
		lo, hi := max(from, s.Start), to
		if i+1 < len(m.Segments) {
			hi = min(hi, m.Segments[i+1].Start-1)
		}
		if lo > hi {
			continue
		}
		rate := s.RateUncertainty
		if !s.RateKnown {
			rate = UnknownRate
		}
		d := max(abs(lo-s.Epoch), abs(hi-s.Epoch))
		u = max(u, s.Uncertainty+int64(math.Ceil(rate*float64(d))))
	}
	return u
}
