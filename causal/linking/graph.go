package linking

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/wirepath/wirepath/internal/parallel"
	"github.com/wirepath/wirepath/trace"
)

// Link is one possible causal link of a message: the message at its other
// end (an index into the trace) and the link's probability.
type Link struct {
	Msg int
	P   float64
}

// PairDelay is the estimated mean causal delay d of one sender pair B→C:
// how long B waits between the arrival of the message that caused a B→C
// message and the B→C message's departure.
type PairDelay struct {
	From, To trace.Sym
	// ReceiverClock is set for messages whose send was not seen (B not
	// traced): their delays are measured on C's clock, from C's send of a
	// C→B message to its receipt of the B→C one, and only C→B messages can
	// cause them (WAP5: A→B→A through an untraced node).
	ReceiverClock bool
	// Mean is d. Samples counts the B→C messages with a message into B
	// within the window before them (the mean smallest preceding delay) or,
	// after iterations, the total link probability the estimate rests on.
	Mean    time.Duration
	Samples float64
}

// The ways a message takes part in linking, by how its possible parents are
// found.
const (
	linkNone     uint8 = iota // no usable timestamp or no sender node: never linked
	linkSender                // parents are arrivals at the sender, on its clock
	linkReceiver              // sender untraced: parents are receiver→sender sends, on the receiver's clock
	linkClient                // sent by a client node and ClientRoots is set: spontaneous
)

// Graph holds the outcome of linking steps 1 and 2: every message's
// possible parents with their probabilities, inverted into possible-child
// lists, and its probability of being spontaneous.
type Graph struct {
	msgs  []trace.Message // the trace's messages
	mode  []uint8
	spont []float64
	// top is each message's most likely cause: a message index, or -1 when
	// being spontaneous is at least as likely as any parent.
	top []int32
	// Possible children, by parent, in increasing child index:
	// kidMsg[kidStart[m]:kidStart[m+1]] with probabilities kidP.
	kidStart []int32
	kidMsg   []int32
	kidP     []float64
	// Sender pairs: a message of each (to name it), d and its samples.
	pairMsg     []int32
	pairD       []float64
	pairSamples []float64
	counts      linkCounts

	// mate pairs CALLs and RETURNs (Options.Calls; nil otherwise):
	// a CALL's RETURN, a RETURN's CALL, or -1.
	mate []int32
	// emp is the empirical delay model (nil: exponential); flat weighs
	// every possible parent 1 (the model's first round).
	emp  *empirical
	flat bool

	parentsOnce sync.Once
	parStart    []int32
	parMsg      []int32
	parP        []float64
}

type linkCounts struct {
	messages      int
	senderClock   int
	receiverClock int
	clientRoots   int
	noTime        int
	noParent      int
	calls         int
	orphans       int
	candidates    int
	links         int
}

// Len returns the number of messages of the trace the graph links.
func (g *Graph) Len() int { return len(g.spont) }

// Spontaneous returns the probability that message m was not caused by
// any other message. It is 1 for messages without possible parents and 0
// for messages that are never linked (no timestamp).
func (g *Graph) Spontaneous(m int) float64 { return g.spont[m] }

// MostLikelyCause returns the message most likely to have caused m, or -1
// when m is at least as likely to be spontaneous.
func (g *Graph) MostLikelyCause(m int) int { return int(g.top[m]) }

// Children returns the messages m may have caused, in trace order, with the
// link probabilities. The slice is new.
func (g *Graph) Children(m int) []Link {
	lo, hi := g.kidStart[m], g.kidStart[m+1]
	out := make([]Link, 0, hi-lo)
	for k := lo; k < hi; k++ {
		out = append(out, Link{Msg: int(g.kidMsg[k]), P: g.kidP[k]})
	}
	return out
}

