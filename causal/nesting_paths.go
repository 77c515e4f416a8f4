package causal

import (
	"context"
	"slices"
	"strings"
	"sync"

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
	Latency *Dist `json:"latency_us"`
	// CallDelay is the time from the parent's call to this call (the
	// paper's call_delay); absent for the root.
	CallDelay *Dist `json:"call_delay_us,omitempty"`
}

// findCallPaths is FindCallPaths (section 5.1.1.4): every pair without a
// parent roots a call path; the path is added to the call-path table and,
// converted into a tree of messages, to the Aggregator.
func (r *nestRun) findCallPaths(ctx context.Context) (*NestingResult, error) {
	np := len(r.pairs)
	kidOff := make([]int32, np+1)
	nRoots := 0
	for _, p := range r.parent {
		if p >= 0 {
			kidOff[p+1]++
		} else {
			nRoots++
		}
	}
	for i := 1; i <= np; i++ {
		kidOff[i] += kidOff[i-1]
	}
	kids := make([]int32, kidOff[np])
	pos := slices.Clone(kidOff[:np])
	roots := make([]int32, 0, nRoots)
	for c, p := range r.parent {
		if p >= 0 {
			kids[pos[p]] = int32(c)
			pos[p]++
		} else {
			roots = append(roots, int32(c))
		}
	}
	pos = nil
	byCall := func(a, b int32) int {
		if c := cmpI64(r.pairs[a].t1, r.pairs[b].t1); c != 0 {
			return c
		}
		return int(a - b)
	}
	parallelNodes(r.workers, np, func(p int) {
		if ks := kids[kidOff[p]:kidOff[p+1]]; len(ks) > 1 {
			slices.SortFunc(ks, byCall)
		}
	})
	slices.SortFunc(roots, byCall)
	r.counter.roots = int64(len(roots))

	// The call-path table and the trace summary are built alongside the
	// trees of messages: they share only read-only data (names resolved
	// here, their own copy of the children lists).
	for i := range r.pairs {
		r.nameID(r.pairs[i].caller)
		r.nameID(r.pairs[i].callee)
	}
	ct := newCallTable(r, kidOff, slices.Clone(kids))
	for _, root := range roots {
		ct.resolveEndpoints(root)
	}
	var (
		wg      sync.WaitGroup
		paths   []CallPath
		summary TraceSummary
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		for _, root := range roots {
			ct.add(root)
		}
		paths = ct.paths()
	}()
	go func() {
		defer wg.Done()
		summary = r.src.summarize()
	}()
	ib := nestInstances{r: r, kidOff: kidOff, kids: kids}
	var err error
	for i, root := range roots {
		if i&1023 == 0 {
			if err = ctx.Err(); err != nil {
				break
			}
		}
		_ = r.agg.Add(ib.build(root)) // refusals are counted by the Aggregator
	}
	wg.Wait()
	if err != nil {
		return nil, err
	}
	res := &Result{
		Version:  ResultVersion,
		Engine:   NestingName,
		Params:   r.opt.Params(),
		Trace:    summary,
		Patterns: r.agg.Patterns(r.opt.Rank),
	}
	c := &r.counter
	res.Accounting = []trace.Count{
		{Stage: NestingName, Name: "messages_in", Value: c.in},
		{Stage: NestingName, Name: "skipped_no_timestamp", Value: c.noTime},
		{Stage: NestingName, Name: "skipped_not_call_or_return", Value: c.notRPC},
		{Stage: NestingName, Name: "calls", Value: c.calls},
		{Stage: NestingName, Name: "returns", Value: c.returns},
		{Stage: NestingName, Name: "call_pairs", Value: c.pairs},
		{Stage: NestingName, Name: "unmatched_calls", Value: c.unmatchedCalls},
		{Stage: NestingName, Name: "unmatched_returns", Value: c.unmatchedReturns},
		{Stage: NestingName, Name: "candidate_nestings", Value: c.candidates},
		{Stage: NestingName, Name: "pairs_with_candidates", Value: c.withCandidates},
		{Stage: NestingName, Name: "scoreboard_histograms", Value: int64(r.nTrips)},
		{Stage: NestingName, Name: "cycles_broken", Value: c.cyclesBroken},
		{Stage: NestingName, Name: "depth_cut", Value: c.depthCut},
		{Stage: NestingName, Name: "call_paths", Value: c.roots},
		{Stage: NestingName, Name: "instances_rejected", Value: int64(r.agg.Rejected())},
		{Stage: NestingName, Name: "patterns", Value: int64(len(res.Patterns))},
		{Stage: NestingName, Name: "call_path_patterns", Value: int64(len(paths))},
	}
	if c.pairs == 0 && c.in > 0 {
		res.Warnings = append(res.Warnings, "no CALL was matched with a RETURN: the nesting engine needs messages marked CALL and RETURN")
	}
	return &NestingResult{Result: res, CallPaths: paths}, nil
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
	nodes        []InstanceNode
	heap         []arrival // pending sibling returns, one segment per level
}

