package linking

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

// This file holds a slow, readable reference implementation of linking,
// written from the specification in docs/causal.md without the fast
// implementation's indexes, pruning arithmetic, undo logs or goroutines,
// and compares the two on seeded random traces.

// linkRef is the reference's link graph.
type linkRef struct {
	opt     Options
	msgs    []trace.Message
	mode    []uint8
	parents [][]Link // kept links, most recent parent first
	spont   []float64
	top     []int
	d       map[[3]int64]float64
}

type linkRefCand struct {
	j int
	t int64
}

// linkRefBuild runs steps 1 and 2 the slow way: every pair of messages is
// compared.
func linkRefBuild(t *trace.Trace, opt Options) *linkRef {
	msgs := t.Messages
	n := len(msgs)
	roles := trace.ClassifyRoles(t, opt.Aggregate.Naming.Roles)
	r := &linkRef{opt: opt, msgs: msgs, mode: make([]uint8, n), parents: make([][]Link, n),
		spont: make([]float64, n), top: make([]int, n), d: map[[3]int64]float64{}}
	for i, m := range msgs {
		r.top[i] = -1
		switch {
		case m.SrcNode == 0 || (!m.SendTS.Known() && (!m.RecvTS.Known() || m.DstNode == 0)):
			r.mode[i] = linkNone
		case opt.ClientRoots && roles.Client(m.SrcNode):
			r.mode[i] = linkClient
			r.spont[i] = 1
		case m.SendTS.Known():
			r.mode[i] = linkSender
		default:
			r.mode[i] = linkReceiver
		}
	}
	x := int64(opt.Window)
	// Possible parents within the window, most recent first.
	cands := make([][]linkRefCand, n)
	for i, m := range msgs {
		for j, p := range msgs {
			if j == i {
				continue
			}
			var at, pt int64
			switch {
			case r.mode[i] == linkSender && p.DstNode == m.SrcNode && p.RecvTS.Known():
				at, pt = int64(m.SendTS), int64(p.RecvTS)
			case r.mode[i] == linkReceiver && p.SrcNode == m.DstNode && p.DstNode == m.SrcNode && p.SendTS.Known():
				at, pt = int64(m.RecvTS), int64(p.SendTS)
			default:
				continue
			}
			if pt <= at && at-pt <= x {
				cands[i] = append(cands[i], linkRefCand{j, at - pt})
			}
		}
		slices.SortFunc(cands[i], func(a, b linkRefCand) int {
			if a.t != b.t {
				return int(a.t - b.t)
			}
			return b.j - a.j
		})
	}
	key := func(i int) [3]int64 {
		m := msgs[i]
		k := [3]int64{int64(m.SrcNode), int64(m.DstNode), 0}
		if r.mode[i] == linkReceiver {
			k[2] = 1
		}
		return k
	}
	linked := func(i int) bool { return r.mode[i] == linkSender || r.mode[i] == linkReceiver }
	// Step 1: the mean smallest preceding delay.
	sum, cnt := map[[3]int64]float64{}, map[[3]int64]float64{}
	for i := range msgs {
		if linked(i) && len(cands[i]) > 0 {
			sum[key(i)] += float64(cands[i][0].t)
			cnt[key(i)]++
		}
	}
	for k := range sum {
		r.d[k] = sum[k] / cnt[k]
	}
	y := opt.SpontaneousFactor
	// weigh returns the candidates of i that are not negligible, their
	// weights and the normalising sum.
	weigh := func(i int) ([]linkRefCand, []float64, float64) {
		d := math.Max(r.d[key(i)], 1)
		z := math.Exp(-y)
		var cs []linkRefCand
		var ws []float64
		for _, c := range cands[i] {
			if float64(c.t) > d*(y+30) {
				break
			}
			w := math.Exp(-float64(c.t) / d)
			cs, ws, z = append(cs, c), append(ws, w), z+w
		}
		return cs, ws, z
	}
	for it := 0; it < opt.Iterations; it++ {
		num, den := map[[3]int64]float64{}, map[[3]int64]float64{}
		for i := range msgs {
			if !linked(i) {
				continue
			}
			cs, ws, z := weigh(i)
			for k, c := range cs {
				num[key(i)] += ws[k] / z * float64(c.t)
				den[key(i)] += ws[k] / z
			}
		}
		for k := range den {
			if den[k] > 0 {
				r.d[k] = num[k] / den[k]
			}
		}
	}
	// Step 2.
	for i := range msgs {
		if !linked(i) {
			continue
		}
		cs, ws, z := weigh(i)
		if len(cs) == 0 {
			r.spont[i] = 1
			continue
		}
		r.spont[i] = math.Exp(-y) / z
		if ws[0] > math.Exp(-y) {
			r.top[i] = cs[0].j
		}
		for k, c := range cs {
			if p := ws[k] / z; p >= opt.MinLinkProbability || k == 0 {
				r.parents[i] = append(r.parents[i], Link{Msg: c.j, P: p})
			}
		}
	}
	return r
}

