package nesting

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/internal/parallel"
	"github.com/wirepath/wirepath/internal/smooth"
	"github.com/wirepath/wirepath/trace"
)

// Name is the nesting engine's name in results and on the command line.
const Name = "nesting"

// Options are the parameters of the nesting engine (Project 5
// section 5.1). DefaultOptions gives the paper's defaults.
type Options struct {
	causal.Options
	// OverlapExp, SameExp and GenericExp are the exponents x, y and z of the
	// overlapping-, same- and generic-child penalties (section 5.1.1.3).
	// The paper's defaults are x = 2, y = z = 0.
	OverlapExp, SameExp, GenericExp float64
	// Smooth is the standard deviation, in bins, of the Gaussian every
	// scoreboard histogram is convolved with before parents are chosen
	// (section 5.1.1.2); 0 turns smoothing off, as in the paper's default.
	Smooth float64
	// SkewWindow, in nanoseconds, loosens the timestamp comparisons that
	// decide nesting (section 7.5.6): a call pair (B, C, t2, t3) is nested in
	// (A, B, t1, t4) when t1 < t2 + SkewWindow and t4 > t3 - SkewWindow.
	SkewWindow int64
	// BinBase, BinMin (ns) and Bins define the scoreboard histograms: bin k
	// holds delays in [BinMin·BinBase^k, BinMin·BinBase^(k+1)); shorter
	// delays fall in bin 0 and longer ones in the last bin. The paper uses
	// 340 bins of log base 1.05 from 1 ms.
	BinBase float64
	BinMin  int64
	Bins    int
	// Workers bounds the goroutines used; 0 means GOMAXPROCS.
	Workers int
	// Progress, when set, is called as the long steps advance: step is
	// "candidates" (the call pairs swept for candidate parents, twice),
	// "parents" (the call pairs given a parent) or "call paths" (the call
	// paths aggregated), done of total units. A step's first call has
	// done = 0 and its last done = total. Calls come from the engine's
	// workers, one at a time.
	Progress func(step string, done, total int)
}

// DefaultOptions returns the paper's parameters: x = 2, y = z = 0, no
// smoothing, no skew window, 340 bins of log base 1.05 from 1 ms.
func DefaultOptions() Options {
	return Options{
		Options:    causal.DefaultOptions(),
		OverlapExp: 2,
		BinBase:    1.05,
		BinMin:     1e6,
		Bins:       340,
	}
}

// Validate checks the options. The error is a *causal.OptionError naming
// the first option out of range by its flag.
func (o *Options) Validate() error {
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	bad := func(option, msg string) error { return causal.OptionErrorf(Name, option, "%s", msg) }
	switch {
	case !finite(o.OverlapExp):
		return bad("overlap-penalty", "the overlapping-child penalty exponent x must be a finite number")
	case !finite(o.SameExp):
		return bad("same-penalty", "the same-child penalty exponent y must be a finite number")
	case !finite(o.GenericExp):
		return bad("generic-penalty", "the generic-child penalty exponent z must be a finite number")
	case !(o.Smooth >= 0) || o.Smooth > 1000:
		return bad("smooth", "the smoothing sigma must be between 0 and 1000 bins")
	case o.SkewWindow < 0:
		return bad("skew-window", "the skew window must not be negative")
	case !(o.BinBase > 1) || math.IsInf(o.BinBase, 0):
		return bad("bin-base", "the bin base must be greater than 1")
	case o.BinMin <= 0:
		return bad("bin-min", "the first bin's lower edge must be positive")
	case o.Bins < 1 || o.Bins > 1<<16:
		return bad("bins", "the number of bins must be between 1 and 65536")
	case o.Workers < 0:
		return bad("workers", "workers must not be negative")
	}
	return o.Options.Validate(Name)
}

// Params returns the options by the names of the nest command's flags,
// for Result.Params.
func (o *Options) Params() map[string]any {
	return map[string]any{
		"overlap-penalty": o.OverlapExp,
		"same-penalty":    o.SameExp,
		"generic-penalty": o.GenericExp,
		"smooth":          o.Smooth,
		"skew-window":     time.Duration(o.SkewWindow).String(),
		"bin-base":        o.BinBase,
		"bin-min":         time.Duration(o.BinMin).String(),
		"bins":            o.Bins,
		"rank":            string(o.Rank),
		"max-patterns":    o.Aggregate.MaxPatterns,
	}
}

// Engine is the nesting engine of Project 5 section 5.1. It pairs CALL and
// RETURN messages into call pairs, finds the call pairs each one is nested
// in, scores the candidate nestings with a scoreboard of delay histograms,
// picks one parent per call pair and aggregates the resulting call trees.
// Each call tree is also converted into a tree of messages for the
// Aggregator (see docs/causal-nesting.md). It uses one timestamp per message:
// the send time, or the receive time when the send was not seen, corrected
// by the trace's clock offsets.
type Engine struct {
	opt Options
}

// New returns a nesting engine with the given options, or the
// *causal.OptionError of the first option out of range.
func New(opt Options) (*Engine, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	return &Engine{opt: opt}, nil
}

// Name returns "nesting".
func (n *Engine) Name() string { return Name }

// Options returns the engine's options.
func (n *Engine) Options() Options { return n.opt }

// Infer runs the engine and returns its patterns (the message-tree form).
func (n *Engine) Infer(ctx context.Context, ms trace.Messages) (*causal.Result, error) {
	r, err := n.Run(ctx, ms)
	if err != nil {
		return nil, err
	}
	return r.Result, nil
}

// Result is the nesting engine's result: the common causal.Result
// (patterns as trees of messages) and the engine's native call-path table. It
// marshals as the Result's fields plus "call_paths".
type Result struct {
	*causal.Result
	// CallPaths are the call-path patterns, most frequent first.
	CallPaths []CallPath `json:"call_paths"`
}

