package linking

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/causal/internal/enginetest"
	"github.com/wirepath/wirepath/trace"
)

// rpcTruth is what linkRPCTrace knows about the trace it made.
type rpcTruth struct {
	mate   []int32 // each CALL's RETURN and each RETURN's CALL
	parent []int32 // each message's true parent, -1 for a root
	inst   []int32 // each message's request
}

// linkRPCTrace makes a random RPC trace with its truth: clients send
// requests to one of three servers, which call the others (serially or in
// parallel, nested up to three deep) before answering. Calls travel on
// connections that are reused when idle (keep-alive); withIDs gives them
// call ids. Every node's clock is off by up to an hour. lost is the
// fraction of receive timestamps lost.
func linkRPCTrace(seed uint64, requests int, withIDs bool, lost float64) (*trace.Trace, rpcTruth) {
	r := rand.New(rand.NewPCG(seed, 11))
	const ms = 1_000_000
	tr := &trace.Trace{}
	type gmsg struct {
		m      trace.Message
		parent int
		inst   int
		mate   int
	}
	var gen []gmsg
	offset := map[string]int64{}
	clock := func(node string) int64 {
		if _, ok := offset[node]; !ok {
			offset[node] = r.Int64N(7200_000*ms) - 3600_000*ms
		}
		return offset[node]
	}
	servers := []string{"S0", "S1", "S2", "S3"}
	// idle[caller+callee] lists connections free at a given time.
	type conn struct {
		port int
		free int64
	}
	idle := map[string][]conn{}
	nextPort := 40000
	ids := 0
	take := func(caller, callee string, at int64) int {
		k := caller + ">" + callee
		for i, c := range idle[k] {
			if c.free <= at && r.IntN(2) == 0 {
				idle[k] = slices.Delete(idle[k], i, i+1)
				return c.port
			}
		}
		nextPort++
		return nextPort
	}
	add := func(from, to string, send, recv int64, kind trace.Kind, srcEP, dstEP, id string, parent, inst int) int {
		m := trace.Message{
			SendTS: trace.Timestamp(send + clock(from)), RecvTS: trace.Timestamp(recv + clock(to)),
			Src: tr.Intern(srcEP), Dst: tr.Intern(dstEP), SrcNode: tr.Intern(from), DstNode: tr.Intern(to),
			Bytes: 100, Kind: kind,
		}
		if id != "" {
			m.CallID = tr.Intern(id)
		}
		if r.Float64() < lost {
			m.RecvTS = trace.NoTime
		}
		gen = append(gen, gmsg{m: m, parent: parent, inst: inst, mate: -1})
		return len(gen) - 1
	}
	// call makes caller call callee at time at, caused by message cause;
	// it returns the RETURN's index and its arrival time.
	var call func(caller, callee string, at int64, cause, inst, depth int) (int, int64)
	call = func(caller, callee string, at int64, cause, inst, depth int) (int, int64) {
		port := take(caller, callee, at)
		callerEP := fmt.Sprintf("%s:%d", caller, port)
		calleeEP := callee + ":80"
		id := ""
		if withIDs {
			ids++
			id = fmt.Sprint(ids)
		}
		arrive := at + 100_000 + r.Int64N(50_000)
		c := add(caller, callee, at, arrive, trace.KindCall, callerEP, calleeEP, id, cause, inst)
		last, t := c, arrive
		if depth < 3 {
			var others []string
			for _, s := range servers {
				if s != callee && s != caller {
					others = append(others, s)
				}
			}
			n := r.IntN(3)
			parallel := r.IntN(3) == 0
			start := t
			var ends []int64
			var rets []int
			for k := 0; k < n; k++ {
				from := t
				parent := last
				if parallel {
					from, parent = start, c
				}
				ret, back := call(callee, others[r.IntN(len(others))], from+int64(1+r.IntN(5))*ms, parent, inst, depth+1)
				if parallel {
					ends, rets = append(ends, back), append(rets, ret)
				} else {
					last, t = ret, back
				}
			}
			if parallel && n > 0 {
				// The answer follows the last answer to arrive.
				k := 0
				for i := range ends {
					if ends[i] > ends[k] {
						k = i
					}
				}
				last, t = rets[k], ends[k]
			}
		}
		send := t + int64(1+r.IntN(3))*ms
		back := send + 100_000 + r.Int64N(50_000)
		ret := add(callee, caller, send, back, trace.KindReturn, calleeEP, callerEP, id, last, inst)
		gen[c].mate, gen[ret].mate = ret, c
		k := caller + ">" + callee
		idle[k] = append(idle[k], conn{port, back})
		return ret, back
	}
	at := int64(0)
	for q := 0; q < requests; q++ {
		at += r.Int64N(15 * ms)
		client := fmt.Sprintf("C%d", r.IntN(30))
		call(client, servers[r.IntN(len(servers))], at, -1, q, 0)
	}
	// The trace in order of true send time.
	order := make([]int, len(gen))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return int(gen[a].m.SendTS-trace.Timestamp(clock(tr.Str(gen[a].m.SrcNode)))) - int(gen[b].m.SendTS-trace.Timestamp(clock(tr.Str(gen[b].m.SrcNode))))
	})
	pos := make([]int32, len(gen))
	for i, o := range order {
		pos[o] = int32(i)
	}
	truth := rpcTruth{mate: make([]int32, len(gen)), parent: make([]int32, len(gen)), inst: make([]int32, len(gen))}
	for i, o := range order {
		g := gen[o]
		tr.Messages = append(tr.Messages, g.m)
		truth.mate[i] = pos[g.mate]
		truth.parent[i] = -1
		if g.parent >= 0 {
			truth.parent[i] = pos[g.parent]
		}
		truth.inst[i] = int32(g.inst)
	}
	return tr, truth
}