// kids returns the messages m may have caused, in trace order.
func (r *linkRef) kids(m int) []Link {
	var out []Link
	for c, ps := range r.parents {
		for _, p := range ps {
			if p.Msg == m {
				out = append(out, Link{Msg: c, P: p.P})
			}
		}
	}
	return out
}

type linkRefPending struct {
	node, child int
	p           float64
}

type linkRefState struct {
	nodes   []causal.InstanceNode
	queue   []linkRefPending
	in      map[int]bool
	omitted map[int]float64
}

func (s *linkRefState) clone() linkRefState {
	c := linkRefState{nodes: slices.Clone(s.nodes), queue: slices.Clone(s.queue), in: map[int]bool{}, omitted: map[int]float64{}}
	for k, v := range s.in {
		c.in[k] = v
	}
	for k, v := range s.omitted {
		c.omitted[k] = v
	}
	return c
}

func (r *linkRef) include(s *linkRefState, node, child int) {
	s.in[child] = true
	s.nodes = append(s.nodes, causal.InstanceNode{Msg: int32(child), Parent: int32(node)})
	for _, k := range r.kids(child) {
		s.queue = append(s.queue, linkRefPending{len(s.nodes) - 1, k.Msg, k.P})
	}
}

// instances runs step 3 the slow way: every try-both decision copies the
// whole state.
func (r *linkRef) instances() []linkInst {
	var out []linkInst
	for m := range r.msgs {
		if r.mode[m] == linkNone || !(r.spont[m] >= r.opt.TryBothLow || r.top[m] < 0) {
			continue
		}
		s := linkRefState{nodes: []causal.InstanceNode{{Msg: int32(m), Parent: -1}}, in: map[int]bool{m: true}, omitted: map[int]float64{}}
		for _, k := range r.kids(m) {
			s.queue = append(s.queue, linkRefPending{0, k.Msg, k.P})
		}
		r.explore(s, 0, r.spont[m], 0, &out)
	}
	return out
}

func (r *linkRef) explore(s linkRefState, qi int, prob float64, bits int, out *[]linkInst) {
	o := &r.opt
	for ; qi < len(s.queue); qi++ {
		l := s.queue[qi]
		if s.in[l.child] || len(s.nodes) >= o.MaxTreeSize {
			continue
		}
		pc := l.p
		if om := s.omitted[l.child]; om > 0 {
			pc = 1
			if 1-om > l.p {
				pc = l.p / (1 - om)
			}
		}
		top := r.top[l.child] == int(s.nodes[l.node].Msg)
		keep := func() { r.include(&s, l.node, l.child); prob *= pc }
		drop := func() { s.omitted[l.child] += l.p; prob *= 1 - pc }
		switch {
		case pc > o.TryBothHigh:
			keep()
		case pc >= o.TryBothLow || top:
			switch {
			case bits < o.TryBothBudget:
				inc := s.clone()
				r.include(&inc, l.node, l.child)
				r.explore(inc, qi+1, prob*pc, bits+1, out)
				drop()
				bits++
			case pc >= 0.5 || top:
				keep()
			default:
				drop()
			}
		default:
			drop()
		}
	}
	*out = append(*out, linkInst{slices.Clone(s.nodes), prob})
}

// linkRandomTrace makes a random trace of n messages among two clients
// (ephemeral ports only), three servers and an untraced server, with
// unsynchronised clocks, some lost timestamps, self-talk (some of it with
// no delay) and, for even seeds, timestamps on a coarse grid so that ties
// happen.
func linkRandomTrace(seed uint64, n int) (*trace.Trace, *rand.Rand) {
	r := rand.New(rand.NewPCG(seed, 42))
	tr := &trace.Trace{}
	type node struct {
		name     string
		port     int
		untraced bool
		clock    int64
	}
	nodes := []node{{"10.0.0.1", 0, false, 0}, {"10.0.0.2", 0, false, 0}, {"10.0.1.1", 80, false, 0},
		{"10.0.1.2", 5432, false, 0}, {"10.0.1.3", 8080, false, 0}, {"10.0.2.1", 53, true, 0}}
	for i := range nodes {
		nodes[i].clock = int64(r.IntN(2000)-1000) * linkMS
	}
	grid := int64(1)
	if seed%2 == 0 {
		grid = 100_000 // 0.1 ms
	}
	ep := func(nd node) string {
		if nd.port == 0 {
			return fmt.Sprintf("%s:%d", nd.name, 40000+r.IntN(5))
		}
		return fmt.Sprintf("%s:%d", nd.name, nd.port)
	}
	span := int64(n) * linkMS / 2
	for i := 0; i < n; i++ {
		a := nodes[r.IntN(len(nodes))]
		b := nodes[r.IntN(len(nodes))]
		if a.name == b.name && r.IntN(4) != 0 {
			b = nodes[(r.IntN(len(nodes)-1)+1+slices.IndexFunc(nodes, func(x node) bool { return x.name == a.name }))%len(nodes)]
		}
		send := r.Int64N(span)
		recv := send + 100_000 + r.Int64N(2*linkMS)
		if a.name == b.name && r.IntN(2) == 0 {
			recv = send // loopback on a coarse clock: a message could be its own parent
		}
		m := trace.Message{
			SendTS: trace.Timestamp((send + a.clock) / grid * grid), RecvTS: trace.Timestamp((recv + b.clock) / grid * grid),
			Src: tr.Intern(ep(a)), Dst: tr.Intern(ep(b)), SrcNode: tr.Intern(a.name), DstNode: tr.Intern(b.name),
			Bytes: 100, Proto: trace.ProtoTCP,
		}
		if a.untraced || r.IntN(30) == 0 {
			m.SendTS = trace.NoTime
		}
		if b.untraced || r.IntN(30) == 0 {
			m.RecvTS = trace.NoTime
		}
		if r.IntN(200) == 0 {
			m.SrcNode = 0
		}
		tr.Messages = append(tr.Messages, m)
	}
	return tr, r
}

