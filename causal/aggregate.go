package causal

import (
	"errors"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/wirepath/wirepath/trace"
)

// InstanceNode is one message of a path instance and its parent.
type InstanceNode struct {
	// Msg is the message's index in the trace.
	Msg int32
	// Parent is the index in Instance.Nodes of the message that caused this
	// one, or -1 for the root.
	Parent int32
}

// Instance is one inferred path instance: a tree of messages, parents before
// children (Nodes[0] is the root), with the probability the engine gives it.
type Instance struct {
	Nodes []InstanceNode
	Prob  float64
}

// ErrBadInstance is returned by Aggregator.Add for an instance that is not a
// tree with parents before children.
var ErrBadInstance = errors.New("causal: instance is not a tree in parent-first order")

// AggregateOptions controls an Aggregator.
type AggregateOptions struct {
	Naming Naming
	// Histograms adds histograms to every distribution.
	Histograms bool
	// KeepInstances records the messages of up to MaxKept instances per
	// pattern (all when MaxKept is 0), for the scorer.
	KeepInstances bool
	MaxKept       int
	// MaxPatterns, when positive, returns only the best MaxPatterns
	// patterns (by the ranking metric) from Patterns; the others are
	// counted but not summarised.
	MaxPatterns int
}

// RankMetric orders patterns (WAP5 section 6.6).
type RankMetric string

// The ranking metrics.
const (
	RankExpected       RankMetric = "expected"        // sum of instance probabilities
	RankCount          RankMetric = "count"           // raw instance count
	RankMaxProbability RankMetric = "max-probability" // most confident instance
	RankAvgProbability RankMetric = "avg-probability" // expected ÷ count
	RankSqrtCount      RankMetric = "expected-sqrt"   // expected ÷ √count
)

// RankMetrics lists the valid RankMetric values.
var RankMetrics = []RankMetric{RankExpected, RankCount, RankMaxProbability, RankAvgProbability, RankSqrtCount}

// Aggregator groups path instances into patterns of the same structure and
// accumulates their timing. Add records each instance's messages in an
// arena (four bytes per message and a few words per instance); Patterns
// computes the distributions from them, so percentiles are exact and a
// pattern seen once costs little. It is not safe for concurrent use.
type Aggregator struct {
	src     source
	opt     AggregateOptions
	namer   *Namer
	offsets []int64 // by node Sym; nil when the trace has none

	patterns map[uint64]int32 // canonical hash -> index in pats
	pats     []patAcc
	hopArena []hopInfo // the hops of every pattern, canonical pre-order
	msgArena []int32   // the messages of every instance, in its pattern's hop order
	insts    []instRec
	bad      int

	// scratch, reused across Add calls
	mbuf   []trace.Message
	kids   [][]int32
	hashes []uint64
	start  []int64
	canon  []int32
	pos    []int32
	stack  []int32
}

type hopLabel struct {
	from, to, ep uint32
	kind         trace.Kind
	mixedKind    bool
	mixedEP      bool
}

// hopInfo is one hop of a pattern: its label and its parent's position.
type hopInfo struct {
	label  hopLabel
	parent int32
}

// patAcc is one pattern: its hops (hopArena[hop:hop+n]) and scores.
type patAcc struct {
	hop      int32
	n        int32
	count    int
	expected float64
	maxProb  float64
	weighted bool // some instance's probability is not 1
}

// instRec is one recorded instance: its pattern, its messages
// (msgArena[off:off+n]) and probability.
type instRec struct {
	off  int
	prob float64
	pat  int32
}

// NewAggregator returns an Aggregator for instances of t's messages.
func NewAggregator(t *trace.Trace, opt AggregateOptions) *Aggregator {
	return newAggregator(traceSource(t), NewNamer(t, opt.Naming), opt)
}

// NewTableAggregator returns an Aggregator for instances of the messages of
// a Table. Its patterns are the same as those of NewAggregator on a Trace
// of the same messages.
func NewTableAggregator(t *trace.Table, opt AggregateOptions) *Aggregator {
	return newAggregator(tableSource(t), NewTableNamer(t, opt.Naming), opt)
}