// TestLinkingCallPairs checks that every RETURN is paired with its CALL,
// with and without call ids, on connections reused for several calls and
// with clocks an hour apart; with lost receive timestamps the pairs found
// must still be right.
func TestLinkingCallPairs(t *testing.T) {
	for _, tc := range []struct {
		ids  bool
		lost float64
	}{{true, 0}, {false, 0}, {true, 0.2}, {false, 0.2}} {
		for seed := uint64(1); seed <= 5; seed++ {
			tr, truth := linkRPCTrace(seed, 300, tc.ids, tc.lost)
			g := linkGraph(t, linkNewDefault(t, nil), tr)
			found, wrong := 0, 0
			for i, m := range g.mate {
				if m < 0 {
					continue
				}
				found++
				if m != truth.mate[i] {
					wrong++
				}
			}
			name := fmt.Sprintf("ids %v, lost %v, seed %d", tc.ids, tc.lost, seed)
			if wrong > 0 {
				t.Errorf("%s: %d of %d messages paired wrongly", name, wrong, found)
			}
			// Without losses every pair is found; with them, a pair is
			// lost only when the RETURN's clock did not see the CALL.
			if tc.lost == 0 && found != len(tr.Messages) {
				t.Errorf("%s: %d of %d messages paired", name, found, len(tr.Messages))
			}
			if tc.lost > 0 && found < len(tr.Messages)/2 {
				t.Errorf("%s: only %d of %d messages paired", name, found, len(tr.Messages))
			}
		}
	}
}

// TestLinkingCallFilter checks the possible parents that call-aware
// linking keeps: every message's true parent is among them, a paired
// RETURN is never spontaneous and can only have been caused by its CALL
// or by the answer to a call its sender made after the CALL arrived, and
// no CALL is linked to a CALL answered before the new call's answer came.
func TestLinkingCallFilter(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		tr, truth := linkRPCTrace(seed, 300, seed%2 == 0, 0)
		g := linkGraph(t, linkNewDefault(t, func(o *Options) { o.MinLinkProbability = 0 }), tr)
		msgs := tr.Messages
		for i := range msgs {
			ps := g.Parents(i)
			if p := truth.parent[i]; p >= 0 && !slices.ContainsFunc(ps, func(l Link) bool { return l.Msg == int(p) }) {
				t.Fatalf("seed %d: message %d's true parent %d is not a possible parent (%v)", seed, i, p, ps)
			}
			switch msgs[i].Kind {
			case trace.KindReturn:
				q := truth.mate[i]
				if g.Spontaneous(i) != 0 {
					t.Fatalf("seed %d: RETURN %d spontaneous with p %v", seed, i, g.Spontaneous(i))
				}
				for _, l := range ps {
					pm := &msgs[l.Msg]
					ok := l.Msg == int(q) ||
						pm.Kind == trace.KindReturn && msgs[truth.mate[l.Msg]].SendTS >= msgs[q].RecvTS
					if !ok {
						t.Fatalf("seed %d: RETURN %d (CALL %d) linked to %d", seed, i, q, l.Msg)
					}
				}
			case trace.KindCall:
				for _, l := range ps {
					if pm := &msgs[l.Msg]; pm.Kind == trace.KindCall && msgs[truth.mate[l.Msg]].SendTS < msgs[truth.mate[i]].RecvTS {
						t.Fatalf("seed %d: CALL %d linked to CALL %d, answered before its answer came", seed, i, l.Msg)
					}
				}
			}
		}
	}
}