// callPair is one call matched with its return: the call A->B (message
// call, sent at t1) and the return B->A (message ret, sent at t4), the
// paper's (A, B, t1, t4), times corrected by the clock offsets. The nodes
// are read from the trace when needed (nestRun.caller, callee).
type callPair struct {
	t1, t4    int64
	call, ret int32 // message indices
}

// nestRun holds the state of one run.
type nestRun struct {
	opt     Options
	tab     *trace.Table
	flows   []trace.Flow
	agg     *causal.Aggregator
	workers int
	offsets []int64 // clock offset by node Sym; nil when the trace has none

	named  []int32 // node Sym -> id of its pattern-level name, -1 = not computed
	names  map[string]int32
	nNames int32

	pairs []callPair
	// nFull: pairs[:nFull] are calls matched with their returns;
	// pairs[nFull:nOpen] are open calls, whose RETURN was not seen
	// (openCalls); pairs[nOpen:] are lost calls, whose CALL was not seen
	// (lostCalls), with sinkT1 their estimated call times.
	nFull, nOpen int32
	sinkT1       []int64
	// byCall lists the pairs in order of call time, ties by pair index.
	byCall []int32

	// Candidate parents of each pair, as CSR: cand[candOff[c]:candOff[c+1]]
	// in order of the parents' call times, with the scoreboard bin of the
	// delay and the scoreboard histogram of each candidate nesting (in
	// candTrip16, or candTrip32 once there are more than 65,536).
	candOff    []int32
	cand       []int32
	candBin    []uint16
	candTrip16 []uint16
	candTrip32 []int32

	hist   []float64 // scoreboard: nTrips histograms of opt.Bins bins (dense, with smoothing)
	nTrips int
	// The sparse scoreboard (without smoothing): a cell per histogram
	// and bin some candidate falls in, and each candidate's cell; cellOf
	// (kept for tests) maps trip*Bins+bin to the cell.
	cell     []float64
	candCell []int32
	cellOf   map[uint64]int32
	parent   []int32 // chosen parent pair, -1 for roots
	counter  nestCounters
	keep     bool // keep pairs and parents to the end, for tests
}

type nestCounters struct {
	in, noTime, notRPC, calls, returns, pairs       int64
	unmatchedCalls, unmatchedReturns                int64
	candidates, withCandidates, roots, cyclesBroken int64
	depthCut, openCalls, lostCalls, keptOut         int64
	returnsBeforeCall                               int64
}

// Run runs the engine and returns the patterns and the call-path table.
// It works on a trace.Table (20 bytes a message): a *trace.Table as it is,
// any other trace copied into one.
func (n *Engine) Run(ctx context.Context, ms trace.Messages) (*Result, error) {
	_, res, err := n.runTable(ctx, trace.AsTable(ms), false)
	return res, err
}

// run is Run that also returns the run's state, for tests.
func (n *Engine) run(ctx context.Context, ms trace.Messages) (*nestRun, *Result, error) {
	return n.runTable(ctx, trace.AsTable(ms), true)
}

// runTable runs the engine on t; keep keeps the run's pairs and parents
// for tests.
func (n *Engine) runTable(ctx context.Context, t *trace.Table, keep bool) (*nestRun, *Result, error) {
	r := &nestRun{opt: n.opt, tab: t, flows: t.Flows(), workers: parallel.Workers(n.opt.Workers), keep: keep}
	r.offsets = causal.NodeOffsets(t)
	r.named = make([]int32, t.Syms.Len())
	for i := range r.named {
		r.named[i] = -1
	}
	r.names = make(map[string]int32)
	// The Table's roles come from its few distinct flows: naming is cheap.
	r.agg = causal.NewAggregator(t, n.opt.Aggregate)

	r.findCallPairs()
	byCaller, byCallee := r.groupByNode()
	if err := r.findCandidates(ctx, byCaller, byCallee); err != nil {
		return nil, nil, err
	}
	byCallee = groupCSR{}
	// FindNestedPairs visits each node's children in return order, which
	// is the order of pair indices.
	parallel.Each(len(byCaller.off)-1, r.workers, func(s int) { slices.Sort(byCaller.of(trace.Sym(s))) })
	r.scoreNestings()
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if err := r.findNestedPairs(ctx, byCaller); err != nil {
		return nil, nil, err
	}
	r.cand, r.candBin, r.candTrip16, r.candTrip32, r.candOff, r.candCell = nil, nil, nil, nil, nil, nil
	r.keepOut()
	r.breakCycles()
	res, err := r.findCallPaths(ctx)
	if err != nil {
		return nil, nil, err
	}
	return r, res, nil
}

// msgTime is message i's one timestamp: its send time on the reference
// clock, or its receive time when the send was not seen (the Aggregator's
// CorrectedSend). i must have a timestamp.
func (r *nestRun) msgTime(i int32) int64 {
	t := int64(r.tab.Time(int(i)))
	if r.offsets == nil {
		return t
	}
	f := r.tab.Flow(int(i))
	if r.tab.SendTS(int(i)).Known() {
		return t - r.offsets[f.SrcNode]
	}
	return t - r.offsets[f.DstNode]
}

// arrival is message i's arrival on the reference clock, or its send time
// when the arrival was not seen (the Aggregator's CorrectedRecv).
func (r *nestRun) arrival(i int32) int64 {
	rt := r.tab.RecvTS(int(i))
	var node trace.Sym
	if rt.Known() {
		node = r.tab.Flow(int(i)).DstNode
	} else {
		rt, node = r.tab.SendTS(int(i)), r.tab.Flow(int(i)).SrcNode
	}
	if r.offsets == nil {
		return int64(rt)
	}
	return int64(rt) - r.offsets[node]
}

