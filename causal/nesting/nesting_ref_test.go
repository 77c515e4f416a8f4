package nesting

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/internal/enginetest"
	"github.com/wirepath/wirepath/trace"
)

// refNest is a slow, readable implementation of the nesting algorithm as
// Project 5 section 5.1 and docs/causal-nesting.md describe it. It scans
// everything it needs instead of indexing it, so it is quadratic; the fast
// engine must agree with it exactly.
type refNest struct {
	t      *trace.Trace
	opt    Options
	agg    *causal.Aggregator
	pairs  []refPair
	parent []int // chosen parent pair, -1 for roots
}

type refPair struct {
	call, ret      int // ret -1: an open call, its return unseen; call -1: a lost call, its call unseen
	t1, t4         int64
	binT1          int64 // the call time the scoreboard reads
	caller, callee trace.Sym
	kids           []int // assigned children, in assignment order
}

// childT4 is the pair's end as a child: an open call is the instant of
// its call.
func (p *refPair) childT4() int64 {
	if p.ret < 0 {
		return p.t1
	}
	return p.t4
}

func runRefNesting(t *trace.Trace, opt Options) *refNest {
	r := &refNest{t: t, opt: opt, agg: causal.NewAggregator(t, opt.Aggregate)}
	r.findCallPairs()
	cands := r.candidates()
	board := r.scoreboard(cands)
	r.choose(cands, board)
	r.breakCycles()
	return r
}

func (r *refNest) time(i int) int64 { return r.agg.CorrectedSend(&r.t.Messages[i]) }

// findCallPairs: a connection and call id held by exactly one CALL and
// one RETURN pairs them, whatever the times; otherwise, in time order,
// each RETURN takes the earliest open CALL of the same connection and call
// id. Pairs are listed in the order of their returns.
func (r *refNest) findCallPairs() {
	var order []int
	for i, m := range r.t.Messages {
		if m.SendTS.Known() || m.RecvTS.Known() {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(r.time(a), r.time(b)) })
	calls, rets := map[refOpenKey][]int{}, map[refOpenKey][]int{}
	for _, i := range order {
		m := &r.t.Messages[i]
		switch m.Kind {
		case trace.KindCall:
			calls[refCallKey(m)] = append(calls[refCallKey(m)], i)
		case trace.KindReturn:
			rets[refReturnKey(m)] = append(rets[refReturnKey(m)], i)
		}
	}
	// A call id on one CALL and one RETURN of a connection pairs them
	// whatever their timestamps say.
	unique := func(k refOpenKey) bool { return k.id != 0 && len(calls[k]) == 1 && len(rets[k]) == 1 }
	var open, orphans []int // CALL messages not yet matched, in time order; unmatched RETURNs with ids
	shared := map[int]bool{}
	for _, i := range order {
		m := &r.t.Messages[i]
		switch m.Kind {
		case trace.KindCall:
			if unique(refCallKey(m)) {
				continue
			}
			shared[i] = m.CallID == 0
			for _, c := range open {
				if refCallKey(&r.t.Messages[c]) == refCallKey(m) {
					shared[c], shared[i] = true, true
				}
			}
			open = append(open, i)
		case trace.KindReturn:
			if k := refReturnKey(m); unique(k) {
				c := calls[k][0]
				cm := &r.t.Messages[c]
				r.pairs = append(r.pairs, refPair{call: c, ret: i, t1: r.time(c), t4: r.time(i), binT1: r.time(c), caller: cm.SrcNode, callee: cm.DstNode})
				continue
			}
			j := slices.IndexFunc(open, func(c int) bool { return refCallKey(&r.t.Messages[c]) == refReturnKey(m) })
			if j < 0 {
				if m.CallID != 0 {
					orphans = append(orphans, i)
				}
				continue
			}
			c := open[j]
			cm := &r.t.Messages[c]
			r.pairs = append(r.pairs, refPair{call: c, ret: i, t1: r.time(c), t4: r.time(i), binT1: r.time(c), caller: cm.SrcNode, callee: cm.DstNode})
			open = slices.Delete(open, j, j+1)
		}
	}
	// Open calls: the calls never answered, with an id of their own, last,
	// in call order, each open for the 99th percentile of the latencies of
	// the matched calls between the same names.
	lat := map[string][]int64{}
	nameKey := func(a, b trace.Sym) string { return r.name(a) + "|" + r.name(b) }
	for _, p := range r.pairs {
		k := nameKey(p.caller, p.callee)
		lat[k] = append(lat[k], p.t4-p.t1)
	}
	quantile := func(ls []int64, q float64) int64 { return ls[int(math.Ceil(q*float64(len(ls))))-1] }
	for _, c := range open {
		cm := &r.t.Messages[c]
		ls := slices.Sorted(slices.Values(lat[nameKey(cm.SrcNode, cm.DstNode)]))
		if shared[c] || len(ls) == 0 {
			continue
		}
		r.pairs = append(r.pairs, refPair{call: c, ret: -1, t1: r.time(c), t4: r.time(c) + quantile(ls, 0.99), binT1: r.time(c), caller: cm.SrcNode, callee: cm.DstNode})
	}
	// Lost calls: the returns that answered nothing, with an id, last,
	// each open from its return back by the 99th percentile of the
	// latencies; the scoreboard reads its call as a median latency back.
	for _, i := range orphans {
		m := &r.t.Messages[i]
		ls := slices.Sorted(slices.Values(lat[nameKey(m.DstNode, m.SrcNode)]))
		if len(ls) == 0 {
			continue
		}
		t4 := r.time(i)
		r.pairs = append(r.pairs, refPair{call: -1, ret: i, t1: t4 - quantile(ls, 0.99), t4: t4, binT1: t4 - quantile(ls, 0.5), caller: m.DstNode, callee: m.SrcNode})
	}
}