// Parents returns the possible parents of m with their probabilities, most
// recent first; with Spontaneous(m) they sum to 1 (up to the dropped
// improbable links). The slice is new.
func (g *Graph) Parents(m int) []Link {
	g.parentsOnce.Do(g.invert)
	lo, hi := g.parStart[m], g.parStart[m+1]
	out := make([]Link, 0, hi-lo)
	for k := lo; k < hi; k++ {
		out = append(out, Link{Msg: int(g.parMsg[k]), P: g.parP[k]})
	}
	slices.SortStableFunc(out, func(a, b Link) int {
		ta, tb := g.msgs[a.Msg].RecvTS, g.msgs[b.Msg].RecvTS
		if !ta.Known() || !tb.Known() {
			ta, tb = g.msgs[a.Msg].SendTS, g.msgs[b.Msg].SendTS
		}
		return cmp.Compare(int64(tb), int64(ta))
	})
	return out
}

// invert builds the parent lists from the child lists.
func (g *Graph) invert() {
	n := g.Len()
	g.parStart = make([]int32, n+1)
	for _, c := range g.kidMsg {
		g.parStart[c+1]++
	}
	for i := 0; i < n; i++ {
		g.parStart[i+1] += g.parStart[i]
	}
	g.parMsg = make([]int32, len(g.kidMsg))
	g.parP = make([]float64, len(g.kidMsg))
	next := slices.Clone(g.parStart[:n])
	for p := 0; p < n; p++ {
		for k := g.kidStart[p]; k < g.kidStart[p+1]; k++ {
			c := g.kidMsg[k]
			g.parMsg[next[c]] = int32(p)
			g.parP[next[c]] = g.kidP[k]
			next[c]++
		}
	}
}

// Delays returns the estimated mean causal delay of every sender pair that
// has one, in order of first appearance in the trace.
func (g *Graph) Delays() []PairDelay {
	var out []PairDelay
	for p, m := range g.pairMsg {
		if g.pairSamples[p] == 0 {
			continue
		}
		msg := &g.msgs[m]
		out = append(out, PairDelay{
			From: msg.SrcNode, To: msg.DstNode, ReceiverClock: g.mode[m] == linkReceiver,
			Mean: time.Duration(math.Round(g.pairD[p])), Samples: g.pairSamples[p],
		})
	}
	return out
}

// Link runs linking steps 1 and 2 on the trace ms: it estimates the mean
// causal delay of every sender pair and finds and scores the possible
// parents of every message. roles decides which nodes are clients (nil
// classifies ms's roles with the options' naming settings).
func (l *Engine) Link(ctx context.Context, ms trace.Messages, roles *trace.Roles) (*Graph, error) {
	if roles == nil && l.opt.ClientRoots {
		roles = trace.ClassifyRoles(ms, l.opt.Aggregate.Naming.Roles)
	}
	return l.link(ctx, trace.MessageSlice(ms), ms.Symbols().Len(), roles)
}

// linkIndex is what steps 1 and 2 look parents up in.
type linkIndex struct {
	// arrivals of messages at each node (dense node id), on the node's
	// clock, sorted by time then message index.
	arrStart []int32
	arr      linkEvents
	// sends of the messages of each reverse pair a receiver-clock child
	// needs, on the sender's clock, sorted likewise.
	sndStart []int32
	snd      linkEvents
	// per message, its sender pair; per pair, the bucket its messages'
	// possible parents are in (a pair has one sender and one clock).
	pair       []int32
	pairBucket []int32
	// the messages of each pair, in trace order:
	// pairList[pairStart[p]:pairStart[p+1]].
	pairStart []int32
	pairList  []int32
}

// linkEvents are message events (arrivals or sends) in two parallel
// arrays: times and message indices.
type linkEvents struct {
	ts  []int64
	msg []int32
}

func newLinkEvents(msgs []int32, ts func(i int32) int64) linkEvents {
	ev := linkEvents{ts: make([]int64, len(msgs)), msg: msgs}
	for k, i := range msgs {
		ev.ts[k] = ts(i)
	}
	return ev
}

func (e linkEvents) slice(lo, hi int32) linkEvents {
	return linkEvents{ts: e.ts[lo:hi], msg: e.msg[lo:hi]}
}

// Len, Less and Swap sort the events by time then message index.
func (e linkEvents) Len() int { return len(e.ts) }
func (e linkEvents) Less(i, j int) bool {
	if e.ts[i] != e.ts[j] {
		return e.ts[i] < e.ts[j]
	}
	return e.msg[i] < e.msg[j]
}
func (e linkEvents) Swap(i, j int) {
	e.ts[i], e.ts[j] = e.ts[j], e.ts[i]
	e.msg[i], e.msg[j] = e.msg[j], e.msg[i]
}

