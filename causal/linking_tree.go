package causal

import (
	"context"
	"sync"
	"sync/atomic"
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
}

func (s *treeStats) add(o treeStats) {
	s.roots += o.roots
	s.instances += o.instances
	s.tryBoth += o.tryBoth
	s.overBudget += o.overBudget
	s.truncated += o.truncated
}

// isRoot reports whether message m starts path instances: it is linkable
// and being spontaneous is not probably false, or is its most likely
// explanation.
func (g *LinkGraph) isRoot(m int, lo float64) bool {
	return g.mode[m] != linkNone && (g.spont[m] >= lo || g.top[m] < 0)
}

// treeInput is what step 3 needs of a LinkGraph: the child lists, which
// links are their child's most likely cause, and the roots with their
// probabilities of being spontaneous.
type treeInput struct {
	kidStart []int32
	kidMsg   []int32
	kidP     []float64
	kidTop   []uint64 // bit k: link k is its child's most likely cause
	roots    []int32
	rootP    []float64
}

func (t *treeInput) top(k int32) bool { return t.kidTop[k>>6]&(1<<(uint(k)&63)) != 0 }

// treeInput extracts the input of step 3 from g; it shares g's child lists.
func (g *LinkGraph) treeInput(lo float64) *treeInput {
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
	nodes   []InstanceNode
	queue   []pendingLink
	state   map[int32]msgState
	undo    []undoEntry
	skipped int
	emit    func(nodes []InstanceNode, p float64)
	st      treeStats
}

func newTreeBuilder(g *treeInput, opt *LinkingOptions, emit func([]InstanceNode, float64)) *treeBuilder {
	return &treeBuilder{
		g:       g,
		budget:  opt.TryBothBudget,
		lo:      opt.TryBothLow,
		hi:      opt.TryBothHigh,
		maxTree: opt.MaxTreeSize,
		state:   make(map[int32]msgState),
		emit:    emit,
	}
}

// build emits every instance rooted at root number i.
func (b *treeBuilder) build(i int) {
	r := b.g.roots[i]
	b.st.roots++
	b.nodes = append(b.nodes[:0], InstanceNode{Msg: r, Parent: -1})
	b.queue = b.queue[:0]
	clear(b.state)
	b.undo = b.undo[:0]
	b.skipped = 0
	b.state[r] = msgState{in: true}
	b.pushKids(0, r)
	b.run(0, b.g.rootP[i], 0)
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

func (b *treeBuilder) include(node int32, c int32) {
	b.set(c, msgState{in: true})
	b.nodes = append(b.nodes, InstanceNode{Msg: c, Parent: node})
	b.pushKids(int32(len(b.nodes)-1), c)
}

func (b *treeBuilder) omit(c int32, s msgState, p float64) {
	s.omitted += p
	b.set(c, s)
}

// run decides the links from queue[qi] on, with the probability so far and
// the try-both decisions taken so far, and emits the instances.
func (b *treeBuilder) run(qi int, prob float64, bits int) {
	g := b.g
	for qi < len(b.queue) {
		pl := b.queue[qi]
		qi++
		c := g.kidMsg[pl.k]
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
			nNodes, nQueue, nUndo, skipped := len(b.nodes), len(b.queue), len(b.undo), b.skipped
			b.include(pl.node, c)
			b.run(qi, prob*pc, bits+1)
			b.nodes, b.queue, b.skipped = b.nodes[:nNodes], b.queue[:nQueue], skipped
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
	b.emit(b.nodes, prob)
}

// rootBlock is how many roots one unit of parallel tree building covers.
const rootBlock = 512

// instBatch holds the instances of one block of roots.
type instBatch struct {
	seq   int
	roots int
	nodes []InstanceNode
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
func (l *Linking) Paths(ctx context.Context, g *LinkGraph, fn func(Instance) error) error {
	_, err := l.paths(ctx, g.treeInput(l.opt.TryBothLow), fn)
	return err
}

func (l *Linking) paths(ctx context.Context, g *treeInput, fn func(Instance) error) (treeStats, error) {
	total := len(g.roots)
	var st treeStats
	w := l.opt.workers()
	nBlocks := (total + rootBlock - 1) / rootBlock
	if w <= 1 || nBlocks <= 1 {
		var ferr error
		b := newTreeBuilder(g, &l.opt, func(nodes []InstanceNode, p float64) {
			if ferr == nil {
				ferr = fn(Instance{Nodes: nodes, Prob: p})
			}
		})
		for i := range g.roots {
			b.build(i)
			if ferr != nil {
				return st, ferr
			}
			if (i+1)%rootBlock == 0 || i+1 == total {
				if err := ctx.Err(); err != nil {
					return st, err
				}
				if l.opt.Progress != nil {
					l.opt.Progress(i+1, total)
				}
			}
		}
		return b.st, nil
	}

	// Workers build blocks of roots; this goroutine hands their instances
	// to fn in block order, so the result does not depend on scheduling.
	inFlight := 2 * w
	tokens := make(chan struct{}, inFlight)
	results := make(chan *instBatch, inFlight)
	free := make(chan *instBatch, inFlight+w)
	stop := make(chan struct{})
	var next atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < w; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var cur *instBatch
			b := newTreeBuilder(g, &l.opt, func(nodes []InstanceNode, p float64) {
				cur.nodes = append(cur.nodes, nodes...)
				cur.ends = append(cur.ends, int32(len(cur.nodes)))
				cur.probs = append(cur.probs, p)
			})
			for {
				select {
				case tokens <- struct{}{}:
				case <-stop:
					return
				}
				seq := int(next.Add(1) - 1)
				if seq >= nBlocks || ctx.Err() != nil {
					return
				}
				select {
				case cur = <-free:
				default:
					cur = &instBatch{}
				}
				cur.reset(seq)
				b.st = treeStats{}
				lo, hi := seq*rootBlock, min((seq+1)*rootBlock, total)
				for i := lo; i < hi; i++ {
					b.build(i)
				}
				cur.roots = hi - lo
				cur.st = b.st
				results <- cur
			}
		}()
	}
	go func() {
		wg.Wait()
		close(results)
	}()
	finish := func(err error) (treeStats, error) {
		close(stop)
		for range results {
		}
		return st, err
	}
	pending := make(map[int]*instBatch)
	want, done := 0, 0
	for want < nBlocks {
		bt, ok := pending[want]
		if !ok {
			r, open := <-results
			if !open {
				if err := ctx.Err(); err != nil {
					return finish(err)
				}
				break
			}
			pending[r.seq] = r
			continue
		}
		delete(pending, want)
		start := int32(0)
		for i, end := range bt.ends {
			if err := fn(Instance{Nodes: bt.nodes[start:end], Prob: bt.probs[i]}); err != nil {
				return finish(err)
			}
			start = end
		}
		st.add(bt.st)
		done += bt.roots
		want++
		select {
		case free <- bt:
		default:
		}
		<-tokens
		if l.opt.Progress != nil {
			l.opt.Progress(done, total)
		}
		if err := ctx.Err(); err != nil {
			return finish(err)
		}
	}
	return finish(nil)
}
