package causal

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/wirepath/wirepath/trace"
)

// NestingName is the nesting engine's name in results and on the command line.
const NestingName = "nesting"

// NestingOptions are the parameters of the nesting engine (Project 5
// section 5.1). DefaultNestingOptions gives the paper's defaults.
type NestingOptions struct {
	Options
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
}

// DefaultNestingOptions returns the paper's parameters: x = 2, y = z = 0, no
// smoothing, no skew window, 340 bins of log base 1.05 from 1 ms.
func DefaultNestingOptions() NestingOptions {
	return NestingOptions{
		Options:    DefaultOptions(),
		OverlapExp: 2,
		BinBase:    1.05,
		BinMin:     1e6,
		Bins:       340,
	}
}

// OptionError reports an engine option out of range. Option is the name of
// the options struct's field, so that a command can name its flag.
type OptionError struct {
	Option string
	Msg    string
}

// Error returns the message.
func (e *OptionError) Error() string { return e.Msg }

func optErr(option, msg string) error { return &OptionError{Option: option, Msg: msg} }

// Validate reports the first parameter out of range as an *OptionError.
func (o *NestingOptions) Validate() error {
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case !finite(o.OverlapExp):
		return optErr("OverlapExp", "the overlapping-child penalty exponent x must be a finite number")
	case !finite(o.SameExp):
		return optErr("SameExp", "the same-child penalty exponent y must be a finite number")
	case !finite(o.GenericExp):
		return optErr("GenericExp", "the generic-child penalty exponent z must be a finite number")
	case !(o.Smooth >= 0) || o.Smooth > 1000:
		return optErr("Smooth", "the smoothing sigma must be between 0 and 1000 bins")
	case o.SkewWindow < 0:
		return optErr("SkewWindow", "the skew window must not be negative")
	case !(o.BinBase > 1) || math.IsInf(o.BinBase, 0):
		return optErr("BinBase", "the bin base must be greater than 1")
	case o.BinMin <= 0:
		return optErr("BinMin", "the first bin's lower edge must be positive")
	case o.Bins < 1 || o.Bins > 1<<16:
		return optErr("Bins", "the number of bins must be between 1 and 65536")
	case o.Workers < 0:
		return optErr("Workers", "workers must not be negative")
	}
	return nil
}

// Params returns the parameters by flag name, for Result.Params.
func (o *NestingOptions) Params() map[string]any {
	return map[string]any{
		"x":           o.OverlapExp,
		"y":           o.SameExp,
		"z":           o.GenericExp,
		"smooth":      o.Smooth,
		"skew_window": fmt.Sprintf("%gms", float64(o.SkewWindow)/1e6),
		"bin_base":    o.BinBase,
		"bin_min":     fmt.Sprintf("%gms", float64(o.BinMin)/1e6),
		"bins":        o.Bins,
		"rank":        string(o.Rank),
	}
}

// Nesting is the nesting engine of Project 5 section 5.1. It pairs CALL and
// RETURN messages into call pairs, finds the call pairs each one is nested
// in, scores the candidate nestings with a scoreboard of delay histograms,
// picks one parent per call pair and aggregates the resulting call trees.
// Each call tree is also converted into a tree of messages for the
// Aggregator (see docs/causal-nesting.md). It uses one timestamp per message:
// the send time, or the receive time when the send was not seen, corrected
// by the trace's clock offsets.
type Nesting struct {
	opt NestingOptions
}

// NewNesting returns a nesting engine with the given options.
func NewNesting(opt NestingOptions) *Nesting { return &Nesting{opt: opt} }

// Name returns "nesting".
func (n *Nesting) Name() string { return NestingName }

// Infer runs the engine and returns its patterns (the message-tree form).
func (n *Nesting) Infer(ctx context.Context, t *trace.Trace) (*Result, error) {
	r, err := n.Run(ctx, t)
	if err != nil {
		return nil, err
	}
	return r.Result, nil
}

// NestingResult is the nesting engine's result: the common Result (patterns
// as trees of messages) and the engine's native call-path table. It
// marshals as the Result's fields plus "call_paths".
type NestingResult struct {
	*Result
	// CallPaths are the call-path patterns, most frequent first.
	CallPaths []CallPath `json:"call_paths"`
}

// callPair is one call matched with its return: call A->B sent at t1,
// return B->A sent at t4 (the paper's (A, B, t1, t4)).
type callPair struct {
	call, ret      int32 // message indices
	t1, t4         int64 // corrected times of the call and the return
	caller, callee trace.Sym
}