type arrival struct {
	t   int64
	idx int32 // index in nodes
}

func (b *nestInstances) build(root int32) Instance {
	b.nodes = b.nodes[:0]
	b.heap = b.heap[:0]
	b.emit(root, -1)
	return Instance{Nodes: b.nodes, Prob: 1}
}

// emit appends pair p's subtree with p's call under node parent and returns
// the node index of p's return.
func (b *nestInstances) emit(p, parent int32) int32 {
	r := b.r
	pp := &r.pairs[p]
	callIdx := int32(len(b.nodes))
	b.nodes = append(b.nodes, InstanceNode{Msg: pp.call, Parent: parent})
	latest := arrival{t: r.recvTimeOf(pp.call), idx: callIdx}
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
	for _, c := range b.kids[b.kidOff[p]:b.kidOff[p+1]] {
		take(r.pairs[c].t1)
		ret := b.emit(c, latest.idx)
		heapPush(&b.heap, base, arrival{t: r.recvTimeOf(r.pairs[c].ret), idx: ret})
	}
	take(pp.t4)
	b.heap = b.heap[:base]
	retIdx := int32(len(b.nodes))
	b.nodes = append(b.nodes, InstanceNode{Msg: pp.ret, Parent: latest.idx})
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

// callTable aggregates call paths by shape (the paper's T_paths).
type callTable struct {
	r            *nestRun
	kidOff, kids []int32
	patterns     map[uint64]*callPat
	order        []*callPat
	epNames      map[trace.Sym]int32
	eps          []string

	shapeOf []uint64 // by pair: the shape of its subtree

	// scratch
	flat      []int32 // pairs of the current tree in canonical pre-order
	parentPos []int32 // position in flat of each one's parent
}

type callPat struct {
	count int
	hops  []callAcc
}

type callAcc struct {
	from, to, ep int32
	parent       int32
	latency      DistBuilder
	delay        DistBuilder
}

func newCallTable(r *nestRun, kidOff, kids []int32) *callTable {
	return &callTable{
		r: r, kidOff: kidOff, kids: kids,
		patterns: make(map[uint64]*callPat),
		epNames:  make(map[trace.Sym]int32),
		shapeOf:  make([]uint64, len(r.pairs)),
	}
}

// resolveEndpoints names the receiving endpoints of the calls of the tree
// rooted at p, so that add does not need the Namer.
func (ct *callTable) resolveEndpoints(p int32) {
	m := ct.r.src.at(ct.r.pairs[p].call)
	s := m.Dst
	if _, ok := ct.epNames[s]; !ok {
		ct.epNames[s] = int32(len(ct.eps))
		ct.eps = append(ct.eps, ct.r.agg.Namer().Endpoint(s))
	}
	for _, c := range ct.kids[ct.kidOff[p]:ct.kidOff[p+1]] {
		ct.resolveEndpoints(c)
	}
}

func (ct *callTable) epID(s trace.Sym) int32 { return ct.epNames[s] }

// shape returns the structural hash of p's call tree and sorts the
// children of every call in it into canonical order: by shape, then by call
// time. The shapes of p's descendants are left in shapeOf.
func (ct *callTable) shape(p int32) uint64 {
	r := ct.r
	pp := &r.pairs[p]
	h := mix(mix(0xca11, uint64(r.nameID(pp.caller))), uint64(r.nameID(pp.callee)))
	ks := ct.kids[ct.kidOff[p]:ct.kidOff[p+1]]
	for _, c := range ks {
		ct.shapeOf[c] = ct.shape(c)
	}
	if len(ks) > 1 {
		slices.SortFunc(ks, func(a, b int32) int {
			if x, y := ct.shapeOf[a], ct.shapeOf[b]; x != y {
				if x < y {
					return -1
				}
				return 1
			}
			if c := cmpI64(r.pairs[a].t1, r.pairs[b].t1); c != 0 {
				return c
			}
			return int(a - b)
		})
	}
	for _, c := range ks {
		h = mix(h, ct.shapeOf[c])
	}
	return mix(h, uint64(len(ks)))
}

// add adds the call path rooted at pair root. It reorders the children
// lists of the tree, so the tree's instance must be built first.
func (ct *callTable) add(root int32) {
	key := ct.shape(root)
	pat := ct.patterns[key]
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
	if pat == nil {
		pat = &callPat{hops: make([]callAcc, len(ct.flat))}
		for i, p := range ct.flat {
			pp := &r.pairs[p]
			pat.hops[i] = callAcc{
				from:   r.nameID(pp.caller),
				to:     r.nameID(pp.callee),
				ep:     ct.epID(r.src.at(pp.call).Dst),
				parent: ct.parentPos[i],
			}
		}
		ct.patterns[key] = pat
		ct.order = append(ct.order, pat)
	}
	pat.count++
	for i, p := range ct.flat {
		pp := &r.pairs[p]
		h := &pat.hops[i]
		h.latency.Add(float64(pp.t4-pp.t1)/1e3, 1)
		if i > 0 {
			par := &r.pairs[ct.flat[ct.parentPos[i]]]
			h.delay.Add(float64(pp.t1-par.t1)/1e3, 1)
		}
	}
}

// paths returns the call-path patterns, most frequent first, with every
// call's children in order of mean call delay.
func (ct *callTable) paths() []CallPath {
	names := make([]string, ct.r.nNames)
	for n, id := range ct.r.names {
		names[id] = n
	}
	hist := ct.r.opt.Aggregate.Histograms
	out := make([]CallPath, 0, len(ct.order))
	for _, pat := range ct.order {
		n := len(pat.hops)
		kids := make([][]int, n)
		delay := make([]float64, n)
		for i := range pat.hops {
			delay[i] = pat.hops[i].delay.Mean()
			if p := pat.hops[i].parent; p >= 0 {
				kids[p] = append(kids[p], i)
			}
		}
		for _, ks := range kids {
			slices.SortStableFunc(ks, func(a, b int) int {
				if delay[a] != delay[b] {
					if delay[a] < delay[b] {
						return -1
					}
					return 1
				}
				return strings.Compare(names[pat.hops[a].to], names[pat.hops[b].to])
			})
		}
		cp := CallPath{Count: pat.count, Calls: make([]CallHop, 0, n)}
		newID := make([]int, n)
		var sig func(i int) *SigNode
		sig = func(i int) *SigNode {
			h := &pat.hops[i]
			id := len(cp.Calls)
			newID[i] = id
			hop := CallHop{
				ID:         id,
				From:       names[h.from],
				To:         names[h.to],
				ToEndpoint: ct.eps[h.ep],
				Latency:    h.latency.Dist(hist),
				CallDelay:  h.delay.Dist(hist),
			}
			if h.parent >= 0 {
				par := newID[h.parent]
				hop.Parent = &par
			}
			cp.Calls = append(cp.Calls, hop)
			s := &SigNode{From: hop.From, To: hop.To}
			for _, k := range kids[i] {
				s.Children = append(s.Children, sig(k))
			}
			return s
		}
		cp.Signature = sig(0).String()
		out = append(out, cp)
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
	return out
}
