package causal

import (
	"math"
	"math/bits"
	"slices"
)

// Dist summarises a weighted distribution of durations (microseconds) or
// sizes: its sample count, total weight, weighted mean, extremes, weighted
// percentiles and a log-binned histogram.
type Dist struct {
	N      int        `json:"n"`
	Weight float64    `json:"weight"`
	Mean   float64    `json:"mean"`
	Min    float64    `json:"min"`
	P50    float64    `json:"p50"`
	P90    float64    `json:"p90"`
	P99    float64    `json:"p99"`
	Max    float64    `json:"max"`
	Hist   *Histogram `json:"hist,omitempty"`

	// sketch, when AggregateOptions.Sketches asked for it, holds the
	// samples in mergeable form (ResultMerger).
	sketch *DistBuilder
}

// Histogram is a weighted histogram on log-spaced bins (five per decade).
// Edges has one more element than Weights; values at or below zero and
// values below the first edge are counted in Underflow.
type Histogram struct {
	Edges     []float64 `json:"edges"`
	Weights   []float64 `json:"weights"`
	Underflow float64   `json:"underflow,omitempty"`
}

// exactSamples is how many samples a DistBuilder keeps exactly before it
// switches to 1%-wide log bins, which bounds its memory.
const exactSamples = 4096

const (
	binRatio = 1.01
	binFloor = 1e-3
)

var logBinRatio = math.Log(binRatio)

type sample struct{ v, w float64 }

// DistBuilder accumulates weighted samples into a Dist. The mean, weight and
// extremes are exact; percentiles are exact up to 4096 samples and within
// 1% beyond. The zero value is ready to use.
type DistBuilder struct {
	n          int
	w, sum     float64
	min, max   float64
	samples    []sample
	bins       map[int32]float64
	overflowed bool
}

// Add adds value v with weight w (w <= 0 is ignored).
func (d *DistBuilder) Add(v, w float64) {
	if w <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	if d.n == 0 || v < d.min {
		d.min = v
	}
	if d.n == 0 || v > d.max {
		d.max = v
	}
	d.n++
	d.w += w
	d.sum += v * w
	if !d.overflowed {
		d.samples = append(d.samples, sample{v, w})
		if len(d.samples) > exactSamples {
			d.overflowed = true
			d.bins = make(map[int32]float64)
			for _, s := range d.samples {
				d.bins[binOf(s.v)] += s.w
			}
			d.samples = nil
		}
		return
	}
	d.bins[binOf(v)] += w
}

// sketchExact is how many samples a sketch (AggregateOptions.Sketches,
// ResultMerger) keeps exactly before binning them: a sketch lives as long
// as its pattern, so it keeps fewer than a DistBuilder does.
const sketchExact = 256

// compact bins d's samples once there are more than sketchExact of them.
func (d *DistBuilder) compact() {
	if d.overflowed || len(d.samples) <= sketchExact {
		return
	}
	d.overflowed = true
	d.bins = make(map[int32]float64)
	for _, s := range d.samples {
		d.bins[binOf(s.v)] += s.w
	}
	d.samples = nil
}

// Merge adds all of o's samples to d.
func (d *DistBuilder) Merge(o *DistBuilder) {
	if o.n == 0 {
		return
	}
	if o.overflowed {
		if !d.overflowed {
			d.overflowed = true
			d.bins = make(map[int32]float64)
			for _, s := range d.samples {
				d.bins[binOf(s.v)] += s.w
			}
			d.samples = nil
		}
		for k, w := range o.bins {
			d.bins[k] += w
		}
		if d.n == 0 || o.min < d.min {
			d.min = o.min
		}
		if d.n == 0 || o.max > d.max {
			d.max = o.max
		}
		d.n += o.n
		d.w += o.w
		d.sum += o.sum
		return
	}
	for _, s := range o.samples {
		d.Add(s.v, s.w)
	}
}

// N returns the number of samples added.
func (d *DistBuilder) N() int { return d.n }

