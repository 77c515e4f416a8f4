package causal

import (
	"errors"
	"math"
	"slices"
	"strings"

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
// accumulates their timing. It is not safe for concurrent use.
type Aggregator struct {
	t       *trace.Trace
	opt     AggregateOptions
	namer   *Namer
	offsets []int64 // by node Sym
	labels  labelTable

	patterns map[uint64]*patAcc
	order    []*patAcc
	bad      int

	// scratch, reused across Add calls
	kids   [][]int32
	hashes []uint64
	start  []int64
	canon  []int32
	pos    []int32
}

type labelTable struct {
	ids   map[string]uint32
	names []string
}

func (l *labelTable) id(s string) uint32 {
	if id, ok := l.ids[s]; ok {
		return id
	}
	if l.ids == nil {
		l.ids = make(map[string]uint32)
	}
	id := uint32(len(l.names))
	l.names = append(l.names, s)
	l.ids[s] = id
	return id
}

type hopLabel struct {
	from, to, ep uint32
	kind         trace.Kind
	mixedKind    bool
}

type hopAcc struct {
	label  hopLabel
	parent int32
	start  DistBuilder
	node   DistBuilder
	net    DistBuilder
	bytes  DistBuilder
}

type patAcc struct {
	hops      []hopAcc
	count     int
	expected  float64
	maxProb   float64
	latency   DistBuilder
	instances []InstanceRecord
	first     int // arrival order, for stable ties
}

// NewAggregator returns an Aggregator for instances of t's messages.
func NewAggregator(t *trace.Trace, opt AggregateOptions) *Aggregator {
	a := &Aggregator{
		t:        t,
		opt:      opt,
		namer:    NewNamer(t, opt.Naming),
		patterns: make(map[uint64]*patAcc),
		offsets:  make([]int64, t.Syms.Len()),
	}
	for _, o := range t.Meta.Offsets {
		if !o.Known {
			continue
		}
		if s, ok := t.Syms.Lookup(o.Node); ok && int(s) < len(a.offsets) {
			a.offsets[s] = o.OffsetNS
		}
	}
	return a
}

// Namer returns the Namer the aggregator names nodes with.
func (a *Aggregator) Namer() *Namer { return a.namer }

// Rejected returns how many instances Add refused.
func (a *Aggregator) Rejected() int { return a.bad }

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
// back to its send time when the receive was not seen.
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

func (a *Aggregator) label(m *trace.Message) hopLabel {
	return hopLabel{
		from: a.labels.id(a.namer.Node(m.SrcNode)),
		to:   a.labels.id(a.namer.Node(m.DstNode)),
		ep:   a.labels.id(a.namer.Endpoint(m.Dst)),
		kind: m.Kind,
	}
}

// Add adds one instance. It returns ErrBadInstance (and counts it) if the
// instance is empty, not in parent-first order or names messages outside the
// trace.
func (a *Aggregator) Add(inst Instance) error {
	n := len(inst.Nodes)
	if n == 0 || inst.Nodes[0].Parent != -1 {
		a.bad++
		return ErrBadInstance
	}
	for i, nd := range inst.Nodes {
		if int(nd.Msg) < 0 || int(nd.Msg) >= len(a.t.Messages) || (i > 0 && (nd.Parent < 0 || int(nd.Parent) >= i)) {
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
	msgs := a.t.Messages
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
		a.start[i] = a.CorrectedSend(&msgs[inst.Nodes[i].Msg])
	}
	for i := n - 1; i >= 0; i-- {
		m := &msgs[inst.Nodes[i].Msg]
		lb := a.label(m)
		h := mix(mix(0x5157, uint64(lb.from)), uint64(lb.to))
		ks := a.kids[i]
		slices.SortFunc(ks, func(x, y int32) int {
			if a.hashes[x] != a.hashes[y] {
				if a.hashes[x] < a.hashes[y] {
					return -1
				}
				return 1
			}
			return cmpI64(a.start[x], a.start[y])
		})
		for _, c := range ks {
			h = mix(h, a.hashes[c])
		}
		a.hashes[i] = mix(h, uint64(len(ks)))
	}
	// Pre-order walk in canonical child order.
	a.canon = a.canon[:0]
	a.pos = growI32(a.pos, n)
	var walk func(i int32)
	walk = func(i int32) {
		a.pos[i] = int32(len(a.canon))
		a.canon = append(a.canon, i)
		for _, c := range a.kids[i] {
			walk(c)
		}
	}
	walk(0)

	key := a.hashes[0]
	pa := a.patterns[key]
	if pa == nil {
		pa = &patAcc{hops: make([]hopAcc, n), first: len(a.order)}
		for k, i := range a.canon {
			pa.hops[k].label = a.label(&msgs[inst.Nodes[i].Msg])
			pa.hops[k].parent = -1
			if k > 0 {
				pa.hops[k].parent = a.pos[inst.Nodes[i].Parent]
			}
		}
		a.patterns[key] = pa
		a.order = append(a.order, pa)
	}
	pa.count++
	pa.expected += p
	if p > pa.maxProb {
		pa.maxProb = p
	}
	w := p
	if w == 0 {
		w = 1e-300 // keep the sample in counts even at probability zero
	}
	root := a.start[0]
	end := root
	for k, i := range a.canon {
		m := &msgs[inst.Nodes[i].Msg]
		h := &pa.hops[k]
		if m.Kind != h.label.kind {
			h.label.mixedKind = true
		}
		h.start.Add(float64(a.start[i]-root)/1e3, w)
		if k > 0 {
			par := &msgs[inst.Nodes[inst.Nodes[i].Parent].Msg]
			if m.SendTS.Known() && par.RecvTS.Known() {
				h.node.Add(float64(m.SendTS-par.RecvTS)/1e3, w)
			}
		}
		if m.SendTS.Known() && m.RecvTS.Known() && m.SendTS != m.RecvTS {
			net := (int64(m.RecvTS) - a.Offset(m.DstNode)) - (int64(m.SendTS) - a.Offset(m.SrcNode))
			h.net.Add(float64(net)/1e3, w)
		}
		h.bytes.Add(float64(m.Bytes), w)
		if e := a.CorrectedRecv(m); e > end {
			end = e
		}
	}
	pa.latency.Add(float64(end-root)/1e3, w)
	if a.opt.KeepInstances && (a.opt.MaxKept == 0 || len(pa.instances) < a.opt.MaxKept) {
		rec := InstanceRecord{Messages: make([]int, n), Probability: p}
		for k, i := range a.canon {
			rec.Messages[k] = int(inst.Nodes[i].Msg)
		}
		pa.instances = append(pa.instances, rec)
	}
	return nil
}

// Patterns returns the aggregated patterns ranked by metric, with hops in
// pre-order and every hop's children in order of mean start.
func (a *Aggregator) Patterns(metric RankMetric) []Pattern {
	out := make([]Pattern, 0, len(a.order))
	for _, pa := range a.order {
		out = append(out, a.finish(pa))
	}
	RankPatterns(out, metric)
	return out
}

func (a *Aggregator) finish(pa *patAcc) Pattern {
	n := len(pa.hops)
	starts := make([]float64, n)
	kids := make([][]int, n)
	for k := range pa.hops {
		starts[k] = pa.hops[k].start.Mean()
		if par := pa.hops[k].parent; par >= 0 {
			kids[par] = append(kids[par], k)
		}
	}
	name := func(id uint32) string { return a.labels.names[id] }
	for _, ks := range kids {
		slices.SortStableFunc(ks, func(x, y int) int {
			if starts[x] != starts[y] {
				if starts[x] < starts[y] {
					return -1
				}
				return 1
			}
			return strings.Compare(name(pa.hops[x].label.to), name(pa.hops[y].label.to))
		})
	}
	newID := make([]int, n)
	order := make([]int, 0, n)
	var sig func(k int) *SigNode
	sig = func(k int) *SigNode {
		newID[k] = len(order)
		order = append(order, k)
		lb := pa.hops[k].label
		s := &SigNode{From: name(lb.from), To: name(lb.to)}
		for _, c := range kids[k] {
			s.Children = append(s.Children, sig(c))
		}
		return s
	}
	root := sig(0)
	p := Pattern{
		Signature:      root.String(),
		Count:          pa.count,
		Expected:       pa.expected,
		MaxProbability: pa.maxProb,
		Latency:        pa.latency.Dist(a.opt.Histograms),
		Hops:           make([]Hop, n),
	}
	for id, k := range order {
		h := &pa.hops[k]
		hop := Hop{
			ID:         id,
			From:       name(h.label.from),
			To:         name(h.label.to),
			ToEndpoint: name(h.label.ep),
			Kind:       h.label.kind.String(),
			Start:      h.start.Dist(a.opt.Histograms),
			NodeDelay:  h.node.Dist(a.opt.Histograms),
			NetDelay:   h.net.Dist(a.opt.Histograms),
			Bytes:      h.bytes.Dist(false),
		}
		if h.label.mixedKind {
			hop.Kind = trace.KindUnknown.String()
		}
		if h.parent >= 0 {
			par := newID[h.parent]
			hop.Parent = &par
		}
		p.Hops[id] = hop
	}
	for _, rec := range pa.instances {
		msgs := make([]int, n)
		for id, k := range order {
			msgs[id] = rec.Messages[k]
		}
		p.Instances = append(p.Instances, InstanceRecord{Messages: msgs, Probability: rec.Probability})
	}
	return p
}

// RankPatterns sorts ps by metric (descending), then by count, then by
// signature, and numbers them from 1.
func RankPatterns(ps []Pattern, metric RankMetric) {
	score := func(p *Pattern) float64 {
		switch metric {
		case RankCount:
			return float64(p.Count)
		case RankMaxProbability:
			return p.MaxProbability
		case RankAvgProbability:
			if p.Count == 0 {
				return 0
			}
			return p.Expected / float64(p.Count)
		case RankSqrtCount:
			if p.Count == 0 {
				return 0
			}
			return p.Expected / math.Sqrt(float64(p.Count))
		}
		return p.Expected
	}
	slices.SortStableFunc(ps, func(x, y Pattern) int {
		sx, sy := score(&x), score(&y)
		if sx != sy {
			if sx > sy {
				return -1
			}
			return 1
		}
		if x.Count != y.Count {
			return y.Count - x.Count
		}
		return strings.Compare(x.Signature, y.Signature)
	})
	for i := range ps {
		ps[i].Rank = i + 1
	}
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
