package linking

import (
	"context"
	"math"
	"slices"

	"github.com/wirepath/wirepath/internal/parallel"
	"github.com/wirepath/wirepath/internal/smooth"
	"github.com/wirepath/wirepath/trace"
)

// DelayModel says how linking weighs a possible parent by its delay.
type DelayModel string

// The delay models.
const (
	// DelayExponential is WAP5's: a parent at delay t of a B→C message
	// weighs exp(−t/d(B→C)), spontaneity exp(−y).
	DelayExponential DelayModel = "exponential"
	// DelayEmpirical learns the distribution of the delay between each
	// type of parent and each type of child (a histogram in logarithmic
	// bins) from the trace, and weighs a possible parent by how much more
	// often true parents than unrelated messages arrive at its delay.
	// docs/causal.md describes the model.
	DelayEmpirical DelayModel = "empirical"
)

// DelayModels lists the valid delay models.
var DelayModels = []DelayModel{DelayExponential, DelayEmpirical}

const (
	// The histograms: bin 0 holds delays under empBase, bin k ≥ 1 delays
	// in [empBase·r^(k−1), empBase·r^k) with r = empRatio.
	empBase  = 1e3 // 1 µs
	empRatio = 1.1
	// empSmooth is the standard deviation, in bins, of the Gaussian the
	// histograms are smoothed with (a 10% jitter spans about two bins).
	empSmooth = 1.0
	// empMinSupport is the number of possible-parent links a (parent
	// type, child type) key needs for a histogram of its own; keys with
	// fewer use their coarse key's.
	empMinSupport = 100
	// empPrior is the weight, in candidates, of the coarse estimate in a
	// key's bins (and, in messages, in a child type's spontaneity).
	empPrior = 4
	// A coarse bin's fraction of parents among candidates starts at
	// empCoarseParents of empCoarsePrior candidates.
	empCoarsePrior   = 1
	empCoarseParents = 0.01
	// empMinSpont bounds a child type's spontaneous weight from below.
	empMinSpont = 1e-4
	// empCoarse is the number of coarse keys: parent kind (3) × child
	// kind (3) × paired RETURN (2) × clock (2), spread over 3×16.
	empCoarse = 3 * 16
)

// empirical is the learnt delay model.
//
// A message's child type is its sender and receiver (clients as one), its
// kind, whether it is a RETURN paired with its CALL, and the clock its
// parents are looked up on; a possible parent's type is its sender and its
// kind. Each (parent type, child type) key with enough links has a
// histogram; the others share the coarse key of their kinds and clock.
//
// In each bin, with H the expected number of true parents (link
// probabilities summed) and G the number of possible parents, the weight
// is the odds (H + κ·φ) ÷ (G − H + κ·(1 − φ)) that a possible parent at
// that delay is the true one rather than a message that happened to
// arrive, φ being the coarse key's fraction H ÷ G (κ = empPrior). A child
// type's spontaneous weight is the fraction of its messages that were
// spontaneous, shrunk to its coarse type's the same way. These are the
// posterior odds of a mixture in which a message's parent arrives at a
// delay drawn from its key's distribution and other messages arrive
// independently of it; expectation maximisation (Iterations rounds)
// estimates them. The first round estimates H by the method of moments:
// the possible parents at a delay minus the messages of the same type that
// arrived as long after the child (which cannot be its parents, but come
// as often as unrelated ones before it); a paired RETURN's CALL is always
// a possible parent, so paired RETURNs start from WAP5's weights instead.
type empirical struct {
	nb   int
	logR float64
	// Child types, with c2kind[type] = kind·4 + paired RETURN·2 + clock:
	// a sender pair's messages have type pairC2[pair] if their kind and
	// pairing (kind·2 + paired) is pairCombo[pair], the usual case, else
	// the type in other.
	msgs      []trace.Message
	pair      []int32
	mate      []int32
	pairC2    []int32
	pairCombo []uint8
	other     map[int64]int32
	c2kind    []uint8
	// Parent types: 3·(class + 1) + kind, the class of a node being its
	// dense id (nodeID) or, for clients, one class for all (nodeCls).
	nodeID  []int32
	nodeCls []int32
	nIn     int32
	// The keys with a histogram of their own, by child type: those of
	// child type c have parent types fineIn[fineStart[c]:fineStart[c+1]]
	// (increasing) and histograms nCoarse + that index.
	fineStart []int32
	fineIn    []int32
	kinds     []uint8   // per key with a histogram: its coarse key
	w         []float32 // (empCoarse + len(fineIn)) × nb: coarse keys first
	spont     []float64 // per child type
}