// Mean returns the weighted mean (0 with no samples).
func (d *DistBuilder) Mean() float64 {
	if d.w == 0 {
		return 0
	}
	return d.sum / d.w
}

// binOf maps v to a 1%-wide log bin; the sign of the bin is the sign of v
// and bin 0 holds values within binFloor of zero.
func binOf(v float64) int32 {
	a := math.Abs(v)
	if a < binFloor {
		return 0
	}
	k := int32(1 + math.Floor(math.Log(a/binFloor)/logBinRatio))
	if v < 0 {
		return -k
	}
	return k
}

// binValue is the geometric middle of bin k.
func binValue(k int32) float64 {
	if k == 0 {
		return 0
	}
	a := int32(k)
	if a < 0 {
		a = -a
	}
	v := binFloor * math.Exp((float64(a)-0.5)*logBinRatio)
	if k < 0 {
		return -v
	}
	return v
}

// Dist returns the summary, or nil with no samples. With hist it includes a
// histogram.
func (d *DistBuilder) Dist(hist bool) *Dist {
	if d.n == 0 {
		return nil
	}
	var pts []sample
	if d.overflowed {
		pts = make([]sample, 0, len(d.bins))
		for k, w := range d.bins {
			pts = append(pts, sample{binValue(k), w})
		}
	} else {
		pts = slices.Clone(d.samples)
	}
	sortSamples(pts)
	return distOf(pts, d.n, d.w, d.sum, d.min, d.max, hist)
}

// summarize returns the Dist of exact samples pts (nil with none, or when
// every weight is zero or less). It sorts pts in place.
func summarize(pts []sample, hist bool) *Dist {
	n, w, sum := 0, 0.0, 0.0
	lo, hi := math.Inf(1), math.Inf(-1)
	j := 0
	for _, p := range pts {
		if p.w <= 0 || math.IsNaN(p.v) || math.IsInf(p.v, 0) {
			continue
		}
		pts[j] = p
		j++
		n++
		w += p.w
		sum += p.v * p.w
		lo = math.Min(lo, p.v)
		hi = math.Max(hi, p.v)
	}
	if n == 0 {
		return nil
	}
	pts = pts[:j]
	sortSamples(pts)
	return distOf(pts, n, w, sum, lo, hi, hist)
}

// DistOf returns the exact Dist of the samples vals, each of weight 1 (nil
// with none): percentiles are exact whatever the number of samples, where
// a DistBuilder bins them beyond 4096. With hist it includes a histogram.
// It reorders vals.
func DistOf(vals []float64, hist bool) *Dist { return summarizeUnit(vals, hist) }

// summarizeUnit is summarize for samples that all weigh 1, and gives the
// same Dist: the percentiles are the same order statistics, found by
// selection instead of sorting (linear time). It reorders vals.
func summarizeUnit(vals []float64, hist bool) *Dist {
	n, sum := 0, 0.0
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		vals[n] = v
		n++
		sum += v
		// plain comparisons: the samples are never -0 (they are
		// differences of integers), where math.Min and Max would differ
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	if n == 0 {
		return nil
	}
	vals = vals[:n]
	w := float64(n)
	out := &Dist{N: n, Weight: w, Mean: sum / w, Min: lo, Max: hi}
	if hist {
		out.Hist = histogramUnit(vals, lo, hi)
	}
	if lo == hi {
		out.P50, out.P90, out.P99 = lo, lo, lo
		return out
	}
	ranks := [3]int{unitRank(n, 0.50), unitRank(n, 0.90), unitRank(n, 0.99)}
	var at [3]float64
	rankValues(vals, lo, hi, ranks[:], at[:])
	out.P50 = clamp(at[0], lo, hi)
	out.P90 = clamp(at[1], lo, hi)
	out.P99 = clamp(at[2], lo, hi)
	return out
}

// orderKey maps a float64 to a uint64 in the same order (for values that
// are not NaN).
func orderKey(v float64) uint64 {
	b := math.Float64bits(v)
	if b>>63 != 0 {
		return ^b
	}
	return b | 1<<63
}

const rankBucketBits = 11