// t1 and t4 are pair p's call and return times on the reference clock;
// for an open call, t4 is the end of the time its children may fall in.
func (r *nestRun) t1(p int32) int64 { return r.pairs[p].t1 }
func (r *nestRun) t4(p int32) int64 { return r.pairs[p].t4 }

// childT4 is the end of pair p as a child: its return time, or for an
// open call its call time, so that it nests in the calls open when it was
// made, whatever its unseen return.
func (r *nestRun) childT4(p int32) int64 {
	if p >= r.nFull {
		return r.pairs[p].t1
	}
	return r.pairs[p].t4
}

// caller and callee are pair p's nodes A and B (for a lost call, the
// return's receiver and sender).
func (r *nestRun) caller(p int32) trace.Sym {
	if c := r.pairs[p].call; c >= 0 {
		return r.tab.Flow(int(c)).SrcNode
	}
	return r.tab.Flow(int(r.pairs[p].ret)).DstNode
}

func (r *nestRun) callee(p int32) trace.Sym {
	if c := r.pairs[p].call; c >= 0 {
		return r.tab.Flow(int(c)).DstNode
	}
	return r.tab.Flow(int(r.pairs[p].ret)).SrcNode
}

// lost reports whether pair p is a lost call (its CALL not seen).
func (r *nestRun) lost(p int32) bool { return p >= r.nOpen }

// binT1 is pair p's call time for the scoreboard: a lost call's estimate.
func (r *nestRun) binT1(p int32) int64 {
	if p >= r.nOpen {
		return r.sinkT1[p-r.nOpen]
	}
	return r.pairs[p].t1
}

// nameID returns the id of node s's pattern-level name (clients aggregated
// as the naming options say), so that the scoreboard and the call-path
// table key on what the patterns show.
func (r *nestRun) nameID(s trace.Sym) int32 {
	if int(s) >= len(r.named) {
		return r.nameOf(r.tab.Str(s))
	}
	if id := r.named[s]; id >= 0 {
		return id
	}
	id := r.nameOf(r.agg.Namer().Node(s))
	r.named[s] = id
	return id
}

func (r *nestRun) nameOf(name string) int32 {
	if id, ok := r.names[name]; ok {
		return id
	}
	id := r.nNames
	r.names[name] = id
	r.nNames++
	return id
}

// connections numbers the connections of the trace's flows, for
// T_opencalls: a connection is the pair of endpoints when both are known,
// else the pair of nodes. It returns, by flow id, the connection a call of
// the flow opens and the one a return of the flow answers (the reverse).
func (r *nestRun) connections() (callConn, retConn []uint32) {
	type conn struct {
		a, b   trace.Sym
		byNode bool
	}
	ids := make(map[conn]uint32)
	id := func(c conn) uint32 {
		v, ok := ids[c]
		if !ok {
			v = uint32(len(ids))
			ids[c] = v
		}
		return v
	}
	callConn = make([]uint32, len(r.flows))
	retConn = make([]uint32, len(r.flows))
	for i, f := range r.flows {
		if f.Src != 0 && f.Dst != 0 {
			callConn[i], retConn[i] = id(conn{f.Src, f.Dst, false}), id(conn{f.Dst, f.Src, false})
		} else {
			callConn[i], retConn[i] = id(conn{f.SrcNode, f.DstNode, true}), id(conn{f.DstNode, f.SrcNode, true})
		}
	}
	return callConn, retConn
}

// findCallPairs is FindCallPairs (section 5.1.1.1): it walks the messages in
// time order and matches every RETURN with the earliest unmatched CALL of
// the same connection and call id. Without call ids, or with ids that are
// not unique, this is the paper's earliest-unmatched heuristic. A call id
// that appears on one CALL and one RETURN of a connection pairs them
// whatever their timestamps say: a RETURN stamped before its CALL (clocks
// that disagree) is counted in returns_before_call, not dropped. Pairs are
// appended in the order of their returns.
func (r *nestRun) findCallPairs() {
	nm := r.tab.Len()
	c := &r.counter
	c.in = int64(nm)
	order := r.timeOrder()
	sc := &callScan{r: r, rankOf: map[int32]int32{}, pairOf: map[int32]int32{}}
	sc.callConn, sc.retConn = r.connections()
	sc.mate = r.uniqueMates(sc.callConn, sc.retConn)
	r.pairs = make([]callPair, 0, nm/2)
	if order == nil {
		for i := range nm {
			sc.visit(int32(i))
		}
	} else {
		for _, i := range order {
			sc.visit(i)
		}
	}
	c.pairs = int64(len(r.pairs))
	c.unmatchedCalls = c.calls - c.pairs
	r.nFull = int32(len(r.pairs))
	lat := r.latencies()
	r.openCalls(sc.byRank, sc.rankMsg, sc.shared, lat)
	r.nOpen = int32(len(r.pairs))
	r.lostCalls(sc.orphans, lat)
	r.orderByCall(sc.byRank)
}

// callScan is findCallPairs' state while it visits the messages in time
// order: T_opencalls, a FIFO of pending calls per connection and call id
// linked through pending, and what the later steps need of the calls
// visited.
type callScan struct {
	r                 *nestRun
	callConn, retConn []uint32
	open              openCalls
	pending           []pendingCall
	free              []int32
	// byRank[k] is the pair of the k-th call visited (-1 for calls never
	// returned): calls are visited in time order, so it gives the pairs in
	// order of call time.
	byRank, rankMsg, orphans []int32
	// shared[k]: the k-th call visited had no call id, or shared its
	// queue with another call of its connection and id: which of them a
	// lost return belonged to is not known, so none becomes an open call.
	shared []bool
	// mate pairs the calls with a unique id; for them, rankOf is the rank
	// of a CALL visited before its RETURN, pairOf the pair of a RETURN
	// visited before its CALL.
	mate           map[int32]int32
	rankOf, pairOf map[int32]int32
}

// pendingCall is a call waiting in T_opencalls for its return.
type pendingCall struct{ msg, next, rank int32 }