// newEmpirical assigns the child types. nodeID maps node Syms to dense
// ids, nodeCls dense ids to classes (clients share one, nCls − 1); np is
// the number of sender pairs.
func newEmpirical(msgs []trace.Message, mode []uint8, pair, mate []int32, np int, nodeID, nodeCls []int32, nCls int32, window int64) *empirical {
	e := &empirical{logR: math.Log(empRatio), nb: 1 << 30, msgs: msgs, pair: pair, mate: mate, nodeID: nodeID, nodeCls: nodeCls}
	e.nb = e.bin(window) + 1
	e.nIn = 3 * (nCls + 1)
	e.pairC2 = make([]int32, np)
	e.pairCombo = make([]uint8, np)
	e.other = make(map[int64]int32)
	for i := range e.pairC2 {
		e.pairC2[i] = -1
	}
	types := make(map[uint64]int32)
	for i := range msgs {
		p := pair[i]
		if p < 0 {
			continue
		}
		combo := e.combo(int32(i))
		if e.pairC2[p] >= 0 && e.pairCombo[p] == combo {
			continue
		}
		if _, ok := e.other[int64(p)<<3|int64(combo)]; ok {
			continue
		}
		m := &msgs[i]
		ck := combo<<1 | mode[i]&1
		k := uint64(e.cls(m.SrcNode)+1)<<40 | uint64(e.cls(m.DstNode)+1)<<8 | uint64(ck)
		id, ok := types[k]
		if !ok {
			id = int32(len(types))
			types[k] = id
			e.c2kind = append(e.c2kind, ck)
		}
		if e.pairC2[p] < 0 {
			e.pairC2[p], e.pairCombo[p] = id, combo
		} else {
			e.other[int64(p)<<3|int64(combo)] = id
		}
	}
	e.spont = make([]float64, len(types))
	return e
}

// cls returns the class of node s (-1 for none).
func (e *empirical) cls(s trace.Sym) int32 {
	if s == 0 || int(s) >= len(e.nodeID) || e.nodeID[s] < 0 {
		return -1
	}
	return e.nodeCls[e.nodeID[s]]
}

// combo returns message i's kind·2 + paired RETURN.
func (e *empirical) combo(i int32) uint8 {
	m := &e.msgs[i]
	c := uint8(m.Kind%3) << 1
	if e.mate != nil && e.mate[i] >= 0 && m.Kind == trace.KindReturn {
		c |= 1
	}
	return c
}

// c2 returns message i's child type, -1 if it is not linked.
func (e *empirical) c2(i int32) int32 {
	p := e.pair[i]
	if p < 0 {
		return -1
	}
	if c := e.combo(i); c != e.pairCombo[p] {
		return e.other[int64(p)<<3|int64(c)]
	}
	return e.pairC2[p]
}

// inType returns the parent type of message j.
func (e *empirical) inType(j int32) int32 {
	m := &e.msgs[j]
	return 3*(e.cls(m.SrcNode)+1) + int32(m.Kind%3)
}

// bin returns the histogram bin of delay t (ns).
func (e *empirical) bin(t int64) int {
	if float64(t) < empBase {
		return 0
	}
	return min(1+int(math.Log(float64(t)/empBase)/e.logR), e.nb-1)
}

// key names the (parent type, child type) pair of a possible link.
func (e *empirical) key(parent, child int32) uint64 {
	return uint64(e.c2(child))*uint64(e.nIn) + uint64(e.inType(parent))
}

// coarse returns the coarse key of key k: parent kind × 16 + child type
// kind.
func (e *empirical) coarse(k uint64) int {
	return int(k%uint64(e.nIn)%3)*16 + int(e.c2kind[k/uint64(e.nIn)])
}

// hist returns the histogram of the link from parent to child: its key's
// own (numbered after the coarse keys) or its coarse key's.
func (e *empirical) hist(parent, child int32) int {
	c := e.c2(child)
	in := e.inType(parent)
	for k := e.fineStart[c]; k < e.fineStart[c+1]; k++ {
		if e.fineIn[k] == in {
			return empCoarse + int(k)
		}
	}
	return int(in%3)*16 + int(e.c2kind[c])
}

// coarseOf returns the coarse key of histogram h.
func (e *empirical) coarseOf(h int) int {
	if h >= empCoarse {
		return int(e.kinds[h-empCoarse])
	}
	return h
}

// weight returns the weight of parent at delay t (ns) for child.
func (e *empirical) weight(parent, child int32, t int64) float64 {
	return float64(e.w[e.hist(parent, child)*e.nb+e.bin(t)])
}