// rankValues sets out[i] to the value a sort of vals would put at index
// ranks[i] (ranks ascending), for finite vals between lo and hi. Small
// inputs are selected directly; larger ones are first counted into 2048
// buckets by the top bits of their order keys between lo's and hi's (so
// the buckets are about logarithmic in the values), and only the values
// in the buckets that hold the ranks are selected among. vals may be
// reordered.
func rankValues(vals []float64, lo, hi float64, ranks []int, out []float64) {
	if len(vals) < 1<<10 {
		// largest rank first: selecting it leaves the smaller ones in front
		end := len(vals)
		for i := len(ranks) - 1; i >= 0; i-- {
			if k := ranks[i]; k < end {
				selectKth(vals[:end], k)
				end = k
			}
			out[i] = vals[ranks[i]]
		}
		return
	}
	klo := orderKey(lo)
	shift := uint(max(0, bits.Len64(orderKey(hi)-klo)-rankBucketBits))
	var count [1<<rankBucketBits + 1]int32
	for _, v := range vals {
		count[(orderKey(v)-klo)>>shift]++
	}
	// the bucket of each rank, and the rank within it
	var bucket [3]uint64
	var within [3]int
	for i, k := range ranks {
		below := 0
		b := 0
		for below+int(count[b]) <= k {
			below += int(count[b])
			b++
		}
		bucket[i], within[i] = uint64(b), k-below
	}
	// Move the values of the ranks' buckets to the front in one pass;
	// they are few. Then select among them by (bucket, value): the k-th
	// value overall is the within-th of its bucket.
	var bs [3]uint64
	nb := 0
	for i := range ranks {
		if nb == 0 || bs[nb-1] != bucket[i] {
			bs[nb] = bucket[i]
			nb++
		}
	}
	front := 0
	for j, v := range vals {
		b := (orderKey(v) - klo) >> shift
		if b == bs[0] || (nb > 1 && b == bs[1]) || (nb > 2 && b == bs[2]) {
			vals[front], vals[j] = v, vals[front]
			front++
		}
	}
	sel := vals[:front]
	for x := 0; x < nb; x++ {
		// gather bucket bs[x]'s values at the front of sel
		n := 0
		for j, v := range sel {
			if (orderKey(v)-klo)>>shift == bs[x] {
				sel[n], sel[j] = v, sel[n]
				n++
			}
		}
		run := sel[:n]
		end := n
		for i := len(ranks) - 1; i >= 0; i-- {
			if bucket[i] != bs[x] {
				continue
			}
			if k := within[i]; k < end {
				selectKth(run[:end], k)
				end = k
			}
			out[i] = run[within[i]]
		}
		sel = sel[n:]
	}
}

// unitRank is the 0-based rank quantile picks among n samples of weight 1:
// the first whose cumulative weight k+1 reaches q·n (with quantile's
// tolerance), or the last.
func unitRank(n int, q float64) int {
	target := q * float64(n) * (1 - 1e-12)
	c := math.Ceil(target)
	if c < 1 {
		c = 1
	}
	if c > float64(n) {
		c = float64(n)
	}
	return int(c) - 1
}

// selectKth reorders v so that v[k] holds the value a sort would put
// there, with no greater value before it and no smaller one after it
// (quickselect with Hoare partitioning, which splits runs of equal values
// evenly; it falls back to sorting if the partitions stay unbalanced).
func selectKth(v []float64, k int) {
	lo, hi := 0, len(v)-1
	depth := 2 * bits.Len(uint(len(v)))
	for hi > lo {
		if hi-lo < 16 || depth == 0 {
			slices.Sort(v[lo : hi+1])
			return
		}
		depth--
		mid := lo + (hi-lo)/2
		if v[mid] < v[lo] {
			v[mid], v[lo] = v[lo], v[mid]
		}
		if v[hi] < v[lo] {
			v[hi], v[lo] = v[lo], v[hi]
		}
		if v[hi] < v[mid] {
			v[hi], v[mid] = v[mid], v[hi]
		}
		pivot := v[mid]
		i, j := lo, hi
		for i <= j {
			for v[i] < pivot {
				i++
			}
			for v[j] > pivot {
				j--
			}
			if i <= j {
				v[i], v[j] = v[j], v[i]
				i++
				j--
			}
		}
		// v[lo..j] <= pivot, v[i..hi] >= pivot, v[j+1..i-1] == pivot
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return
		}
	}
}