// visit takes message i, the next in time order.
func (sc *callScan) visit(i int32) {
	r, tab := sc.r, sc.r.tab
	if tab.Time(int(i)) == trace.NoTime {
		r.counter.noTime++
		return
	}
	fid := tab.FlowID(int(i))
	if j, ok := sc.mate[i]; ok {
		if r.flows[fid].Kind == trace.KindCall {
			sc.rankMsg = append(sc.rankMsg, i)
			sc.shared = append(sc.shared, false)
		}
		r.visitMate(i, j, &sc.byRank, sc.rankOf, sc.pairOf)
		return
	}
	switch r.flows[fid].Kind {
	case trace.KindCall:
		sc.call(i, fid)
	case trace.KindReturn:
		sc.ret(i, fid)
	default:
		r.counter.notRPC++
	}
}

// call queues CALL i, sent on flow fid, in T_opencalls.
func (sc *callScan) call(i int32, fid uint32) {
	tab := sc.r.tab
	sc.r.counter.calls++
	pd := pendingCall{msg: i, next: -1, rank: int32(len(sc.byRank))}
	sc.byRank = append(sc.byRank, -1)
	sc.rankMsg = append(sc.rankMsg, i)
	sc.shared = append(sc.shared, tab.CallID(int(i)) == 0)
	var slot int32
	if n := len(sc.free); n > 0 {
		slot = sc.free[n-1]
		sc.free = sc.free[:n-1]
		sc.pending[slot] = pd
	} else {
		slot = int32(len(sc.pending))
		sc.pending = append(sc.pending, pd)
	}
	q := sc.open.get(uint64(sc.callConn[fid])<<32 | uint64(tab.CallID(int(i))))
	if q.head < 0 {
		q.head, q.tail = slot, slot
		return
	}
	sc.pending[q.tail].next = slot
	q.tail = slot
	for k := q.head; k >= 0; k = sc.pending[k].next {
		sc.shared[sc.pending[k].rank] = true
	}
}

// ret pairs RETURN i, received on flow fid, with the oldest open call of
// its connection and call id.
func (sc *callScan) ret(i int32, fid uint32) {
	r, tab := sc.r, sc.r.tab
	r.counter.returns++
	k := uint64(sc.retConn[fid])<<32 | uint64(tab.CallID(int(i)))
	q := sc.open.find(k)
	if q == nil {
		r.counter.unmatchedReturns++
		if tab.CallID(int(i)) != 0 {
			sc.orphans = append(sc.orphans, i)
		}
		return
	}
	p := sc.pending[q.head]
	sc.free = append(sc.free, q.head)
	if p.next < 0 {
		sc.open.remove(k)
	} else {
		q.head = p.next
	}
	sc.byRank[p.rank] = int32(len(r.pairs))
	r.pairs = append(r.pairs, callPair{call: p.msg, ret: i, t1: r.msgTime(p.msg), t4: r.msgTime(i)})
}

// orderByCall sets byCall, the pairs in order of call time: byRank's
// returned calls, then the open and lost calls added after them, sorted in;
// calls at the same time, visited in message order, by pair index.
func (r *nestRun) orderByCall(byRank []int32) {
	r.byCall = slices.DeleteFunc(byRank, func(p int32) bool { return p < 0 })
	if r.nOpen < int32(len(r.pairs)) {
		for p := r.nOpen; p < int32(len(r.pairs)); p++ {
			r.byCall = append(r.byCall, p)
		}
		slices.SortStableFunc(r.byCall, func(a, b int32) int { return cmp.Compare(r.t1(a), r.t1(b)) })
	}
	for lo := 0; lo < len(r.byCall); {
		hi := lo + 1
		for hi < len(r.byCall) && r.t1(r.byCall[hi]) == r.t1(r.byCall[lo]) {
			hi++
		}
		if hi-lo > 1 {
			slices.Sort(r.byCall[lo:hi])
		}
		lo = hi
	}
}

// uniqueMates returns, for every CALL and RETURN with a timestamp whose
// connection and call id no other CALL or RETURN has, the other of the
// pair.
func (r *nestRun) uniqueMates(callConn, retConn []uint32) map[int32]int32 {
	tab := r.tab
	type seen struct {
		calls, rets int32
		call, ret   int32
	}
	keys := map[uint64]*seen{}
	for i := range tab.Len() {
		id := tab.CallID(i)
		if id == 0 || tab.Time(i) == trace.NoTime {
			continue
		}
		fid := tab.FlowID(i)
		var k uint64
		switch r.flows[fid].Kind {
		case trace.KindCall:
			k = uint64(callConn[fid])<<32 | uint64(id)
		case trace.KindReturn:
			k = uint64(retConn[fid])<<32 | uint64(id)
		default:
			continue
		}
		s := keys[k]
		if s == nil {
			s = &seen{call: -1, ret: -1}
			keys[k] = s
		}
		if r.flows[fid].Kind == trace.KindCall {
			s.calls++
			s.call = int32(i)
		} else {
			s.rets++
			s.ret = int32(i)
		}
	}
	mate := map[int32]int32{}
	for _, s := range keys {
		if s.calls == 1 && s.rets == 1 {
			mate[s.call], mate[s.ret] = s.ret, s.call
		}
	}
	return mate
}

