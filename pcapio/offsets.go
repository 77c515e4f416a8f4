package pcapio

import (
	"maps"
	"math"
	"net/netip"
	"slices"

	"github.com/wirepath/wirepath/clock"
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
	// EpochNS is the reference time at which Offset holds (0 for an
	// offset that does not drift: given, the reference, or estimated
	// from too short a stretch of time to tell a drift).
	EpochNS int64 `json:"epoch_ns,omitempty"`
	// DriftKnown says a drift was estimated: DriftPPM is how fast the
	// sniffer's clock gains on the reference's (parts per million of
	// reference time; after the first step, see Steps, the model's later
	// segments have rates of their own) and DriftUncertaintyPPM bounds
	// its error.
	DriftKnown          bool    `json:"drift_known,omitempty"`
	DriftPPM            float64 `json:"drift_ppm,omitempty"`
	DriftUncertaintyPPM float64 `json:"drift_uncertainty_ppm,omitempty"`
	// Steps are where the sniffer's clock stepped (an NTP adjustment),
	// in reference time, and by how much.
	Steps []Step `json:"steps,omitempty"`
	// Model is the whole estimate: the offset at any reference time, each
	// stretch between steps a line (package clock). Corrected =
	// Model.Local(TS). Not Known when the offset is not.
	Model clock.Model `json:"-"`
}

// Step is a step of a sniffer's clock: at reference time AtNS its offset
// jumped by ByNS.
type Step struct {
	AtNS int64 `json:"at_ns"`
	ByNS int64 `json:"by_ns"`
}

// setModel fills o's offset, drift and steps from the model m (Known).
func (o *Offset) setModel(m clock.Model) {
	o.Model = m
	s := m.Segments[0]
	o.Offset, o.Uncertainty = s.Offset, 0
	for _, x := range m.Segments {
		o.Uncertainty = max(o.Uncertainty, x.Uncertainty)
	}
	if s.RateKnown {
		o.EpochNS, o.DriftKnown = s.Epoch, true
		o.DriftPPM, o.DriftUncertaintyPPM = s.Rate*1e6, s.RateUncertainty*1e6
	}
	for _, st := range m.StepList() {
		o.Steps = append(o.Steps, Step{AtNS: st.At, ByNS: st.By})
	}
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
	// first and last are the earliest and latest timestamps of all the
	// packets offered (sampled or not); n counts them.
	first, last int64
	n           int64
}

func newSampler(max int) *sampler {
	return &sampler{max: max, m: make(map[uint64]sample)}
}

func levelMask(level uint8) uint64 { return 1<<level - 1 }