func newAggregator(src source, namer *Namer, opt AggregateOptions) *Aggregator {
	a := &Aggregator{
		src:      src,
		opt:      opt,
		namer:    namer,
		patterns: make(map[uint64]int32),
	}
	for _, o := range src.meta.Offsets {
		if !o.Known || o.OffsetNS == 0 {
			continue
		}
		if s, ok := src.syms.Lookup(o.Node); ok && int(s) < src.syms.Len() {
			if a.offsets == nil {
				a.offsets = make([]int64, src.syms.Len())
			}
			a.offsets[s] = o.OffsetNS
		}
	}
	return a
}

// Namer returns the Namer the aggregator names nodes with.
func (a *Aggregator) Namer() *Namer { return a.namer }

// Rejected returns how many instances Add refused.
func (a *Aggregator) Rejected() int { return a.bad }

// Len returns the number of instances added and the number of patterns
// they form.
func (a *Aggregator) Len() (instances, patterns int) { return len(a.insts), len(a.pats) }

// Offset returns the clock offset of node s in nanoseconds (0 if unknown).
func (a *Aggregator) Offset(s trace.Sym) int64 {
	if int(s) < len(a.offsets) {
		return a.offsets[s]
	}
	return 0
}

// CorrectedSend returns m's send time on the reference clock, falling back
// to its receive time when the send was not seen.
func (a *Aggregator) CorrectedSend(m *trace.Message) int64 {
	if m.SendTS.Known() {
		return int64(m.SendTS) - a.Offset(m.SrcNode)
	}
	return int64(m.RecvTS) - a.Offset(m.DstNode)
}

// CorrectedRecv returns m's receive time on the reference clock, falling
// back to its send time when the send was not seen.
func (a *Aggregator) CorrectedRecv(m *trace.Message) int64 {
	if m.RecvTS.Known() {
		return int64(m.RecvTS) - a.Offset(m.DstNode)
	}
	return int64(m.SendTS) - a.Offset(m.SrcNode)
}

func mix(h, x uint64) uint64 {
	h ^= x + 0x9e3779b97f4a7c15 + (h << 6) + (h >> 2)
	h ^= h >> 31
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	return h
}

// nodeID and epID are label ids: indices of names in the Namer.
func (a *Aggregator) nodeID(s trace.Sym) uint32 { return uint32(a.namer.nodeIdx(s)) }
func (a *Aggregator) epID(s trace.Sym) uint32   { return uint32(a.namer.epIdx(s)) }

func (a *Aggregator) label(m *trace.Message) hopLabel {
	return hopLabel{from: a.nodeID(m.SrcNode), to: a.nodeID(m.DstNode), ep: a.epID(m.Dst), kind: m.Kind}
}

