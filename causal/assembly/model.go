package assembly

import (
	"math"
)

// The delay models are histograms of log-time: bin 0 holds delays of zero
// or less (within the tolerance), bins 1 to gapDecades*gapPerDecade cover 1
// µs to 100 s, gapPerDecade to a decade, and the last bin everything
// longer.
const (
	gapPerDecade = 40
	gapDecades   = 8
	nGapBins     = 2 + gapDecades*gapPerDecade
	gapMinNS     = 1e3
	gapSigma     = 1.5 // kernel, in bins
	kappaGap     = 4   // prior weight of the next model down
	kappaTrans   = 1
	maxPos       = 7 // positions beyond are one context
)

// gapBin returns the bin of a delay of g nanoseconds: 1 + the bin's index
// from gapMinNS. The logarithm is estimated from the float's exponent and
// a table of its mantissa's log, then put right against the bins' edges,
// so the result is exact and no logarithm is computed on the search's hot
// path.
func gapBin(g int64) int {
	if g <= 0 {
		return 0
	}
	x := float64(g)
	if x < gapLow[2] {
		return 1
	}
	frac, exp := frexpNormal(x / gapMinNS) // x/gapMinNS = frac·2^exp, frac in [0.5, 1)
	l2 := float64(exp) + log2Mant[int((frac-0.5)*2*log2Steps)]
	b := 1 + int(l2*log10Of2*gapPerDecade)
	b = max(1, min(b, nGapBins-1))
	for b > 1 && gapLow[b] > x {
		b--
	}
	for b+1 < nGapBins && gapLow[b+1] <= x {
		b++
	}
	return b
}

// frexpNormal is math.Frexp of a positive normal float (x/gapMinNS for
// a delay of at least gapLow[2]), read from its bits without Frexp's
// call and its tests for zero, infinities, NaN and subnormals.
func frexpNormal(y float64) (frac float64, exp int) {
	b := math.Float64bits(y)
	exp = int(b>>52&0x7ff) - 1022
	return math.Float64frombits(b&^(0x7ff<<52) | 1022<<52), exp
}

// gapBinUp returns gapBin(g) given b, the bin of a delay no longer than
// g: the deconvolution bins the delays from one event to each of many
// others in increasing order, where the bin moves up a step or none at
// a time and is found without gapBin's estimate of the logarithm. It
// is gapBin's answer whatever b is (a b above g's bin is detected).
func gapBinUp(b int, g int64) int {
	if g <= 0 {
		return 0
	}
	x := float64(g)
	if x < gapLow[2] {
		return 1
	}
	b = max(b, 2)
	if b >= nGapBins || gapLow[b] > x {
		return gapBin(g)
	}
	for b+1 < nGapBins && gapLow[b+1] <= x {
		b++
	}
	return b
}

const log2Steps = 1024

// log10Of2 is log10(2), computed once: the compiler does not fold
// math.Log10 of a constant, which cost a logarithm per bin looked up.
var log10Of2 = math.Log10(2)

// log2Mant[i] is log2(0.5 + i/(2·log2Steps)), the log of a mantissa in [0.5, 1).
var log2Mant = func() []float64 {
	t := make([]float64, log2Steps+1)
	for i := range t {
		t[i] = math.Log2(0.5 + float64(i)/(2*log2Steps))
	}
	return t
}()

// gapWidth returns the width of bin b in nanoseconds.
var gapWidth = func() [nGapBins]float64 {
	var w [nGapBins]float64
	step := math.Pow(10, 1.0/gapPerDecade)
	for b := 1; b < nGapBins; b++ {
		lo := gapMinNS * math.Pow(10, float64(b-1)/gapPerDecade)
		if b == 1 {
			lo = 0
		}
		w[b] = gapMinNS*math.Pow(10, float64(b-1)/gapPerDecade)*step - lo
	}
	w[0] = gapMinNS
	return w
}()

// gapLow returns the lower edge of each bin in nanoseconds.
var gapLow = func() [nGapBins]float64 {
	var lo [nGapBins]float64
	for b := 2; b < nGapBins; b++ {
		lo[b] = gapMinNS * math.Pow(10, float64(b-1)/gapPerDecade)
	}
	return lo
}()

// kernelR is the kernel's half width in bins: three standard deviations.
const kernelR = 5 // ⌈3·gapSigma⌉

// kernel is the Gaussian the gap histograms are smoothed with.
var kernel = func() []float64 {
	r := kernelR
	k := make([]float64, 2*r+1)
	sum := 0.0
	for i := range k {
		x := float64(i - r)
		k[i] = math.Exp(-x * x / (2 * gapSigma * gapSigma))
		sum += k[i]
	}
	for i := range k {
		k[i] /= sum
	}
	return k
}()

// hist is a histogram of delays and its total weight.
type hist struct {
	w [nGapBins]float64
	n float64
}

func (h *hist) add(b int, w float64) { h.w[b] += w; h.n += w }