// candidates lists, per pair, the pairs into its caller that enclose it
// (with the skew window), in order of their call times.
func (r *refNest) candidates() [][]int {
	w := r.opt.SkewWindow
	out := make([][]int, len(r.pairs))
	for c, cp := range r.pairs {
		if cp.call < 0 {
			continue // a lost call is never a child
		}
		for p, pp := range r.pairs {
			if p != c && pp.callee == cp.caller && pp.t1 < cp.t1+w && pp.t4 > cp.childT4()-w {
				out[c] = append(out[c], p)
			}
		}
		slices.SortStableFunc(out[c], func(a, b int) int { return cmp.Compare(r.pairs[a].t1, r.pairs[b].t1) })
	}
	return out
}

func (r *refNest) name(s trace.Sym) string { return r.agg.Namer().Node(s) }

func (r *refNest) binOf(d int64) int {
	if d < r.opt.BinMin {
		return 0
	}
	k := int(math.Floor(math.Log(float64(d)/float64(r.opt.BinMin)) / math.Log(r.opt.BinBase)))
	return max(0, min(k, r.opt.Bins-1))
}

func (r *refNest) key(p, c int) string {
	return fmt.Sprintf("%s|%s|%s", r.name(r.pairs[p].caller), r.name(r.pairs[c].caller), r.name(r.pairs[c].callee))
}

func (r *refNest) scoreboard(cands [][]int) map[string][]float64 {
	board := make(map[string][]float64)
	for c, ps := range cands {
		for _, p := range ps {
			k := r.key(p, c)
			if board[k] == nil {
				board[k] = make([]float64, r.opt.Bins)
			}
			board[k][r.binOf(r.pairs[c].t1-r.pairs[p].binT1)] += 1 / float64(len(ps))
		}
	}
	if s := r.opt.Smooth; s > 0 {
		half := int(math.Ceil(4 * s))
		norm := 0.0
		for d := -half; d <= half; d++ {
			norm += math.Exp(-float64(d*d) / (2 * s * s))
		}
		for k, h := range board {
			sm := make([]float64, len(h))
			for j := range sm {
				for i := max(0, j-half); i <= min(len(h)-1, j+half); i++ {
					d := float64(j - i)
					sm[j] += h[i] * math.Exp(-d*d/(2*s*s)) / norm
				}
			}
			board[k] = sm
		}
	}
	return board
}

// choose assigns each pair, in return order, to its best-scoring candidate.
func (r *refNest) choose(cands [][]int, board map[string][]float64) {
	r.parent = make([]int, len(r.pairs))
	for c := range r.pairs {
		r.parent[c] = -1
		cp := &r.pairs[c]
		best, bestScore := -1, 0.0
		for _, p := range cands[c] {
			score := board[r.key(p, c)][r.binOf(cp.t1-r.pairs[p].binT1)]
			over, same := 0, 0
			for _, k := range r.pairs[p].kids {
				kp := &r.pairs[k]
				if kp.t1 < cp.childT4() && cp.t1 < kp.childT4() {
					over++
				}
				if r.name(kp.callee) == r.name(cp.callee) {
					same++
				}
			}
			score *= math.Pow(float64(1+over), -r.opt.OverlapExp)
			score *= math.Pow(float64(1+same), -r.opt.SameExp)
			score *= math.Pow(float64(1+len(r.pairs[p].kids)), -r.opt.GenericExp)
			if best < 0 || score > bestScore*(1+1e-12) {
				best, bestScore = p, score
			}
		}
		if best >= 0 {
			r.parent[c] = best
			r.pairs[best].kids = append(r.pairs[best].kids, c)
		}
	}
	// What nested in a lost call starts a call path of its own.
	for c, p := range r.parent {
		if p >= 0 && r.pairs[p].call < 0 {
			r.parent[c] = -1
		}
	}
}

