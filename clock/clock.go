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
// The model is a constant offset per clock. Samples keep their
// timestamps, so a model of drift (an offset and a rate per clock, or per
// stretch of time, fitted to the lower envelope of the delays as Paxson
// and Moon, Skelly and Towsley do) can replace Way's smallest sample and
// add a rate to Estimate without changing how callers add samples.
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
// and the one with the smallest delay (the one that queued least). The
// zero Way is empty.
type Way struct {
	N   int
	Min Sample // valid when N > 0
}

// Add adds one sample.
func (w *Way) Add(s Sample) {
	if w.N == 0 || s.Delay() < w.Min.Delay() {
		w.Min = s
	}
	w.N++
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