// linkCand is one possible parent being scored.
type linkCand struct {
	msg int32
	t   int64
	w   float64
}

// link is Link on the messages msgs, whose Syms are below nSyms. It runs
// in phases: number the nodes, classify every message (how its parents
// are found, its sender pair), pair calls, index the arrivals and sends
// parents are looked up in, estimate the delays (step 1, and the learnt
// model), then score and keep the links (step 2).
func (l *Engine) link(ctx context.Context, msgs []trace.Message, nSyms int, roles *trace.Roles) (*Graph, error) {
	if nSyms >= 1<<31 {
		return nil, fmt.Errorf("linking: %d symbols is more than the engine indexes", nSyms)
	}
	n := len(msgs)
	g := &Graph{
		msgs:  msgs,
		mode:  make([]uint8, n),
		spont: make([]float64, n),
		top:   make([]int32, n),
	}
	g.counts.messages = n
	w := parallel.Workers(l.opt.Workers)
	nodeID, nNodes := denseNodes(msgs, nSyms)
	clients := l.clientNodes(roles, nSyms)
	ix := &linkIndex{}
	revIDs := g.classify(ix, nodeID, clients)
	var cf *callFilter
	if l.opt.Calls {
		cf = g.matchCalls(nodeID, nNodes, w)
	}
	ix.build(g, nodeID, nNodes, revIDs, w)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := l.estimateDelays(ctx, g, ix, cf, w); err != nil {
		return nil, err
	}
	ix.pairStart, ix.pairList = nil, nil
	if l.opt.DelayModel == DelayEmpirical {
		nodeCls, nCls := nodeClasses(nodeID, nNodes, clients)
		if err := l.learnDelays(ctx, g, ix, cf, nodeID, nodeCls, nCls, w); err != nil {
			return nil, err
		}
	}
	if err := l.scoreLinks(ctx, g, ix, cf, w); err != nil {
		return nil, err
	}
	return g, nil
}

// denseNodes numbers the nodes of msgs from 0 in order of first
// appearance (each message's sender, then its receiver): the id of node
// Sym s is nodeID[s], -1 for Syms that name no node.
func denseNodes(msgs []trace.Message, nSyms int) (nodeID []int32, n int32) {
	nodeID = make([]int32, nSyms)
	for i := range nodeID {
		nodeID[i] = -1
	}
	node := func(s trace.Sym) {
		if s != 0 && int(s) < len(nodeID) && nodeID[s] < 0 {
			nodeID[s] = n
			n++
		}
	}
	for i := range msgs {
		node(msgs[i].SrcNode)
		node(msgs[i].DstNode)
	}
	return nodeID, n
}

// clientNodes returns, by node Sym, which nodes are clients whose
// messages start paths (ClientRoots), or nil when none is.
func (l *Engine) clientNodes(roles *trace.Roles, nSyms int) []bool {
	if !l.opt.ClientRoots || roles == nil {
		return nil
	}
	clients := make([]bool, nSyms)
	for s := range clients {
		clients[s] = roles.Client(trace.Sym(s))
	}
	return clients
}

// nodeClasses returns the classes of the empirical model's parent types
// by dense node id: every node its own, the clients one together.
func nodeClasses(nodeID []int32, nNodes int32, clients []bool) (nodeCls []int32, nCls int32) {
	nodeCls = make([]int32, nNodes)
	for i := range nodeCls {
		nodeCls[i] = int32(i)
	}
	for s, c := range clients {
		if c && nodeID[s] >= 0 {
			nodeCls[nodeID[s]] = nNodes
		}
	}
	return nodeCls, nNodes + 1
}

// modeOf returns how message m takes part in linking: never (no sender,
// or no timestamp on a clock its parents could be found on), as a
// client's spontaneous message, on its sender's clock, or on its
// receiver's when its send was not seen.
func modeOf(m *trace.Message, clients []bool) uint8 {
	switch {
	case m.SrcNode == 0 || (!m.SendTS.Known() && (!m.RecvTS.Known() || m.DstNode == 0)):
		return linkNone
	case clients != nil && int(m.SrcNode) < len(clients) && clients[m.SrcNode]:
		return linkClient
	case m.SendTS.Known():
		return linkSender
	}
	return linkReceiver
}

