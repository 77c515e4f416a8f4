package linking

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/internal/parallel"
	"github.com/wirepath/wirepath/trace"
)

// The three decisions of WAP5 step 3.
const (
	decideFalse   = iota // probably false: leave the link out
	decideTrue           // probably true: keep it
	decideTryBoth        // ambiguous: build the instance both ways
)

// treeStats counts what step 3 did.
type treeStats struct {
	roots      int
	instances  int
	tryBoth    int
	overBudget int
	truncated  int
	pruned     int
}

func (s *treeStats) add(o treeStats) {
	s.roots += o.roots
	s.instances += o.instances
	s.tryBoth += o.tryBoth
	s.overBudget += o.overBudget
	s.truncated += o.truncated
	s.pruned += o.pruned
}

// isRoot reports whether message m starts path instances: it is linkable
// and being spontaneous is not probably false, or is its most likely
// explanation.
func (g *Graph) isRoot(m int, lo float64) bool {
	return g.mode[m] != linkNone && (g.spont[m] >= lo || g.top[m] < 0)
}

// treeInput is what step 3 needs of a Graph: the child lists, which
// links are their child's most likely cause, and the roots with their
// probabilities of being spontaneous.
type treeInput struct {
	kidStart []int32
	kidMsg   []int32
	kidP     []float64
	kidTop   []uint64 // bit k: link k is its child's most likely cause
	roots    []int32
	rootP    []float64
	// Call-aware linking (calls): which messages are paired RETURNs (ret)
	// and which links are from a CALL to its paired RETURN (retLink), bit
	// sets.
	calls   bool
	ret     []uint64
	retLink []uint64
	// The trace and every message's linking clock, to order the possible
	// parents of a message in an instance (resolve).
	msgs []trace.Message
	mode []uint8
}

func (t *treeInput) top(k int32) bool { return t.kidTop[k>>6]&(1<<(uint(k)&63)) != 0 }

// isRet reports whether message m is a RETURN paired with its CALL.
func (t *treeInput) isRet(m int32) bool { return t.ret != nil && t.ret[m>>6]&(1<<(uint(m)&63)) != 0 }

// ownReturn returns the paired RETURN of CALL c, -1 if it has none.
func (t *treeInput) ownReturn(c int32) int32 {
	for k := t.kidStart[c]; k < t.kidStart[c+1]; k++ {
		if t.retLink[k>>6]&(1<<(uint(k)&63)) != 0 {
			return t.kidMsg[k]
		}
	}
	return -1
}

// treeInput extracts the input of step 3 from g; it shares g's child lists.
func (g *Graph) treeInput(lo float64) *treeInput {
	ti := &treeInput{
		kidStart: g.kidStart,
		kidMsg:   g.kidMsg,
		kidP:     g.kidP,
		kidTop:   make([]uint64, (len(g.kidMsg)+63)/64),
	}
	for m := 0; m < g.Len(); m++ {
		for k := g.kidStart[m]; k < g.kidStart[m+1]; k++ {
			if g.top[g.kidMsg[k]] == int32(m) {
				ti.kidTop[k>>6] |= 1 << (uint(k) & 63)
			}
		}
		if g.isRoot(m, lo) {
			ti.roots = append(ti.roots, int32(m))
			ti.rootP = append(ti.rootP, g.spont[m])
		}
	}
	if g.mate != nil {
		// A paired RETURN's CALL is always among its possible parents
		// (scoreRange keeps that link), so the link marks the pair.
		ti.calls = true
		ti.ret = make([]uint64, (g.Len()+63)/64)
		ti.retLink = make([]uint64, (len(g.kidMsg)+63)/64)
		for m := 0; m < g.Len(); m++ {
			if !g.pairedReturn(m) {
				continue
			}
			q := g.mate[m]
			lo, hi := g.kidStart[q], g.kidStart[q+1]
			if k, ok := slices.BinarySearch(g.kidMsg[lo:hi], int32(m)); ok {
				ti.ret[m>>6] |= 1 << (uint(m) & 63)
				k += int(lo)
				ti.retLink[k>>6] |= 1 << (uint(k) & 63)
			}
		}
	}
	ti.msgs, ti.mode = g.msgs, g.mode
	return ti
}