// Add adds one instance. It returns ErrBadInstance (and counts it) if the
// instance is empty, not in parent-first order or names messages outside the
// trace. Add does not keep inst.Nodes.
func (a *Aggregator) Add(inst Instance) error {
	n := len(inst.Nodes)
	if n == 0 || inst.Nodes[0].Parent != -1 {
		a.bad++
		return ErrBadInstance
	}
	nmsgs := a.src.len()
	for i, nd := range inst.Nodes {
		if int(nd.Msg) < 0 || int(nd.Msg) >= nmsgs || (i > 0 && (nd.Parent < 0 || int(nd.Parent) >= i)) {
			a.bad++
			return ErrBadInstance
		}
	}
	p := inst.Prob
	if p <= 0 || math.IsNaN(p) {
		p = 0
	}
	if p > 1 {
		p = 1
	}
	if cap(a.mbuf) < n {
		a.mbuf = make([]trace.Message, n, 2*n)
	}
	msgs := a.mbuf[:n]
	for i := range msgs {
		msgs[i] = a.src.at(inst.Nodes[i].Msg)
	}
	a.kids = grow(a.kids, n)
	for i := range a.kids {
		a.kids[i] = a.kids[i][:0]
	}
	a.hashes = growU64(a.hashes, n)
	a.start = growI64(a.start, n)
	for i := 1; i < n; i++ {
		par := inst.Nodes[i].Parent
		a.kids[par] = append(a.kids[par], int32(i))
	}
	for i := 0; i < n; i++ {
		a.start[i] = a.CorrectedSend(&msgs[i])
	}
	hashes, start := a.hashes, a.start
	byHashThenStart := func(x, y int32) int {
		if hashes[x] != hashes[y] {
			if hashes[x] < hashes[y] {
				return -1
			}
			return 1
		}
		return cmpI64(start[x], start[y])
	}
	for i := n - 1; i >= 0; i-- {
		m := &msgs[i]
		h := mix(mix(0x5157, uint64(a.nodeID(m.SrcNode))), uint64(a.nodeID(m.DstNode)))
		ks := a.kids[i]
		if len(ks) > 1 {
			slices.SortFunc(ks, byHashThenStart)
		}
		for _, c := range ks {
			h = mix(h, hashes[c])
		}
		hashes[i] = mix(h, uint64(len(ks)))
	}
	// Pre-order walk in canonical child order.
	a.canon = a.canon[:0]
	a.pos = growI32(a.pos, n)
	a.stack = append(a.stack[:0], 0)
	for len(a.stack) > 0 {
		i := a.stack[len(a.stack)-1]
		a.stack = a.stack[:len(a.stack)-1]
		a.pos[i] = int32(len(a.canon))
		a.canon = append(a.canon, i)
		ks := a.kids[i]
		for k := len(ks) - 1; k >= 0; k-- {
			a.stack = append(a.stack, ks[k])
		}
	}

	key := hashes[0]
	pi, ok := a.patterns[key]
	if !ok {
		pi = int32(len(a.pats))
		a.pats = append(a.pats, patAcc{hop: int32(len(a.hopArena)), n: int32(n)})
		for k, i := range a.canon {
			par := int32(-1)
			if k > 0 {
				par = a.pos[inst.Nodes[i].Parent]
			}
			a.hopArena = append(a.hopArena, hopInfo{label: a.label(&msgs[i]), parent: par})
		}
		a.patterns[key] = pi
	}
	pa := &a.pats[pi]
	pa.count++
	pa.expected += p
	if p > pa.maxProb {
		pa.maxProb = p
	}
	if p != 1 {
		pa.weighted = true
	}
	hops := a.hopArena[pa.hop : pa.hop+pa.n]
	off := len(a.msgArena)
	for k, i := range a.canon {
		a.msgArena = append(a.msgArena, inst.Nodes[i].Msg)
		m := &msgs[i]
		lb := &hops[k].label
		if m.Kind != lb.kind {
			lb.mixedKind = true
		}
		if !lb.mixedEP && a.epID(m.Dst) != lb.ep {
			lb.mixedEP = true
		}
	}
	a.insts = append(a.insts, instRec{off: off, prob: p, pat: pi})
	return nil
}