// TestLinkingCallInstances checks the instances call-aware linking
// builds: parents before children, every CALL's RETURN in the CALL's
// subtree, and on these traces most requests found exactly.
func TestLinkingCallInstances(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		tr, truth := linkRPCTrace(seed, 400, true, 0)
		l := linkNewDefault(t, nil)
		g := linkGraph(t, l, tr)
		exact, roots := 0.0, map[int32]bool{}
		err := l.Paths(context.Background(), g, func(in causal.Instance) error {
			pos := map[int32]int{}
			for k, nd := range in.Nodes {
				if k > 0 && (nd.Parent < 0 || int(nd.Parent) >= k) {
					return fmt.Errorf("node %d's parent %d is not before it", k, nd.Parent)
				}
				pos[nd.Msg] = k
			}
			roots[in.Nodes[0].Msg] = true
			right := true
			for k, nd := range in.Nodes {
				m := nd.Msg
				if k > 0 && truth.parent[m] != in.Nodes[nd.Parent].Msg {
					right = false
				}
				if tr.Messages[m].Kind != trace.KindCall {
					continue
				}
				r, ok := pos[truth.mate[m]]
				if !ok {
					return fmt.Errorf("CALL %d without its RETURN %d", m, truth.mate[m])
				}
				for x := r; x != k; x = int(in.Nodes[x].Parent) {
					if x <= 0 {
						return fmt.Errorf("RETURN %d not under its CALL %d", truth.mate[m], m)
					}
				}
			}
			size := 0
			for _, v := range truth.inst {
				if v == truth.inst[in.Nodes[0].Msg] {
					size++
				}
			}
			if right && len(in.Nodes) == size {
				exact += in.Prob
			}
			return nil
		})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		// A third of the calls are parallel; when the first answer comes
		// before the last call leaves they are read as serial, so about
		// a quarter of the requests are not exact.
		if frac := exact / float64(len(roots)); frac < 0.6 {
			t.Errorf("seed %d: %.2f of the expected count on exact requests, want ≥ 0.6", seed, frac)
		} else {
			t.Logf("seed %d: %.2f of the expected count on exact requests", seed, frac)
		}
	}
}

// TestLinkingCallsNeedNoClockSync moves every node's clock by up to an
// hour on an RPC trace (without call ids, with lost timestamps, so that
// calls are paired by order on one clock or the other): linking links,
// builds and scores exactly as before, with WAP5's options and with the
// defaults. The trace is then sorted by the shifted times, as a capture
// would be, and the patterns must still be the same.
func TestLinkingCallsNeedNoClockSync(t *testing.T) {
	tr, _ := linkRPCTrace(3, 300, false, 0.1)
	skewed := linkShiftClocks(tr, time.Hour, 5)
	sorted := &trace.Trace{Syms: skewed.Syms, Messages: slices.Clone(skewed.Messages)}
	slices.SortStableFunc(sorted.Messages, func(a, b trace.Message) int { return cmp.Compare(a.Time(), b.Time()) })
	if slices.Equal(sorted.Messages, skewed.Messages) {
		t.Fatal("sorting by the shifted clocks did not reorder the trace")
	}
	for _, l := range []*Engine{linkNew(t, nil), linkNewDefault(t, nil)} {
		linkSameWithSkew(t, l, tr, skewed)
		a, err := l.Infer(context.Background(), tr)
		if err != nil {
			t.Fatal(err)
		}
		b, err := l.Infer(context.Background(), sorted)
		if err != nil {
			t.Fatal(err)
		}
		type sum struct {
			count          int
			expected, maxP float64
		}
		pats := func(r *causal.Result) map[string]sum {
			m := map[string]sum{}
			for _, p := range r.Patterns {
				m[p.Signature] = sum{p.Count, p.Expected, p.MaxProbability}
			}
			return m
		}
		pa, pb := pats(a), pats(b)
		if len(pa) != len(pb) {
			t.Fatalf("calls %v: %d patterns, %d in the reordered trace", l.Options().Calls, len(pa), len(pb))
		}
		for sig, x := range pa {
			y, ok := pb[sig]
			if !ok || x.count != y.count || !linkNear(x.expected, y.expected, 1e-6) || !linkNear(x.maxP, y.maxP, 1e-9) {
				t.Fatalf("calls %v: pattern %s: %+v, in the reordered trace %+v", l.Options().Calls, sig, x, y)
			}
		}
	}
}

