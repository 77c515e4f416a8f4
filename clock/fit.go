package clock

import (
	"math"
	"slices"
)

// Drift: the offset as a line over time, fitted to the delay envelopes.
//
// Take A's time as the time axis. A sample sent on A at x and received on
// B (AB) bounds B's offset at x from above by its delay y: the offset line
// runs below every such point (by the one-way delay). A sample sent on B
// and received on A at x bounds it from below by minus its delay: the
// line runs above every such point. So the upper points' lower convex hull
// and the lower points' upper convex hull enclose every offset line the
// data allow, and a line of slope a touches them at b1(a) = min(y - a x)
// over the upper points and b2(a) = max(y - a x) over the lower ones.
//
// Moon, Skelly and Towsley (1999) fit one direction by the linear
// programme "the line below every point that minimises the summed vertical
// distance to them": its optimum is the line through the lower hull's edge
// above the points' mean time, and a 2-D LP of this kind is solved exactly
// by walking the hull. Fitted to both directions with one slope (both
// envelopes drift with the same clock), the summed distances are, up to
// constants, -[b1(a) + a mean(x_up)] + [b2(a) + a mean(x_low)]: a concave
// piecewise-linear function of a whose breakpoints are the slopes of the
// two hulls' edges, so Fit evaluates it at every breakpoint and keeps the
// best. The offset is then the midway line between the two envelopes (the
// smallest delays symmetric, as Paxson (1998) assumes), its uncertainty
// the widest the data allow at the epoch over every slope consistent with
// them (b1 >= b2), and the rate's uncertainty the range of those slopes.
// Where no slope is consistent (w = b1 - b2 < 0 everywhere: events paired
// wrongly, or a step the fit did not split at) the least inverted slope is
// taken, and the estimate is Inconsistent, its uncertainty |w|/2.
//
// Steps (Paxson's clock adjustments): a clock that jumps moves both
// envelopes by the same amount at one instant. Fit looks for the split in
// time that, with a line fitted to each side, shrinks the summed distances
// most; it keeps it when the two lines disagree at the split by more than
// MinStep and four times their uncertainties, the summed distances at
// least halve, and each side spans MinSegment; then it splits the sides in
// turn (binary segmentation, at most MaxSegments pieces).
//
// Outliers: an envelope point paired wrongly (a delay of seconds among
// delays of microseconds) would decide a hull alone. Before fitting, a
// point that contradicts (by more than OutlierFloor) three quarters of the
// other direction's eight points nearest in time is left out and counted
// (Model.Outliers): a true point contradicts only outliers, and at a step
// of the clock about half of its neighbours across.

// FitOptions tune Pair.Fit. The zero value means the defaults.
type FitOptions struct {
	// MinDriftSpan is the shortest stretch of time over which a rate is
	// fitted (default 1 s); shorter data get a constant offset, RateKnown
	// false.
	MinDriftSpan int64
	// MinSegment is the shortest stretch of time between two steps, or
	// between a step and the data's ends (default 5 s).
	MinSegment int64
	// MinStep is the smallest step looked for (default 20 µs).
	MinStep int64
	// MaxSegments bounds the pieces (default 8; 1 means no steps).
	MaxSegments int
	// OutlierFloor is the least contradiction that counts towards making
	// an envelope point an outlier (default 1 ms; negative means no
	// outlier is left out).
	OutlierFloor int64
}

func (o FitOptions) withDefaults() FitOptions {
	if o.MinDriftSpan <= 0 {
		o.MinDriftSpan = 1e9
	}
	if o.MinSegment <= 0 {
		o.MinSegment = 5e9
	}
	if o.MinStep <= 0 {
		o.MinStep = 20e3
	}
	if o.MaxSegments <= 0 {
		o.MaxSegments = 8
	}
	if o.OutlierFloor == 0 {
		o.OutlierFloor = 1e6
	}
	return o
}

// pt is one envelope point: x on A's clock relative to the fit's origin,
// y the bound on the offset at x (ns).
type pt struct {
	x, y float64
	n    int32 // samples in the point's bin
}