// Patterns returns the aggregated patterns ranked by metric, with hops in
// pre-order and every hop's children in order of mean start. With
// MaxPatterns set, only that many of the best are returned.
func (a *Aggregator) Patterns(metric RankMetric) []Pattern {
	np := len(a.pats)
	// Group the instances by pattern (counting sort, stable).
	first := make([]int32, np+1)
	for _, in := range a.insts {
		first[in.pat+1]++
	}
	for i := 0; i < np; i++ {
		first[i+1] += first[i]
	}
	byPat := make([]int32, len(a.insts))
	next := slices.Clone(first[:np])
	for i, in := range a.insts {
		byPat[next[in.pat]] = int32(i)
		next[in.pat]++
	}
	// Mean starts give the child order, hence the signature; with the
	// scores they rank the patterns, and only the best are finished.
	// Rank by score and count; signatures (which need the child order)
	// are computed only to break ties among the patterns reported.
	ranked := make([]rankKey, np)
	for pi := range ranked {
		pa := &a.pats[pi]
		ranked[pi] = newRankKey(metric, pa.count, pa.expected, pa.maxProb, "", pi)
	}
	slices.SortFunc(ranked, cmpRankKey)
	keep := np
	if a.opt.MaxPatterns > 0 && keep > a.opt.MaxPatterns {
		keep = a.opt.MaxPatterns
	}
	for lo := 0; lo < keep; {
		hi := lo + 1
		for hi < np && ranked[hi].score == ranked[lo].score && ranked[hi].count == ranked[lo].count {
			hi++
		}
		if hi-lo > 1 {
			run := ranked[lo:hi]
			aggParallel(len(run), func(i int) {
				pi := run[i].idx
				run[i].sig = a.shape(pi, byPat[first[pi]:first[pi+1]]).sig
			})
			slices.SortFunc(run, cmpRankKey)
		}
		lo = hi
	}
	ranked = ranked[:keep]
	out := make([]Pattern, len(ranked))
	scratch := make([]aggScratch, aggWorkers())
	aggParallelW(len(ranked), func(w, i int) {
		pi := ranked[i].idx
		insts := byPat[first[pi]:first[pi+1]]
		sh := a.shape(pi, insts)
		out[i] = a.finish(pi, &sh, insts, &scratch[w])
		out[i].Rank = i + 1
	})
	return out
}

// patShape is a pattern's output order: hop ids by output position, output
// ids by hop, and the signature.
type patShape struct {
	order []int32
	newID []int32
	sig   string
}

// weight is the weight an instance's samples get: its probability, or a
// tiny weight at probability zero so that the sample still counts.
func instWeight(p float64) float64 {
	if p == 0 {
		return 1e-300
	}
	return p
}

// shape orders the children of every hop of pattern pi by mean start and
// renders its signature. Siblings are sent by the same node, so their
// order is decided by their mean delay after the parent's arrival, which
// is measured on that node's clock (exactly, and whatever the clock
// offsets) when both timestamps are known.
func (a *Aggregator) shape(pi int, insts []int32) patShape {
	pa := &a.pats[pi]
	n := int(pa.n)
	hops := a.hopArena[pa.hop : pa.hop+pa.n]
	sum := make([]float64, n)
	var msgs []trace.Message // one instance's messages
	if n > 1 {
		msgs = make([]trace.Message, n)
	}
	for _, ii := range insts {
		if n == 1 {
			break
		}
		in := &a.insts[ii]
		w := instWeight(in.prob)
		for k, mi := range a.msgArena[in.off : in.off+n] {
			msgs[k] = a.src.at(mi)
		}
		for k := 1; k < n; k++ {
			m, par := &msgs[k], &msgs[hops[k].parent]
			var after int64
			if m.SendTS.Known() && par.RecvTS.Known() {
				after = int64(m.SendTS - par.RecvTS)
			} else {
				after = a.CorrectedSend(m) - a.CorrectedRecv(par)
			}
			sum[k] += w * float64(after)
		}
	}
	kids := make([][]int32, n)
	for k := 1; k < n; k++ {
		kids[hops[k].parent] = append(kids[hops[k].parent], int32(k))
	}
	name := func(id uint32) string { return a.namer.names[id] }
	// Ties go to the receiver's name, then to the subtree's canonical text,
	// so that the order never depends on label ids or hashes (which depend
	// on the order names were first seen).
	var canon map[int32]string
	var canonOf func(k int32) string
	canonOf = func(k int32) string {
		if c, ok := canon[k]; ok {
			return c
		}
		cs := make([]string, len(kids[k]))
		for i, c := range kids[k] {
			cs[i] = canonOf(c)
		}
		slices.Sort(cs)
		c := QuoteName(name(hops[k].label.from)) + "->" + QuoteName(name(hops[k].label.to))
		if len(cs) > 0 {
			c += "(" + strings.Join(cs, ",") + ")"
		}
		if canon == nil {
			canon = make(map[int32]string)
		}
		canon[k] = c
		return c
	}
	for _, ks := range kids {
		if len(ks) < 2 {
			continue
		}
		slices.SortStableFunc(ks, func(x, y int32) int {
			if sum[x] != sum[y] {
				if sum[x] < sum[y] {
					return -1
				}
				return 1
			}
			if c := strings.Compare(name(hops[x].label.to), name(hops[y].label.to)); c != 0 {
				return c
			}
			return strings.Compare(canonOf(x), canonOf(y))
		})
	}
	sh := patShape{order: make([]int32, 0, n), newID: make([]int32, n)}
	var b strings.Builder
	var walk func(k int32)
	walk = func(k int32) {
		sh.newID[k] = int32(len(sh.order))
		sh.order = append(sh.order, k)
		lb := hops[k].label
		b.WriteString(QuoteName(name(lb.from)))
		b.WriteString("->")
		b.WriteString(QuoteName(name(lb.to)))
		if len(kids[k]) == 0 {
			return
		}
		b.WriteByte('(')
		for i, c := range kids[k] {
			if i > 0 {
				b.WriteByte(',')
			}
			walk(c)
		}
		b.WriteByte(')')
	}
	walk(0)
	sh.sig = b.String()
	return sh
}

