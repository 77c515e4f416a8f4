package pcapio

import (
	"math"
	"net/netip"
	"slices"
)

// Offset is one sniffer's estimated clock offset against the reference
// sniffer: Corrected = TS - Offset. A sniffer that shares no packets with
// the reference, directly or through other sniffers, has Known false and
// its timestamps are used as they are.
type Offset struct {
	Sniffer   SnifferID `json:"sniffer"`
	Reference SnifferID `json:"reference"`
	Known     bool      `json:"known"`
	// Offset is the sniffer's clock minus the reference's, in ns.
	Offset int64 `json:"offset_ns"`
	// Uncertainty bounds the error of Offset, in ns: half the width of the
	// interval the shared packets allow (see docs/pcapio.md), summed along
	// Via. For Method "symmetric" the true offset lies within it if the
	// one-way delays between the two capture points are symmetric.
	Uncertainty int64 `json:"uncertainty_ns"`
	// Samples is the number of sampled packets both ends of the estimate
	// saw (the smallest along Via).
	Samples int `json:"samples"`
	// Method is "reference", "given" (from Options.Offsets), "symmetric"
	// (packets in both directions between a host pair), "one-way" (only
	// one direction shared: assumes the spread is jitter) or "unknown".
	Method string `json:"method"`
	// Via lists the sniffers the estimate was chained through, from the
	// reference's side; empty when estimated against the reference itself.
	Via []SnifferID `json:"via,omitempty"`
}

// Defaults of the offset estimation.
const (
	// DefaultMaxSamples bounds the wire keys sampled per sniffer.
	DefaultMaxSamples = 1 << 16
	// minSharedSamples is the fewest shared samples an estimate needs.
	minSharedSamples = 3
	// sampleAmbiguousNS: a key seen again by one sniffer more than this
	// much later is a different packet with equal bytes (a retransmission
	// of identical bytes); such keys are not used.
	sampleAmbiguousNS = 1e9
)

// sample is what the first pass keeps of one sampled packet of one sniffer.
type sample struct {
	ts   int64
	pair uint64 // hash of the unordered address pair
	dir  bool   // src < dst
	bad  bool   // key seen twice too far apart
}

// sampler keeps a bounded, consistent sample of one sniffer's wire keys:
// a key is kept when its low `level` bits are zero, and the level rises
// whenever the sample outgrows its bound. Because every sniffer selects by
// the same bits of the same key, the samples of two sniffers that saw one
// packet both hold it (at the higher of their two levels).
type sampler struct {
	level uint8
	max   int
	m     map[uint64]sample
	res   int64 // coarsest timestamp resolution seen, ns
}

func newSampler(max int) *sampler {
	return &sampler{max: max, m: make(map[uint64]sample)}
}

func levelMask(level uint8) uint64 { return 1<<level - 1 }

func (s *sampler) add(key uint64, ts int64, src, dst netip.Addr) {
	if key&levelMask(s.level) != 0 {
		return
	}
	if e, ok := s.m[key]; ok {
		if d := ts - e.ts; d > sampleAmbiguousNS || d < -sampleAmbiguousNS {
			e.bad = true
			s.m[key] = e
		}
		return
	}
	s.m[key] = sample{ts: ts, pair: pairHash(src, dst), dir: src.Less(dst)}
	for len(s.m) > s.max {
		s.level++
		mask := levelMask(s.level)
		for k := range s.m {
			if k&mask != 0 {
				delete(s.m, k)
			}
		}
	}
}

