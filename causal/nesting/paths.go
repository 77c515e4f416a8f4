package nesting

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

// CallPath is one call-path pattern of the nesting engine in its native form
// (Project 5 section 5.1.1.4 and Figure 8): a tree of calls, each with the
// latency of the call and the delay from its parent's call.
type CallPath struct {
	Rank int `json:"rank"`
	// Signature is the call tree in the signature grammar: one hop per call
	// (caller->callee), children in order of mean call delay.
	Signature string `json:"signature"`
	// Count is the number of call paths of this shape.
	Count int `json:"count"`
	// Calls are the calls of the pattern, parents before children.
	Calls []CallHop `json:"calls"`
}

// CallHop is one call of a call-path pattern.
type CallHop struct {
	ID int `json:"id"`
	// Parent is the ID of the enclosing call, nil for the root.
	Parent     *int   `json:"parent"`
	From       string `json:"from"`
	To         string `json:"to"`
	ToEndpoint string `json:"to_endpoint,omitempty"`
	// Latency is the time from the call to its return (t4 - t1): the time
	// spent in To and in everything it called.
	Latency *causal.Dist `json:"latency_us"`
	// CallDelay is the time from the parent's call to this call (the
	// paper's call_delay); absent for the root.
	CallDelay *causal.Dist `json:"call_delay_us,omitempty"`
}

// findCallPaths is FindCallPaths (section 5.1.1.4): every pair without a
// parent roots a call path; the path is added to the call-path table and,
// converted into a tree of messages, to the Aggregator.
func (r *nestRun) findCallPaths(ctx context.Context) (*Result, error) {
	kidOff, kids, roots := r.childLists()
	if !r.keep {
		r.byCall = nil
	}
	r.counter.roots = int64(len(roots))

	// Every pair is in exactly one call path: two messages each.
	r.agg.Reserve(len(roots), 2*len(r.pairs))
	ct := newCallTable(r, kidOff, kids, len(roots))
	ib := nestInstances{r: r, kidOff: kidOff, kids: kids}
	prog := r.startStep("call paths", len(roots))
	for i, root := range roots {
		if i&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			prog.add(min(i, 1) * 1024) // the 1024 before this one
		}
		_ = r.agg.Add(ib.build(root)) // refusals are counted by the Aggregator
		ct.add(root)                  // reorders the tree's children: after build
	}
	prog.end()
	ct.kidOff, ct.kids = nil, nil
	paths, over := ct.paths(r.opt.Aggregate.MaxPatterns)
	if !r.keep {
		// what is left needs only the Aggregator's records
		r.pairs, r.parent = nil, nil
	}
	return &Result{Result: r.result(len(paths), over), CallPaths: paths}, nil
}

// childLists returns every pair's children (kids[kidOff[p]:kidOff[p+1]])
// and the roots, each in order of call time (ties by pair index); lost
// calls are no roots.
func (r *nestRun) childLists() (kidOff, kids, roots []int32) {
	np := len(r.pairs)
	kidOff = make([]int32, np+1)
	nRoots := 0
	for c, p := range r.parent {
		if p >= 0 {
			kidOff[p+1]++
		} else if !r.lost(int32(c)) {
			nRoots++
		}
	}
	for i := 1; i <= np; i++ {
		kidOff[i] += kidOff[i-1]
	}
	// Fill in order of call time, with kidOff[p] as the cursor of p's
	// children, then shift it back: every list comes out sorted, and so
	// do the roots.
	kids = make([]int32, kidOff[np])
	roots = make([]int32, 0, nRoots)
	for _, c := range r.byCall {
		if p := r.parent[c]; p >= 0 {
			kids[kidOff[p]] = c
			kidOff[p]++
		} else if !r.lost(c) {
			roots = append(roots, c)
		}
	}
	copy(kidOff[1:], kidOff[:np])
	kidOff[0] = 0
	return kidOff, kids, roots
}