// aggScratch holds one worker's buffers.
type aggScratch struct {
	msgs []trace.Message // one instance's messages
	// The samples of a group of hops: vals[4*h+d] for hop h of the group
	// and distribution d (start, node delay, network delay, bytes), with
	// the instances' weights in ws when the pattern's are not all 1.
	vals, ws [][]float64
	latency  []float64
	latW     []float64
	pts      []sample
}

// aggSampleBudget bounds the samples a worker holds at once: a pattern
// with more instances × hops is summarised a group of hops at a time.
const aggSampleBudget = 1 << 21

const (
	distStart = iota
	distNode
	distNet
	distBytes
	nDists
)

// summary summarises samples vals (with weights ws, or all of weight 1
// when ws is nil), reusing sc.pts. The values may be reordered.
func (sc *aggScratch) summary(vals, ws []float64, hist bool) *Dist {
	if ws == nil {
		return summarizeUnit(vals, hist)
	}
	sc.pts = sc.pts[:0]
	for i, v := range vals {
		sc.pts = append(sc.pts, sample{v, ws[i]})
	}
	return summarize(sc.pts, hist)
}

// finish computes the distributions of pattern pi from its instances. It
// reads each instance's messages together (they are near each other in
// the trace), a group of hops at a time, and collects every sample, so
// that the percentiles are exact.
func (a *Aggregator) finish(pi int, sh *patShape, insts []int32, sc *aggScratch) Pattern {
	pa := &a.pats[pi]
	n := int(pa.n)
	hops := a.hopArena[pa.hop : pa.hop+pa.n]
	name := func(id uint32) string { return a.namer.names[id] }
	p := Pattern{
		Signature:      sh.sig,
		Count:          pa.count,
		Expected:       pa.expected,
		MaxProbability: pa.maxProb,
		Hops:           make([]Hop, n),
	}
	hist := a.opt.Histograms
	weighted := pa.weighted
	group := n
	if b := aggSampleBudget / (nDists * max(1, len(insts))); group > b {
		group = max(1, b)
	}
	if cap(sc.msgs) < n {
		sc.msgs = make([]trace.Message, n)
	}
	msgs := sc.msgs[:n]
	for lo := 0; lo < n; lo += group {
		hi := min(n, lo+group)
		nv := nDists * (hi - lo)
		for len(sc.vals) < nv {
			sc.vals = append(sc.vals, nil)
			sc.ws = append(sc.ws, nil)
		}
		for i := range nv {
			sc.vals[i], sc.ws[i] = sc.vals[i][:0], sc.ws[i][:0]
		}
		sc.latency, sc.latW = sc.latency[:0], sc.latW[:0]
		for _, ii := range insts {
			in := &a.insts[ii]
			w := instWeight(in.prob)
			ms := a.msgArena[in.off : in.off+n]
			if lo == 0 {
				for k, mi := range ms {
					msgs[k] = a.src.at(mi)
				}
			} else {
				msgs[0] = a.src.at(ms[0])
				for k := lo; k < hi; k++ {
					msgs[k] = a.src.at(ms[k])
					if par := hops[k].parent; par > 0 && int(par) < lo {
						msgs[par] = a.src.at(ms[par])
					}
				}
			}
			root := a.CorrectedSend(&msgs[0])
			if lo == 0 {
				end := root
				for k := range msgs {
					if e := a.CorrectedRecv(&msgs[k]); e > end {
						end = e
					}
				}
				sc.latency = append(sc.latency, float64(end-root)/1e3)
				if weighted {
					sc.latW = append(sc.latW, w)
				}
			}
			for k := lo; k < hi; k++ {
				m := &msgs[k]
				d := sc.vals[nDists*(k-lo) : nDists*(k-lo+1)]
				dw := sc.ws[nDists*(k-lo) : nDists*(k-lo+1)]
				d[distStart] = append(d[distStart], float64(a.CorrectedSend(m)-root)/1e3)
				d[distBytes] = append(d[distBytes], float64(m.Bytes))
				if weighted {
					dw[distStart] = append(dw[distStart], w)
					dw[distBytes] = append(dw[distBytes], w)
				}
				if h := &hops[k]; h.parent >= 0 {
					if par := &msgs[h.parent]; m.SendTS.Known() && par.RecvTS.Known() {
						d[distNode] = append(d[distNode], float64(m.SendTS-par.RecvTS)/1e3)
						if weighted {
							dw[distNode] = append(dw[distNode], w)
						}
					}
				}
				if m.SendTS.Known() && m.RecvTS.Known() && m.SendTS != m.RecvTS {
					net := (int64(m.RecvTS) - a.Offset(m.DstNode)) - (int64(m.SendTS) - a.Offset(m.SrcNode))
					d[distNet] = append(d[distNet], float64(net)/1e3)
					if weighted {
						dw[distNet] = append(dw[distNet], w)
					}
				}
			}
		}
		ws := func(i int) []float64 {
			if weighted {
				return sc.ws[i]
			}
			return nil
		}
		if lo == 0 {
			var lw []float64
			if weighted {
				lw = sc.latW
			}
			p.Latency = sc.summary(sc.latency, lw, false)
		}
		for k := lo; k < hi; k++ {
			h := &hops[k]
			id := int(sh.newID[k])
			b := nDists * (k - lo)
			hop := Hop{
				ID:         id,
				From:       name(h.label.from),
				To:         name(h.label.to),
				ToEndpoint: name(h.label.ep),
				Kind:       h.label.kind.String(),
				Start:      sc.summary(sc.vals[b+distStart], ws(b+distStart), hist),
				NodeDelay:  sc.summary(sc.vals[b+distNode], ws(b+distNode), hist),
				NetDelay:   sc.summary(sc.vals[b+distNet], ws(b+distNet), hist),
				Bytes:      sc.summary(sc.vals[b+distBytes], ws(b+distBytes), false),
			}
			if h.label.mixedKind {
				hop.Kind = trace.KindUnknown.String()
			}
			if h.label.mixedEP {
				hop.ToEndpoint = "*"
			}
			if h.parent >= 0 {
				par := int(sh.newID[h.parent])
				hop.Parent = &par
			}
			p.Hops[id] = hop
		}
	}
	if a.opt.KeepInstances {
		kept := len(insts)
		if a.opt.MaxKept > 0 && kept > a.opt.MaxKept {
			kept = a.opt.MaxKept
		}
		p.Instances = make([]InstanceRecord, kept)
		for i, ii := range insts[:kept] {
			in := &a.insts[ii]
			ms := a.msgArena[in.off : in.off+n]
			rec := InstanceRecord{Messages: make([]int, n), Probability: in.prob}
			for id, k := range sh.order {
				rec.Messages[id] = int(ms[k])
			}
			p.Instances[i] = rec
		}
	}
	return p
}