// smoothed returns the histogram convolved with the kernel (bin 0, the
// non-positive delays, is kept apart).
func (h *hist) smoothed() [nGapBins]float64 {
	var out [nGapBins]float64
	out[0] = h.w[0]
	r := len(kernel) / 2
	for b := 1; b < nGapBins; b++ {
		if h.w[b] == 0 {
			continue
		}
		if b > r && b+r < nGapBins {
			// the kernel within the bins: nothing to clamp (the same
			// additions in the same order)
			row := (*[2*kernelR + 1]float64)(out[b-r : b+r+1])
			for i, k := range kernel {
				row[i] += h.w[b] * k
			}
			continue
		}
		for i, k := range kernel {
			j := b + i - r
			if j < 1 {
				j = 1
			}
			if j >= nGapBins {
				j = nGapBins - 1
			}
			out[j] += h.w[b] * k
		}
	}
	return out
}

// priorMass is the delay model nothing was learnt for: log-uniform from 1
// µs to 100 s, with a little mass at zero.
var priorMass = func() [nGapBins]float64 {
	var m [nGapBins]float64
	m[0] = 0.02
	for b := 1; b < nGapBins; b++ {
		m[b] = 0.98 / (nGapBins - 1)
	}
	return m
}()

// mixMass mixes a histogram with the model below it: (smoothed counts +
// kappa·below) / (n + kappa).
func mixMass(h *hist, below *[nGapBins]float64) [nGapBins]float64 {
	if h == nil || h.n == 0 {
		return *below
	}
	s := h.smoothed()
	for b := range s {
		s[b] = (s[b] + kappaGap*below[b]) / (h.n + kappaGap)
	}
	return s
}

// logDensity turns bin masses into log densities per nanosecond.
// A bin narrower than the timestamps' resolution res holds delays that
// can only be multiples of res: its mass is spread over res, not over the
// bin, so that candidates' delays compare as the probabilities of what the
// clock could show. (The builtin max is math.Max without its call where
// one argument is finite, as here: they differ only on +Inf against NaN.)
func logDensity(m *[nGapBins]float64, res float64) *[nGapBins]float64 {
	var d [nGapBins]float64
	for b := range m {
		d[b] = math.Log(max(m[b], 1e-300) / max(gapWidth[b], res))
	}
	return &d
}

// dist is a discrete distribution's counts.
type dist struct {
	c map[int32]float64
	n float64
}

func (d *dist) add(k int32, w float64) {
	if d.c == nil {
		d.c = make(map[int32]float64)
	}
	d.c[k] += w
	d.n += w
}

// lrTable is a feature's likelihood ratio between true links and other
// candidate links, learnt from counts by bin.
type lrTable struct {
	link, other []float64
	nl, no      float64
	cache       []float64 // logLR by bin, once computed (the table is read only then)
	// falling, when set, makes the ratio non-increasing in the bin
	// (fallingLR): for ordered bins where a later bin cannot be likelier
	// for a link than an earlier one.
	falling bool
}

func newLR(bins int) lrTable {
	return lrTable{link: make([]float64, bins), other: make([]float64, bins)}
}

// newFallingLR is newLR for a ratio that cannot rise with the bin.
func newFallingLR(bins int) lrTable {
	t := newLR(bins)
	t.falling = true
	return t
}

func (t *lrTable) addLink(b int, w float64)  { t.link[b] += w; t.nl += w; t.cache = nil }
func (t *lrTable) addOther(b int, w float64) { t.other[b] += w; t.no += w; t.cache = nil }

// logLR returns log P(bin | link) − log P(bin | other), smoothed; 0
// until both sides have counts.
func (t *lrTable) logLR(b int) float64 {
	if t.nl < 1 || t.no < 1 {
		return 0
	}
	if t.cache == nil {
		k := float64(len(t.link))
		t.cache = make([]float64, len(t.link))
		for i := range t.cache {
			t.cache[i] = math.Log((t.link[i]+0.5)/(t.nl+0.5*k)) - math.Log((t.other[i]+0.5)/(t.no+0.5*k))
		}
		if t.falling {
			t.fallingLR(k)
		}
	}
	return t.cache[b]
}

// fallingLR makes t.cache non-increasing in the bin by pooling adjacent
// bins where it rises (pool adjacent violators: a pooled block's ratio is
// that of its bins' summed counts, each bin given its share).
func (t *lrTable) fallingLR(k float64) {
	type block struct {
		from, to int
		l, o     float64
	}
	lr := func(b block) float64 {
		m := float64(b.to - b.from)
		return math.Log((b.l+0.5*m)/(t.nl+0.5*k)) - math.Log((b.o+0.5*m)/(t.no+0.5*k))
	}
	var bs []block
	for i := range t.link {
		bs = append(bs, block{i, i + 1, t.link[i], t.other[i]})
		for len(bs) > 1 && lr(bs[len(bs)-1]) > lr(bs[len(bs)-2]) {
			a, b := bs[len(bs)-2], bs[len(bs)-1]
			bs = append(bs[:len(bs)-2], block{a.from, b.to, a.l + b.l, a.o + b.o})
		}
	}
	for _, b := range bs {
		v := lr(b)
		for i := b.from; i < b.to; i++ {
			t.cache[i] = v
		}
	}
}