// visitMate visits message i, paired by a unique id with j, in the walk
// of findCallPairs: the pair is made when its RETURN is visited (pairs are
// in return order) and takes its CALL's rank among the calls.
func (r *nestRun) visitMate(i, j int32, byRank *[]int32, rankOf, pairOf map[int32]int32) {
	c := &r.counter
	if r.flows[r.tab.FlowID(int(i))].Kind == trace.KindCall {
		c.calls++
		rank := int32(len(*byRank))
		*byRank = append(*byRank, -1)
		if p, ok := pairOf[i]; ok {
			(*byRank)[rank] = p
			delete(pairOf, i)
		} else {
			rankOf[i] = rank
		}
		return
	}
	c.returns++
	p := int32(len(r.pairs))
	r.pairs = append(r.pairs, callPair{call: j, ret: i, t1: r.msgTime(j), t4: r.msgTime(i)})
	if r.pairs[p].t4 < r.pairs[p].t1 {
		c.returnsBeforeCall++
	}
	if rank, ok := rankOf[j]; ok {
		(*byRank)[rank] = p
		delete(rankOf, j)
	} else {
		pairOf[j] = p
	}
}

// openQuantile is the quantile of the latencies of a caller-callee pair
// that bounds the time an open or lost call's children may fall in.
const openQuantile = 0.99

// latencyKey keys the latencies of the calls from caller to callee by
// their pattern-level names.
func (r *nestRun) latencyKey(caller, callee trace.Sym) uint64 {
	return uint64(r.nameID(caller))<<32 | uint64(r.nameID(callee))
}

// latencies returns, per latencyKey, the openQuantile and the median of
// the latencies of the matched calls.
func (r *nestRun) latencies() map[uint64][2]int64 {
	lat := make(map[uint64][]int64)
	for _, p := range r.pairs {
		f := r.tab.Flow(int(p.call))
		k := r.latencyKey(f.SrcNode, f.DstNode)
		lat[k] = append(lat[k], p.t4-p.t1)
	}
	out := make(map[uint64][2]int64, len(lat))
	q := func(v []int64, f float64) int64 { return v[int(math.Ceil(f*float64(len(v))))-1] }
	for k, v := range lat {
		slices.Sort(v)
		out[k] = [2]int64{q(v, openQuantile), q(v, 0.5)}
	}
	return out
}

// openCalls keeps the calls whose RETURN was not seen (a sniffer lost it,
// or the trace ends first) as open calls: pairs[nFull:], in order of call
// time, each an (A, B, t1, t1+L) where L is the openQuantile of the
// latencies of the matched calls between the same pattern-level nodes
// (none without such calls). As a parent an open call takes the children
// its callee made in that time, which would otherwise be nested in
// another request's call and spoil it; as a child it nests in the calls
// open when it was made (childT4). Only calls with a call id of their own
// qualify (shared). byRank is updated with their indices.
func (r *nestRun) openCalls(byRank, rankMsg []int32, shared []bool, lat map[uint64][2]int64) {
	for rank, p := range byRank {
		if p >= 0 || shared[rank] {
			continue
		}
		call := rankMsg[rank]
		f := r.tab.Flow(int(call))
		l, ok := lat[r.latencyKey(f.SrcNode, f.DstNode)]
		if !ok {
			continue
		}
		t1 := r.msgTime(call)
		byRank[rank] = int32(len(r.pairs))
		r.pairs = append(r.pairs, callPair{call: call, ret: -1, t1: t1, t4: t1 + l[0]})
	}
	r.counter.openCalls = int64(len(r.pairs)) - int64(r.nFull)
}

// lostCalls keeps the calls whose CALL was not seen, known by their
// RETURNs with a call id that answered no call (orphans), as lost calls:
// pairs[nOpen:], each an (A, B, t4-L, t4) with L the openQuantile of the
// latencies as for open calls (the scoreboard reads the call as sent a
// median latency before the return: sinkT1). A lost call is never a
// child and never in a call path: the calls nested in it, which its
// callee made for the request that lost the CALL and would otherwise be
// nested in another request's call, start call paths of their own
// (keepOut).
func (r *nestRun) lostCalls(orphans []int32, lat map[uint64][2]int64) {
	for _, ret := range orphans {
		f := r.tab.Flow(int(ret))
		l, ok := lat[r.latencyKey(f.DstNode, f.SrcNode)]
		if !ok {
			continue
		}
		t4 := r.msgTime(ret)
		r.pairs = append(r.pairs, callPair{call: -1, ret: ret, t1: t4 - l[0], t4: t4})
		r.sinkT1 = append(r.sinkT1, t4-l[1])
	}
	r.counter.lostCalls = int64(len(r.pairs)) - int64(r.nOpen)
}

// keepOut makes the calls nested in lost calls roots.
func (r *nestRun) keepOut() {
	for c, p := range r.parent {
		if p >= 0 && r.lost(p) {
			r.parent[c] = -1
			r.counter.keptOut++
		}
	}
}

// openCalls is T_opencalls: for each connection and call id (a key), the
// FIFO of its pending calls (head and tail in a list linked through the
// caller's array). It is an open-addressing table with linear probing
// and backward-shift deletion, small because calls are open only briefly.
type openCalls struct {
	slots []openSlot
	n     int
}

type openSlot struct {
	key        uint64
	head, tail int32 // head -1: empty slot
}

func openHash(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	return k
}

// find returns the slot of key k, or nil.
func (o *openCalls) find(k uint64) *openSlot {
	if len(o.slots) == 0 {
		return nil
	}
	mask := uint64(len(o.slots) - 1)
	for i := openHash(k) & mask; ; i = (i + 1) & mask {
		s := &o.slots[i]
		if s.head < 0 {
			return nil
		}
		if s.key == k {
			return s
		}
	}
}

// get returns the slot of key k, adding an empty FIFO (head -1) if it is
// not there.
func (o *openCalls) get(k uint64) *openSlot {
	if 2*(o.n+1) > len(o.slots) {
		old := o.slots
		o.slots = make([]openSlot, max(64, 2*len(old)))
		for i := range o.slots {
			o.slots[i].head = -1
		}
		o.n = 0
		for _, s := range old {
			if s.head >= 0 {
				*o.insert(s.key) = s
			}
		}
	}
	if s := o.find(k); s != nil {
		return s
	}
	s := o.insert(k)
	s.head = -1 // empty FIFO, until the caller fills it
	return s
}