// aggWorkers is how many goroutines Patterns uses.
func aggWorkers() int { return max(1, runtime.GOMAXPROCS(0)) }

// aggParallel calls f(0..n-1) on aggWorkers goroutines.
func aggParallel(n int, f func(i int)) { aggParallelW(n, func(_, i int) { f(i) }) }

// aggParallelW calls f(w, i) for i in 0..n-1, where w < aggWorkers() names
// the goroutine, handing out indices in blocks.
func aggParallelW(n int, f func(w, i int)) {
	if n < 64 {
		parallelFor(n, 1, 64, f)
		return
	}
	parallelFor(n, aggWorkers(), 64, f)
}

// parallelFor calls f(w, i) for every i in 0..n-1 on up to workers
// goroutines (w < workers names the goroutine), handing out block indices
// at a time, and waits for them.
func parallelFor(n, workers, block int, f func(w, i int)) {
	if workers <= 1 || n <= block {
		for i := 0; i < n; i++ {
			f(0, i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range min(workers, (n+block-1)/block) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				lo := int(next.Add(int64(block))) - block
				if lo >= n {
					return
				}
				for i := lo; i < min(lo+block, n); i++ {
					f(w, i)
				}
			}
		}()
	}
	wg.Wait()
}

// RankPatterns sorts ps by metric (descending), then by count
// (descending), then by signature, and numbers them from 1.
func RankPatterns(ps []Pattern, metric RankMetric) {
	keys := make([]rankKey, len(ps))
	for i := range ps {
		keys[i] = newRankKey(metric, ps[i].Count, ps[i].Expected, ps[i].MaxProbability, ps[i].Signature, i)
	}
	slices.SortFunc(keys, cmpRankKey)
	sorted := make([]Pattern, len(ps))
	for i, k := range keys {
		sorted[i] = ps[k.idx]
		sorted[i].Rank = i + 1
	}
	copy(ps, sorted)
}