// TestLinkingEmpiricalDelays is the case WAP5's exponential weights get
// wrong: B answers every fourth message X sends it 200 ms ± 10 ms later,
// while X's messages arrive every 40 ms on average, so the true cause is
// rarely the most recent arrival. The learnt delay model finds the delay
// and most causes (about one unrelated message arrives within the delay's
// spread, so no model gets them all); the exponential one always prefers
// the latest arrival.
func TestLinkingEmpiricalDelays(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	type ev struct {
		from, to string
		at       float64
		parent   int // index in evs, -1 for none
	}
	var evs []ev
	at := 0.0
	for k := 0; k < 3000; k++ {
		at += r.ExpFloat64() * 40
		evs = append(evs, ev{"X", "B", at, -1})
		if k%4 == 0 {
			evs = append(evs, ev{"B", "C", at + 200 + r.NormFloat64()*10, len(evs) - 1})
		}
	}
	order := make([]int, len(evs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(evs[a].at, evs[b].at) })
	pos := make([]int, len(evs))
	b := newLinkTB()
	for _, o := range order {
		pos[o] = b.msg(evs[o].from, evs[o].to, evs[o].at-0.1, evs[o].at)
	}
	right := func(l *Engine) float64 {
		g := linkGraph(t, l, b.t)
		ok, n := 0, 0
		for o, e := range evs {
			if e.parent < 0 {
				continue
			}
			n++
			if g.MostLikelyCause(pos[o]) == pos[e.parent] {
				ok++
			}
		}
		return float64(ok) / float64(n)
	}
	wap5, learnt := right(linkNew(t, nil)), right(linkNewDefault(t, nil))
	t.Logf("causes right: WAP5's exponential %.3f, learnt %.3f", wap5, learnt)
	if learnt < 0.5 {
		t.Errorf("the learnt delay model finds %.3f of the causes, want ≥ 0.5", learnt)
	}
	if wap5 > 0.1 {
		t.Errorf("WAP5's exponential finds %.3f of the causes: the case does not test what it should", wap5)
	}
}

// TestLinkingOrphanReturnsStayOut: a RETURN whose CALL a sniffer lost has
// no possible parent and starts an instance of its own; linked as a free
// message it joined another request's instance and spoiled that request
// too (issue 10, loss that stays local).
func TestLinkingOrphanReturnsStayOut(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		full, truth := linkRPCTrace(seed, 300, true, 0)
		// Lose every seventh CALL that is not a client's request.
		tr := &trace.Trace{Syms: full.Syms}
		var inst []int32
		var orphans []int
		lostCall := map[int32]bool{}
		for i, m := range full.Messages {
			if m.Kind == trace.KindCall && truth.parent[i] >= 0 && i%7 == 0 {
				lostCall[int32(i)] = true
				continue
			}
			if m.Kind == trace.KindReturn && lostCall[truth.mate[i]] {
				orphans = append(orphans, len(tr.Messages))
			}
			tr.Messages = append(tr.Messages, m)
			inst = append(inst, truth.inst[i])
		}
		l := linkNewDefault(t, nil)
		g := linkGraph(t, l, tr)
		for _, o := range orphans {
			if ps := g.Parents(o); len(ps) != 0 || g.Spontaneous(o) != 1 {
				t.Fatalf("seed %d: orphan RETURN %d has parents %v, spontaneous %v", seed, o, ps, g.Spontaneous(o))
			}
		}
		isOrphan := map[int32]bool{}
		for _, o := range orphans {
			isOrphan[int32(o)] = true
		}
		res, err := l.Infer(context.Background(), tr)
		if err != nil {
			t.Fatal(err)
		}
		if got := enginetest.Count(res, "orphan_returns"); got != int64(len(orphans)) {
			t.Errorf("seed %d: orphan_returns %d, want %d", seed, got, len(orphans))
		}
		err = l.Paths(context.Background(), g, func(in causal.Instance) error {
			for k, nd := range in.Nodes {
				if k > 0 && isOrphan[nd.Msg] {
					return fmt.Errorf("orphan RETURN %d (request %d) in the instance of request %d", nd.Msg, inst[nd.Msg], inst[in.Nodes[0].Msg])
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}