// classify sets every message's mode and sender pair (ix.pair, -1 for
// messages that are not linked), counting them, and names each pair by
// its first message (g.pairMsg) with the bucket its messages' possible
// parents are in (ix.pairBucket): the sender's arrivals, or for a
// receiver-clock pair the sends of the reverse pair. It returns the
// reverse pairs receiver-clock messages need, numbered in order of first
// need, by receiver<<32 | sender.
func (g *Graph) classify(ix *linkIndex, nodeID []int32, clients []bool) (revIDs map[uint64]int32) {
	msgs := g.msgs
	ix.pair = make([]int32, len(msgs))
	pairIDs := make(map[uint64]int32)
	revIDs = make(map[uint64]int32)
	for i := range msgs {
		m := &msgs[i]
		ix.pair[i], g.top[i] = -1, -1
		mode := modeOf(m, clients)
		g.mode[i] = mode
		var bucket int32
		switch mode {
		case linkNone:
			g.counts.noTime++
			continue
		case linkClient:
			g.counts.clientRoots++
			g.spont[i] = 1
			continue
		case linkSender:
			g.counts.senderClock++
			bucket = nodeID[m.SrcNode]
		default:
			g.counts.receiverClock++
			bucket = idOf(revIDs, uint64(m.DstNode)<<32|uint64(m.SrcNode))
		}
		k := uint64(m.SrcNode)<<33 | uint64(m.DstNode)<<1
		if mode == linkReceiver {
			k |= 1
		}
		id, ok := pairIDs[k]
		if !ok {
			id = int32(len(g.pairMsg))
			pairIDs[k] = id
			g.pairMsg = append(g.pairMsg, int32(i))
			ix.pairBucket = append(ix.pairBucket, bucket)
		}
		ix.pair[i] = id
	}
	np := len(g.pairMsg)
	g.pairD = make([]float64, np)
	g.pairSamples = make([]float64, np)
	return revIDs
}

// idOf returns the id of key k in ids, numbering new keys in order.
func idOf(ids map[uint64]int32, k uint64) int32 {
	id, ok := ids[k]
	if !ok {
		id = int32(len(ids))
		ids[k] = id
	}
	return id
}

// matchCalls pairs every RETURN with its CALL (g.mate, pairCalls), counts
// the pairs and returns the filter that applies the nesting relation.
func (g *Graph) matchCalls(nodeID []int32, nNodes int32, w int) *callFilter {
	msgs := g.msgs
	var orphans []bool
	g.mate, orphans = pairCalls(msgs, g.mode, nodeID, int(nNodes), w)
	for i := range msgs {
		if g.mate[i] >= 0 && msgs[i].Kind == trace.KindCall {
			g.counts.calls++
		}
		if orphans != nil && orphans[i] {
			g.counts.orphans++
		}
	}
	return &callFilter{msgs: msgs, mate: g.mate, orphans: orphans}
}

// build indexes what steps 1 and 2 look up: the messages of every sender
// pair, the arrivals at every node and the sends of every reverse pair
// in revIDs, each bucket sorted by time.
func (ix *linkIndex) build(g *Graph, nodeID []int32, nNodes int32, revIDs map[uint64]int32, w int) {
	msgs := g.msgs
	n := len(msgs)
	ix.pairStart, ix.pairList = bucketize(len(g.pairMsg), n, func(i int) int32 { return ix.pair[i] })
	var arrMsgs []int32
	ix.arrStart, arrMsgs = bucketize(int(nNodes), n, func(i int) int32 {
		if m := &msgs[i]; m.RecvTS.Known() && m.DstNode != 0 {
			return nodeID[m.DstNode]
		}
		return -1
	})
	ix.arr = newLinkEvents(arrMsgs, func(i int32) int64 { return int64(msgs[i].RecvTS) })
	linkSortBuckets(ix.arr, ix.arrStart, w)
	if len(revIDs) == 0 {
		return
	}
	var sndMsgs []int32
	ix.sndStart, sndMsgs = bucketize(len(revIDs), n, func(i int) int32 {
		m := &msgs[i]
		if !m.SendTS.Known() {
			return -1
		}
		if id, ok := revIDs[uint64(m.SrcNode)<<32|uint64(m.DstNode)]; ok {
			return id
		}
		return -1
	})
	ix.snd = newLinkEvents(sndMsgs, func(i int32) int64 { return int64(msgs[i].SendTS) })
	linkSortBuckets(ix.snd, ix.sndStart, w)
}