// classify returns the decision for a link of (conditional) probability p;
// top says the link is its child's most likely cause.
func classify(p float64, top bool, lo, hi float64) int {
	switch {
	case p > hi:
		return decideTrue
	case p >= lo || top:
		return decideTryBoth
	}
	return decideFalse
}

// instLink is a possible link between two nodes of an instance: the
// parent's time on the child's linking clock and the link's probability.
type instLink struct {
	child, parent int32
	t             int64
	p             float64
}

// pendingLink is a link waiting for its decision: from instance node node
// along child-list entry k of the graph.
type pendingLink struct {
	node int32
	k    int32
}

// msgState is what one instance under construction knows about a message:
// whether it is in the instance, and the probability mass of its possible
// parents in the instance whose links were left out.
type msgState struct {
	in      bool
	node    int32 // its index in the instance's nodes, when in
	omitted float64
}

type undoEntry struct {
	msg  int32
	prev msgState
	had  bool
}

// treeBuilder builds the path instances of one root at a time (step 3). A
// link from an instance node to message c with probability p is decided
// on p' = p / (1 - omitted(c)), the probability that it is c's cause given
// that c's parents already left out were not: c's possible causes exclude
// each other, so the product of the decisions is the probability of the
// whole instance. A message already in the instance is skipped (it has its
// parent). Decisions are taken breadth first, children in trace order;
// try-both decisions branch (keep first, then omit) while the budget lasts.
type treeBuilder struct {
	g       *treeInput
	budget  int
	lo, hi  float64
	maxTree int
	nodes   []causal.InstanceNode
	// anchor is, for each node, the node of the CALL a paired RETURN
	// answers (-1 for other nodes); deferred lists the paired RETURNs,
	// whose parents are chosen when the instance is complete.
	anchor   []int32
	deferred []int32
	out      []causal.InstanceNode
	links    []instLink
	first    []int32
	final    []causal.InstanceNode
	kidCount []int32
	order    []int32
	byParent []int32
	src      []int32
	queue    []pendingLink
	state    map[int32]msgState
	undo     []undoEntry
	skipped  int
	emit     func(nodes []causal.InstanceNode, p float64)
	// normalize scales the instances of a root so that their
	// probabilities add up to the root's; they wait in buf until then.
	normalize bool
	prune     float64
	reparent  bool
	buf       instBatch
	st        treeStats
}

func newTreeBuilder(g *treeInput, opt *Options, emit func([]causal.InstanceNode, float64)) *treeBuilder {
	return &treeBuilder{
		g:         g,
		budget:    opt.TryBothBudget,
		lo:        opt.TryBothLow,
		hi:        opt.TryBothHigh,
		maxTree:   opt.MaxTreeSize,
		state:     make(map[int32]msgState),
		emit:      emit,
		normalize: opt.NormalizeRoots,
		prune:     opt.MinLinkProbability,
		reparent:  opt.Reparent,
	}
}

// build emits every instance rooted at root number i.
func (b *treeBuilder) build(i int) {
	r := b.g.roots[i]
	b.st.roots++
	b.nodes = b.nodes[:0]
	b.anchor = b.anchor[:0]
	b.deferred = b.deferred[:0]
	b.queue = b.queue[:0]
	clear(b.state)
	b.undo = b.undo[:0]
	b.skipped = 0
	b.include(-1, r)
	b.buf.reset(0)
	b.run(0, b.g.rootP[i], 0)
	if !b.normalize {
		return
	}
	// Instances far less likely than the root's best are dropped.
	best := 0.0
	for _, p := range b.buf.probs {
		best = max(best, p)
	}
	cut := best * b.prune
	sum := 0.0
	for _, p := range b.buf.probs {
		if p >= cut {
			sum += p
		}
	}
	scale := 0.0
	if sum > 0 {
		scale = b.g.rootP[i] / sum
	}
	start := int32(0)
	for k, end := range b.buf.ends {
		if p := b.buf.probs[k]; p >= cut {
			b.emit(b.buf.nodes[start:end], p*scale)
		} else {
			b.st.pruned++
		}
		start = end
	}
}