func (s *sampler) add(key uint64, ts int64, src, dst netip.Addr) {
	if s.n == 0 || ts < s.first {
		s.first = ts
	}
	if s.n == 0 || ts > s.last {
		s.last = ts
	}
	s.n++
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

// pairEstimate is sniffer b's offset against sniffer a from their shared
// samples: Samples counts them, and the uncertainty is at least the
// coarser timestamp resolution of the two. Method is "symmetric" or
// "one-way".
type pairEstimate struct {
	clock.Estimate
	model  clock.Model
	method string
}

// estimatePair estimates b's offset against a. For a packet passing a's
// capture point before b's, d = ts_b - ts_a = off + delay >= off; for one
// passing b's first, d = off - delay <= off: each packet is a one-way
// delay sample between the two clocks (package clock), but which way is
// not known. So per host pair seen in both directions, the direction
// that passed a first is taken to be the one that makes the pair's
// interval widest (or least inverted: the larger round trip); the
// samples of all host pairs are pooled (intersecting their intervals:
// Paxson's pairing, WAP5 section 5.2, taking the extreme samples as MSHN's
// shortest-delay rule does), and the estimate is the midpoint with half
// the width as its uncertainty. If no host pair is seen in both
// directions, the direction whose differences spread least gives
// midpoint and half-range ("one-way": it assumes the spread is jitter).
// The samples keep their times, so the estimate is a model of the offset
// over time (clock.Pair.Fit: a drift, and steps); the widths and spreads
// above are those of the fitted envelopes, not of the extreme samples,
// which a drift of a few ppm would invert.
func estimatePair(a, b *sampler) pairEstimate {
	dirs, n := sharedSamples(a, b)
	if n < minSharedSamples {
		return pairEstimate{Estimate: clock.Estimate{Samples: n}}
	}
	keys := make([]uint64, 0, len(dirs))
	for k := range dirs {
		keys = append(keys, k)
	}
	slices.Sort(keys) // deterministic
	var pooled clock.Pair
	both := false
	for _, k := range keys {
		g := dirs[k]
		if g[0].AB.N == 0 || g[1].AB.N == 0 {
			continue
		}
		both = true
		// Direction 0 passed a first, or direction 1 did.
		p := clock.Pair{AB: g[0].AB, BA: g[1].BA}
		if q := (clock.Pair{AB: g[1].AB, BA: g[0].BA}); width(&q) > width(&p) {
			p = q
		}
		pooled.AB.Merge(p.AB)
		pooled.BA.Merge(p.BA)
	}
	method := "symmetric"
	if !both {
		pooled, method = leastSpread(dirs, keys), "one-way"
	}
	m := pooled.Fit(clock.FitOptions{})
	// Timestamps are truncated to their resolution: no estimate is
	// better than the coarser of the two.
	m.Floor(max(a.res, b.res, 1))
	e := m.Estimate()
	e.Samples = n
	// Chained by how well the model holds over both captures, not only
	// where their shared samples are (clock.Model.UncertaintyOver).
	if lo, hi, ok := span(a, b, &m); ok {
		e.Uncertainty = max(e.Uncertainty, m.UncertaintyOver(lo, hi))
	}
	return pairEstimate{Estimate: e, model: m, method: method}
}

// span returns the time both samplers' packets cover, on a's clock (b's
// moved by m, b's offset against a).
func span(a, b *sampler, m *clock.Model) (lo, hi int64, ok bool) {
	if a.n == 0 || b.n == 0 || !m.Known {
		return 0, 0, false
	}
	return min(a.first, m.Local(b.first)), max(a.last, m.Local(b.last)), true
}

// width is the width of the interval the envelopes of p leave the offset
// (negative when they contradict each other), from a fit of one line:
// twice the uncertainty, negated when inconsistent.
func width(p *clock.Pair) int64 {
	m := p.Fit(clock.FitOptions{MaxSegments: 1})
	if !m.Known {
		return math.MinInt64
	}
	s := m.Segments[0]
	if s.Inconsistent {
		return -2 * s.Uncertainty
	}
	return 2 * s.Uncertainty
}

// sharedSamples returns the packets both samplers hold, per host pair
// and direction (src < dst is 1): each read both ways, as passing a
// first (AB: sent at ts_a, received at ts_b) and as passing b first (BA),
// and how many there are.
func sharedSamples(a, b *sampler) (map[uint64]*[2]clock.Pair, int) {
	mask := levelMask(max(a.level, b.level))
	small, large, swapped := a, b, false
	if len(b.m) < len(a.m) {
		small, large, swapped = b, a, true
	}
	dirs := make(map[uint64]*[2]clock.Pair)
	n := 0
	// In key order: the fits add the samples up in floating point, so
	// map order would make the last digits of the estimates vary from run
	// to run.
	for _, k := range slices.Sorted(maps.Keys(small.m)) {
		s := small.m[k]
		if k&mask != 0 || s.bad {
			continue
		}
		o, ok := large.m[k]
		if !ok || o.bad {
			continue
		}
		ta, tb := s.ts, o.ts
		if swapped {
			ta, tb = tb, ta
		}
		g := dirs[s.pair]
		if g == nil {
			g = new([2]clock.Pair)
			dirs[s.pair] = g
		}
		i := 0
		if s.dir {
			i = 1
		}
		g[i].AB.Add(clock.Sample{Send: ta, Recv: tb})
		g[i].BA.Add(clock.Sample{Send: tb, Recv: ta})
		n++
	}
	return dirs, n
}

// leastSpread returns the one direction of one host pair whose
// differences spread least (read both ways, its round trip is minus the
// spread), the first such in keys order.
func leastSpread(dirs map[uint64]*[2]clock.Pair, keys []uint64) clock.Pair {
	var best *clock.Pair
	for _, k := range keys {
		for i := range dirs[k] {
			g := &dirs[k][i]
			if g.AB.N > 0 && (best == nil || width(g) > width(best)) {
				best = g
			}
		}
	}
	return *best
}

func absDiff(a, b int64) int64 {
	if a > b {
		return a - b
	}
	return b - a
}

// hopCostNS is added per hop when chaining sniffers, so that a direct
// estimate beats a chain of equally good ones.
const hopCostNS = 1000

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

// solveOffsets turns pairwise estimates (est(i, j): j against i, i < j)
// into each sniffer's offset against ref: chained (package clock) from ref
// or from a sniffer with a given offset (given[i] non-nil) along the least
// summed uncertainty plus hopCostNS per hop.
func solveOffsets(n int, ref int, given []*int64, est func(i, j int) pairEstimate) []Offset {
	isRoot := func(i int) bool { return i == ref || given[i] != nil }
	roots := []clock.Root{{Clock: ref}}
	for i, g := range given {
		if g != nil && i != ref {
			roots = append(roots, clock.Root{Clock: i, Offset: *g})
		}
	}
	var edges []clock.Edge
	var models []clock.Model
	var methods []string
	for i := range n {
		for j := i + 1; j < n; j++ {
			if isRoot(i) && isRoot(j) {
				continue
			}
			if e := est(i, j); e.Known {
				edges = append(edges, clock.Edge{A: i, B: j, Estimate: e.Estimate})
				models = append(models, e.model)
				methods = append(methods, e.method)
			}
		}
	}
	chained := clock.Chain(n, roots, edges, clock.Options{HopCost: hopCostNS})
	composed := clock.Compose(chained, roots, edges, models)
	out := make([]Offset, n)
	for v := range out {
		o := Offset{Sniffer: SnifferID(v), Reference: SnifferID(ref), Method: "unknown"}
		switch c := chained[v]; {
		case v == ref:
			o.Known, o.Method = true, "reference"
			o.Model = clock.Constant(clock.Estimate{Known: true})
		case given[v] != nil:
			o.Known, o.Offset, o.Method = true, *given[v], "given"
			o.Model = clock.Constant(clock.Estimate{Known: true, Offset: *given[v]})
		case c.Known:
			o.Known, o.Samples = true, c.Samples
			o.setModel(composed[v])
			o.Method, o.Via = pathOf(chained, methods, v, ref)
		}
		out[v] = o
	}
	return out
}

// pathOf returns how sniffer v's chained estimate was made: "one-way" if
// any estimate along its path was, else "symmetric"; and the sniffers
// it was chained through, from its root (left out when it is ref).
func pathOf(chained []clock.Offset, methods []string, v, ref int) (string, []SnifferID) {
	method := "symmetric"
	for x := v; chained[x].Edge >= 0; x = chained[x].Prev {
		if methods[chained[x].Edge] == "one-way" {
			method = "one-way"
		}
	}
	var via []SnifferID
	path := clock.Path(chained, v)
	for i, x := range path[:len(path)-1] {
		if i > 0 || x != ref {
			via = append(via, SnifferID(x))
		}
	}
	return method, via
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