// TestLinkingMatchesReference compares the fast implementation with the
// reference on random traces and option sets: the links, spontaneity and
// most likely causes of every message, the sequence of instances with
// their probabilities, with one and with two workers.
func TestLinkingMatchesReference(t *testing.T) {
	variants := []func(o *Options){
		func(o *Options) {},
		func(o *Options) { o.TryBothBudget = 0; o.Iterations = 2 },
		func(o *Options) { o.TryBothBudget = 6; o.ClientRoots = false; o.MinLinkProbability = 0.05 },
		func(o *Options) {
			o.MaxTreeSize = 5
			o.TryBothLow, o.TryBothHigh = 0.1, 0.9
			o.SpontaneousFactor = 2
		},
		func(o *Options) { o.Window = 3 * 1e6; o.Iterations = 1; o.TryBothBudget = 2 },
	}
	for seed := uint64(1); seed <= 12; seed++ {
		tr, _ := linkRandomTrace(seed, 160)
		for vi, mod := range variants {
			o := PureWAP5Options()
			o.Window = 20 * 1e6
			mod(&o)
			ref := linkRefBuild(tr, o)
			want := ref.instances()
			for _, w := range []int{1, 2} {
				o.Workers = w
				l, err := New(o)
				if err != nil {
					t.Fatal(err)
				}
				name := fmt.Sprintf("seed %d variant %d workers %d", seed, vi, w)
				g := linkGraph(t, l, tr)
				for i := range tr.Messages {
					got := g.Parents(i)
					slices.SortFunc(got, func(a, b Link) int { return a.Msg - b.Msg })
					exp := slices.Clone(ref.parents[i])
					slices.SortFunc(exp, func(a, b Link) int { return a.Msg - b.Msg })
					same := len(got) == len(exp)
					for k := 0; same && k < len(got); k++ {
						same = got[k].Msg == exp[k].Msg && linkNear(got[k].P, exp[k].P, 1e-9)
					}
					if !same || !linkNear(g.Spontaneous(i), ref.spont[i], 1e-9) || g.MostLikelyCause(i) != ref.top[i] {
						t.Fatalf("%s: message %d: parents %v spont %v top %d; reference %v %v %d",
							name, i, got, g.Spontaneous(i), g.MostLikelyCause(i), exp, ref.spont[i], ref.top[i])
					}
				}
				got := linkCollect(t, l, g)
				if len(got) != len(want) {
					t.Fatalf("%s: %d instances, reference %d", name, len(got), len(want))
				}
				for k := range got {
					if !slices.Equal(got[k].nodes, want[k].nodes) || !linkNear(got[k].p, want[k].p, 1e-9) {
						t.Fatalf("%s: instance %d = %v p %v, reference %v p %v", name, k, got[k].nodes, got[k].p, want[k].nodes, want[k].p)
					}
				}
			}
		}
	}
}

// TestLinkingWorkersAgree checks that the result does not depend on the
// number of workers, on a trace large enough to be split, with WAP5's
// options and the defaults (whose delay model sums the workers' shares).
func TestLinkingWorkersAgree(t *testing.T) {
	tr, _ := linkRandomTrace(7, 40000)
	for _, opt := range []struct {
		name string
		o    Options
	}{{"WAP5", PureWAP5Options()}, {"default", DefaultOptions()}} {
		var first *causal.Result
		for _, w := range []int{1, 3} {
			l := linkNewFrom(t, opt.o, func(o *Options) { o.Workers = w; o.Window = 5e6 })
			res, err := l.Infer(context.Background(), tr)
			if err != nil {
				t.Fatal(err)
			}
			if first == nil {
				first = res
				continue
			}
			if !reflect.DeepEqual(res, first) {
				t.Errorf("%s, workers %d: result differs from one worker's", opt.name, w)
			}
		}
		if len(first.Patterns) < 10 {
			t.Errorf("%s: only %d patterns: the trace does not exercise the engine", opt.name, len(first.Patterns))
		}
	}
}