func (b *treeBuilder) pushKids(node int32, m int32) {
	for k := b.g.kidStart[m]; k < b.g.kidStart[m+1]; k++ {
		b.queue = append(b.queue, pendingLink{node: node, k: k})
	}
}

func (b *treeBuilder) set(m int32, s msgState) {
	prev, had := b.state[m]
	b.undo = append(b.undo, undoEntry{msg: m, prev: prev, had: had})
	b.state[m] = s
}

// include adds message c under node and, when c is a CALL with a paired
// RETURN, the RETURN too: it belongs to the same instance, and its parent
// is chosen when the instance is complete (resolve).
func (b *treeBuilder) include(node int32, c int32) {
	cn := b.add(node, c, -1)
	if !b.g.calls {
		return
	}
	if r := b.g.ownReturn(c); r >= 0 && !b.state[r].in {
		if len(b.nodes) >= b.maxTree {
			b.skipped++
			return
		}
		b.add(-1, r, cn)
	}
}

func (b *treeBuilder) add(parent, c, anchor int32) int32 {
	idx := int32(len(b.nodes))
	b.set(c, msgState{in: true, node: idx})
	b.nodes = append(b.nodes, causal.InstanceNode{Msg: c, Parent: parent})
	b.anchor = append(b.anchor, anchor)
	if anchor >= 0 {
		b.deferred = append(b.deferred, idx)
	}
	b.pushKids(idx, c)
	return idx
}

func (b *treeBuilder) omit(c int32, s msgState, p float64) {
	s.omitted += p
	b.set(c, s)
}

// up returns node x's parent, reading a paired RETURN whose parent is not
// chosen yet as hanging under its CALL.
func (b *treeBuilder) up(out []causal.InstanceNode, x int32) int32 {
	if p := out[x].Parent; p >= 0 || x == 0 {
		return p
	}
	return b.anchor[x]
}

// descends reports whether node x descends from node a (or is a) in out.
func (b *treeBuilder) descends(out []causal.InstanceNode, x, a int32) bool {
	for steps := len(out); x >= 0 && steps >= 0; steps-- {
		if x == a {
			return true
		}
		x = b.up(out, x)
	}
	return false
}

// resolve chooses the parents of the instance's messages once it is
// complete and returns its nodes in parent-first order with the product of
// the probabilities of the links chosen for paired RETURNs.
//
// A paired RETURN hangs under the most recent of its possible parents that
// is its CALL or in the CALL's subtree (without Reparent: the most likely
// one). With Reparent every other message hangs under the most recent of
// its possible parents in the instance that does not descend from it;
// otherwise under the message whose link brought it in. "Most recent" is
// on the clock the message's parents are looked up on.
func (b *treeBuilder) resolve() ([]causal.InstanceNode, float64) {
	if len(b.deferred) == 0 && !b.reparent {
		return b.nodes, 1
	}
	out := append(b.out[:0], b.nodes...)
	b.out = out
	links, first := b.instanceLinks(out)
	if b.reparent {
		b.reparentAll(out, links, first)
	}
	prob := b.chooseReturnParents(out, links, first)
	final := b.parentFirst(out)
	if len(final) != len(out) {
		// Unreachable: every choice above keeps the instance a tree. Should
		// one not, the instance keeps the parents it was built with, a
		// paired RETURN under its CALL.
		final = append(final[:0], b.nodes...)
		for _, rn := range b.deferred {
			final[rn].Parent = b.anchor[rn]
		}
		b.final = final
	}
	return final, prob
}