// pairHash hashes an unordered pair of addresses.
func pairHash(a, b netip.Addr) uint64 {
	if b.Less(a) {
		a, b = b, a
	}
	x, y := a.As16(), b.As16()
	var h uint64 = 14695981039346656037
	for _, c := range x {
		h = (h ^ uint64(c)) * 1099511628211
	}
	for _, c := range y {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return h
}

// pairEstimate is the offset of sniffer b against sniffer a from their
// shared samples.
type pairEstimate struct {
	ok      bool
	off     int64
	unc     int64
	samples int
	method  string
}

// dirAgg aggregates the differences d = ts_b - ts_a of one direction
// between one host pair.
type dirAgg struct {
	n        int
	min, max int64
}

func (g *dirAgg) add(d int64) {
	if g.n == 0 || d < g.min {
		g.min = d
	}
	if g.n == 0 || d > g.max {
		g.max = d
	}
	g.n++
}

// estimatePair estimates b's offset against a. For a packet passing a's
// capture point before b's, d = off + delay >= off; for one passing b's
// first, d = off - delay <= off. So for each host pair seen in both
// directions the offset lies in [max d of the direction b sees first, min
// d of the direction a sees first] (Paxson's pairing, WAP5 section 5.2;
// taking the extreme samples is MSHN's shortest-delay rule); which
// direction is which is the assignment that makes the interval widest (or
// least inverted). The intervals of all host pairs are intersected; the
// estimate is the midpoint (symmetric delays) and the uncertainty half the
// width (at least the coarser timestamp resolution of the two). If no
// host pair is seen in both directions, the direction whose
// differences spread least gives midpoint and half-range ("one-way").
func estimatePair(a, b *sampler) pairEstimate {
	level := max(a.level, b.level)
	mask := levelMask(level)
	small, large, sign := a, b, int64(1)
	if len(b.m) < len(a.m) {
		small, large, sign = b, a, -1
	}
	dirs := make(map[uint64]*[2]dirAgg)
	n := 0
	for k, s := range small.m {
		if k&mask != 0 || s.bad {
			continue
		}
		o, ok := large.m[k]
		if !ok || o.bad {
			continue
		}
		d := sign * (o.ts - s.ts)
		g := dirs[s.pair]
		if g == nil {
			g = new([2]dirAgg)
			dirs[s.pair] = g
		}
		i := 0
		if s.dir {
			i = 1
		}
		g[i].add(d)
		n++
	}
	if n < minSharedSamples {
		return pairEstimate{samples: n}
	}
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	both := false
	keys := make([]uint64, 0, len(dirs))
	for k := range dirs {
		keys = append(keys, k)
	}
	slices.Sort(keys) // deterministic
	for _, k := range keys {
		g := dirs[k]
		if g[0].n == 0 || g[1].n == 0 {
			continue
		}
		both = true
		// Assignment A: direction 0 is seen first by a (d >= off).
		loA, hiA := g[1].max, g[0].min
		loB, hiB := g[0].max, g[1].min
		l, h := loA, hiA
		if hiB-loB > hiA-loA {
			l, h = loB, hiB
		}
		lo, hi = max(lo, l), min(hi, h)
	}
	// Timestamps are truncated to their resolution: no estimate is
	// better than the coarser of the two.
	res := max(a.res, b.res, 1)
	if both {
		return pairEstimate{ok: true, off: lo + (hi-lo)/2, unc: max(absDiff(hi, lo)/2, res), samples: n, method: "symmetric"}
	}
	var best *dirAgg
	for _, k := range keys {
		for i := range dirs[k] {
			g := &dirs[k][i]
			if g.n > 0 && (best == nil || g.max-g.min < best.max-best.min) {
				best = g
			}
		}
	}
	return pairEstimate{ok: true, off: best.min + (best.max-best.min)/2, unc: max((best.max-best.min+1)/2, res), samples: n, method: "one-way"}
}

func absDiff(a, b int64) int64 {
	if a > b {
		return a - b
	}
	return b - a
}

// offsetsOf estimates each of n sniffers' offset against ref from their
// samplers (nil when not sampled), given[i] being non-nil for offsets
// fixed by the caller.
func offsetsOf(n int, samplers []*sampler, ref int, given []*int64) []Offset {
	return solveOffsets(n, ref, given, func(i, j int) pairEstimate {
		if samplers == nil || samplers[i] == nil || samplers[j] == nil {
			return pairEstimate{}
		}
		return estimatePair(samplers[i], samplers[j])
	})
}

// solveOffsets turns pairwise estimates into each sniffer's offset against
// ref: the path of least summed uncertainty from ref (or from a sniffer
// with a given offset) through sniffers that share packets. given[i] is
// non-nil for offsets fixed by the caller.
func solveOffsets(n int, ref int, given []*int64, est func(i, j int) pairEstimate) []Offset {
	out := make([]Offset, n)
	const inf = math.MaxInt64
	dist := make([]int64, n)
	prev := make([]int, n)
	edge := make([]pairEstimate, n)
	done := make([]bool, n)
	for i := range out {
		out[i] = Offset{Sniffer: SnifferID(i), Reference: SnifferID(ref), Method: "unknown"}
		dist[i] = inf
		prev[i] = -1
	}
	dist[ref] = 0
	out[ref].Known, out[ref].Method = true, "reference"
	for i, g := range given {
		if g != nil && i != ref {
			dist[i] = 0
			out[i].Known, out[i].Offset, out[i].Method = true, *g, "given"
		}
	}
	// Pairwise estimates are computed lazily and cached.
	cache := make(map[[2]int]pairEstimate)
	pair := func(i, j int) pairEstimate {
		k := [2]int{i, j}
		if e, ok := cache[k]; ok {
			return e
		}
		e := est(i, j)
		cache[k] = e
		return e
	}
	for {
		u := -1
		for i := range n {
			if !done[i] && dist[i] != inf && (u < 0 || dist[i] < dist[u]) {
				u = i
			}
		}
		if u < 0 {
			break
		}
		done[u] = true
		for v := range n {
			if done[v] || given[v] != nil && v != ref {
				continue
			}
			e := pair(u, v)
			if !e.ok {
				continue
			}
			// The +1 µs per hop prefers direct estimates over chains of
			// equally good ones.
			if d := dist[u] + e.unc + 1000; d < dist[v] {
				dist[v], prev[v], edge[v] = d, u, e
			}
		}
	}
	for v := range n {
		if v == ref || given[v] != nil || prev[v] < 0 {
			continue
		}
		// Walk back to the root of v's path.
		var chain []int
		for u := v; prev[u] >= 0; u = prev[u] {
			chain = append(chain, u)
		}
		root := chain[len(chain)-1]
		root = prev[root]
		o := &out[v]
		o.Known = true
		o.Offset = out[root].Offset
		o.Samples = math.MaxInt
		o.Method = ""
		for i := len(chain) - 1; i >= 0; i-- {
			e := edge[chain[i]]
			o.Offset += e.off
			o.Uncertainty += e.unc
			o.Samples = min(o.Samples, e.samples)
			if o.Method == "" || e.method == "one-way" {
				o.Method = e.method
			}
			if i > 0 {
				o.Via = append(o.Via, SnifferID(chain[i]))
			}
		}
		if root != ref {
			o.Via = append([]SnifferID{SnifferID(root)}, o.Via...)
		}
	}
	return out
}

// resolutionNS returns the timestamp resolution of an interface in ns
// (at least 1).
func resolutionNS(ifc *Interface) int64 {
	e := int(ifc.TSResol & 0x7f)
	if ifc.TSResol&0x80 != 0 {
		if e >= 30 {
			return 1
		}
		return max(1, int64(1e9)>>e)
	}
	r := int64(1e9)
	for ; e > 0 && r > 1; e-- {
		r /= 10
	}
	return r
}