// insert claims the first free slot of k's probe sequence.
func (o *openCalls) insert(k uint64) *openSlot {
	mask := uint64(len(o.slots) - 1)
	i := openHash(k) & mask
	for o.slots[i].head >= 0 {
		i = (i + 1) & mask
	}
	o.n++
	s := &o.slots[i]
	s.key = k
	return s
}

// remove deletes key k, which is present, shifting back the slots after
// it that probed past it.
func (o *openCalls) remove(k uint64) {
	mask := uint64(len(o.slots) - 1)
	i := openHash(k) & mask
	for o.slots[i].key != k || o.slots[i].head < 0 {
		i = (i + 1) & mask
	}
	o.n--
	for j := (i + 1) & mask; ; j = (j + 1) & mask {
		s := o.slots[j]
		if s.head < 0 {
			break
		}
		// move s back to i if its home is not in (i, j]
		if h := openHash(s.key) & mask; (j-h)&mask >= (j-i)&mask {
			o.slots[i] = s
			i = j
		}
	}
	o.slots[i].head = -1
}

// timeOrder returns the message indices in order of corrected time (ties by
// index), or nil when the trace is already in that order.
func (r *nestRun) timeOrder() []int32 {
	nm := r.tab.Len()
	sorted := true
	prev := int64(math.MinInt64)
	for i := range nm {
		if r.tab.Time(i) == trace.NoTime {
			continue
		}
		ts := r.msgTime(int32(i))
		if ts < prev {
			sorted = false
			break
		}
		prev = ts
	}
	if sorted {
		return nil
	}
	times := make([]int64, nm)
	order := make([]int32, nm)
	for i := range nm {
		order[i] = int32(i)
		if r.tab.Time(i) != trace.NoTime {
			times[i] = r.msgTime(int32(i))
		}
	}
	slices.SortStableFunc(order, func(a, b int32) int { return cmp.Compare(times[a], times[b]) })
	return order
}

// groupCSR lists pair indices by node: items[off[s]:off[s+1]] for node Sym s.
type groupCSR struct {
	off   []int32
	items []int32
}

func (g *groupCSR) of(s trace.Sym) []int32 {
	if int(s)+1 >= len(g.off) {
		return nil
	}
	return g.items[g.off[s]:g.off[s+1]]
}

// groupByNode groups the pairs by caller and by callee, in order of call
// time (ties by pair index).
func (r *nestRun) groupByNode() (byCaller, byCallee groupCSR) {
	kids := r.byCall
	if r.nOpen < int32(len(r.pairs)) {
		// lost calls are never children
		kids = slices.DeleteFunc(slices.Clone(kids), r.lost)
	}
	return r.group(kids, r.caller), r.group(r.byCall, r.callee)
}

// group lists pairs by node key, keeping their order in pairs.
func (r *nestRun) group(pairs []int32, key func(p int32) trace.Sym) groupCSR {
	n := r.tab.Syms.Len()
	g := groupCSR{off: make([]int32, n+1), items: make([]int32, len(pairs))}
	keys := make([]trace.Sym, len(pairs))
	for i, p := range pairs {
		keys[i] = key(p)
		g.off[keys[i]+1]++
	}
	for s := 1; s <= n; s++ {
		g.off[s] += g.off[s-1]
	}
	// fill with off[s] as the cursor of node s, then shift it back
	for i, p := range pairs {
		k := keys[i]
		g.items[g.off[k]] = p
		g.off[k]++
	}
	copy(g.off[1:], g.off[:n])
	g.off[0] = 0
	return g
}