// instanceLinks returns every link between two messages of the instance
// out, by child node, most recent parent first ("recent" on the clock the
// child's parents are looked up on), and first, where first[x] to
// first[x+1] index node x's links.
func (b *treeBuilder) instanceLinks(out []causal.InstanceNode) (links []instLink, first []int32) {
	g := b.g
	links = b.links[:0]
	for j := range out {
		m := out[j].Msg
		for k := g.kidStart[m]; k < g.kidStart[m+1]; k++ {
			c := g.kidMsg[k]
			s, ok := b.state[c]
			if !ok || !s.in || s.node == int32(j) {
				continue
			}
			t := int64(g.msgs[m].RecvTS)
			if g.mode[c] == linkReceiver {
				t = int64(g.msgs[m].SendTS)
			}
			links = append(links, instLink{child: s.node, parent: int32(j), t: t, p: g.kidP[k]})
		}
	}
	slices.SortFunc(links, func(x, y instLink) int {
		if x.child != y.child {
			return cmp.Compare(x.child, y.child)
		}
		if x.t != y.t {
			return cmp.Compare(y.t, x.t)
		}
		return cmp.Compare(y.parent, x.parent)
	})
	b.links = links
	first = slices.Grow(b.first[:0], len(out)+1)[:len(out)+1]
	clear(first)
	for _, l := range links {
		first[l.child+1]++
	}
	for x := range len(out) {
		first[x+1] += first[x]
	}
	b.first = first
	return links, first
}

// reparentAll hangs every node of out but the root and the paired
// RETURNs under the most recent of its possible parents in the instance
// that does not descend from it (Reparent).
func (b *treeBuilder) reparentAll(out []causal.InstanceNode, links []instLink, first []int32) {
	for x := int32(1); x < int32(len(out)); x++ {
		if b.anchor[x] >= 0 {
			continue
		}
		for _, l := range links[first[x]:first[x+1]] {
			if !b.descends(out, l.parent, x) {
				out[x].Parent = l.parent
				break
			}
		}
	}
}

// chooseReturnParents hangs every paired RETURN of out under the most
// recent (with Reparent) or the most likely of its possible parents that
// is its CALL or in the CALL's subtree, and returns the product of the
// probabilities of the links chosen.
func (b *treeBuilder) chooseReturnParents(out []causal.InstanceNode, links []instLink, first []int32) float64 {
	prob := 1.0
	for _, rn := range b.deferred {
		qn := b.anchor[rn]
		best, bestP := qn, -1.0
		for _, l := range links[first[rn]:first[rn+1]] {
			if l.parent != qn && (!b.descends(out, l.parent, qn) || b.descends(out, l.parent, rn)) {
				continue
			}
			if b.reparent {
				best, bestP = l.parent, l.p // the most recent
				break
			}
			if l.p > bestP {
				best, bestP = l.parent, l.p
			}
		}
		out[rn].Parent = best
		if bestP >= 0 {
			prob *= bestP
		}
	}
	return prob
}

// parentFirst returns the nodes of out in parent-first order: breadth
// first from the root, children in node order. Nodes out of the root's
// tree are left out (none are, unless a choice broke the tree).
func (b *treeBuilder) parentFirst(out []causal.InstanceNode) []causal.InstanceNode {
	// cnt[p]..cnt[p+1] index node p's children in byParent.
	n := int32(len(out))
	cnt := slices.Grow(b.kidCount[:0], int(n)+1)[:n+1]
	clear(cnt)
	for i := int32(1); i < n; i++ {
		cnt[out[i].Parent+1]++
	}
	for i := int32(0); i < n; i++ {
		cnt[i+1] += cnt[i]
	}
	kids := slices.Grow(b.order[:0], 2*int(n))[:2*n]
	fill, pos := kids[n:], kids[:n]
	copy(fill, cnt[:n])
	byParent := slices.Grow(b.byParent[:0], int(n))[:n]
	for i := int32(1); i < n; i++ {
		p := out[i].Parent
		byParent[fill[p]] = i
		fill[p]++
	}
	final := append(b.final[:0], causal.InstanceNode{Msg: out[0].Msg, Parent: -1})
	pos[0] = 0
	// final[h] came from node src(h); walk final as the queue.
	src := append(b.src[:0], 0)
	for h := 0; h < len(src); h++ {
		p := src[h]
		for _, c := range byParent[cnt[p]:cnt[p+1]] {
			pos[c] = int32(len(final))
			final = append(final, causal.InstanceNode{Msg: out[c].Msg, Parent: pos[p]})
			src = append(src, c)
		}
	}
	b.kidCount, b.order, b.byParent, b.final, b.src = cnt, kids, byParent, final, src
	return final
}