// result is the engine's result once the call paths are aggregated: the
// patterns, the accounting and the warnings (nPaths call-path patterns
// kept, over the ones counted, not kept).
func (r *nestRun) result(nPaths int, over notKept) *causal.Result {
	res := &causal.Result{
		Version:  causal.ResultVersion,
		Engine:   Name,
		Params:   r.opt.Params(),
		Trace:    causal.Summarize(r.tab),
		Patterns: r.agg.Patterns(r.opt.Rank),
	}
	res.RequestTypes = r.agg.RequestTypes()
	c := &r.counter
	res.Accounting = []trace.Count{
		{Stage: Name, Name: "messages_in", Value: c.in},
		{Stage: Name, Name: "skipped_no_timestamp", Value: c.noTime},
		{Stage: Name, Name: "skipped_not_call_or_return", Value: c.notRPC},
		{Stage: Name, Name: "calls", Value: c.calls},
		{Stage: Name, Name: "returns", Value: c.returns},
		{Stage: Name, Name: "call_pairs", Value: c.pairs},
		{Stage: Name, Name: "unmatched_calls", Value: c.unmatchedCalls},
		{Stage: Name, Name: "unmatched_returns", Value: c.unmatchedReturns},
		{Stage: Name, Name: "returns_before_call", Value: c.returnsBeforeCall},
		{Stage: Name, Name: "open_calls", Value: c.openCalls},
		{Stage: Name, Name: "lost_calls", Value: c.lostCalls},
		{Stage: Name, Name: "kept_out_of_lost_calls", Value: c.keptOut},
		{Stage: Name, Name: "candidate_nestings", Value: c.candidates},
		{Stage: Name, Name: "pairs_with_candidates", Value: c.withCandidates},
		{Stage: Name, Name: "scoreboard_histograms", Value: int64(r.nTrips)},
		{Stage: Name, Name: "cycles_broken", Value: c.cyclesBroken},
		{Stage: Name, Name: "depth_cut", Value: c.depthCut},
		{Stage: Name, Name: "call_paths", Value: c.roots},
		{Stage: Name, Name: "instances_rejected", Value: int64(r.agg.Rejected())},
		{Stage: Name, Name: "patterns", Value: int64(len(res.Patterns))},
		{Stage: Name, Name: "call_path_patterns", Value: int64(nPaths)},
	}
	if c.returnsBeforeCall > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d returns are stamped before their calls (clocks disagree): paired by their call ids anyway", c.returnsBeforeCall))
	}
	_, found := r.agg.Len()
	if over.patterns > 0 || found > len(res.Patterns) {
		// Only with --max-patterns at work: the rest are counted.
		res.Accounting = append(res.Accounting,
			trace.Count{Stage: Name, Name: "patterns_not_kept", Value: int64(found - len(res.Patterns))},
			trace.Count{Stage: Name, Name: "call_path_patterns_not_kept", Value: int64(over.patterns)},
			trace.Count{Stage: Name, Name: "call_paths_not_kept", Value: int64(over.paths)})
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d call-path patterns (%d call paths, %d of them seen once) and %d message-tree patterns beyond --max-patterns %d were counted, not kept",
			over.patterns, over.paths, over.once, found-len(res.Patterns), r.opt.Aggregate.MaxPatterns))
	}
	if r.opt.Aggregate.RootTo > r.opt.Aggregate.RootFrom {
		res.Accounting = append(res.Accounting, trace.Count{Stage: Name, Name: "instances_outside_window", Value: int64(r.agg.Outside())})
	}
	if c.pairs == 0 && c.in > 0 {
		res.Warnings = append(res.Warnings, "no CALL was matched with a RETURN: the nesting engine needs messages marked CALL and RETURN")
	}
	return res
}

// nestInstances converts call paths into trees of messages. A call's
// message has as parent the latest message that arrived at the caller
// before the call was sent: the call into the caller that encloses it, or
// the return of an earlier sibling call. A return's parent is chosen the
// same way at the callee. Arrival is the corrected receive time (the send
// time when the receive was not seen).
type nestInstances struct {
	r            *nestRun
	kidOff, kids []int32
	nodes        []causal.InstanceNode
	heap         []arrival // pending sibling returns, one segment per level
}

type arrival struct {
	t   int64
	idx int32 // index in nodes
}