// rankKey is what patterns are ranked by; idx (the position before
// ranking) breaks the remaining ties so that the order is total.
type rankKey struct {
	score float64
	count int
	sig   string
	idx   int
}

func newRankKey(metric RankMetric, count int, expected, maxProb float64, sig string, idx int) rankKey {
	k := rankKey{score: expected, count: count, sig: sig, idx: idx}
	switch metric {
	case RankCount:
		k.score = float64(count)
	case RankMaxProbability:
		k.score = maxProb
	case RankAvgProbability:
		k.score = 0
		if count > 0 {
			k.score = expected / float64(count)
		}
	case RankSqrtCount:
		k.score = 0
		if count > 0 {
			k.score = expected / math.Sqrt(float64(count))
		}
	}
	return k
}

func cmpRankKey(x, y rankKey) int {
	if x.score != y.score {
		if x.score > y.score {
			return -1
		}
		return 1
	}
	if x.count != y.count {
		return y.count - x.count
	}
	if c := strings.Compare(x.sig, y.sig); c != 0 {
		return c
	}
	return x.idx - y.idx
}

func cmpI64(x, y int64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

func grow(s [][]int32, n int) [][]int32 {
	if cap(s) < n {
		s = append(s[:cap(s)], make([][]int32, n-cap(s))...)
	}
	return s[:n]
}

func growU64(s []uint64, n int) []uint64 {
	if cap(s) < n {
		return make([]uint64, n, 2*n)
	}
	return s[:n]
}

func growI64(s []int64, n int) []int64 {
	if cap(s) < n {
		return make([]int64, n, 2*n)
	}
	return s[:n]
}

func growI32(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n, 2*n)
	}
	return s[:n]
}