// linkP returns the probability of the link from message par to message c
// (0 if there is none).
func (t *treeInput) linkP(par, c int32) float64 {
	lo, hi := t.kidStart[par], t.kidStart[par+1]
	k, ok := slices.BinarySearch(t.kidMsg[lo:hi], c)
	if !ok {
		return 0
	}
	return t.kidP[lo+int32(k)]
}

// linkTop returns the probability of the link from par to c and whether
// it is c's most likely cause.
func (t *treeInput) linkTop(par, c int32) (float64, bool) {
	lo, hi := t.kidStart[par], t.kidStart[par+1]
	k, ok := slices.BinarySearch(t.kidMsg[lo:hi], c)
	if !ok {
		return 0, false
	}
	return t.kidP[lo+int32(k)], t.top(lo + int32(k))
}

// explain conditions the probability pc of the link from node x to a CALL
// c on the instance being consistent: the call c would be nested in (the
// CALL into c's sender that x is or descends from through sibling calls)
// has its RETURN r in the instance, and r's parent must be in it too. If
// c's own RETURN n may have caused r, keeping c lets r be explained by n:
// with m the probability that r's parent is one of the instance's
// messages and b that it is n, the link's probability given that r's
// parent is in the instance is pc·(m+b) ÷ (pc·(m+b) + (1−pc)·m).
func (b *treeBuilder) explain(x, c int32, pc float64) float64 {
	g := b.g
	n := g.ownReturn(c)
	if n < 0 {
		return pc
	}
	sender := g.msgs[c].SrcNode
	// Find the enclosing CALL: x, or up through sibling RETURNs.
	for steps := len(b.nodes); steps > 0; steps-- {
		m := b.nodes[x].Msg
		if g.msgs[m].Kind == trace.KindCall && g.msgs[m].DstNode == sender {
			break
		}
		a := b.anchor[x]
		if a < 0 || g.msgs[m].Kind != trace.KindReturn || g.msgs[m].DstNode != sender {
			return pc
		}
		x = b.nodes[a].Parent
		if x < 0 {
			return pc
		}
	}
	q := b.nodes[x].Msg
	r := g.ownReturn(q)
	if r < 0 || !b.state[r].in {
		return pc
	}
	bp, top := g.linkTop(n, r)
	if bp == 0 || !top {
		return pc
	}
	m := 0.0
	for j := range b.nodes {
		if y := b.nodes[j].Msg; y != r {
			m += g.linkP(y, r)
		}
	}
	if m <= 0 {
		return pc
	}
	return pc * (m + bp) / (pc*(m+bp) + (1-pc)*m)
}