func (b *nestInstances) build(root int32) causal.Instance {
	b.nodes = b.nodes[:0]
	b.heap = b.heap[:0]
	b.emit(root, -1)
	return causal.Instance{Nodes: b.nodes, Prob: 1}
}

// emit appends pair p's subtree with p's call under node parent and returns
// the node index of p's return (-1 for an open call, which has none).
func (b *nestInstances) emit(p, parent int32) int32 {
	r := b.r
	pp := &r.pairs[p]
	callIdx := int32(len(b.nodes))
	b.nodes = append(b.nodes, causal.InstanceNode{Msg: pp.call, Parent: parent})
	latest := arrival{t: r.arrival(pp.call), idx: callIdx}
	base := len(b.heap)
	take := func(before int64) {
		for len(b.heap) > base && b.heap[base].t < before {
			a := b.heap[base]
			heapPop(&b.heap, base)
			if a.t > latest.t || a.t == latest.t && a.idx > latest.idx {
				latest = a
			}
		}
	}
	// The return's parent is the latest of the call and the children's
	// returns that arrived before it was sent. It is kept apart from
	// latest, which a child called after that (a skew window allows it)
	// moves on.
	t4 := r.t4(p)
	before := latest
	for _, c := range b.kids[b.kidOff[p]:b.kidOff[p+1]] {
		take(r.t1(c))
		ret := b.emit(c, latest.idx)
		if ret < 0 {
			continue
		}
		a := arrival{t: r.arrival(r.pairs[c].ret), idx: ret}
		heapPush(&b.heap, base, a)
		if a.t < t4 && (a.t > before.t || a.t == before.t && a.idx > before.idx) {
			before = a
		}
	}
	b.heap = b.heap[:base]
	if pp.ret < 0 {
		return -1 // an open call: its return was not seen
	}
	retIdx := int32(len(b.nodes))
	b.nodes = append(b.nodes, causal.InstanceNode{Msg: pp.ret, Parent: before.idx})
	return retIdx
}