// nestRun holds the state of one run.
type nestRun struct {
	opt     NestingOptions
	src     source
	agg     *Aggregator
	workers int
	offsets []int64 // clock offset by node Sym

	named  []int32 // node Sym -> id of its pattern-level name, -1 = not computed
	names  map[string]int32
	nNames int32

	pairs []callPair

	// Candidate parents of each pair, as CSR: cand[candOff[c]:candOff[c+1]]
	// in order of the parents' call times, with the scoreboard bin of the
	// delay and the scoreboard histogram of each candidate nesting.
	candOff  []int32
	cand     []int32
	candBin  []uint16
	candTrip []int32

	hist    []float64 // scoreboard: len(trips) histograms of opt.Bins bins
	nTrips  int
	parent  []int32 // chosen parent pair, -1 for roots
	counter nestCounters
}

type nestCounters struct {
	in, noTime, notRPC, calls, returns, pairs       int64
	unmatchedCalls, unmatchedReturns                int64
	candidates, withCandidates, roots, cyclesBroken int64
	depthCut                                        int64
}

// Run runs the engine and returns the patterns and the call-path table.
func (n *Nesting) Run(ctx context.Context, t *trace.Trace) (*NestingResult, error) {
	_, res, err := n.run(ctx, t)
	return res, err
}

// RunTable is Run on a compact Table: the same results, in about half the
// memory of a Trace (the nest command reads its trace this way).
func (n *Nesting) RunTable(ctx context.Context, t *trace.Table) (*NestingResult, error) {
	_, res, err := n.runSource(ctx, tableSource(t))
	return res, err
}

// run is Run that also returns the run's state, for tests.
func (n *Nesting) run(ctx context.Context, t *trace.Trace) (*nestRun, *NestingResult, error) {
	return n.runSource(ctx, traceSource(t))
}

func (n *Nesting) runSource(ctx context.Context, src source) (*nestRun, *NestingResult, error) {
	if err := n.opt.Validate(); err != nil {
		return nil, nil, err
	}
	r := &nestRun{opt: n.opt, src: src, workers: workerCount(n.opt.Workers)}
	r.offsets = nodeOffsets(src.syms, src.meta)
	r.named = make([]int32, src.syms.Len())
	for i := range r.named {
		r.named[i] = -1
	}
	r.names = make(map[string]int32)
	// Classifying roles for the Aggregator's names takes a pass over the
	// trace; the first steps need no names, so it runs alongside them.
	aggReady := make(chan struct{})
	go func() {
		if src.tab != nil {
			r.agg = NewTableAggregator(src.tab, n.opt.Aggregate)
		} else {
			r.agg = NewAggregator(src.tr, n.opt.Aggregate)
		}
		close(aggReady)
	}()

	r.findCallPairs()
	byCaller, byCallee := r.groupByNode()
	err := r.findCandidates(ctx, byCaller, byCallee)
	<-aggReady
	if err != nil {
		return nil, nil, err
	}
	r.scoreNestings()
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if err := r.findNestedPairs(ctx, byCaller); err != nil {
		return nil, nil, err
	}
	r.cand, r.candBin, r.candTrip, r.candOff = nil, nil, nil, nil
	r.breakCycles()
	res, err := r.findCallPaths(ctx)
	if err != nil {
		return nil, nil, err
	}
	return r, res, nil
}

// nodeOffsets returns the known clock offsets of a trace's nodes by Sym.
func nodeOffsets(syms *trace.Symbols, meta *trace.Meta) []int64 {
	off := make([]int64, syms.Len())
	for _, o := range meta.Offsets {
		if s, ok := syms.Lookup(o.Node); ok && o.Known && int(s) < len(off) {
			off[s] = o.OffsetNS
		}
	}
	return off
}

// sendTime is m's one timestamp: its send time on the reference clock, or
// its receive time when the send was not seen (the Aggregator's
// CorrectedSend).
func (r *nestRun) sendTime(m *trace.Message) int64 {
	if m.SendTS.Known() {
		return int64(m.SendTS) - r.offsets[m.SrcNode]
	}
	return int64(m.RecvTS) - r.offsets[m.DstNode]
}

