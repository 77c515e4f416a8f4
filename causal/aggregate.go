package causal

import (
	"errors"
	"math"
	"slices"
	"strings"

	"github.com/wirepath/wirepath/internal/parallel"
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
	// Background marks an instance of work no request caused (a health
	// check, a refresh: the assembly engine's background trees): it
	// counts in its pattern, not in the request types (RequestTypes).
	Background bool
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
	// RootFrom and RootTo, when RootTo is above RootFrom, keep only the
	// instances whose root message was sent in [RootFrom, RootTo)
	// (nanoseconds on the reference clock, CorrectedSend); the others are
	// counted (Outside) and left out. A windowed run (pipeline.RunWindows)
	// reconciles each window with a margin on both sides, so that the trees
	// that cross its edges are whole, and counts each tree in the window
	// its root is sent in.
	RootFrom, RootTo int64
	// Sketches keeps, with every distribution, the mergeable summary of
	// its samples (a DistBuilder: exact up to 4096 samples, 1% bins
	// beyond), so that ResultMerger can merge the patterns of windows.
	Sketches bool
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
	msgs trace.Messages
	// The messages again, as the concrete type they are when they are a
	// Table or a Trace (else nil), so that the hot paths read them
	// without an interface call.
	tab     *trace.Table
	slice   []trace.Message
	opt     AggregateOptions
	namer   *Namer
	offsets []int64 // by node Sym; nil when the trace has none
	// singleClock: the trace's messages carry one timestamp each, so no
	// network delay is measured (trace.Meta.SingleClock).
	singleClock bool

	patterns map[uint64]int32 // canonical hash -> index in pats
	pats     []patAcc
	hopArena []hopInfo // the hops of every pattern, canonical pre-order
	msgArena []int32   // the messages of every instance, in its pattern's hop order
	// Every instance's pattern, in the order added (its messages follow
	// each other in msgArena), and its probability when not all are 1.
	instPat  []int32
	instProb []float64
	// instBg marks the background instances (Instance.Background)
	instBg  map[int32]bool
	bad     int
	types   []RequestType // of the last Patterns call
	outside int

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

// NewAggregator returns an Aggregator for instances of the messages of ms
// (a Trace or a Table: the patterns are the same).
func NewAggregator(ms trace.Messages, opt AggregateOptions) *Aggregator {
	a := &Aggregator{
		msgs:        ms,
		opt:         opt,
		namer:       NewNamer(ms, opt.Naming),
		patterns:    make(map[uint64]int32),
		singleClock: ms.Metadata().SingleClock,
	}
	switch t := ms.(type) {
	case *trace.Table:
		a.tab = t
	case *trace.Trace:
		a.slice = t.Messages
	}
	a.offsets = NodeOffsets(ms)
	return a
}

// read sets *m to message i.
func (a *Aggregator) read(i int32, m *trace.Message) {
	switch {
	case a.tab != nil:
		a.tab.Read(int(i), m)
	case a.slice != nil:
		*m = a.slice[i]
	default:
		a.msgs.Read(int(i), m)
	}
}

// str returns the string of a label symbol, "" for none and for "-".
func (a *Aggregator) str(s trace.Sym) string {
	if s == 0 {
		return ""
	}
	if v := a.msgs.Symbols().String(s); v != "-" {
		return v
	}
	return ""
}

// rootReturn returns the index of the hop that answers a pattern's root
// call (the first RETURN from the root's receiver to its sender), or -1.
func rootReturn(hops []hopInfo) int {
	if len(hops) == 0 || hops[0].label.kind != trace.KindCall {
		return -1
	}
	r := hops[0].label
	for k := 1; k < len(hops); k++ {
		if l := hops[k].label; l.kind == trace.KindReturn && l.from == r.to && l.to == r.from {
			return k
		}
	}
	return -1
}

// NodeOffsets returns the known clock offsets of the nodes of ms, in
// nanoseconds by node Sym (0 for a node without one), or nil when no node
// has a known offset other than 0.
func NodeOffsets(ms trace.Messages) []int64 {
	syms := ms.Symbols()
	var off []int64
	for _, o := range ms.Metadata().Offsets {
		if !o.Known || o.OffsetNS == 0 {
			continue
		}
		if s, ok := syms.Lookup(o.Node); ok && int(s) < syms.Len() {
			if off == nil {
				off = make([]int64, syms.Len())
			}
			off[s] = o.OffsetNS
		}
	}
	return off
}

// Namer returns the Namer the aggregator names nodes with.
func (a *Aggregator) Namer() *Namer { return a.namer }

// Rejected returns how many instances Add refused.
func (a *Aggregator) Rejected() int { return a.bad }

// Outside returns how many instances Add left out because their root was
// sent outside [RootFrom, RootTo).
func (a *Aggregator) Outside() int { return a.outside }

// Len returns the number of instances added and the number of patterns
// they form.
func (a *Aggregator) Len() (instances, patterns int) { return len(a.instPat), len(a.pats) }

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

// Reserve makes room for the given numbers of instances and of messages in
// them, for an engine that knows them in advance.
func (a *Aggregator) Reserve(instances, messages int) {
	a.instPat = slices.Grow(a.instPat, instances)
	a.msgArena = slices.Grow(a.msgArena, messages)
}

// Add adds one instance. It returns ErrBadInstance (and counts it) if the
// instance is empty, not in parent-first order or names messages outside the
// trace. Add does not keep inst.Nodes.
func (a *Aggregator) Add(inst Instance) error {
	if !a.valid(inst.Nodes) {
		a.bad++
		return ErrBadInstance
	}
	p := clampProb(inst.Prob)
	msgs := a.load(inst.Nodes)
	if a.opt.RootTo > a.opt.RootFrom {
		if t := a.CorrectedSend(&msgs[0]); t < a.opt.RootFrom || t >= a.opt.RootTo {
			a.outside++
			return nil
		}
	}
	a.hashTree(inst.Nodes, msgs)
	a.walkCanonical(len(inst.Nodes))
	pi := a.patternOf(inst.Nodes, msgs)
	a.record(pi, inst.Nodes, msgs, p)
	if inst.Background {
		if a.instBg == nil {
			a.instBg = make(map[int32]bool)
		}
		a.instBg[int32(len(a.instPat)-1)] = true
	}
	return nil
}

// valid reports whether nodes are a tree of the trace's messages in
// parent-first order.
func (a *Aggregator) valid(nodes []InstanceNode) bool {
	if len(nodes) == 0 || nodes[0].Parent != -1 {
		return false
	}
	nmsgs := a.msgs.Len()
	for i, nd := range nodes {
		if int(nd.Msg) < 0 || int(nd.Msg) >= nmsgs || (i > 0 && (nd.Parent < 0 || int(nd.Parent) >= i)) {
			return false
		}
	}
	return true
}

// clampProb returns p in [0, 1], 0 for NaN.
func clampProb(p float64) float64 {
	if p <= 0 || math.IsNaN(p) {
		return 0
	}
	return min(p, 1)
}

// load reads the messages of nodes into the scratch buffer and lists
// every node's children (a.kids).
func (a *Aggregator) load(nodes []InstanceNode) []trace.Message {
	n := len(nodes)
	if cap(a.mbuf) < n {
		a.mbuf = make([]trace.Message, n, 2*n)
	}
	msgs := a.mbuf[:n]
	for i := range msgs {
		a.read(nodes[i].Msg, &msgs[i])
	}
	a.kids = grow(a.kids, n)
	for i := range a.kids {
		a.kids[i] = a.kids[i][:0]
	}
	for i := 1; i < n; i++ {
		par := nodes[i].Parent
		a.kids[par] = append(a.kids[par], int32(i))
	}
	return msgs
}

// hashTree computes the canonical hash of every node's subtree
// (a.hashes), bottom up, sorting every node's children by hash and then
// by corrected send time: the canonical child order.
func (a *Aggregator) hashTree(nodes []InstanceNode, msgs []trace.Message) {
	n := len(nodes)
	a.hashes = growU64(a.hashes, n)
	a.start = growI64(a.start, n)
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
		h := mix(0x5157, uint64(a.nodeID(m.SrcNode))<<32|uint64(a.nodeID(m.DstNode)))
		ks := a.kids[i]
		if len(ks) > 1 {
			slices.SortFunc(ks, byHashThenStart)
		}
		for _, c := range ks {
			h = mix(h, hashes[c])
		}
		hashes[i] = mix(h, uint64(len(ks)))
	}
}

