package clock

import "slices"

// The lower envelope of a Way's delays over time, kept in bounded memory:
// the sample with the smallest delay in each bin of send time. Bins are
// aligned on absolute time (a bin is Send >> shift), so envelopes of two
// Ways merge bin by bin; when a Way holds more than MaxBins bins, the bins
// double in width (neighbours merge, the smaller delay staying), so 60 s
// of samples keep bins of about 67 ms. A fit over bin minima instead of
// every sample differs from the fit over all samples by at most the
// clock's rate times a bin's width (2.7 µs at 40 ppm and 67 ms), and only
// where a hull vertex lost its bin to a later sample of smaller delay.

// MaxBins bounds the bins of one Way's envelope.
const MaxBins = 1024

// firstShift is the initial bin width, 2^16 ns (65.5 µs).
const firstShift = 16

// bin is the sample with the smallest delay among n samples sent within
// one bin of time.
type bin struct {
	key int64
	s   Sample
	n   int32
}

// addBin adds s to the envelope. Samples in time order append; others
// insert (a binary search and a copy of at most MaxBins bins).
func (w *Way) addBin(s Sample) {
	if w.shift == 0 {
		w.shift = firstShift
	}
	k := s.Send >> w.shift
	n := len(w.bins)
	if n == 0 || k > w.bins[n-1].key {
		w.bins = append(w.bins, bin{key: k, s: s, n: 1})
		w.coarsen()
		return
	}
	i, found := slices.BinarySearchFunc(w.bins, k, func(b bin, k int64) int { return cmpInt(b.key, k) })
	if found {
		b := &w.bins[i]
		if s.Delay() < b.s.Delay() {
			b.s = s
		}
		b.n++
		return
	}
	w.bins = slices.Insert(w.bins, i, bin{key: k, s: s, n: 1})
	w.coarsen()
}

// coarsen doubles the bins' width until at most MaxBins remain.
func (w *Way) coarsen() {
	for len(w.bins) > MaxBins {
		w.shift++
		out := w.bins[:0]
		for _, b := range w.bins {
			b.key >>= 1
			if m := len(out); m > 0 && out[m-1].key == b.key {
				last := &out[m-1]
				if b.s.Delay() < last.s.Delay() {
					last.s = b.s
				}
				last.n += b.n
				continue
			}
			out = append(out, b)
		}
		clear(w.bins[len(out):])
		w.bins = out
	}
}

// rebinned returns bins re-keyed to the coarser width 2^shift (shift at
// least the bins' own), neighbours merged, in a new slice.
func rebinned(bins []bin, from, shift uint8) []bin {
	out := make([]bin, 0, len(bins))
	for _, b := range bins {
		b.key >>= shift - from
		if m := len(out); m > 0 && out[m-1].key == b.key {
			last := &out[m-1]
			if b.s.Delay() < last.s.Delay() {
				last.s = b.s
			}
			last.n += b.n
			continue
		}
		out = append(out, b)
	}
	return out
}

// mergeBins merges o's envelope into w's, in a new slice (so that copies
// of w sharing its bins are not changed).
func (w *Way) mergeBins(o *Way) {
	if len(o.bins) == 0 {
		return
	}
	if len(w.bins) == 0 {
		w.shift, w.bins = o.shift, slices.Clone(o.bins)
		return
	}
	shift := max(w.shift, o.shift)
	a, b := rebinned(w.bins, w.shift, shift), rebinned(o.bins, o.shift, shift)
	out := make([]bin, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || i < len(a) && a[i].key < b[j].key:
			out = append(out, a[i])
			i++
		case i == len(a) || b[j].key < a[i].key:
			out = append(out, b[j])
			j++
		default:
			x := a[i]
			if b[j].s.Delay() < x.s.Delay() {
				x.s = b[j].s
			}
			x.n += b[j].n
			out = append(out, x)
			i++
			j++
		}
	}
	w.shift, w.bins = shift, out
	w.coarsen()
}

// Envelope returns the lower envelope the Way keeps: per bin of send
// time, in time order, the sample with the smallest delay, in a new
// slice.
func (w *Way) Envelope() []Sample {
	out := make([]Sample, len(w.bins))
	for i, b := range w.bins {
		out[i] = b.s
	}
	return out
}

// Clone returns a copy of w that shares nothing with it.
func (w Way) Clone() Way {
	w.bins = slices.Clone(w.bins)
	return w
}
