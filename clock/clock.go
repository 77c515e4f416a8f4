// Package clock estimates the offsets between clocks from events seen on
// two of them, for every stage that corrects timestamps: pcapio (sniffer
// against sniffer, from packets both saw), nat (sniffers on either side of
// a translation, from translated copies), reconcile (sniffers and traced
// hosts, from messages and syscalls) and pipeline (pcapio's offsets
// completed with nat's).
//
// An event that leaves one clock's domain at Send (on that clock) and
// arrives in another's at Recv (on the other clock) bounds the receiver's
// offset against the sender's from above: Recv - Send is the true delay,
// which is not negative, plus that offset. The smallest such difference
// each way, dAB and dBA, bound B's offset against A's to [-dBA, dAB]: an
// interval as wide as the shortest round trip the two directions allow
// (MSHN keeps the sample with the shortest round trip; the smallest delay
// each way is that or better). Its midpoint, (dAB - dBA)/2, is exact when
// the smallest delays are symmetric (Paxson; WAP5 section 5.2); its
// half-width, (dAB + dBA)/2, bounds the error whatever the asymmetry. A
// Pair gathers the samples of two clocks and Estimate gives that
// midpoint and half-width.
//
// Rounding: the offset is rounded down, the uncertainty up (so it still
// bounds the error). Two smallest delays with a negative sum contradict
// each other (clocks that drift, or events paired wrongly): the estimate
// is Inconsistent and its uncertainty the half-sum's magnitude.
//
// Chain turns pairwise estimates into every clock's offset against a
// reference: from the clocks whose offset is known beforehand (the
// reference, offsets given by the user) along the path of least summed
// uncertainty, each pairwise estimate used in the direction the path
// takes it (negated against the grain, never rounded again).
//
// Clocks also drift and step. Each Way keeps the lower envelope of its
// delays over time (bounded: MaxBins), and Pair.Fit fits a Model to the
// two envelopes: B's offset against A as a line over A's time (an offset
// at an epoch and a rate, the drift), piecewise where B's clock stepped,
// with outliers (events paired wrongly) left out: the linear programme of
// Moon, Skelly and Towsley over the convex hulls of the envelopes, both
// directions sharing the rate, the offset midway between them as Paxson
// has it (fit.go explains). Compose chains models along Chain's paths.
// Estimate stays the constant-offset estimate of the smallest delays.
//
// This package must not know about packets, sniffers or hosts: clocks are
// numbers.
package clock

import "math"

// Sample is one event seen on two clocks: it left at Send, on the
// sender's clock, and arrived at Recv, on the receiver's.
type Sample struct {
	Send, Recv int64
}

// Delay returns Recv - Send: the event's true delay plus the receiver's
// clock's offset against the sender's.
func (s Sample) Delay() int64 { return s.Recv - s.Send }

// Way gathers the samples of one direction between two clocks: how many,
// the one with the smallest delay (the one that queued least), and the
// lower envelope of the delays over time (the smallest per bin of send
// time, at most MaxBins bins: see Envelope), which Pair.Fit fits a drift
// to. The zero Way is empty. A Way holds a slice: copies share it, so
// add to one copy only (Clone makes an independent one; Merge never
// changes the Way merged nor the copies of the receiver).
type Way struct {
	N     int
	Min   Sample // valid when N > 0
	shift uint8  // bins are 2^shift ns wide (0 while empty)
	bins  []bin
}

// Add adds one sample. Samples in time order cost O(1) amortised; others
// O(MaxBins) at most.
func (w *Way) Add(s Sample) {
	if w.N == 0 || s.Delay() < w.Min.Delay() {
		w.Min = s
	}
	w.N++
	w.addBin(s)
}

// Merge adds the samples of o.
func (w *Way) Merge(o Way) {
	if o.N == 0 {
		return
	}
	if w.N == 0 || o.Min.Delay() < w.Min.Delay() {
		w.Min = o.Min
	}
	w.N += o.N
	w.mergeBins(&o)
}

// MinDelay returns the smallest delay, math.MaxInt64 when empty.
func (w *Way) MinDelay() int64 {
	if w.N == 0 {
		return math.MaxInt64
	}
	return w.Min.Delay()
}

// Pair gathers the samples between clocks A and B, both ways.
type Pair struct {
	AB Way // sent on A's clock, received on B's
	BA Way // sent on B's clock, received on A's
}

// Estimate is clock B's offset against clock A: B's reading minus A's at
// one instant. The true offset lies within Offset ± Uncertainty unless
// the smallest delays the estimate rests on were lost or mismatched.
type Estimate struct {
	// Known is false without samples both ways; the rest is then zero.
	Known bool
	// Offset is (dAB - dBA)/2 rounded down, in ns.
	Offset int64
	// Uncertainty is |dAB + dBA|/2 rounded up, in ns.
	Uncertainty int64
	// Samples is how many events the estimate rests on.
	Samples int
	// Inconsistent is set when dAB + dBA < 0.
	Inconsistent bool
}

// Estimate returns B's offset against A from the smallest delay each way.
func (p *Pair) Estimate() Estimate {
	if p.AB.N == 0 || p.BA.N == 0 {
		return Estimate{}
	}
	dAB, dBA := p.AB.MinDelay(), p.BA.MinDelay()
	rt := dAB + dBA
	return Estimate{
		Known:        true,
		Offset:       FloorHalf(dAB - dBA),
		Uncertainty:  CeilHalf(abs(rt)),
		Samples:      p.AB.N + p.BA.N,
		Inconsistent: rt < 0,
	}
}

// RoundTrip returns dAB + dBA: the width of the interval the two
// directions leave (negative when they contradict each other), or
// math.MinInt64 when a direction has no sample.
func (p *Pair) RoundTrip() int64 {
	if p.AB.N == 0 || p.BA.N == 0 {
		return math.MinInt64
	}
	return p.AB.MinDelay() + p.BA.MinDelay()
}

// Reverse returns A's offset against B: the same estimate, negated.
func (e Estimate) Reverse() Estimate {
	e.Offset = -e.Offset
	return e
}

// FloorHalf returns x/2 rounded down (toward minus infinity).
func FloorHalf(x int64) int64 { return x >> 1 }

// CeilHalf returns x/2 rounded up (toward plus infinity).
func CeilHalf(x int64) int64 { return -((-x) >> 1) }

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