// histogramUnit is histogram for values of weight 1, in any order.
func histogramUnit(vals []float64, lo, hi float64) *Histogram {
	h := &Histogram{}
	if hi <= 0 {
		h.Underflow = float64(len(vals))
		return h
	}
	minPos := hi
	for _, v := range vals {
		if v > 0 && v < minPos {
			minPos = v
		}
	}
	k0, edges := histEdges(minPos, hi)
	h.Edges = edges
	h.Weights = make([]float64, len(h.Edges)-1)
	for _, v := range vals {
		if v <= 0 || v < h.Edges[0] {
			h.Underflow++
			continue
		}
		h.Weights[histBin(v, k0, len(h.Weights))]++
	}
	return h
}

func sortSamples(pts []sample) {
	slices.SortFunc(pts, func(a, b sample) int {
		switch {
		case a.v < b.v:
			return -1
		case a.v > b.v:
			return 1
		}
		return 0
	})
}

// distOf summarises sorted points with the given exact totals.
func distOf(pts []sample, n int, w, sum, lo, hi float64, hist bool) *Dist {
	out := &Dist{N: n, Weight: w, Mean: sum / w, Min: lo, Max: hi}
	out.P50 = clamp(quantile(pts, w, 0.50), lo, hi)
	out.P90 = clamp(quantile(pts, w, 0.90), lo, hi)
	out.P99 = clamp(quantile(pts, w, 0.99), lo, hi)
	if hist {
		out.Hist = histogram(pts, lo, hi)
	}
	return out
}

func clamp(v, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, v)) }

// quantile returns the smallest value whose cumulative weight reaches q of
// the total (the weighted "lower" quantile).
func quantile(pts []sample, total, q float64) float64 {
	target := q * total
	cum := 0.0
	for _, p := range pts {
		cum += p.w
		if cum >= target*(1-1e-12) {
			return p.v
		}
	}
	return pts[len(pts)-1].v
}

// histogram bins pts on edges 10^(k/5) covering the positive range.
func histogram(pts []sample, lo, hi float64) *Histogram {
	h := &Histogram{}
	if hi <= 0 {
		for _, p := range pts {
			h.Underflow += p.w
		}
		return h
	}
	minPos := hi
	for _, p := range pts {
		if p.v > 0 && p.v < minPos {
			minPos = p.v
		}
	}
	k0, edges := histEdges(minPos, hi)
	h.Edges = edges
	h.Weights = make([]float64, len(h.Edges)-1)
	for _, p := range pts {
		if p.v <= 0 || p.v < h.Edges[0] {
			h.Underflow += p.w
			continue
		}
		h.Weights[histBin(p.v, k0, len(h.Weights))] += p.w
	}
	return h
}

const perDecade = 5

// histEdges returns the first edge's exponent and the edges 10^(k/5) of a
// histogram of positive values from minPos to hi.
func histEdges(minPos, hi float64) (int, []float64) {
	k0 := int(math.Floor(math.Log10(minPos) * perDecade))
	k1 := int(math.Floor(math.Log10(hi)*perDecade)) + 1
	if k1-k0 > 200 { // keep the histogram readable: at most 40 decades
		k0 = k1 - 200
	}
	edges := make([]float64, 0, k1-k0+1)
	for k := k0; k <= k1; k++ {
		edges = append(edges, math.Pow(10, float64(k)/perDecade))
	}
	return k0, edges
}

// histBin returns the bin of v among n bins whose first edge is 10^(k0/5).
func histBin(v float64, k0, n int) int {
	i := int(math.Floor(math.Log10(v)*perDecade)) - k0
	if i >= n {
		i = n - 1
	}
	if i < 0 {
		i = 0
	}
	return i
}