// learnDelays estimates the empirical model (the first round, then
// Iterations EM rounds) and leaves it in g.emp.
func (l *Engine) learnDelays(ctx context.Context, g *Graph, ix *linkIndex, cf *callFilter, nodeID, nodeCls []int32, nCls int32, w int) error {
	e := newEmpirical(g.msgs, g.mode, ix.pair, g.mate, len(g.pairMsg), nodeID, nodeCls, nCls, int64(l.opt.Window))
	chunks := linkSplit(len(g.msgs), linkChunk)
	g.flat = true // the weights do not matter until the first fit
	defer func() { g.flat = false }()
	e.setFine(l.countKeys(g, ix, cf, e, chunks, w))
	for it := 0; it <= l.opt.Iterations; it++ {
		moments := it == 0
		sum := l.emRound(g, ix, cf, e, chunks, w, moments)
		if sum == nil {
			return nil
		}
		e.fit(sum, moments, math.Exp(-l.opt.SpontaneousFactor))
		g.emp, g.flat = e, false
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// countKeys counts the possible links of every (parent type, child type)
// key, on every message (a sample by trace order would change with the
// clocks, which order the trace), on w goroutines over chunks of
// messages.
func (l *Engine) countKeys(g *Graph, ix *linkIndex, cf *callFilter, e *empirical, chunks [][2]int, w int) map[uint64]int32 {
	counts := make([]map[uint64]int32, max(1, w))
	parallel.For(len(chunks), w, 1, func(wi, c int) {
		if counts[wi] == nil {
			counts[wi] = make(map[uint64]int32)
		}
		var cs []linkCand
		for i := chunks[c][0]; i < chunks[c][1]; i++ {
			if ix.pair[i] < 0 {
				continue
			}
			cs, _, _, _ = l.score(g, ix, cf, g.msgs, int32(i), cs[:0])
			for _, cd := range cs {
				counts[wi][e.key(cd.msg, int32(i))]++
			}
		}
	})
	// Merge into the largest map.
	slices.SortFunc(counts, func(a, b map[uint64]int32) int { return len(b) - len(a) })
	total := counts[0]
	for _, m := range counts[1:] {
		for k, v := range m {
			total[k] += v
		}
	}
	return total
}

// setFine gives a histogram of its own to every key with empMinSupport
// possible links in counts, and indexes them by child type.
func (e *empirical) setFine(counts map[uint64]int32) {
	var fine []uint64
	for k, v := range counts {
		if v >= empMinSupport {
			fine = append(fine, k)
		}
	}
	slices.Sort(fine)
	e.fineStart = make([]int32, len(e.spont)+1)
	e.fineIn = make([]int32, len(fine))
	e.kinds = make([]uint8, len(fine))
	for i, k := range fine {
		c := k / uint64(e.nIn)
		e.fineStart[c+1]++
		e.fineIn[i] = int32(k % uint64(e.nIn))
		e.kinds[i] = uint8(e.coarse(k))
	}
	for c := range len(e.spont) {
		e.fineStart[c+1] += e.fineStart[c]
	}
}

// emRound accumulates the statistics of one round of the model (the
// first, moments, by the method of moments) on w goroutines over chunks
// of messages, and returns their sum (nil when there was nothing to do).
func (l *Engine) emRound(g *Graph, ix *linkIndex, cf *callFilter, e *empirical, chunks [][2]int, w int, moments bool) *empAcc {
	nh := empCoarse + len(e.fineIn)
	accs := make([]*empAcc, max(1, w))
	parallel.For(len(chunks), w, 1, func(wi, c int) {
		a := accs[wi]
		if a == nil {
			a = newEmpAcc(nh, e.nb, len(e.spont))
			accs[wi] = a
		}
		var cs, fut []linkCand
		for i := chunks[c][0]; i < chunks[c][1]; i++ {
			if ix.pair[i] >= 0 {
				cs, fut = l.accumulate(a, g, ix, cf, e, int32(i), moments, cs, fut)
			}
		}
	})
	var sum *empAcc
	for _, a := range accs {
		if a == nil {
			continue
		}
		if sum == nil {
			sum = a
		} else {
			sum.add(a)
		}
	}
	return sum
}

// accumulate adds the possible links of message i to a: in the first
// round (moments), but for paired RETURNs, the possible parents and the
// messages that arrived as long after it; otherwise the expected true
// parents and spontaneity under the current model; nothing for an orphan
// RETURN. cs and fut are scratch, returned for reuse.
func (l *Engine) accumulate(a *empAcc, g *Graph, ix *linkIndex, cf *callFilter, e *empirical, i int32, moments bool, cs, fut []linkCand) ([]linkCand, []linkCand) {
	if cf.orphan(i) {
		// A RETURN whose CALL was lost is spontaneous by force: it says
		// nothing about delays or spontaneity.
		return cs, fut
	}
	var z, ws float64
	cs, z, _, ws = l.score(g, ix, cf, g.msgs, i, cs[:0])
	if moments && !g.pairedReturn(int(i)) {
		for _, cd := range cs {
			a.g[e.hist(cd.msg, i)*e.nb+e.bin(cd.t)]++
		}
		fut = l.after(g, ix, g.msgs, i, fut[:0])
		for _, cd := range fut {
			a.f[e.hist(cd.msg, i)*e.nb+e.bin(cd.t)]++
		}
		return cs, fut
	}
	c := e.c2(i)
	a.s[c] += empFixed(ws / z)
	a.n[c]++
	for _, cd := range cs {
		b := e.hist(cd.msg, i)*e.nb + e.bin(cd.t)
		a.h[b] += empFixed(cd.w / z)
		a.g[b]++
	}
	return cs, fut
}

// empAcc accumulates one round's statistics: per histogram bin, the
// expected true parents h, the possible parents g and (first round) the
// messages that arrived after the child f; per child type, the expected
// spontaneous messages s and the messages n. Probabilities are summed in
// fixed point (empOne = 1), so that the sums, and the model, do not
// depend on how the work was split between goroutines.
type empAcc struct {
	h, g, f []int64
	s, n    []int64
}

// empOne is probability 1 in empAcc's fixed point.
const empOne = 1 << 30

func empFixed(p float64) int64 { return int64(p*empOne + 0.5) }

func newEmpAcc(nh, nb, nc int) *empAcc {
	return &empAcc{
		h: make([]int64, nh*nb), g: make([]int64, nh*nb), f: make([]int64, nh*nb),
		s: make([]int64, nc), n: make([]int64, nc),
	}
}

func (a *empAcc) add(o *empAcc) {
	for _, p := range [][2][]int64{{a.h, o.h}, {a.g, o.g}, {a.f, o.f}, {a.s, o.s}, {a.n, o.n}} {
		for i, v := range p[1] {
			p[0][i] += v
		}
	}
}

// fit replaces the model's weights with those of an accumulated round.
// After the first round (moments) every child type's spontaneous weight is
// spont0, WAP5's exp(−y).
func (e *empirical) fit(a *empAcc, moments bool, spont0 float64) {
	nb := e.nb
	nh := empCoarse + len(e.fineIn)
	// H and G in candidates, the moments' H from the counts.
	hh := make([]float64, nh*nb)
	gg := make([]float64, nh*nb)
	for h := 0; h < nh; h++ {
		paired := e.coarseOf(h)&2 != 0
		for b := h * nb; b < (h+1)*nb; b++ {
			gg[b] = float64(a.g[b])
			switch {
			case !moments:
				hh[b] = float64(a.h[b]) / empOne
			case paired:
				// A paired RETURN's CALL is always a candidate: WAP5's
				// weights instead.
				hh[b] = float64(a.h[b]) / empOne
			default:
				hh[b] = math.Max(gg[b]-float64(a.f[b]), 0)
				gg[b] = hh[b] + float64(a.f[b])
			}
		}
	}
	// Coarse keys pool their own links and those of their keys.
	for h := empCoarse; h < nh; h++ {
		c := e.coarseOf(h)
		for b := 0; b < nb; b++ {
			hh[c*nb+b] += hh[h*nb+b]
			gg[c*nb+b] += gg[h*nb+b]
		}
	}
	kern := smooth.Gaussian(empSmooth, 3)
	hs := make([]float64, nb)
	gs := make([]float64, nb)
	phi := make([]float64, empCoarse*nb)
	e.w = make([]float32, nh*nb)
	for c := 0; c < empCoarse; c++ {
		smooth.Convolve(hs, hh[c*nb:(c+1)*nb], kern)
		smooth.Convolve(gs, gg[c*nb:(c+1)*nb], kern)
		for b := 0; b < nb; b++ {
			f := (hs[b] + empCoarsePrior*empCoarseParents) / (gs[b] + empCoarsePrior)
			phi[c*nb+b] = f
			e.w[c*nb+b] = float32(f / (1 - f))
		}
	}
	for h := empCoarse; h < nh; h++ {
		smooth.Convolve(hs, hh[h*nb:(h+1)*nb], kern)
		smooth.Convolve(gs, gg[h*nb:(h+1)*nb], kern)
		pc := phi[e.coarseOf(h)*nb:]
		for b := 0; b < nb; b++ {
			e.w[h*nb+b] = float32((hs[b] + empPrior*pc[b]) / (math.Max(gs[b]-hs[b], 0) + empPrior*(1-pc[b])))
		}
	}
	if moments {
		for c := range e.spont {
			e.spont[c] = spont0
		}
		return
	}
	var cs, cn [16]float64
	for c := range e.spont {
		cs[e.c2kind[c]] += float64(a.s[c]) / empOne
		cn[e.c2kind[c]] += float64(a.n[c])
	}
	for c := range e.spont {
		k := e.c2kind[c]
		pc := (cs[k] + empCoarseParents) / (cn[k] + 1)
		e.spont[c] = math.Max((float64(a.s[c])/empOne+empPrior*pc)/(float64(a.n[c])+empPrior), empMinSpont)
	}
}