// run decides the links from queue[qi] on, with the probability so far and
// the try-both decisions taken so far, and emits the instances.
func (b *treeBuilder) run(qi int, prob float64, bits int) {
	g := b.g
	for qi < len(b.queue) {
		pl := b.queue[qi]
		qi++
		c := g.kidMsg[pl.k]
		if g.isRet(c) {
			continue // it joins the instance with its CALL
		}
		s := b.state[c]
		if s.in {
			continue
		}
		if len(b.nodes) >= b.maxTree {
			b.skipped++
			continue
		}
		p := g.kidP[pl.k]
		pc := p
		if s.omitted > 0 {
			if rest := 1 - s.omitted; rest > p {
				pc = p / rest
			} else {
				pc = 1
			}
		}
		if g.calls && g.msgs[c].Kind == trace.KindCall {
			pc = b.explain(pl.node, c, pc)
		}
		top := g.top(pl.k)
		switch classify(pc, top, b.lo, b.hi) {
		case decideTrue:
			b.include(pl.node, c)
			prob *= pc
		case decideFalse:
			b.omit(c, s, p)
			prob *= 1 - pc
		default:
			if bits >= b.budget {
				b.st.overBudget++
				if pc >= 0.5 || top {
					b.include(pl.node, c)
					prob *= pc
				} else {
					b.omit(c, s, p)
					prob *= 1 - pc
				}
				continue
			}
			b.st.tryBoth++
			nNodes, nQueue, nUndo, nDef, skipped := len(b.nodes), len(b.queue), len(b.undo), len(b.deferred), b.skipped
			b.include(pl.node, c)
			b.run(qi, prob*pc, bits+1)
			b.nodes, b.queue, b.skipped = b.nodes[:nNodes], b.queue[:nQueue], skipped
			b.anchor, b.deferred = b.anchor[:nNodes], b.deferred[:nDef]
			for len(b.undo) > nUndo {
				u := b.undo[len(b.undo)-1]
				b.undo = b.undo[:len(b.undo)-1]
				if u.had {
					b.state[u.msg] = u.prev
				} else {
					delete(b.state, u.msg)
				}
			}
			b.omit(c, s, p)
			prob *= 1 - pc
			bits++
		}
	}
	b.st.instances++
	if b.skipped > 0 {
		b.st.truncated++
	}
	nodes, f := b.resolve()
	if b.normalize {
		b.buf.nodes = append(b.buf.nodes, nodes...)
		b.buf.ends = append(b.buf.ends, int32(len(b.buf.nodes)))
		b.buf.probs = append(b.buf.probs, prob*f)
		return
	}
	b.emit(nodes, prob*f)
}

// rootBlock is how many roots one unit of parallel tree building covers.
const rootBlock = 512

// instBatch holds the instances of one block of roots.
type instBatch struct {
	seq   int
	roots int
	nodes []causal.InstanceNode
	ends  []int32
	probs []float64
	st    treeStats
}

func (bt *instBatch) reset(seq int) {
	bt.seq, bt.roots = seq, 0
	bt.nodes, bt.ends, bt.probs = bt.nodes[:0], bt.ends[:0], bt.probs[:0]
	bt.st = treeStats{}
}

// Paths runs linking step 3 on g: it builds the path instances of every
// root and calls fn with each, in an order that depends only on g and the
// options (roots in trace order). The Instance is only valid during the
// call. Trees are built on up to Workers goroutines; fn is called from the
// caller's goroutine. An error from fn stops the run and is returned.
func (l *Engine) Paths(ctx context.Context, g *Graph, fn func(causal.Instance) error) error {
	_, err := l.paths(ctx, g.treeInput(l.opt.TryBothLow), fn)
	return err
}

func (l *Engine) paths(ctx context.Context, g *treeInput, fn func(causal.Instance) error) (treeStats, error) {
	w := parallel.Workers(l.opt.Workers)
	if nBlocks := (len(g.roots) + rootBlock - 1) / rootBlock; w > 1 && nBlocks > 1 {
		return l.pathsParallel(ctx, g, fn, w, nBlocks)
	}
	return l.pathsSerial(ctx, g, fn)
}

// progress reports done of total roots built, if the options ask.
func (l *Engine) progress(done, total int) {
	if l.opt.Progress != nil {
		l.opt.Progress(done, total)
	}
}

// pathsSerial is paths in the calling goroutine.
func (l *Engine) pathsSerial(ctx context.Context, g *treeInput, fn func(causal.Instance) error) (treeStats, error) {
	total := len(g.roots)
	var ferr error
	b := newTreeBuilder(g, &l.opt, func(nodes []causal.InstanceNode, p float64) {
		if ferr == nil {
			ferr = fn(causal.Instance{Nodes: nodes, Prob: p})
		}
	})
	for i := range g.roots {
		b.build(i)
		if ferr != nil {
			return treeStats{}, ferr
		}
		if (i+1)%rootBlock == 0 || i+1 == total {
			if err := ctx.Err(); err != nil {
				return treeStats{}, err
			}
			l.progress(i+1, total)
		}
	}
	return b.st, nil
}