// walkCanonical lists the n nodes in pre-order with children in
// canonical order (a.canon) and each node's position in it (a.pos).
func (a *Aggregator) walkCanonical(n int) {
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
}

// patternOf returns the index of the instance's pattern, adding the
// pattern, with its hops labelled after this instance's messages, if it
// is new.
func (a *Aggregator) patternOf(nodes []InstanceNode, msgs []trace.Message) int32 {
	key := a.hashes[0]
	if pi, ok := a.patterns[key]; ok {
		return pi
	}
	pi := int32(len(a.pats))
	a.pats = append(a.pats, patAcc{hop: int32(len(a.hopArena)), n: int32(len(nodes))})
	for k, i := range a.canon {
		par := int32(-1)
		if k > 0 {
			par = a.pos[nodes[i].Parent]
		}
		a.hopArena = append(a.hopArena, hopInfo{label: a.label(&msgs[i]), parent: par})
	}
	a.patterns[key] = pi
	return pi
}

// record adds the instance, of probability p, to pattern pi: its scores,
// its messages in the pattern's hop order and the hops whose kind or
// endpoint differ between instances.
func (a *Aggregator) record(pi int32, nodes []InstanceNode, msgs []trace.Message, p float64) {
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
	for k, i := range a.canon {
		a.msgArena = append(a.msgArena, nodes[i].Msg)
		m := &msgs[i]
		lb := &hops[k].label
		if m.Kind != lb.kind {
			lb.mixedKind = true
		}
		if !lb.mixedEP && a.epID(m.Dst) != lb.ep {
			lb.mixedEP = true
		}
	}
	if p != 1 && a.instProb == nil {
		a.instProb = make([]float64, len(a.instPat), cap(a.instPat))
		for i := range a.instProb {
			a.instProb[i] = 1
		}
	}
	if a.instProb != nil {
		a.instProb = append(a.instProb, p)
	}
	a.instPat = append(a.instPat, pi)
}