// findCandidates finds every pair's candidate parents (section 5.1.1.1):
// the pairs (X, B, t1, t4) into the child's caller B with t1 < t2 + w and
// t4 > t3 - w, listed in order of t1. It sweeps each node's children in
// order of call time against its incoming calls, so its cost is the number
// of pairs times the per-node parallelism. It runs one node per worker, in
// two passes: count, then fill.
func (r *nestRun) findCandidates(ctx context.Context, byCaller, byCallee groupCSR) error {
	n := r.tab.Syms.Len()
	np := len(r.pairs)
	off := make([]int32, np+1)
	w := r.opt.SkewWindow
	// sweep calls emit(child, parent) for every candidate nesting of the
	// children of node s, children in order of call time.
	type open struct {
		p  int32
		t4 int64
	}
	sweep := func(s trace.Sym, emit func(c, p int32)) {
		parents := byCallee.of(s)
		var active []open
		pi := 0
		for _, c := range byCaller.of(s) {
			ct1, ct4 := r.t1(c), r.childT4(c)
			for pi < len(parents) && r.t1(parents[pi]) < ct1+w {
				active = append(active, open{parents[pi], r.t4(parents[pi])})
				pi++
			}
			k := 0
			for _, a := range active {
				if a.t4 > ct1-w {
					active[k] = a
					k++
				}
			}
			active = active[:k]
			for _, a := range active {
				if a.p != c && a.t4 > ct4-w {
					emit(c, a.p)
				}
			}
		}
	}
	swept := func(s int) bool {
		return len(byCaller.of(trace.Sym(s))) > 0 && len(byCallee.of(trace.Sym(s))) > 0
	}
	prog := r.startStep("candidates", 2*np)
	parallel.Each(n, r.workers, func(s int) {
		defer prog.add(len(byCaller.of(trace.Sym(s))))
		if !swept(s) {
			return
		}
		sweep(trace.Sym(s), func(c, p int32) { off[c+1]++ })
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	sum := int64(0)
	for i := 1; i <= np; i++ {
		sum += int64(off[i])
		if sum > math.MaxInt32 {
			return fmt.Errorf("more than %d candidate nestings: the trace's per-node parallelism is too high for the nesting engine", math.MaxInt32)
		}
		off[i] += off[i-1]
	}
	total := off[np]
	r.cand = make([]int32, total)
	r.candBin = make([]uint16, total)
	logBase := math.Log(r.opt.BinBase)
	// Fill with off[c] as child c's cursor (each child belongs to one
	// node, so workers never share one), then shift the offsets back.
	parallel.Each(n, r.workers, func(s int) {
		defer prog.add(len(byCaller.of(trace.Sym(s))))
		if !swept(s) {
			return
		}
		sweep(trace.Sym(s), func(c, p int32) {
			j := off[c]
			off[c]++
			r.cand[j] = p
			r.candBin[j] = uint16(r.bin(r.t1(c)-r.binT1(p), logBase))
		})
	})
	prog.end()
	copy(off[1:], off[:np])
	off[0] = 0
	r.candOff = off
	r.counter.candidates = int64(total)
	for c := 0; c < np; c++ {
		if off[c+1] > off[c] {
			r.counter.withCandidates++
		}
	}
	return ctx.Err()
}

// bin returns the scoreboard bin of a delay of d nanoseconds.
func (r *nestRun) bin(d int64, logBase float64) int {
	if d < r.opt.BinMin {
		return 0
	}
	k := int(math.Log(float64(d)/float64(r.opt.BinMin)) / logBase)
	if k >= r.opt.Bins {
		k = r.opt.Bins - 1
	}
	if k < 0 {
		k = 0
	}
	return k
}

// trip returns the scoreboard histogram of candidate j.
func (r *nestRun) trip(j int32) int {
	if r.candTrip32 != nil {
		return int(r.candTrip32[j])
	}
	return int(r.candTrip16[j])
}

// scoreNestings is ScoreNestings (section 5.1.1.2): every candidate nesting
// of child (B, C) in parent (A, B) adds 1/|parents| to bin(t2 - t1) of the
// (A, B, C) histogram. Nodes are keyed by their pattern-level names.
// Histograms are then optionally smoothed. Without smoothing only the
// bins some candidate falls in are kept (sparse: a cell per (histogram,
// bin) used, 12 bytes and a map entry while scoring); smoothing needs the
// dense histograms (Bins float64s each, 2.7 KB with the paper's 340), which
// a trace of many distinct node names makes by the hundred thousand.
func (r *nestRun) scoreNestings() {
	sparse := r.opt.Smooth == 0
	if !sparse {
		r.candTrip16 = make([]uint16, len(r.cand))
	} else {
		r.candCell = make([]int32, len(r.cand))
	}
	trips := make(map[uint64]int32)
	cells := make(map[uint64]int32)
	bins := r.opt.Bins
	for c := range r.pairs {
		lo, hi := r.candOff[c], r.candOff[c+1]
		if lo == hi {
			continue
		}
		bc := uint64(r.nameID(r.caller(int32(c))))<<21 | uint64(r.nameID(r.callee(int32(c))))
		wgt := 1 / float64(hi-lo)
		for j := lo; j < hi; j++ {
			key := uint64(r.nameID(r.caller(r.cand[j])))<<42 | bc
			tr, ok := trips[key]
			if !ok {
				tr = int32(len(trips))
				trips[key] = tr
			}
			if sparse {
				ck := uint64(tr)*uint64(bins) + uint64(r.candBin[j])
				cell, ok := cells[ck]
				if !ok {
					cell = int32(len(r.cell))
					cells[ck] = cell
					r.cell = append(r.cell, 0)
				}
				r.candCell[j] = cell
				r.cell[cell] += wgt
				continue
			}
			r.denseAdd(j, tr, ok, wgt)
		}
	}
	r.nTrips = len(trips)
	if r.keep && sparse {
		r.cellOf = cells
	}
	if r.opt.Smooth > 0 {
		smoothHistograms(r.hist, bins, r.opt.Smooth)
	}
}

// denseAdd adds wgt to candidate j's bin of dense histogram tr (made if
// not seen before).
func (r *nestRun) denseAdd(j int32, tr int32, seen bool, wgt float64) {
	bins := r.opt.Bins
	if !seen {
		r.hist = append(r.hist, make([]float64, bins)...)
		if tr == math.MaxUint16+1 {
			r.candTrip32 = make([]int32, len(r.cand))
			for i, v := range r.candTrip16[:j] {
				r.candTrip32[i] = int32(v)
			}
			r.candTrip16 = nil
		}
	}
	if r.candTrip32 != nil {
		r.candTrip32[j] = tr
	} else {
		r.candTrip16[j] = uint16(tr)
	}
	r.hist[int(tr)*bins+int(r.candBin[j])] += wgt
}

// score returns the scoreboard value of candidate j: its bin of its
// histogram.
func (r *nestRun) score(j int32) float64 {
	if r.candCell != nil {
		return r.cell[r.candCell[j]]
	}
	return r.hist[r.trip(j)*r.opt.Bins+int(r.candBin[j])]
}

// smoothHistograms convolves each histogram of h (consecutive runs of bins
// values) with a Gaussian of standard deviation sigma bins, truncated at
// four sigma and normalised to sum 1.
func smoothHistograms(h []float64, bins int, sigma float64) {
	kernel := smooth.Gaussian(sigma, 4)
	out := make([]float64, bins)
	for off := 0; off+bins <= len(h); off += bins {
		src := h[off : off+bins]
		smooth.Convolve(out, src, kernel)
		copy(src, out)
	}
}

// findNestedPairs is FindNestedPairs (section 5.1.1.3): for each call pair,
// in the order the returns were seen, it scores every candidate parent as
// scoreboard value times the three child penalties and picks the best,
// ties going to the earliest parent. Children of different nodes never
// share a parent, so nodes run in parallel.
func (r *nestRun) findNestedPairs(ctx context.Context, byCaller groupCSR) error {
	np := len(r.pairs)
	r.parent = make([]int32, np)
	for i := range r.parent {
		r.parent[i] = -1
	}
	// Per parent: its assigned children as a list in assignment order
	// (lastKid, prevKid) and, for the generic-child penalty, their count.
	lastKid := make([]int32, np)
	prevKid := make([]int32, np)
	for i := range lastKid {
		lastKid[i] = -1
	}
	x, y, z := r.opt.OverlapExp, r.opt.SameExp, r.opt.GenericExp
	var nKids []int32
	if z != 0 {
		nKids = make([]int32, np)
	}
	// Pre-resolve names used by the same-child penalty so that workers only
	// read r.named.
	if y != 0 {
		for i := range r.pairs {
			r.nameID(r.callee(int32(i)))
		}
	}
	prog := r.startStep("parents", np)
	defer prog.end()
	parallel.Each(r.tab.Syms.Len(), r.workers, func(s int) {
		defer prog.add(len(byCaller.of(trace.Sym(s))))
		for _, c := range byCaller.of(trace.Sym(s)) {
			lo, hi := r.candOff[c], r.candOff[c+1]
			if lo == hi {
				continue
			}
			ct1, ct4 := r.t1(c), r.childT4(c)
			var cn int32
			if y != 0 {
				cn = r.named[r.callee(c)]
			}
			best, bestScore := int32(-1), 0.0
			for j := lo; j < hi; j++ {
				p := r.cand[j]
				score := r.score(j)
				if x != 0 {
					// children of p overlapping c; p's children were assigned
					// in return order, open calls last, so scan back (past
					// the open calls) until one returned before c was called.
					over := 0
					for k := lastKid[p]; k >= 0; k = prevKid[k] {
						if k >= r.nFull {
							if ct1 < r.t1(k) && r.t1(k) < ct4 {
								over++
							}
							continue
						}
						if r.t4(k) <= ct1 {
							break
						}
						if r.t1(k) < ct4 {
							over++
						}
					}
					score *= penalty(over, x)
				}
				if y != 0 {
					same := 0
					for k := lastKid[p]; k >= 0; k = prevKid[k] {
						if r.named[r.callee(k)] == cn {
							same++
						}
					}
					score *= penalty(same, y)
				}
				if z != 0 {
					score *= penalty(int(nKids[p]), z)
				}
				if best < 0 || score > bestScore*(1+1e-12) {
					best, bestScore = p, score
				}
			}
			r.parent[c] = best
			prevKid[c] = lastKid[best]
			lastKid[best] = c
			if nKids != nil {
				nKids[best]++
			}
		}
	})
	return ctx.Err()
}

// stepProgress reports one step's progress to Options.Progress, from any
// worker, one call at a time, at most every progressEvery units. A nil
// *stepProgress (no Options.Progress) does nothing.
type stepProgress struct {
	fn          func(step string, done, total int)
	step        string
	mu          sync.Mutex
	done, total int
	last        int
}

// progressEvery is how many units go by between two progress reports.
const progressEvery = 1 << 14

// startStep starts reporting a step of total units.
func (r *nestRun) startStep(step string, total int) *stepProgress {
	if r.opt.Progress == nil {
		return nil
	}
	r.opt.Progress(step, 0, total)
	return &stepProgress{fn: r.opt.Progress, step: step, total: total}
}

// add records n more units done.
func (p *stepProgress) add(n int) {
	if p == nil || n == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = min(p.done+n, p.total)
	if p.done-p.last >= progressEvery || p.done == p.total {
		p.last = p.done
		p.fn(p.step, p.done, p.total)
	}
}

// end reports the step done, if the last report did not.
func (p *stepProgress) end() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last != p.total {
		p.done, p.last = p.total, p.total
		p.fn(p.step, p.total, p.total)
	}
}

// penalty is the factor a child penalty multiplies a score by when the
// parent already has count conflicting children: (1 + count)^-exp. Section
// 5.1.1.3 writes count^-exp; counting the candidate child itself keeps the
// factor finite (1) when there is no conflict and makes the first conflict
// already cost 2^-exp, which is what lets the overlapping-child penalty
// separate the two children of Figure 5.
func penalty(count int, exp float64) float64 {
	if count == 0 {
		return 1
	}
	if exp == 2 {
		f := float64(1 + count)
		return 1 / (f * f)
	}
	return math.Pow(float64(1+count), -exp)
}

// maxCallDepth bounds the depth of a call tree, so that walking one
// recursively cannot exhaust the stack on a pathological trace. A call
// nested deeper starts a call path of its own (counted in depth_cut).
const maxCallDepth = 1 << 14

// breakCycles makes sure the parent links form a forest of bounded depth.
// Without a skew window a parent strictly encloses its child in time, so
// links cannot form a cycle; with one, two calls in opposite directions
// that start and end within the window of each other can each be the
// other's parent. Such a cycle is cut at the pair where the walk found it,
// which becomes a root.
func (r *nestRun) breakCycles() {
	np := len(r.pairs)
	state := make([]uint8, np) // 0 new, 1 on the current walk, 2 done
	depth := make([]int32, np) // valid once done
	var walk []int32
	for i := 0; i < np; i++ {
		if state[i] != 0 {
			continue
		}
		walk = walk[:0]
		p := int32(i)
		for p >= 0 && state[p] == 0 {
			state[p] = 1
			walk = append(walk, p)
			p = r.parent[p]
		}
		if p >= 0 && state[p] == 1 {
			r.parent[p] = -1
			r.counter.cyclesBroken++
		}
		// assign depths from the top of the walk down
		for k := len(walk) - 1; k >= 0; k-- {
			q := walk[k]
			d := int32(0)
			if par := r.parent[q]; par >= 0 {
				d = depth[par] + 1
				if d >= maxCallDepth {
					r.parent[q] = -1
					r.counter.depthCut++
					d = 0
				}
			}
			depth[q] = d
			state[q] = 2
		}
	}
}