// heapPush and heapPop keep h[base:] a binary min-heap by arrival time.
func heapPush(h *[]arrival, base int, a arrival) {
	*h = append(*h, a)
	s := (*h)[base:]
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if s[p].t <= s[i].t {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
}

func heapPop(h *[]arrival, base int) {
	s := (*h)[base:]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	*h = (*h)[:base+n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if l+1 < n && s[l+1].t < s[l].t {
			m = l + 1
		}
		if s[i].t <= s[m].t {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
}

// callTable aggregates call paths by shape (the paper's T_paths). It
// records the pairs of every call path, so that the distributions of the
// call-path table are computed exactly at the end.
type callTable struct {
	r            *nestRun
	kidOff, kids []int32
	patterns     map[uint64]int32 // shape -> index in pats
	pats         []callPat

	// The call paths added: the pairs of each in its pattern's canonical
	// pre-order, one after the other, and each one's pattern.
	arena   []int32
	pathPat []int32

	// scratch
	flat      []int32 // pairs of the current tree in canonical pre-order
	parentPos []int32 // position in flat of each one's parent
	shapes    []shapeOf
}

type shapeOf struct {
	h uint64
	p int32
}

type callPat struct {
	count int
	hops  []callHopLabel
}

type callHopLabel struct {
	from, to int32 // name ids
	ep       string
	parent   int32
}

func newCallTable(r *nestRun, kidOff, kids []int32, paths int) *callTable {
	return &callTable{
		r: r, kidOff: kidOff, kids: kids,
		patterns: make(map[uint64]int32),
		arena:    make([]int32, 0, len(r.pairs)),
		pathPat:  make([]int32, 0, paths),
	}
}

// shape returns the structural hash of p's call tree and sorts the
// children of every call in it into canonical order: by shape, then by call
// time.
func (ct *callTable) shape(p int32) uint64 {
	r := ct.r
	h := mix(mix(0xca11, uint64(r.nameID(r.caller(p)))), uint64(r.nameID(r.callee(p))))
	ks := ct.kids[ct.kidOff[p]:ct.kidOff[p+1]]
	base := len(ct.shapes)
	for _, c := range ks {
		sh := ct.shape(c)
		ct.shapes = append(ct.shapes, shapeOf{sh, c})
	}
	kid := ct.shapes[base:]
	if len(kid) > 1 {
		slices.SortFunc(kid, func(a, b shapeOf) int {
			if a.h != b.h {
				if a.h < b.h {
					return -1
				}
				return 1
			}
			if c := cmp.Compare(r.t1(a.p), r.t1(b.p)); c != 0 {
				return c
			}
			return int(a.p - b.p)
		})
	}
	for i, k := range kid {
		ks[i] = k.p
		h = mix(h, k.h)
	}
	ct.shapes = ct.shapes[:base]
	return mix(h, uint64(len(ks)))
}

// add adds the call path rooted at pair root. It reorders the children
// lists of the tree, so the tree's instance must be built first.
func (ct *callTable) add(root int32) {
	key := ct.shape(root)
	// Walk the tree in canonical pre-order, noting each call's parent
	// position.
	ct.flat = ct.flat[:0]
	ct.parentPos = ct.parentPos[:0]
	var walk func(p, parent int32)
	walk = func(p, parent int32) {
		pos := int32(len(ct.flat))
		ct.flat = append(ct.flat, p)
		ct.parentPos = append(ct.parentPos, parent)
		for _, c := range ct.kids[ct.kidOff[p]:ct.kidOff[p+1]] {
			walk(c, pos)
		}
	}
	walk(root, -1)
	r := ct.r
	pi, ok := ct.patterns[key]
	if !ok {
		pi = int32(len(ct.pats))
		hops := make([]callHopLabel, len(ct.flat))
		for i, p := range ct.flat {
			hops[i] = callHopLabel{
				from:   r.nameID(r.caller(p)),
				to:     r.nameID(r.callee(p)),
				ep:     r.agg.Namer().Endpoint(r.tab.Flow(int(r.pairs[p].call)).Dst),
				parent: ct.parentPos[i],
			}
		}
		ct.pats = append(ct.pats, callPat{hops: hops})
		ct.patterns[key] = pi
	}
	ct.pats[pi].count++
	ct.arena = append(ct.arena, ct.flat...)
	ct.pathPat = append(ct.pathPat, pi)
}

// notKept summarises the call-path patterns beyond the bound: how many,
// their call paths, and how many of those patterns were seen once.
type notKept struct{ patterns, paths, once int }

// keep returns the patterns kept under a bound of limit (0: all): the most
// frequent, ties by first seen, in pattern order; and what the others
// were. Only the kept ones are summarised (paths), so the memory of the
// table's result is bounded by limit however many names the trace has.
func (ct *callTable) keep(limit int) ([]int32, notKept) {
	idx := make([]int32, len(ct.pats))
	for i := range idx {
		idx[i] = int32(i)
	}
	var over notKept
	if limit <= 0 || len(idx) <= limit {
		return idx, over
	}
	slices.SortStableFunc(idx, func(a, b int32) int { return ct.pats[b].count - ct.pats[a].count })
	for _, pi := range idx[limit:] {
		over.patterns++
		over.paths += ct.pats[pi].count
		if ct.pats[pi].count == 1 {
			over.once++
		}
	}
	idx = idx[:limit]
	slices.Sort(idx)
	return idx, over
}

// paths returns the call-path patterns, most frequent first, with every
// call's children in order of mean call delay; at most limit of them (see
// keep). Distributions are exact.
func (ct *callTable) paths(limit int) ([]CallPath, notKept) {
	kept, over := ct.keep(limit)
	r := ct.r
	names := make([]string, r.nNames)
	for n, id := range r.names {
		names[id] = n
	}
	first, byPat := ct.byPattern()
	out := make([]CallPath, 0, len(kept))
	for _, pi := range kept {
		pat := &ct.pats[pi]
		h := ct.hopFigures(pat, byPat[first[pi]:first[pi+1]])
		h.sortChildren(pat, names)
		out = append(out, h.callPath(pat, names))
	}
	slices.SortStableFunc(out, func(a, b CallPath) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.Signature, b.Signature)
	})
	for i := range out {
		out[i].Rank = i + 1
	}
	return out, over
}

// byPattern groups the recorded paths by pattern: byPat[first[p]:first[p+1]]
// are the arena offsets of pattern p's paths.
func (ct *callTable) byPattern() (first, byPat []int32) {
	np := len(ct.pats)
	first = make([]int32, np+1)
	for _, pi := range ct.pathPat {
		first[pi+1]++
	}
	for i := 0; i < np; i++ {
		first[i+1] += first[i]
	}
	byPat = make([]int32, len(ct.pathPat))
	next := slices.Clone(first[:np])
	off := int32(0)
	for _, pi := range ct.pathPat {
		byPat[next[pi]] = off
		next[pi]++
		off += int32(len(ct.pats[pi].hops))
	}
	return first, byPat
}

// hopFigures are one call-path pattern's figures per hop: latency and
// call-delay distributions, the mean delay and each hop's children.
type hopFigures struct {
	latency, delay []*causal.Dist
	mean           []float64
	kids           [][]int
}

// hopFigures measures pattern pat's hops over its paths (their arena
// offsets).
func (ct *callTable) hopFigures(pat *callPat, paths []int32) hopFigures {
	r := ct.r
	hist := r.opt.Aggregate.Histograms
	n := len(pat.hops)
	f := hopFigures{latency: make([]*causal.Dist, n), delay: make([]*causal.Dist, n), mean: make([]float64, n), kids: make([][]int, n)}
	var vals []float64
	for i, h := range pat.hops {
		vals = vals[:0]
		for _, o := range paths {
			if p := ct.arena[o+int32(i)]; p < r.nFull {
				vals = append(vals, float64(r.t4(p)-r.t1(p))/1e3)
			}
		}
		f.latency[i] = causal.DistOf(vals, hist)
		if h.parent < 0 {
			continue
		}
		f.kids[h.parent] = append(f.kids[h.parent], i)
		vals = vals[:0]
		for _, o := range paths {
			p, par := ct.arena[o+int32(i)], ct.arena[o+h.parent]
			vals = append(vals, float64(r.t1(p)-r.t1(par))/1e3)
		}
		f.delay[i] = causal.DistOf(vals, hist)
		if f.delay[i] != nil {
			f.mean[i] = f.delay[i].Mean
		}
	}
	return f
}

// sortChildren orders every hop's children by mean call delay, then by
// callee name.
func (f hopFigures) sortChildren(pat *callPat, names []string) {
	for _, ks := range f.kids {
		slices.SortStableFunc(ks, func(a, b int) int {
			if c := cmp.Compare(f.mean[a], f.mean[b]); c != 0 {
				return c
			}
			return strings.Compare(names[pat.hops[a].to], names[pat.hops[b].to])
		})
	}
}

// callPath writes pattern pat as a CallPath, hops numbered depth first.
func (f hopFigures) callPath(pat *callPat, names []string) CallPath {
	n := len(pat.hops)
	cp := CallPath{Count: pat.count, Calls: make([]CallHop, 0, n)}
	newID := make([]int, n)
	var sig func(i int) *causal.SigNode
	sig = func(i int) *causal.SigNode {
		h := &pat.hops[i]
		id := len(cp.Calls)
		newID[i] = id
		hop := CallHop{
			ID:         id,
			From:       names[h.from],
			To:         names[h.to],
			ToEndpoint: h.ep,
			Latency:    f.latency[i],
			CallDelay:  f.delay[i],
		}
		if h.parent >= 0 {
			par := newID[h.parent]
			hop.Parent = &par
		}
		cp.Calls = append(cp.Calls, hop)
		s := &causal.SigNode{From: hop.From, To: hop.To}
		for _, k := range f.kids[i] {
			s.Children = append(s.Children, sig(k))
		}
		return s
	}
	cp.Signature = sig(0).String()
	return cp
}

// mix combines hash h with x (the Aggregator's mixing function): the
// structural hash of call trees.
func mix(h, x uint64) uint64 {
	h ^= x + 0x9e3779b97f4a7c15 + (h << 6) + (h >> 2)
	h ^= h >> 31
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	return h
}