// estimateDelays is step 1: every sender pair's d, the mean smallest
// preceding delay, then, for the exponential model, Iterations rounds of
// re-estimation from the link probabilities.
func (l *Engine) estimateDelays(ctx context.Context, g *Graph, ix *linkIndex, cf *callFilter, w int) error {
	x := int64(l.opt.Window)
	np := len(g.pairMsg)
	linkParallel(linkBlocks(np), w, func(b int) {
		for p := b * linkPairBlock; p < min((b+1)*linkPairBlock, np); p++ {
			sum, k := 0.0, 0.0
			for _, i := range ix.pairList[ix.pairStart[p]:ix.pairStart[p+1]] {
				if d, ok := ix.latest(g, cf, g.msgs, i, x); ok && d <= x {
					sum += float64(d)
					k++
				}
			}
			if k > 0 {
				g.pairD[p], g.pairSamples[p] = sum/k, k
			}
		}
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	for it := 0; it < l.opt.Iterations && l.opt.DelayModel == DelayExponential; it++ {
		l.reestimateDelays(g, ix, cf, w)
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// reestimateDelays is one round of iteration of the exponential model:
// every pair's d becomes the probability-weighted mean delay of its links
// under the current d. A pair without links keeps its d.
func (l *Engine) reestimateDelays(g *Graph, ix *linkIndex, cf *callFilter, w int) {
	np := len(g.pairMsg)
	next := make([]float64, np)
	mass := make([]float64, np)
	linkParallel(linkBlocks(np), w, func(b int) {
		var cs []linkCand
		for p := b * linkPairBlock; p < min((b+1)*linkPairBlock, np); p++ {
			sn, sd := 0.0, 0.0
			for _, i := range ix.pairList[ix.pairStart[p]:ix.pairStart[p+1]] {
				var z float64
				cs, z, _, _ = l.score(g, ix, cf, g.msgs, i, cs[:0])
				for _, c := range cs {
					pr := c.w / z
					sn += pr * float64(c.t)
					sd += pr
				}
			}
			if sd > 0 {
				next[p], mass[p] = sn/sd, sd
			}
		}
	})
	for p := range next {
		if mass[p] > 0 {
			g.pairD[p], g.pairSamples[p] = next[p], mass[p]
		}
	}
}

// scoreLinks is step 2: it scores every message's possible parents and
// keeps the links, in trace order.
func (l *Engine) scoreLinks(ctx context.Context, g *Graph, ix *linkIndex, cf *callFilter, w int) error {
	chunks := linkSplit(len(g.msgs), linkChunk)
	parts := make([]linkPart, len(chunks))
	linkParallel(len(chunks), w, func(c int) {
		parts[c] = l.scoreRange(g, ix, cf, g.msgs, chunks[c][0], chunks[c][1])
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	return g.store(parts)
}

// bucketize groups the indices 0..n-1 by key(i) in [0, nb) (negative keys
// are left out), keeping index order within a bucket: bucket b is
// list[start[b]:start[b+1]].
func bucketize(nb, n int, key func(i int) int32) (start, list []int32) {
	start = make([]int32, nb+1)
	for i := 0; i < n; i++ {
		if k := key(i); k >= 0 {
			start[k+1]++
		}
	}
	for b := 0; b < nb; b++ {
		start[b+1] += start[b]
	}
	list = make([]int32, start[nb])
	next := slices.Clone(start[:nb])
	for i := 0; i < n; i++ {
		if k := key(i); k >= 0 {
			list[next[k]] = int32(i)
			next[k]++
		}
	}
	return start, list
}

// candidates returns the sorted events among which message i's possible
// parents are, and i's time on the same clock.
func (ix *linkIndex) candidates(g *Graph, msgs []trace.Message, i int32) (linkEvents, int64) {
	b := ix.pairBucket[ix.pair[i]]
	if g.mode[i] == linkReceiver {
		return ix.snd.slice(ix.sndStart[b], ix.sndStart[b+1]), int64(msgs[i].RecvTS)
	}
	return ix.arr.slice(ix.arrStart[b], ix.arrStart[b+1]), int64(msgs[i].SendTS)
}

// linkUpper returns the number of times in ts (sorted) at or before at.
func linkUpper(ts []int64, at int64) int {
	lo, hi := 0, len(ts)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if ts[m] <= at {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// minDelayNS is the smallest d used: timestamps have nanosecond resolution.
const minDelayNS = 1

// negligibleExp bounds the links scored: a parent older than d·(y+30)
// weighs less than exp(-30)·exp(-y), under 1e-13 of the spontaneous option.
const negligibleExp = 30

// linkChunk is how many messages one unit of parallel scoring covers;
// linkPairBlock how many pairs one unit of delay estimation covers.
const (
	linkChunk     = 1 << 15
	linkPairBlock = 1 << 10
)

func linkBlocks(np int) int { return (np + linkPairBlock - 1) / linkPairBlock }

// latest returns the delay since message i's latest possible parent
// (step 1), looking no further back than x, except that a RETURN's own
// CALL is always found.
func (ix *linkIndex) latest(g *Graph, cf *callFilter, msgs []trace.Message, i int32, x int64) (int64, bool) {
	ev, at := ix.candidates(g, msgs, i)
	q := cf.anchor(i)
	if q >= 0 && g.mode[i] == linkReceiver {
		return at - int64(msgs[q].SendTS), true
	}
	for j := linkUpper(ev.ts, at) - 1; j >= 0; j-- {
		if at-ev.ts[j] > x || (q >= 0 && ev.ts[j] < int64(msgs[q].RecvTS)) {
			break
		}
		if ev.msg[j] == i || (cf != nil && !cf.allowed(i, ev.msg[j])) {
			continue
		}
		return at - ev.ts[j], true
	}
	if q >= 0 {
		return at - int64(msgs[q].RecvTS), true
	}
	return 0, false
}

// score weighs the possible parents of message i (most recent first) into
// cs and returns them with the normalising sum z, which includes the
// spontaneous option exp(-y), and the index in cs of the most likely
// parent (-1 when cs is empty). With call filtering (cf not nil), a
// RETURN paired with its CALL cannot be spontaneous: its possible parents
// are its CALL and what arrived since (callFilter.allowed), and their
// weights are scaled so that the most recent weighs 1.
func (l *Engine) score(g *Graph, ix *linkIndex, cf *callFilter, msgs []trace.Message, i int32, cs []linkCand) ([]linkCand, float64, int, float64) {
	ws := math.Exp(-l.opt.SpontaneousFactor)
	pid := ix.pair[i]
	if pid < 0 {
		return cs, ws, -1, ws
	}
	if g.emp != nil {
		ws = g.emp.spont[g.emp.c2(i)]
	}
	q := cf.anchor(i)
	if q >= 0 && g.mode[i] == linkReceiver {
		// Its sender was not traced: only its CALL can have caused it.
		return append(cs, linkCand{q, linkTime(msgs, i, g.mode[i]) - int64(msgs[q].SendTS), 1}), 1, 0, 0
	}
	d := math.Max(g.pairD[pid], minDelayNS)
	ev, at := ix.candidates(g, msgs, i)
	if q < 0 {
		cs, z, best := g.weighParents(cf, ev, at, i, d, l.scanWindow(d), ws, cs)
		return cs, z, best, ws
	}
	cs, z, best := g.weighReturnParents(cf, ev, at, i, q, d, l.scanWindow(d), cs)
	return cs, z, best, 0
}

// scanWindow is how far back the possible parents of a message of a pair
// with mean delay d are looked for: the window, or less where older
// parents would weigh next to nothing (negligibleExp).
func (l *Engine) scanWindow(d float64) int64 {
	win := int64(l.opt.Window)
	if c := d * (l.opt.SpontaneousFactor + negligibleExp); c < float64(win) {
		win = int64(c)
	}
	return win
}

// weighParents appends to cs the possible parents of message i among the
// events ev before at, most recent first, back to win before it, each
// with its weight under the delay model (d, the pair's mean delay, for
// the exponential one). It returns them, z plus their weights and the
// index of the heaviest (-1 for none).
func (g *Graph) weighParents(cf *callFilter, ev linkEvents, at int64, i int32, d float64, win int64, z float64, cs []linkCand) ([]linkCand, float64, int) {
	emp := g.emp
	best := -1
	for j := linkUpper(ev.ts, at) - 1; j >= 0; j-- {
		t := at - ev.ts[j]
		if t > win {
			break
		}
		if ev.msg[j] == i || (cf != nil && !cf.allowed(i, ev.msg[j])) {
			continue
		}
		var wt float64
		switch {
		case emp != nil:
			wt = emp.weight(ev.msg[j], i, t)
		case g.flat:
			wt = 1
		default:
			wt = math.Exp(-float64(t) / d)
		}
		if best < 0 || wt > cs[best].w {
			best = len(cs)
		}
		cs = append(cs, linkCand{ev.msg[j], t, wt})
		z += wt
	}
	return cs, z, best
}

// weighReturnParents appends to cs the possible parents of message i, a
// RETURN paired with CALL q: the messages allowed (callFilter.allowed)
// among the events ev that arrived after q and within win before at, most
// recent first, and q itself. They are weighed by the empirical model or,
// when it gives them nothing, exponentially with the most recent weighing
// 1. It returns them, the sum of their weights and the index of the
// heaviest.
func (g *Graph) weighReturnParents(cf *callFilter, ev linkEvents, at int64, i, q int32, d float64, win int64, cs []linkCand) ([]linkCand, float64, int) {
	start := int64(g.msgs[q].RecvTS)
	found := false
	for j := linkUpper(ev.ts, at) - 1; j >= 0; j-- {
		if at-ev.ts[j] > win || ev.ts[j] < start {
			break
		}
		if ev.msg[j] == i || !cf.allowed(i, ev.msg[j]) {
			continue
		}
		found = found || ev.msg[j] == q
		cs = append(cs, linkCand{ev.msg[j], at - ev.ts[j], 0})
	}
	if !found {
		cs = append(cs, linkCand{q, at - start, 0})
	}
	z, best := 0.0, 0
	if emp := g.emp; emp != nil {
		for k := range cs {
			cs[k].w = emp.weight(cs[k].msg, i, cs[k].t)
			z += cs[k].w
			if cs[k].w > cs[best].w {
				best = k
			}
		}
	}
	if z == 0 {
		t0 := float64(cs[0].t)
		for k := range cs {
			cs[k].w = math.Exp(-(float64(cs[k].t) - t0) / d)
			z += cs[k].w
		}
		best = 0
	}
	return cs, z, best
}

// after lists the messages that could have been message i's possible
// parents had they come before it: those that came after it, on the same
// clock, within the same window, with their delays after it, except its
// own RETURN (which comes back because of it).
func (l *Engine) after(g *Graph, ix *linkIndex, msgs []trace.Message, i int32, out []linkCand) []linkCand {
	pid := ix.pair[i]
	if pid < 0 || g.mode[i] == linkReceiver && g.mate != nil && g.msgs[i].Kind == trace.KindReturn && g.mate[i] >= 0 {
		return out
	}
	win := l.scanWindow(math.Max(g.pairD[pid], minDelayNS))
	ev, at := ix.candidates(g, msgs, i)
	var own int32 = -1 // i's RETURN, if it is a CALL
	if g.mate != nil && msgs[i].Kind == trace.KindCall {
		own = g.mate[i]
	}
	for j := linkUpper(ev.ts, at); j < len(ev.ts) && ev.ts[j]-at <= win; j++ {
		mj := ev.msg[j]
		if mj == i || mj == own {
			continue
		}
		out = append(out, linkCand{mj, ev.ts[j] - at, 0})
	}
	return out
}

// linkTime returns message i's time on the clock its parents are looked up on.
func linkTime(msgs []trace.Message, i int32, mode uint8) int64 {
	if mode == linkReceiver {
		return int64(msgs[i].RecvTS)
	}
	return int64(msgs[i].SendTS)
}

// linkPart is what scoring a range of messages produced: for each message
// of the range its number of kept links, then the links' parents and
// probabilities in message order.
type linkPart struct {
	lo, hi     int
	nLinks     []int32
	parent     []int32
	p          []float64
	candidates int
	noParent   int
}

// scoreRange computes the link probabilities of messages [lo, hi), their
// spontaneous probabilities and most likely causes, and keeps the links.
func (l *Engine) scoreRange(g *Graph, ix *linkIndex, cf *callFilter, msgs []trace.Message, lo, hi int) linkPart {
	part := linkPart{lo: lo, hi: hi, nLinks: make([]int32, hi-lo)}
	minP := l.opt.MinLinkProbability
	var cs []linkCand
	var par []int32
	var pr []float64
	for i := lo; i < hi; i++ {
		g.top[i] = -1
		if ix.pair[i] < 0 {
			continue // spont was set with the mode
		}
		var z, ws float64
		var best int
		cs, z, best, ws = l.score(g, ix, cf, msgs, int32(i), cs[:0])
		part.candidates += len(cs)
		if len(cs) == 0 {
			part.noParent++
			g.spont[i] = 1
			continue
		}
		q := cf.anchor(int32(i))
		// The most likely parent is kept even when improbable, and so are
		// the most recent one (step 3 may choose it within an instance)
		// and a RETURN's CALL.
		for k, c := range cs {
			if p := c.w / z; p >= minP || k == best || k == 0 || c.msg == q {
				part.nLinks[i-lo]++
				par = append(par, c.msg)
				pr = append(pr, p)
			}
		}
		if q >= 0 {
			g.spont[i] = 0
			g.top[i] = cs[best].msg
			continue
		}
		g.spont[i] = ws / z
		if cs[best].w > ws {
			g.top[i] = cs[best].msg
		}
	}
	part.parent = slices.Clone(par)
	part.p = slices.Clone(pr)
	return part
}

// pairedReturn reports whether message i is a RETURN paired with its CALL.
func (g *Graph) pairedReturn(i int) bool {
	return g.mate != nil && g.mate[i] >= 0 && g.msgs[i].Kind == trace.KindReturn
}

// store inverts the parts' parent lists into the graph's child lists.
func (g *Graph) store(parts []linkPart) error {
	n := g.Len()
	total := 0
	for _, p := range parts {
		total += len(p.parent)
		g.counts.candidates += p.candidates
		g.counts.noParent += p.noParent
	}
	if total > math.MaxInt32 {
		return fmt.Errorf("linking: %d links is more than the engine indexes; lower the window", total)
	}
	g.counts.links = total
	g.kidStart = make([]int32, n+1)
	for _, p := range parts {
		for _, par := range p.parent {
			g.kidStart[par+1]++
		}
	}
	for i := 0; i < n; i++ {
		g.kidStart[i+1] += g.kidStart[i]
	}
	g.kidMsg = make([]int32, total)
	g.kidP = make([]float64, total)
	next := slices.Clone(g.kidStart[:n])
	for pi := range parts {
		p := &parts[pi]
		k := 0
		for i := p.lo; i < p.hi; i++ {
			for e := k + int(p.nLinks[i-p.lo]); k < e; k++ {
				par := p.parent[k]
				g.kidMsg[next[par]] = int32(i)
				g.kidP[next[par]] = p.p[k]
				next[par]++
			}
		}
		*p = linkPart{} // let the part go
	}
	return nil
}

// linkSortBuckets sorts every bucket of ev by time then message index, on
// up to w goroutines.
func linkSortBuckets(ev linkEvents, start []int32, w int) {
	linkParallel(len(start)-1, w, func(b int) {
		s := ev.slice(start[b], start[b+1])
		if !sort.IsSorted(s) {
			sort.Sort(s)
		}
	})
}

// linkSplit cuts [0, n) into ranges of size (the last one shorter).
func linkSplit(n, size int) [][2]int {
	var out [][2]int
	for lo := 0; lo < n; lo += size {
		out = append(out, [2]int{lo, min(lo+size, n)})
	}
	return out
}

// linkParallel calls f(0..n-1) on up to w goroutines and waits for them.
func linkParallel(n, w int, f func(i int)) { parallel.For(n, w, 1, func(_, i int) { f(i) }) }
