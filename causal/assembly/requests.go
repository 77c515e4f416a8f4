package assembly

import (
	"math"
	"slices"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

// maxDepth bounds the depth of a request's call tree, so that a
// pathological trace cannot make one request arbitrarily deep; a deeper
// call starts a tree of its own (counted in depth_cut).
const maxDepth = 1 << 12

// treeCounts are the counters of request building.
type treeCounts struct {
	cyclesBroken, depthCut           int64
	requests, background, unseenMsgs int64
	inRequests, rejected, cut        int64
	// outside counts the trees not listed: their root was sent outside
	// the window of root times (AggregateOptions.RootFrom, RootTo)
	outside int64
}

// breakCycles makes the parent links a forest: a call found on its own
// chain of parents (possible only within the tolerance, two calls in
// opposite directions each enclosing the other) loses its parent.
func (r *run) breakCycles() int64 {
	n := len(r.calls)
	state := make([]uint8, n)
	var walk []int32
	var broken int64
	for i := range n {
		if state[i] != 0 {
			continue
		}
		walk = walk[:0]
		c := int32(i)
		for c >= 0 && state[c] == 0 {
			state[c] = 1
			walk = append(walk, c)
			c = r.parent[c]
		}
		if c >= 0 && state[c] == 1 {
			r.parent[c] = -1
			r.evid[c] = evBackground
			broken++
		}
		for _, w := range walk {
			state[w] = 2
		}
	}
	return broken
}

// builder turns the assignment into requests.
type builder struct {
	r      *run
	kids   [][]int32
	retIdx []int32 // per call, the index of its RETURN entry in msgs
	// back is, per member, per call, the doubts from the calls given
	// elsewhere that list it, by rival (a request is exactly right only
	// if it lost none of its calls, as well as its own links being
	// right: rivals.go); rivBuf and altBuf are rivalsProb's buffers
	back           [nMembers]rivalDoubts
	rivBuf, altBuf []rivalP
	// prod is, per member, the product of the request being built's
	// calls' probabilities (builder.rivalsProb)
	prod [nMembers]float64
	msgs []causal.RequestMessage
	cnt  treeCounts
	// slab and lats are where requests' messages and latencies are
	// carved from, a chunk at a time instead of an allocation each;
	// stack, frag, pos and frags are build's and instance's scratch.
	slab  []causal.RequestMessage
	lats  []float64
	stack []frame
	frag  []int32
	pos   []int32
	frags [][]causal.InstanceNode
	// kindNames memoizes kinds.name by kind ("": not yet named).
	kindNames []string
}

// kindName returns r.kinds.name(id), made once per kind.
func (b *builder) kindName(id int32) string {
	if id < 0 || int(id) >= len(b.kindNames) {
		return b.r.kinds.name(id)
	}
	if b.kindNames[id] == "" {
		b.kindNames[id] = b.r.kinds.name(id)
	}
	return b.kindNames[id]
}

// slabSize is the number of request messages (or latencies) a builder
// allocates at once.
const slabSize = 1024

// clone returns a copy of msgs carved from the builder's slab, with its
// capacity ending at its length (an append to it copies).
func (b *builder) clone(msgs []causal.RequestMessage) []causal.RequestMessage {
	if len(msgs) == 0 {
		return nil
	}
	if cap(b.slab)-len(b.slab) < len(msgs) {
		b.slab = make([]causal.RequestMessage, 0, max(slabSize, len(msgs)))
	}
	n := len(b.slab)
	b.slab = append(b.slab, msgs...)
	return b.slab[n : n+len(msgs) : n+len(msgs)]
}

// latency returns a pointer to a float64 holding v, carved from the
// builder's chunk of latencies.
func (b *builder) latency(v float64) *float64 {
	if len(b.lats) == cap(b.lats) {
		b.lats = make([]float64, 0, slabSize)
	}
	b.lats = append(b.lats, v)
	return &b.lats[len(b.lats)-1]
}

// requests builds every request and background tree, in order of their
// roots' start, and hands their seen messages to agg as instances.
func (r *run) requests(agg *causal.Aggregator) ([]causal.Request, treeCounts) {
	b := r.newBuilder()
	from, to := r.opt.Aggregate.RootFrom, r.opt.Aggregate.RootTo
	var out []causal.Request
	var stack []int32
	for c := range r.calls {
		if r.parent[c] >= 0 {
			continue
		}
		stack = append(stack[:0], int32(c))
		for len(stack) > 0 {
			root := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			req, cut := b.build(root)
			stack = append(stack, cut...)
			b.instance(agg, &req)
			if to > from && (req.StartNS < from || req.StartNS >= to) {
				// a windowed run lists it in the window its root is in
				b.cnt.outside++
				continue
			}
			req.ID = len(out)
			out = append(out, req)
		}
	}
	return out, b.cnt
}

// newBuilder returns the builder of r's requests, with the parent links
// made a forest and each call's children in the order they were sent.
func (r *run) newBuilder() *builder {
	b := &builder{r: r, kids: make([][]int32, len(r.calls)), retIdx: make([]int32, len(r.calls))}
	for i := range b.retIdx {
		b.retIdx[i] = -1
	}
	b.cnt.cyclesBroken = r.breakCycles()
	for c := range r.calls {
		if p := r.parent[c]; p >= 0 {
			b.kids[p] = append(b.kids[p], int32(c))
		}
	}
	for p := range b.kids {
		slices.SortStableFunc(b.kids[p], func(x, y int32) int { return cmpTime(r.sendOf(x), r.sendOf(y)) })
	}
	for e := range b.back {
		b.back[e] = r.backDoubts(e)
	}
	b.kindNames = make([]string, len(r.kinds.keys))
	return b
}

// build returns the request rooted at call root, and the calls cut from
// it at maxDepth (roots of trees of their own).
func (b *builder) build(root int32) (causal.Request, []int32) {
	r := b.r
	rc := &r.calls[root]
	b.msgs = b.msgs[:0]
	req := causal.Request{Root: int(rc.callMsg)}
	for e := range b.prod {
		b.prod[e] = 1
	}
	if rc.callMsg < 0 {
		req.Root = int(rc.retMsg)
	}
	req.Background = r.evid[root] != evRoot
	req.Kind = b.kindName(rc.kind)
	if m := r.callMessage(root); m != nil && m.Label != 0 {
		req.Label = r.l.syms.String(m.Label)
	}
	if rc.callMsg >= 0 && rc.retMsg >= 0 && rc.flags&flagOneWay == 0 {
		req.Latency = b.latency(float64(r.l.measured(rc.back, rc.retMsg)-r.l.measured(rc.send, rc.callMsg)) / 1e3)
	}
	if t := r.sendOf(root); t != noTime {
		req.StartNS = t
	}
	cut := b.addCall(root, -1, -1, &req)
	for e, p := range b.prod {
		req.Confidence += p * memberW(e)
	}
	req.Messages = b.clone(b.msgs)
	for _, m := range req.Messages {
		if m.Msg < 0 {
			req.Unseen++
		}
	}
	b.cnt.unseenMsgs += int64(req.Unseen)
	b.cnt.requests++
	if req.Background {
		b.cnt.background++
	}
	return req, cut
}

// frame is one call being laid out by addCall.
type frame struct {
	c       int32
	callIdx int // index of its CALL entry
	next    int // next child to lay out
	depth   int
}

// addCall lays out call root and its descendants depth first, iteratively.
func (b *builder) addCall(root int32, parentIdx, callParentIdx int, req *causal.Request) []int32 {
	var cut []int32
	stack := append(b.stack[:0], b.open(root, parentIdx, callParentIdx, 0, req))
	defer func() { b.stack = stack[:0] }()
	for len(stack) > 0 {
		f := &stack[len(stack)-1]
		kids := b.kids[f.c]
		if f.next < len(kids) {
			k := kids[f.next]
			f.next++
			if f.depth+1 >= maxDepth {
				b.cnt.depthCut++
				b.r.parent[k] = -1
				cut = append(cut, k)
				continue
			}
			// The child's cause: the latest reply f's call received
			// before it left, else f's own CALL.
			trig := b.latestReply(f, kids[:f.next-1], b.r.sendOf(k))
			stack = append(stack, b.open(k, trig, f.callIdx, f.depth+1, req))
			continue
		}
		for m := range b.prod {
			b.prod[m] *= b.rivalsProb(m, f.c, kids)
		}
		b.close(f, req)
		stack = stack[:len(stack)-1]
	}
	return cut
}

// latestReply returns the index of the RETURN entry, among those of the
// calls ds, that arrived last at or before t; frame f's CALL entry when
// none did.
func (b *builder) latestReply(f *frame, ds []int32, t int64) int {
	idx, best := f.callIdx, int64(math.MinInt64)
	for _, d := range ds {
		dc := &b.r.calls[d]
		if i := b.retIdx[d]; i >= 0 && dc.back <= t && dc.back > best {
			idx, best = int(i), dc.back
		}
	}
	return idx
}

// open adds the CALL entry of call c.
func (b *builder) open(c int32, parentIdx, callParentIdx, depth int, req *causal.Request) frame {
	r := b.r
	cc := &r.calls[c]
	e := causal.RequestMessage{Msg: int(cc.callMsg), Parent: parentIdx, CallParent: callParentIdx,
		Kind: trace.KindCall.String(), Confidence: float64(r.conf[c]), Evidence: evidenceNames[r.evid[c]]}
	if cc.flags&flagOneWay != 0 {
		e.Kind = trace.KindUnknown.String()
	}
	if e.Evidence == "" {
		e.Evidence = evidenceNames[evJoint]
	}
	if parentIdx < 0 {
		e.Confidence = 1
	}
	if m := r.callMessage(c); m != nil && m.Label != 0 {
		e.Label = r.l.syms.String(m.Label)
	}
	if k := r.opt.Alternatives; k > 0 && parentIdx >= 0 && (r.evid[c] == evJoint || r.evid[c] == evTokens) {
		for _, a := range r.alts[int(c)*searchAlts : int(c)*searchAlts+k] {
			if a.prob <= 0 {
				continue
			}
			q := -1
			if a.p >= 0 {
				q = int(r.calls[a.p].callMsg)
				if q < 0 {
					q = int(r.calls[a.p].retMsg)
				}
			}
			e.Alternatives = append(e.Alternatives, causal.Alternative{Call: q, Probability: float64(a.prob)})
		}
	}
	idx := len(b.msgs)
	e.Call = idx
	b.msgs = append(b.msgs, e)
	return frame{c: c, callIdx: idx, depth: depth}
}

// close adds the RETURN entry of frame f's call, caused by the latest
// reply of its children that came back before it left, else its CALL.
func (b *builder) close(f *frame, req *causal.Request) {
	r := b.r
	cc := &r.calls[f.c]
	if cc.flags&flagOneWay != 0 {
		return
	}
	t := cc.rep + r.tolAt(cc.callee)
	if cc.retMsg < 0 {
		t = math.MaxInt64
	}
	parent := b.latestReply(f, b.kids[f.c], t)
	e := causal.RequestMessage{Msg: int(cc.retMsg), Parent: parent, Call: f.callIdx,
		CallParent: b.msgs[f.callIdx].CallParent, Kind: trace.KindReturn.String(), Confidence: 1,
		Evidence: pairNames[cc.paired]}
	b.retIdx[f.c] = int32(len(b.msgs))
	if cc.retMsg >= 0 {
		if m := &r.l.msgs[cc.retMsg]; m.Label != 0 {
			e.Label = r.l.syms.String(m.Label)
		}
	}
	b.msgs = append(b.msgs, e)
}

// instance hands the seen messages of req to agg as instances: a message
// whose parent was not seen hangs under its nearest seen ancestor, when
// that one arrived where it left (the grammar of patterns); otherwise it
// starts an instance of its own (the link was not seen, and the pattern
// says so by being cut there).
func (b *builder) instance(agg *causal.Aggregator, req *causal.Request) {
	msgs := b.r.l.msgs
	// Scratch reused from request to request: agg.Add does not keep the
	// nodes.
	frag := slices.Grow(b.frag[:0], len(req.Messages))[:len(req.Messages)] // fragment of each entry, -1 none
	pos := slices.Grow(b.pos[:0], len(req.Messages))[:len(req.Messages)]   // position in its fragment
	frags := b.frags[:0]
	defer func() { b.frag, b.pos, b.frags = frag, pos, frags }()
	for i, m := range req.Messages {
		frag[i] = -1
		if m.Msg < 0 {
			continue
		}
		q := m.Parent
		for q >= 0 && req.Messages[q].Msg < 0 {
			q = req.Messages[q].Parent
		}
		if q >= 0 && msgs[req.Messages[q].Msg].DstNode == msgs[m.Msg].SrcNode {
			f := frag[q]
			frag[i], pos[i] = f, int32(len(frags[f]))
			frags[f] = append(frags[f], causal.InstanceNode{Msg: int32(m.Msg), Parent: pos[q]})
			continue
		}
		frag[i], pos[i] = int32(len(frags)), 0
		root := causal.InstanceNode{Msg: int32(m.Msg), Parent: -1}
		if len(frags) < cap(frags) {
			frags = frags[:len(frags)+1]
			frags[len(frags)-1] = append(frags[len(frags)-1][:0], root)
		} else {
			frags = append(frags, []causal.InstanceNode{root})
		}
	}
	for _, nodes := range frags {
		b.cnt.inRequests += int64(len(nodes))
		if err := agg.Add(causal.Instance{Nodes: nodes, Prob: req.Confidence, Background: req.Background}); err != nil {
			b.cnt.rejected++
		}
	}
	if len(frags) > 1 {
		b.cnt.cut += int64(len(frags) - 1)
	}
}