// treePipe connects the goroutines that build blocks of roots to the one
// that hands their instances on: a worker takes a token before it starts
// a block (at most inFlight blocks are built and not yet handed on),
// sends the block on results and reuses the batches on free; stop tells
// the workers to quit.
type treePipe struct {
	tokens  chan struct{}
	results chan *instBatch
	free    chan *instBatch
	stop    chan struct{}
	next    atomic.Int64 // the next block to build
}

// pathsParallel is paths on w goroutines: workers build blocks of roots;
// the calling goroutine hands their instances to fn in block order, so
// the result does not depend on scheduling.
func (l *Engine) pathsParallel(ctx context.Context, g *treeInput, fn func(causal.Instance) error, w, nBlocks int) (treeStats, error) {
	inFlight := 2 * w
	pipe := &treePipe{
		tokens:  make(chan struct{}, inFlight),
		results: make(chan *instBatch, inFlight),
		free:    make(chan *instBatch, inFlight+w),
		stop:    make(chan struct{}),
	}
	var wg sync.WaitGroup
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.buildBlocks(ctx, g, pipe, nBlocks)
		}()
	}
	go func() {
		wg.Wait()
		close(pipe.results)
	}()
	st, err := l.deliverBlocks(ctx, pipe, fn, nBlocks, len(g.roots))
	close(pipe.stop)
	for range pipe.results {
	}
	return st, err
}

// buildBlocks is one worker of pathsParallel: it builds the instances of
// blocks of roots until there are none left, the run is cancelled or told
// to stop.
func (l *Engine) buildBlocks(ctx context.Context, g *treeInput, pipe *treePipe, nBlocks int) {
	var cur *instBatch
	b := newTreeBuilder(g, &l.opt, func(nodes []causal.InstanceNode, p float64) {
		cur.nodes = append(cur.nodes, nodes...)
		cur.ends = append(cur.ends, int32(len(cur.nodes)))
		cur.probs = append(cur.probs, p)
	})
	for {
		select {
		case pipe.tokens <- struct{}{}:
		case <-pipe.stop:
			return
		}
		seq := int(pipe.next.Add(1) - 1)
		if seq >= nBlocks || ctx.Err() != nil {
			return
		}
		select {
		case cur = <-pipe.free:
		default:
			cur = &instBatch{}
		}
		cur.reset(seq)
		b.st = treeStats{}
		lo, hi := seq*rootBlock, min((seq+1)*rootBlock, len(g.roots))
		for i := lo; i < hi; i++ {
			b.build(i)
		}
		cur.roots = hi - lo
		cur.st = b.st
		pipe.results <- cur
	}
}

// deliverBlocks hands the instances of the blocks the workers send to fn
// in block order, returning a token for each block handed on, and sums
// their statistics. It stops at fn's error or the context's.
func (l *Engine) deliverBlocks(ctx context.Context, pipe *treePipe, fn func(causal.Instance) error, nBlocks, total int) (treeStats, error) {
	var st treeStats
	pending := make(map[int]*instBatch)
	done := 0
	for want := 0; want < nBlocks; {
		bt, ok := pending[want]
		if !ok {
			r, open := <-pipe.results
			if !open {
				return st, ctx.Err()
			}
			pending[r.seq] = r
			continue
		}
		delete(pending, want)
		if err := bt.each(fn); err != nil {
			return st, err
		}
		st.add(bt.st)
		done += bt.roots
		want++
		select {
		case pipe.free <- bt:
		default:
		}
		<-pipe.tokens
		l.progress(done, total)
		if err := ctx.Err(); err != nil {
			return st, err
		}
	}
	return st, nil
}

// each calls fn with every instance of the batch, in order, and stops at
// its first error.
func (bt *instBatch) each(fn func(causal.Instance) error) error {
	start := int32(0)
	for i, end := range bt.ends {
		if err := fn(causal.Instance{Nodes: bt.nodes[start:end], Prob: bt.probs[i]}); err != nil {
			return err
		}
		start = end
	}
	return nil
}