// recvTime is m's arrival on the reference clock, or its send time when
// the arrival was not seen (the Aggregator's CorrectedRecv).
func (r *nestRun) recvTime(m *trace.Message) int64 {
	if m.RecvTS.Known() {
		return int64(m.RecvTS) - r.offsets[m.DstNode]
	}
	return int64(m.SendTS) - r.offsets[m.SrcNode]
}

// recvTimeOf is recvTime of message i.
func (r *nestRun) recvTimeOf(i int32) int64 {
	m := r.src.at(i)
	return r.recvTime(&m)
}

// nameID returns the id of node s's pattern-level name (clients aggregated
// as the naming options say), so that the scoreboard and the call-path
// table key on what the patterns show.
func (r *nestRun) nameID(s trace.Sym) int32 {
	if int(s) >= len(r.named) {
		return r.nameOf(r.src.str(s))
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

// openKey indexes T_opencalls: the connection (both endpoints when known,
// else both nodes, marked by the low bit of the second word) and the call
// id, packed in two words so that the map hashes it fast.
type openKey [2]uint64

func makeKey(a, b, id trace.Sym, byNode bool) openKey {
	k := openKey{uint64(a)<<32 | uint64(b), uint64(id) << 1}
	if byNode {
		k[1] |= 1
	}
	return k
}

func callKey(m *trace.Message) openKey {
	if m.Src != 0 && m.Dst != 0 {
		return makeKey(m.Src, m.Dst, m.CallID, false)
	}
	return makeKey(m.SrcNode, m.DstNode, m.CallID, true)
}

func returnKey(m *trace.Message) openKey {
	if m.Src != 0 && m.Dst != 0 {
		return makeKey(m.Dst, m.Src, m.CallID, false)
	}
	return makeKey(m.DstNode, m.SrcNode, m.CallID, true)
}

// findCallPairs is FindCallPairs (section 5.1.1.1): it walks the messages in
// time order and matches every RETURN with the earliest unmatched CALL of
// the same connection and call id. Without call ids, or with ids that are
// not unique, this is the paper's earliest-unmatched heuristic. Pairs are
// appended in the order of their returns.
func (r *nestRun) findCallPairs() {
	nm := r.src.len()
	c := &r.counter
	c.in = int64(nm)
	order := r.timeOrder()
	type fifo struct{ head, tail int32 }
	open := make(map[openKey]fifo)
	// pending calls: a linked FIFO per key
	type pend struct {
		msg            int32
		next           int32
		t              int64
		caller, callee trace.Sym
	}
	var pending []pend
	var free []int32
	r.pairs = make([]callPair, 0, nm/2)
	visit := func(i int32) {
		m := r.src.at(i)
		if !m.SendTS.Known() && !m.RecvTS.Known() {
			c.noTime++
			return
		}
		switch m.Kind {
		case trace.KindCall:
			c.calls++
			pd := pend{msg: i, t: r.sendTime(&m), next: -1, caller: m.SrcNode, callee: m.DstNode}
			var slot int32
			if n := len(free); n > 0 {
				slot = free[n-1]
				free = free[:n-1]
				pending[slot] = pd
			} else {
				slot = int32(len(pending))
				pending = append(pending, pd)
			}
			k := callKey(&m)
			if q, ok := open[k]; ok {
				pending[q.tail].next = slot
				q.tail = slot
				open[k] = q
			} else {
				open[k] = fifo{slot, slot}
			}
		case trace.KindReturn:
			c.returns++
			k := returnKey(&m)
			q, ok := open[k]
			if !ok {
				c.unmatchedReturns++
				return
			}
			p := pending[q.head]
			free = append(free, q.head)
			if p.next < 0 {
				delete(open, k)
			} else {
				open[k] = fifo{p.next, q.tail}
			}
			r.pairs = append(r.pairs, callPair{
				call: p.msg, ret: i,
				t1: p.t, t4: r.sendTime(&m),
				caller: p.caller, callee: p.callee,
			})
		default:
			c.notRPC++
		}
	}
	if order == nil {
		for i := range nm {
			visit(int32(i))
		}
	} else {
		for _, i := range order {
			visit(i)
		}
	}
	c.pairs = int64(len(r.pairs))
	c.unmatchedCalls = c.calls - c.pairs
}

// timeOrder returns the message indices in order of corrected time (ties by
// index), or nil when the trace is already in that order.
func (r *nestRun) timeOrder() []int32 {
	nm := r.src.len()
	sorted := true
	prev := int64(math.MinInt64)
	for i := range nm {
		m := r.src.at(int32(i))
		if !m.SendTS.Known() && !m.RecvTS.Known() {
			continue
		}
		ts := r.sendTime(&m)
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
		m := r.src.at(int32(i))
		if m.SendTS.Known() || m.RecvTS.Known() {
			times[i] = r.sendTime(&m)
		}
	}
	slices.SortStableFunc(order, func(a, b int32) int { return cmpI64(times[a], times[b]) })
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

// groupByNode groups the pairs by caller (in return order) and by callee
// (in order of call time).
func (r *nestRun) groupByNode() (byCaller, byCallee groupCSR) {
	n := r.src.syms.Len()
	build := func(key func(p *callPair) trace.Sym) groupCSR {
		g := groupCSR{off: make([]int32, n+1), items: make([]int32, len(r.pairs))}
		for i := range r.pairs {
			g.off[key(&r.pairs[i])+1]++
		}
		for s := 1; s <= n; s++ {
			g.off[s] += g.off[s-1]
		}
		pos := slices.Clone(g.off[:n])
		for i := range r.pairs {
			k := key(&r.pairs[i])
			g.items[pos[k]] = int32(i)
			pos[k]++
		}
		return g
	}
	byCaller = build(func(p *callPair) trace.Sym { return p.caller })
	byCallee = build(func(p *callPair) trace.Sym { return p.callee })
	parallelNodes(r.workers, n, func(s int) {
		items := byCallee.of(trace.Sym(s))
		slices.SortStableFunc(items, func(a, b int32) int { return cmpI64(r.pairs[a].t1, r.pairs[b].t1) })
	})
	return byCaller, byCallee
}

// findCandidates finds every pair's candidate parents (section 5.1.1.1):
// the pairs (X, B, t1, t4) into the child's caller B with t1 < t2 + w and
// t4 > t3 - w, listed in order of t1. It sweeps each node's children in
// order of call time against its incoming calls, so its cost is the number
// of pairs times the per-node parallelism. It runs one node per worker, in
// two passes: count, then fill.
func (r *nestRun) findCandidates(ctx context.Context, byCaller, byCallee groupCSR) error {
	n := r.src.syms.Len()
	np := len(r.pairs)
	counts := make([]int32, np+1)
	w := r.opt.SkewWindow
	// sweep calls emit(child, parent) for every candidate nesting of the
	// children of node s, children in order of call time.
	sweep := func(s trace.Sym, byT2 []int32, emit func(c, p int32)) {
		parents := byCallee.of(s)
		if len(parents) == 0 {
			return
		}
		var active []int32
		pi := 0
		for _, c := range byT2 {
			cp := &r.pairs[c]
			for pi < len(parents) && r.pairs[parents[pi]].t1 < cp.t1+w {
				active = append(active, parents[pi])
				pi++
			}
			k := 0
			for _, p := range active {
				if r.pairs[p].t4 > cp.t1-w {
					active[k] = p
					k++
				}
			}
			active = active[:k]
			for _, p := range active {
				if p != c && r.pairs[p].t4 > cp.t4-w {
					emit(c, p)
				}
			}
		}
	}
	sortedChildren := make([][]int32, n)
	parallelNodes(r.workers, n, func(s int) {
		kids := byCaller.of(trace.Sym(s))
		if len(kids) == 0 || len(byCallee.of(trace.Sym(s))) == 0 {
			return
		}
		byT2 := slices.Clone(kids)
		slices.SortStableFunc(byT2, func(a, b int32) int { return cmpI64(r.pairs[a].t1, r.pairs[b].t1) })
		sortedChildren[s] = byT2
		sweep(trace.Sym(s), byT2, func(c, p int32) { counts[c+1]++ })
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	sum := int64(0)
	for i := 1; i <= np; i++ {
		sum += int64(counts[i])
		if sum > math.MaxInt32 {
			return fmt.Errorf("more than %d candidate nestings: the trace's per-node parallelism is too high for the nesting engine", math.MaxInt32)
		}
		counts[i] += counts[i-1]
	}
	total := counts[np]
	r.candOff = counts
	r.cand = make([]int32, total)
	r.candBin = make([]uint16, total)
	logBase := math.Log(r.opt.BinBase)
	fill := make([]int32, np)
	parallelNodes(r.workers, n, func(s int) {
		if sortedChildren[s] == nil {
			return
		}
		sweep(trace.Sym(s), sortedChildren[s], func(c, p int32) {
			j := r.candOff[c] + fill[c]
			fill[c]++
			r.cand[j] = p
			r.candBin[j] = uint16(r.bin(r.pairs[c].t1-r.pairs[p].t1, logBase))
		})
		sortedChildren[s] = nil
	})
	r.counter.candidates = int64(total)
	for c := 0; c < np; c++ {
		if r.candOff[c+1] > r.candOff[c] {
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

// scoreNestings is ScoreNestings (section 5.1.1.2): every candidate nesting
// of child (B, C) in parent (A, B) adds 1/|parents| to bin(t2 - t1) of the
// (A, B, C) histogram. Nodes are keyed by their pattern-level names.
// Histograms are then optionally smoothed.
func (r *nestRun) scoreNestings() {
	r.candTrip = make([]int32, len(r.cand))
	trips := make(map[uint64]int32)
	bins := r.opt.Bins
	for c := range r.pairs {
		lo, hi := r.candOff[c], r.candOff[c+1]
		if lo == hi {
			continue
		}
		cp := &r.pairs[c]
		bc := uint64(r.nameID(cp.caller))<<21 | uint64(r.nameID(cp.callee))
		wgt := 1 / float64(hi-lo)
		for j := lo; j < hi; j++ {
			key := uint64(r.nameID(r.pairs[r.cand[j]].caller))<<42 | bc
			tr, ok := trips[key]
			if !ok {
				tr = int32(len(trips))
				trips[key] = tr
				r.hist = append(r.hist, make([]float64, bins)...)
			}
			r.candTrip[j] = tr
			r.hist[int(tr)*bins+int(r.candBin[j])] += wgt
		}
	}
	r.nTrips = len(trips)
	if r.opt.Smooth > 0 {
		smoothHistograms(r.hist, bins, r.opt.Smooth)
	}
}

// smoothHistograms convolves each histogram of h (consecutive runs of bins
// values) with a Gaussian of standard deviation sigma bins, truncated at
// four sigma and normalised to sum 1.
func smoothHistograms(h []float64, bins int, sigma float64) {
	half := int(math.Ceil(4 * sigma))
	kernel := make([]float64, 2*half+1)
	sum := 0.0
	for i := range kernel {
		x := float64(i - half)
		kernel[i] = math.Exp(-x * x / (2 * sigma * sigma))
		sum += kernel[i]
	}
	for i := range kernel {
		kernel[i] /= sum
	}
	out := make([]float64, bins)
	for off := 0; off+bins <= len(h); off += bins {
		src := h[off : off+bins]
		clear(out)
		for i, v := range src {
			if v == 0 {
				continue
			}
			for k, kv := range kernel {
				j := i + k - half
				if j >= 0 && j < bins {
					out[j] += v * kv
				}
			}
		}
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
	// (lastKid, prevKid) and their count.
	lastKid := make([]int32, np)
	prevKid := make([]int32, np)
	nKids := make([]int32, np)
	for i := range lastKid {
		lastKid[i] = -1
	}
	x, y, z := r.opt.OverlapExp, r.opt.SameExp, r.opt.GenericExp
	// Pre-resolve names used by the same-child penalty so that workers only
	// read r.named.
	if y != 0 {
		for i := range r.pairs {
			r.nameID(r.pairs[i].callee)
		}
	}
	bins := r.opt.Bins
	parallelNodes(r.workers, r.src.syms.Len(), func(s int) {
		for _, c := range byCaller.of(trace.Sym(s)) {
			lo, hi := r.candOff[c], r.candOff[c+1]
			if lo == hi {
				continue
			}
			cp := &r.pairs[c]
			best, bestScore := int32(-1), 0.0
			for j := lo; j < hi; j++ {
				p := r.cand[j]
				score := r.hist[int(r.candTrip[j])*bins+int(r.candBin[j])]
				if x != 0 {
					// children of p overlapping c; p's children were assigned
					// in return order, so scan back until one returned
					// before c was called.
					over := 0
					for k := lastKid[p]; k >= 0; k = prevKid[k] {
						kp := &r.pairs[k]
						if kp.t4 <= cp.t1 {
							break
						}
						if kp.t1 < cp.t4 {
							over++
						}
					}
					score *= penalty(over, x)
				}
				if y != 0 {
					same := 0
					cn := r.named[cp.callee]
					for k := lastKid[p]; k >= 0; k = prevKid[k] {
						if r.named[r.pairs[k].callee] == cn {
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
			nKids[best]++
		}
	})
	return ctx.Err()
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