// points returns the envelope points of p: the upper (from AB: the offset
// lies below them) and the lower (from BA: it lies above), each in time
// order, with x relative to origin.
func (p *Pair) points(origin int64) (up, low []pt) {
	for _, b := range p.AB.bins {
		up = append(up, pt{float64(b.s.Send - origin), float64(b.s.Delay()), b.n})
	}
	for _, b := range p.BA.bins {
		low = append(low, pt{float64(b.s.Recv - origin), float64(-b.s.Delay()), b.n})
	}
	slices.SortFunc(low, func(a, b pt) int { return cmpFloat(a.x, b.x) })
	return up, low
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Fit returns B's offset against A as a piecewise-linear model of A's time
// (see the comment above FitOptions), fitted to the envelopes of the
// samples each way. Without samples both ways the model is not Known.
func (p *Pair) Fit(opts FitOptions) Model {
	if p.AB.N == 0 || p.BA.N == 0 {
		return Model{}
	}
	opts = opts.withDefaults()
	origin := p.AB.bins[0].s.Send
	up, low := p.points(origin)
	var out int
	if opts.OutlierFloor > 0 {
		up, low, out = dropOutliers(up, low, opts.OutlierFloor)
	}
	if len(up) == 0 || len(low) == 0 {
		return Model{} // every point of one direction contradicts the other
	}
	segs := segmentFits(up, low, opts, opts.MaxSegments)
	m := Model{Known: true, Outliers: out}
	for i, f := range segs {
		s := f.segment(origin)
		s.Start = math.MinInt64
		if i > 0 {
			prev := segs[i-1]
			s.Start = origin + int64(math.Floor((prev.hiX+f.loX)/2)) + 1
		}
		m.Segments = append(m.Segments, s)
	}
	if len(m.Segments) == 1 {
		m.Segments[0].Samples = p.AB.N + p.BA.N // outliers' samples too
	}
	return m
}

// segFit is one segment's fit, in the fit's relative coordinates.
type segFit struct {
	loX, hiX     float64 // time extent of its points
	epoch        float64
	a, c         float64 // rate, offset at epoch
	unc, aUnc    float64
	rateKnown    bool
	inconsistent bool
	cost         float64 // summed distances of the points to their envelope lines
	nUp, nLow    int
	samples      int
}

// segment converts f to a Segment with absolute times.
func (f *segFit) segment(origin int64) Segment {
	return Segment{
		From:            origin + int64(math.Floor(f.loX)),
		To:              origin + int64(math.Ceil(f.hiX)),
		Epoch:           origin + int64(math.Round(f.epoch)),
		Offset:          int64(math.Floor(f.c)), // down, as Estimate
		Rate:            f.a,
		Uncertainty:     int64(math.Ceil(f.unc)),
		RateUncertainty: f.aUnc,
		RateKnown:       f.rateKnown,
		Samples:         f.samples,
		Inconsistent:    f.inconsistent,
	}
}

// at is the offset f gives at relative time x.
func (f *segFit) at(x float64) float64 { return f.c + f.a*(x-f.epoch) }

// segmentFits fits up and low, split at steps into at most maxSeg pieces.
func segmentFits(up, low []pt, opts FitOptions, maxSeg int) []segFit {
	whole := fitLine(up, low, opts)
	if maxSeg < 2 {
		return []segFit{whole}
	}
	tau, ok := bestSplit(up, low, opts, whole)
	if !ok {
		return []segFit{whole}
	}
	lu, ll := splitAt(up, tau), splitAt(low, tau)
	lf := segmentFits(up[:lu], low[:ll], opts, maxSeg/2)
	rf := segmentFits(up[lu:], low[ll:], opts, maxSeg-len(lf))
	return append(lf, rf...)
}

// splitAt returns the index of the first point at or after time tau.
func splitAt(ps []pt, tau float64) int {
	i, _ := slices.BinarySearchFunc(ps, tau, func(p pt, t float64) int { return cmpFloat(p.x, t) })
	return i
}

// splitProbes is how many splits bestSplit tries before refining
// around the best.
const splitProbes = 128

// minSplitPoints is the fewest envelope points each way on either side
// of a step.
const minSplitPoints = 3

// bestSplit returns the step that shrinks the summed distances most, if
// it is one (see the comment above FitOptions).
func bestSplit(up, low []pt, opts FitOptions, whole segFit) (tau float64, ok bool) {
	lo, hi := math.Min(up[0].x, low[0].x), math.Max(up[len(up)-1].x, low[len(low)-1].x)
	if hi-lo < 2*float64(opts.MinSegment) {
		return 0, false
	}
	xs := make([]float64, 0, len(up)+len(low))
	for _, p := range up {
		xs = append(xs, p.x)
	}
	for _, p := range low {
		xs = append(xs, p.x)
	}
	slices.Sort(xs)
	xs = slices.Compact(xs)
	best := math.Inf(1)
	var left, right segFit
	bi := -1
	try := func(i int) {
		t := (xs[i-1] + xs[i]) / 2
		if t-lo < float64(opts.MinSegment) || hi-t < float64(opts.MinSegment) {
			return
		}
		lu, ll := splitAt(up, t), splitAt(low, t)
		if lu < minSplitPoints || ll < minSplitPoints || len(up)-lu < minSplitPoints || len(low)-ll < minSplitPoints {
			return
		}
		l, r := fitLine(up[:lu], low[:ll], opts), fitLine(up[lu:], low[ll:], opts)
		if c := l.cost + r.cost; c < best {
			best, tau, left, right, bi = c, xs[i], l, r, i
		}
	}
	// Every stride-th split, then every one around the best of those.
	stride := max(1, len(xs)/splitProbes)
	for i := 1; i < len(xs); i += stride {
		try(i)
	}
	if c := bi; stride > 1 && c > 0 {
		for i := max(1, c-stride+1); i < min(len(xs), c+stride); i++ {
			try(i)
		}
	}
	if math.IsInf(best, 1) || best > whole.cost/2 {
		return 0, false
	}
	step := math.Abs(right.at(tau) - left.at(tau))
	if step < float64(opts.MinStep) || step < 4*(left.unc+right.unc) {
		return 0, false
	}
	return tau, true
}

// dropOutliers leaves out the points of either direction that contradict
// most of the other direction's nearest points (the 8 nearest in time):
// an upper point below them, or a lower point above them, by more than
// floor. A point paired wrongly contradicts its neighbours across; a
// true point contradicts at most the few outliers among them, and at a
// step of the clock about half of them. It returns the points kept and
// how many were left out.
func dropOutliers(up, low []pt, floor int64) ([]pt, []pt, int) {
	badUp := contradicting(up, low, float64(floor), false)
	badLow := contradicting(low, up, float64(floor), true)
	n := 0
	keep := func(ps []pt, bad []bool) []pt {
		out := ps[:0:0]
		for i, p := range ps {
			if bad[i] {
				n++
				continue
			}
			out = append(out, p)
		}
		return out
	}
	up, low = keep(up, badUp), keep(low, badLow)
	return up, low, n
}

// outlierNeighbours is how many of the other direction's points an
// envelope point is compared with, and outlierShare the share of them it
// must contradict to be left out.
const (
	outlierNeighbours = 8
	outlierShare      = 0.75
)

// contradicting flags the points of ps that contradict at least
// outlierShare of their nearest points of other (at least three): ps
// upper (an offset line must run below them, other above) unless lower.
func contradicting(ps, other []pt, floor float64, lower bool) []bool {
	bad := make([]bool, len(ps))
	if len(other) < 3 {
		return bad
	}
	k := min(outlierNeighbours, len(other))
	for i, p := range ps {
		j := splitAt(other, p.x)
		lo := max(0, min(j-k/2, len(other)-k))
		n := 0
		for _, q := range other[lo : lo+k] {
			if !lower && q.y-p.y > floor || lower && p.y-q.y > floor {
				n++
			}
		}
		bad[i] = float64(n) >= outlierShare*float64(k)
	}
	return bad
}

// hull returns the lower convex hull of ps (in time order), or the upper
// one when upper is set (Andrew's monotone chain). Of points at one time
// only the lowest (the highest for the upper hull) can be on it.
func hull(ps []pt, upper bool) []pt {
	h := make([]pt, 0, 16)
	for i, p := range ps {
		if i+1 < len(ps) && ps[i+1].x == p.x && (upper == (ps[i+1].y >= p.y)) {
			continue // the next point at this time is the better one
		}
		if n := len(h); n > 0 && h[n-1].x == p.x {
			continue // an earlier point at this time was better
		}
		for len(h) >= 2 {
			a, b := h[len(h)-2], h[len(h)-1]
			cross := (b.x-a.x)*(p.y-a.y) - (b.y-a.y)*(p.x-a.x)
			if upper && cross < 0 || !upper && cross > 0 {
				break
			}
			h = h[:len(h)-1]
		}
		h = append(h, p)
	}
	return h
}

// envelopes are the two hulls of one fit and the points' mean times.
type envelopes struct {
	up, low         []pt // the upper points' lower hull, the lower points' upper hull
	meanUp, meanLow float64
}

// b1 is the highest intercept (at x = 0) of a line of slope a below every
// upper point.
func (e *envelopes) b1(a float64) float64 {
	v := math.Inf(1)
	for _, p := range e.up {
		v = math.Min(v, p.y-a*p.x)
	}
	return v
}

// b2 is the lowest intercept of a line of slope a above every lower point.
func (e *envelopes) b2(a float64) float64 {
	v := math.Inf(-1)
	for _, p := range e.low {
		v = math.Max(v, p.y-a*p.x)
	}
	return v
}

// gain is what the joint LP maximises: the upper line at the upper points'
// mean time minus the lower line at the lower points' mean time.
func (e *envelopes) gain(a float64) float64 {
	return e.b1(a) + a*e.meanUp - e.b2(a) - a*e.meanLow
}

// width is the vertical gap between the two envelopes' lines of slope a
// (negative: no line of slope a is consistent with the data).
func (e *envelopes) width(a float64) float64 { return e.b1(a) - e.b2(a) }

// breakpoints returns the slopes of both hulls' edges, sorted: where the
// piecewise-linear functions of a above change slope.
func (e *envelopes) breakpoints() []float64 {
	var as []float64
	for _, h := range [][]pt{e.up, e.low} {
		for i := 1; i < len(h); i++ {
			as = append(as, (h[i].y-h[i-1].y)/(h[i].x-h[i-1].x))
		}
	}
	slices.Sort(as)
	return slices.Compact(as)
}

// argmax returns the breakpoint maximising f (the smallest in magnitude
// on ties), or 0 when there is none.
func argmax(as []float64, f func(float64) float64) float64 {
	best, bv := 0.0, math.Inf(-1)
	for _, a := range as {
		v := f(a)
		if v > bv || v == bv && math.Abs(a) < math.Abs(best) {
			best, bv = a, v
		}
	}
	return best
}

// fitLine fits one line to the upper and lower points (both non-empty).
func fitLine(up, low []pt, opts FitOptions) segFit {
	lo, hi := math.Min(up[0].x, low[0].x), math.Max(up[len(up)-1].x, low[len(low)-1].x)
	f := segFit{loX: lo, hiX: hi, epoch: math.Round((lo + hi) / 2), nUp: len(up), nLow: len(low)}
	// Shift the times so that the epoch is 0: intercepts are offsets there.
	e := envelopes{up: shifted(hull(up, false), f.epoch), low: shifted(hull(low, true), f.epoch)}
	for _, p := range up {
		e.meanUp += p.x - f.epoch
	}
	for _, p := range low {
		e.meanLow += p.x - f.epoch
	}
	e.meanUp /= float64(len(up))
	e.meanLow /= float64(len(low))
	for _, p := range up {
		f.samples += int(p.n)
	}
	for _, p := range low {
		f.samples += int(p.n)
	}
	as := e.breakpoints()
	f.rateKnown = hi-lo >= float64(opts.MinDriftSpan) && len(up) >= 2 && len(low) >= 2 && len(as) > 0
	f.solve(&e, as)
	if f.rateKnown && f.aUnc >= maxRate/2 {
		// The data leave the rate open (every point of one direction
		// beyond the other's): keep a constant offset.
		f.rateKnown = false
		f.solve(&e, as)
	}
	f.cost = 0
	b1, b2 := e.b1(f.a), e.b2(f.a)
	for _, p := range up {
		f.cost += p.y - b1 - f.a*(p.x-f.epoch)
	}
	for _, p := range low {
		f.cost += b2 + f.a*(p.x-f.epoch) - p.y
	}
	return f
}

// solve sets f's rate (0 unless rateKnown), offset and uncertainties.
func (f *segFit) solve(e *envelopes, as []float64) {
	f.a, f.aUnc, f.inconsistent = 0, 0, false
	if f.rateKnown {
		f.a = argmax(as, e.gain)
		if e.width(f.a) < 0 {
			f.a = argmax(as, e.width)
		}
	}
	b1, b2 := e.b1(f.a), e.b2(f.a)
	f.c = (b1 + b2) / 2
	w := b1 - b2
	switch {
	case w < 0:
		f.inconsistent = true
		f.unc = -w / 2
		if f.rateKnown {
			au := argmax(as, func(a float64) float64 { return e.b1(a) + a*e.meanUp })
			al := argmax(as, func(a float64) float64 { return -e.b2(a) - a*e.meanLow })
			f.aUnc = math.Max(math.Abs(au-f.a), math.Abs(al-f.a))
		}
	case f.rateKnown:
		f.unc, f.aUnc = e.bounds(as, f.a, f.c)
	default:
		f.unc = w / 2
	}
}

func shifted(ps []pt, by float64) []pt {
	for i := range ps {
		ps[i].x -= by
	}
	return ps
}

// bounds returns how far the offset at the epoch (the intercept) and the
// rate can be from c and a while a line stays consistent with the data:
// over the slopes where the width is not negative (an interval, the width
// being concave), the highest b1 and the lowest b2.
func (e *envelopes) bounds(as []float64, a, c float64) (unc, aUnc float64) {
	lo, hi := e.feasible(as, a)
	cands := []float64{lo, hi}
	for _, x := range as {
		if x > lo && x < hi {
			cands = append(cands, x)
		}
	}
	for _, x := range cands {
		unc = math.Max(unc, math.Max(e.b1(x)-c, c-e.b2(x)))
	}
	return unc, math.Max(a-lo, hi-a)
}

// maxRate caps a rate bound the data leave open (100 %).
const maxRate = 1.0

// feasible returns the interval of slopes around a (where the width is
// not negative) over which the width stays not negative.
func (e *envelopes) feasible(as []float64, a float64) (lo, hi float64) {
	// Walk out from a over the breakpoints; the width is linear between
	// them, so the root lies between the last non-negative and the first
	// negative, or on the ray beyond the last breakpoint.
	root := func(x0, x1 float64) float64 {
		w0, w1 := e.width(x0), e.width(x1)
		if w1 >= 0 {
			return x1
		}
		return x0 + (x1-x0)*w0/(w0-w1)
	}
	hi = a
	for _, x := range as {
		if x <= a {
			continue
		}
		if e.width(x) < 0 {
			return e.feasibleLow(as, a, root), root(hi, x)
		}
		hi = x
	}
	hi = root(hi, hi+maxRate)
	return e.feasibleLow(as, a, root), hi
}

func (e *envelopes) feasibleLow(as []float64, a float64, root func(x0, x1 float64) float64) float64 {
	lo := a
	for i := len(as) - 1; i >= 0; i-- {
		x := as[i]
		if x >= a {
			continue
		}
		if e.width(x) < 0 {
			return root(lo, x)
		}
		lo = x
	}
	return root(lo, lo-maxRate)
}