func (r *refNest) breakCycles() {
	done := make([]bool, len(r.pairs))
	for i := range r.pairs {
		onWalk := map[int]bool{}
		p := i
		for p >= 0 && !done[p] && !onWalk[p] {
			onWalk[p] = true
			p = r.parent[p]
		}
		if p >= 0 && onWalk[p] {
			r.parent[p] = -1
		}
		for q := range onWalk {
			done[q] = true
		}
	}
}

// patterns converts every call path to a tree of messages and aggregates
// them: each message's parent is the message with the latest (arrival,
// position) among those that reached the sender before it was sent.
func (r *refNest) patterns() []causal.Pattern {
	kids := make([][]int, len(r.pairs))
	var roots []int
	for c, p := range r.parent {
		if p >= 0 {
			kids[p] = append(kids[p], c)
		} else if r.pairs[c].call >= 0 {
			roots = append(roots, c)
		}
	}
	byCall := func(a, b int) int {
		if c := cmp.Compare(r.pairs[a].t1, r.pairs[b].t1); c != 0 {
			return c
		}
		return a - b
	}
	for _, ks := range kids {
		slices.SortFunc(ks, byCall)
	}
	slices.SortFunc(roots, byCall)
	recv := func(i int) int64 { return r.agg.CorrectedRecv(&r.t.Messages[i]) }
	for _, root := range roots {
		var nodes []causal.InstanceNode
		var emit func(p, parent int) int
		emit = func(p, parent int) int {
			pp := &r.pairs[p]
			call := len(nodes)
			nodes = append(nodes, causal.InstanceNode{Msg: int32(pp.call), Parent: int32(parent)})
			type in struct {
				t   int64
				idx int
			}
			var rets []in
			latestBefore := func(t int64) int {
				best := in{recv(pp.call), call}
				for _, x := range rets {
					if x.t < t && (x.t > best.t || x.t == best.t && x.idx > best.idx) {
						best = x
					}
				}
				return best.idx
			}
			for _, c := range kids[p] {
				ret := emit(c, latestBefore(r.pairs[c].t1))
				if ret >= 0 {
					rets = append(rets, in{recv(r.pairs[c].ret), ret})
				}
			}
			if pp.ret < 0 {
				return -1
			}
			par := latestBefore(pp.t4)
			nodes = append(nodes, causal.InstanceNode{Msg: int32(pp.ret), Parent: int32(par)})
			return len(nodes) - 1
		}
		emit(root, -1)
		if err := r.agg.Add(causal.Instance{Nodes: nodes, Prob: 1}); err != nil {
			panic(err)
		}
	}
	return r.agg.Patterns(r.opt.Rank)
}

// randomRPCTrace makes a messy trace: random calls between a few nodes at
// random times on a coarse clock (so that ties happen), some returns or
// calls dropped, some unknown messages, call ids unique, absent or reused.
func randomRPCTrace(rng *rand.Rand) *trace.Trace {
	t := &trace.Trace{}
	nodes := []string{"A", "B", "C", "D", "E"}[:3+rng.IntN(3)]
	idMode := rng.IntN(3) // 0 unique, 1 none, 2 from a small set
	useEP := rng.IntN(2) == 0
	n := 10 + rng.IntN(80)
	type ev struct {
		at   int64
		kind trace.Kind
		a, b string
		id   string
	}
	var evs []ev
	for i := 0; i < n; i++ {
		a := nodes[rng.IntN(len(nodes))]
		b := nodes[rng.IntN(len(nodes))]
		at := int64(rng.IntN(200)) * ms / 2
		dur := int64(1+rng.IntN(60)) * ms / 2
		id := fmt.Sprint(i)
		switch idMode {
		case 1:
			id = ""
		case 2:
			id = fmt.Sprint(rng.IntN(4))
		}
		if rng.IntN(12) != 0 {
			evs = append(evs, ev{at, trace.KindCall, a, b, id})
		}
		if rng.IntN(12) != 0 {
			evs = append(evs, ev{at + dur, trace.KindReturn, b, a, id})
		}
		if rng.IntN(15) == 0 {
			evs = append(evs, ev{at + 1, trace.KindUnknown, a, b, ""})
		}
	}
	if rng.IntN(2) == 0 {
		slices.SortStableFunc(evs, func(x, y ev) int { return cmp.Compare(x.at, y.at) })
	}
	for _, e := range evs {
		m := trace.Message{
			SendTS: trace.Timestamp(1e15 + e.at), RecvTS: trace.NoTime,
			SrcNode: t.Intern(e.a), DstNode: t.Intern(e.b), CallID: t.Intern(e.id), Kind: e.kind,
		}
		if rng.IntN(3) == 0 {
			m.RecvTS = m.SendTS + trace.Timestamp(rng.IntN(3))*trace.Timestamp(ms)/4
		}
		if useEP {
			if e.kind == trace.KindReturn {
				m.Src, m.Dst = t.Intern(e.a+":80"), t.Intern(e.b+":5000")
			} else {
				m.Src, m.Dst = t.Intern(e.a+":5000"), t.Intern(e.b+":80")
			}
		}
		t.Messages = append(t.Messages, m)
	}
	return t
}

func TestNestingMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 1))
	for i := 0; i < 300; i++ {
		tr := randomRPCTrace(rng)
		opt := DefaultOptions()
		opt.OverlapExp = []float64{0, 1, 2, 2}[rng.IntN(4)]
		opt.SameExp = []float64{0, 0, 1}[rng.IntN(3)]
		opt.GenericExp = []float64{0, 0, 0.5}[rng.IntN(3)]
		opt.Smooth = []float64{0, 0, 1.5}[rng.IntN(3)]
		opt.SkewWindow = []int64{0, 0, 3 * ms}[rng.IntN(3)]
		opt.Workers = 1 + rng.IntN(3)
		if rng.IntN(4) == 0 {
			opt.BinMin, opt.BinBase, opt.Bins = ms/10, 1.2, 50
		}
		name := fmt.Sprintf("case %d (%d messages, %+v)", i, len(tr.Messages), opt)

		ref := runRefNesting(tr, opt)
		fr, fast, err := mustNew(opt).run(bgCtx, tr)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(fr.pairs) != len(ref.pairs) {
			t.Fatalf("%s: %d pairs, reference %d", name, len(fr.pairs), len(ref.pairs))
		}
		// Both list pairs in return order.
		for j := range ref.pairs {
			if int(fr.pairs[j].call) != ref.pairs[j].call || int(fr.pairs[j].ret) != ref.pairs[j].ret {
				t.Fatalf("%s: pair %d is %d/%d, reference %d/%d", name, j, fr.pairs[j].call, fr.pairs[j].ret, ref.pairs[j].call, ref.pairs[j].ret)
			}
			if int(fr.parent[j]) != ref.parent[j] {
				t.Fatalf("%s: pair %d has parent %d, reference %d", name, j, fr.parent[j], ref.parent[j])
			}
		}
		want := ref.patterns()
		if len(fast.Patterns) != len(want) {
			t.Fatalf("%s: %d patterns, reference %d", name, len(fast.Patterns), len(want))
		}
		for j := range want {
			if fast.Patterns[j].Signature != want[j].Signature || fast.Patterns[j].Count != want[j].Count {
				t.Fatalf("%s: pattern %d is %s ×%d, reference %s ×%d", name, j,
					fast.Patterns[j].Signature, fast.Patterns[j].Count, want[j].Signature, want[j].Count)
			}
		}
		checkNestingBalance(t, fast.Result)
		paths := 0
		for _, cp := range fast.CallPaths {
			paths += cp.Count
		}
		if int64(paths) != enginetest.Count(fast.Result, "call_paths") {
			t.Fatalf("%s: call-path table holds %d paths, %d roots", name, paths, enginetest.Count(fast.Result, "call_paths"))
		}
	}
}

// refCallKey and refReturnKey are the connection and call id a CALL opens
// and a RETURN answers (docs/causal-nesting.md): both endpoints when
// known, else both nodes.
type refOpenKey struct {
	a, b, id trace.Sym
	byNode   bool
}

func refCallKey(m *trace.Message) refOpenKey {
	if m.Src != 0 && m.Dst != 0 {
		return refOpenKey{m.Src, m.Dst, m.CallID, false}
	}
	return refOpenKey{m.SrcNode, m.DstNode, m.CallID, true}
}

func refReturnKey(m *trace.Message) refOpenKey {
	if m.Src != 0 && m.Dst != 0 {
		return refOpenKey{m.Dst, m.Src, m.CallID, false}
	}
	return refOpenKey{m.DstNode, m.SrcNode, m.CallID, true}
}