// Patterns returns the aggregated patterns ranked by metric, with hops in
// pre-order and every hop's children in order of mean start. With
// MaxPatterns set, only that many of the best are returned.
func (a *Aggregator) Patterns(metric RankMetric) []Pattern {
	np := len(a.pats)
	// Group the instances by pattern (counting sort, stable), with their
	// offsets in the arena.
	first := make([]int32, np+1)
	for _, pi := range a.instPat {
		first[pi+1]++
	}
	for i := 0; i < np; i++ {
		first[i+1] += first[i]
	}
	byPat := make([]instRef, len(a.instPat))
	next := slices.Clone(first[:np])
	off := 0
	for i, pi := range a.instPat {
		byPat[next[pi]] = instRef{off: off, i: int32(i)}
		next[pi]++
		off += int(a.pats[pi].n)
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
	ts := make([][]typeSample, len(ranked))
	aggParallelW(len(ranked), func(w, i int) {
		pi := ranked[i].idx
		out[i], ts[i] = a.finish(pi, byPat[first[pi]:first[pi+1]], &scratch[w])
		out[i].Rank = i + 1
	})
	a.types = requestTypes(out, ts, a.opt.Histograms, a.opt.Sketches)
	return out
}

// RequestTypes returns the request types of the patterns the last call
// of Patterns returned: their instances gathered by request label, most
// instances first, background instances (Instance.Background) left out.
// It is nil when no instance had a label.
func (a *Aggregator) RequestTypes() []RequestType {
	for _, t := range a.types {
		if t.Label != "" {
			return a.types
		}
	}
	return nil
}

// instRef locates one instance: its messages are msgArena[off:off+n] (n
// the size of its pattern), its probability is prob(i).
type instRef struct {
	off int
	i   int32
}

// prob returns the probability of instance i.
func (a *Aggregator) prob(i int32) float64 {
	if a.instProb == nil {
		return 1
	}
	return a.instProb[i]
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
func (a *Aggregator) shape(pi int, insts []instRef) patShape {
	pa := &a.pats[pi]
	n := int(pa.n)
	hops := a.hopArena[pa.hop : pa.hop+pa.n]
	sum := make([]float64, n)
	var msgs []trace.Message // one instance's messages
	if n > 1 {
		msgs = make([]trace.Message, n)
	}
	for _, in := range insts {
		if n == 1 {
			break
		}
		for k, mi := range a.msgArena[in.off : in.off+n] {
			a.read(mi, &msgs[k])
		}
		a.addAfter(sum, hops, msgs, instWeight(a.prob(in.i)))
	}
	return a.shapeOf(pi, sum)
}

// addAfter adds to sum[k] the weighted delay between the arrival of hop k's
// parent and hop k's send, for the messages msgs of one instance.
func (a *Aggregator) addAfter(sum []float64, hops []hopInfo, msgs []trace.Message, w float64) {
	for k := 1; k < len(msgs); k++ {
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

// shapeOf is shape given the weighted sums of every hop's delay after its
// parent's arrival.
func (a *Aggregator) shapeOf(pi int, sum []float64) patShape {
	pa := &a.pats[pi]
	n := int(pa.n)
	hops := a.hopArena[pa.hop : pa.hop+pa.n]
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
	pts  []sample
	vals []float64 // sample storage, carved into the pattern's samples
	ws   []float64 // their weights, for weighted patterns
	ps   patSamples
}

// patSamples collects the samples of one pattern, or of hops lo..hi-1 of
// it: vals[nDists*(k-lo)+d] for hop k and distribution d (start, node
// delay, network delay, bytes), with the instances' weights in ws when the
// pattern's are not all 1; the latencies and, over hops of the first
// group, each hop's weighted delay after its parent's arrival.
type patSamples struct {
	pi       int
	lo, hi   int
	weighted bool
	vals, ws [][]float64
	latency  []float64
	latW     []float64
	after    []float64
	// labels counts each hop's labels (hops lo..hi-1); roots counts the
	// root call's label with its reply's (the RETURN hop ret, -1 if none).
	labels  []labelCounts
	roots   labelCounts
	rootIdx []int32
	ret     int
}

// aggSampleBudget bounds the samples a worker holds at once (8 MB): a
// pattern with more is summarised a group of hops at a time.
const aggSampleBudget = 1 << 20

const (
	distStart = iota
	distNode
	distNet
	distBytes
	nDists
)

// samplesOf is how many samples pattern pi's hops lo..hi-1 take at most.
func (a *Aggregator) samplesOf(pi, lo, hi int) int {
	return a.pats[pi].count * (nDists*(hi-lo) + 1)
}

// carve returns n values of sc.vals (and of sc.ws if weighted) starting
// at *off, advancing it.
func (sc *aggScratch) carve(off *int, n int, weighted bool) (vals, ws []float64) {
	vals = sc.vals[*off : *off : *off+n]
	if weighted {
		ws = sc.ws[*off : *off : *off+n]
	}
	*off += n
	return vals, ws
}

// start prepares ps to collect the samples of hops lo..hi-1 of pattern pi
// in sc's storage from *off on.
func (a *Aggregator) startSamples(ps *patSamples, sc *aggScratch, off *int, pi, lo, hi int) {
	pa := &a.pats[pi]
	c := pa.count
	labels := ps.labels[:0]
	for i := range hi - lo {
		if i < cap(labels) {
			labels = labels[:i+1]
			labels[i].reset()
		} else {
			labels = append(labels, labelCounts{})
		}
	}
	ps.roots.reset()
	*ps = patSamples{pi: pi, lo: lo, hi: hi, weighted: pa.weighted, vals: ps.vals[:0], ws: ps.ws[:0],
		labels: labels, roots: ps.roots, rootIdx: ps.rootIdx[:0], ret: rootReturn(a.hopArena[pa.hop : pa.hop+pa.n])}
	for range nDists * (hi - lo) {
		v, w := sc.carve(off, c, pa.weighted)
		ps.vals = append(ps.vals, v)
		ps.ws = append(ps.ws, w)
	}
	if lo == 0 {
		ps.latency, ps.latW = sc.carve(off, c, pa.weighted)
		ps.after = make([]float64, pa.n)
	}
}

// grow makes sc's storage hold n samples.
func (sc *aggScratch) grow(n int, weighted bool) {
	if len(sc.vals) < n {
		sc.vals = make([]float64, n)
	}
	if weighted && len(sc.ws) < n {
		sc.ws = make([]float64, n)
	}
}

// add adds the samples of one instance, whose messages are msgs (those of
// hops lo..hi-1, their parents and the root are enough when lo > 0).
func (a *Aggregator) addSamples(ps *patSamples, hops []hopInfo, msgs []trace.Message, w float64) {
	root := a.CorrectedSend(&msgs[0])
	if ps.lo == 0 {
		a.addAfter(ps.after, hops, msgs, w)
		end := root
		for k := range msgs {
			if e := a.CorrectedRecv(&msgs[k]); e > end {
				end = e
			}
		}
		ps.latency = append(ps.latency, float64(end-root)/1e3)
		var reply trace.Sym
		if ps.ret > 0 {
			reply = msgs[ps.ret].Label
		}
		ps.rootIdx = append(ps.rootIdx, ps.roots.add(msgs[0].Label, reply))
		if ps.weighted {
			ps.latW = append(ps.latW, w)
		}
	}
	for k := ps.lo; k < ps.hi; k++ {
		m := &msgs[k]
		ps.labels[k-ps.lo].add(m.Label, 0)
		d := ps.vals[nDists*(k-ps.lo) : nDists*(k-ps.lo+1)]
		d[distStart] = append(d[distStart], float64(a.CorrectedSend(m)-root)/1e3)
		d[distBytes] = append(d[distBytes], float64(m.Bytes))
		var node, net bool
		var nodeV, netV float64
		if h := &hops[k]; h.parent >= 0 {
			if par := &msgs[h.parent]; m.SendTS.Known() && par.RecvTS.Known() {
				node, nodeV = true, float64(m.SendTS-par.RecvTS)/1e3
				d[distNode] = append(d[distNode], nodeV)
			}
		}
		if m.SendTS.Known() && m.RecvTS.Known() && !a.singleClock {
			n := (int64(m.RecvTS) - a.Offset(m.DstNode)) - (int64(m.SendTS) - a.Offset(m.SrcNode))
			net, netV = true, float64(n)/1e3
			d[distNet] = append(d[distNet], netV)
		}
		if ps.weighted {
			dw := ps.ws[nDists*(k-ps.lo) : nDists*(k-ps.lo+1)]
			dw[distStart] = append(dw[distStart], w)
			dw[distBytes] = append(dw[distBytes], w)
			if node {
				dw[distNode] = append(dw[distNode], w)
			}
			if net {
				dw[distNet] = append(dw[distNet], w)
			}
		}
	}
}

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

// summary is sc.summary, with the distribution's mergeable sketch
// attached when the options ask for it (AggregateOptions.Sketches).
func (a *Aggregator) summary(sc *aggScratch, vals, ws []float64, hist bool) *Dist {
	if !a.opt.Sketches || len(vals) == 0 {
		return sc.summary(vals, ws, hist)
	}
	b := &DistBuilder{}
	for i, v := range vals {
		w := 1.0
		if ws != nil {
			w = ws[i]
		}
		b.Add(v, w)
	}
	b.compact()
	d := sc.summary(vals, ws, hist)
	if d != nil {
		d.sketch = b
	}
	return d
}

// newPattern returns pattern pi without its hops' distributions, and its
// shape, from the samples of its first group of hops.
func (a *Aggregator) newPattern(ps *patSamples, sc *aggScratch) (Pattern, patShape, []typeSample) {
	pa := &a.pats[ps.pi]
	sh := a.shapeOf(ps.pi, ps.after)
	p := Pattern{
		Signature:      sh.sig,
		Count:          pa.count,
		Expected:       pa.expected,
		MaxProbability: pa.maxProb,
		Hops:           make([]Hop, pa.n),
	}
	ts := a.typeSamples(ps)
	p.Latency = a.summary(sc, ps.latency, ps.latW, false)
	p.Label, p.LabelCount = ps.roots.top(func(k [2]trace.Sym) string {
		return RequestLabel(a.str(k[0]), a.str(k[1]))
	})
	return p, sh, ts
}

// setHops fills in the hops ps has the samples of.
func (a *Aggregator) setHops(p *Pattern, sh *patShape, ps *patSamples, sc *aggScratch) {
	pa := &a.pats[ps.pi]
	hops := a.hopArena[pa.hop : pa.hop+pa.n]
	name := func(id uint32) string { return a.namer.names[id] }
	hist := a.opt.Histograms
	for k := ps.lo; k < ps.hi; k++ {
		h := &hops[k]
		id := int(sh.newID[k])
		b := nDists * (k - ps.lo)
		d := func(dist int) []float64 {
			if ps.weighted {
				return ps.ws[b+dist]
			}
			return nil
		}
		hop := Hop{
			ID:         id,
			From:       name(h.label.from),
			To:         name(h.label.to),
			ToEndpoint: name(h.label.ep),
			Kind:       h.label.kind.String(),
			Start:      a.summary(sc, ps.vals[b+distStart], d(distStart), hist),
			NodeDelay:  a.summary(sc, ps.vals[b+distNode], d(distNode), hist),
			NetDelay:   a.summary(sc, ps.vals[b+distNet], d(distNet), hist),
			Bytes:      a.summary(sc, ps.vals[b+distBytes], d(distBytes), false),
		}
		hop.Label, _ = ps.labels[k-ps.lo].top(func(l [2]trace.Sym) string { return a.str(l[0]) })
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

// loadInstance reads the messages of instance ii that hops lo..hi-1 need
// into msgs.
func (a *Aggregator) loadInstance(msgs []trace.Message, hops []hopInfo, in instRef, lo, hi int) {
	ms := a.msgArena[in.off : in.off+len(msgs)]
	if lo == 0 {
		for k, mi := range ms {
			a.read(mi, &msgs[k])
		}
		return
	}
	a.read(ms[0], &msgs[0])
	for k := lo; k < hi; k++ {
		a.read(ms[k], &msgs[k])
		if par := hops[k].parent; par > 0 && int(par) < lo {
			a.read(ms[par], &msgs[par])
		}
	}
}

// finish summarises pattern pi, with instances insts, alone: a group of
// hops at a time when its samples exceed the budget.
func (a *Aggregator) finish(pi int, insts []instRef, sc *aggScratch) (Pattern, []typeSample) {
	pa := &a.pats[pi]
	n := int(pa.n)
	hops := a.hopArena[pa.hop : pa.hop+pa.n]
	group := n
	if b := aggSampleBudget/max(1, len(insts)) - 1; nDists*group > b {
		group = max(1, b/nDists)
	}
	if cap(sc.msgs) < n {
		sc.msgs = make([]trace.Message, n)
	}
	msgs := sc.msgs[:n]
	ps := &sc.ps
	var p Pattern
	var sh patShape
	var ts []typeSample
	for lo := 0; lo < n; lo += group {
		hi := min(n, lo+group)
		sc.grow(a.samplesOf(pi, lo, hi), pa.weighted)
		off := 0
		a.startSamples(ps, sc, &off, pi, lo, hi)
		for _, in := range insts {
			a.loadInstance(msgs, hops, in, lo, hi)
			a.addSamples(ps, hops, msgs, instWeight(a.prob(in.i)))
		}
		if lo == 0 {
			p, sh, ts = a.newPattern(ps, sc)
			for j, in := range insts {
				if j < len(ts) {
					ts[j].bg = a.instBg[in.i]
				}
			}
		}
		a.setHops(&p, &sh, ps, sc)
	}
	a.keepInstances(&p, &sh, pi, insts)
	return p, ts
}

// keepInstances lists the messages of pattern p's first instances, in the
// order of p's hops (sh), as the options ask.
func (a *Aggregator) keepInstances(p *Pattern, sh *patShape, pi int, insts []instRef) {
	if !a.opt.KeepInstances {
		return
	}
	n := int(a.pats[pi].n)
	kept := len(insts)
	if a.opt.MaxKept > 0 && kept > a.opt.MaxKept {
		kept = a.opt.MaxKept
	}
	p.Instances = make([]InstanceRecord, kept)
	for i, in := range insts[:kept] {
		ms := a.msgArena[in.off : in.off+n]
		rec := InstanceRecord{Messages: make([]int, n), Probability: a.prob(in.i)}
		for id, k := range sh.order {
			rec.Messages[id] = int(ms[k])
		}
		p.Instances[i] = rec
	}
}

// aggWorkers is how many goroutines Patterns uses.
func aggWorkers() int { return parallel.Workers(0) }

// aggParallel calls f(0..n-1) on aggWorkers goroutines.
func aggParallel(n int, f func(i int)) { aggParallelW(n, func(_, i int) { f(i) }) }

// aggParallelW calls f(w, i) for i in 0..n-1, where w < aggWorkers() names
// the goroutine, handing out indices in blocks of 64 (in the calling
// goroutine when there are fewer).
func aggParallelW(n int, f func(w, i int)) { parallel.For(n, aggWorkers(), 64, f) }

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
