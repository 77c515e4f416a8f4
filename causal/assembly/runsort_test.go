package assembly

import (
	"cmp"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/internal/runsort"
	"github.com/wirepath/wirepath/trace"
)

// intKey is a sort key with many ties on k, made total by i.
type intKey struct{ k, i int32 }

func (a *intKey) Less(b *intKey) bool { return a.k < b.k || a.k == b.k && a.i < b.i }

// TestSortRuns: the natural merge sort and the bucketed one give the
// order a comparison sort by the same key gives, whatever the input's
// shape.
func TestSortRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	shapes := []struct {
		name string
		key  func(i, n int) int32
	}{
		{"sorted", func(i, n int) int32 { return int32(i) }},
		{"reversed", func(i, n int) int32 { return int32(n - i) }},
		{"random", func(i, n int) int32 { return rng.Int32N(int32(n + 1)) }},
		{"ties", func(i, n int) int32 { return rng.Int32N(3) }},
		{"nearly sorted", func(i, n int) int32 { return int32(i) + rng.Int32N(5) }},
		{"sawtooth", func(i, n int) int32 { return int32(i % 7) }},
	}
	for _, sh := range shapes {
		for _, n := range []int{0, 1, 2, 3, 17, 1000} {
			s := make([]intKey, n)
			firsts := make([]uint32, n)
			class := make([]uint8, n)
			for i := range s {
				s[i] = intKey{sh.key(i, n), int32(n - i)} // i against the order
				firsts[i] = uint32(rng.IntN(4)) * 1000
				class[i] = uint8(rng.IntN(2))
			}
			want := slices.Clone(s)
			slices.SortFunc(want, func(a, b intKey) int { return cmp.Or(cmp.Compare(a.k, b.k), cmp.Compare(a.i, b.i)) })
			got, _ := runsort.Sort[intKey](slices.Clone(s), nil)
			if !slices.Equal(got, want) {
				t.Errorf("%s, %d: runsort.Sort gives %v, want %v", sh.name, n, got, want)
			}
			// Bucketed: the first key decides first.
			byFirst := make([]intKey, n)
			for i := range s {
				byFirst[i] = intKey{int32(firsts[i])*10_000 + s[i].k, s[i].i}
			}
			want = slices.Clone(byFirst)
			slices.SortFunc(want, func(a, b intKey) int { return cmp.Or(cmp.Compare(a.k, b.k), cmp.Compare(a.i, b.i)) })
			if got := bucketSort[intKey](byFirst, firsts, class); !slices.Equal(got, want) {
				t.Errorf("%s, %d: bucketSort gives %v, want %v", sh.name, n, got, want)
			}
		}
	}
}

// TestLoadSortsAsBefore: spreadTicks and pair give exactly what they gave
// with comparison sorts (refLoad): the same spread times and the same
// calls in the same order, with the same counters, on randomized traces
// with many ties and on generated ones with coarse timestamps.
func TestLoadSortsAsBefore(t *testing.T) {
	traces := map[string]*trace.Trace{
		"random fine":   randomTrace(1, 1),
		"random ms":     randomTrace(2, 1_000_000),
		"random 10ms":   randomTrace(3, 10_000_000),
		"generated":     generated(t, 1),
		"generated ms":  generated(t, 1_000_000),
		"generated 5ms": generated(t, 5_000_000),
	}
	for name, tr := range traces {
		for _, tol := range []int64{0, 2_000_000} {
			got, want := load(tr, tol, DefaultOptions().Aggregate.Naming), refLoad(tr, tol)
			if !slices.Equal(got.sendSp, want.sendSp) || !slices.Equal(got.recvSp, want.recvSp) || got.spacing != want.spacing {
				t.Errorf("%s: spread times differ", name)
			}
			if !reflect.DeepEqual(got.calls, want.calls) || got.cnt != want.cnt || !slices.Equal(got.nodeSym, want.nodeSym) {
				t.Errorf("%s, tolerance %d: calls differ (%d calls, want %d)", name, tol, len(got.calls), len(want.calls))
			}
		}
	}
}

// randomTrace returns messages among few nodes and connections, in time
// order with jitter, stamped at resolution res: many ties of every key.
func randomTrace(seed uint64, res int64) *trace.Trace {
	rng := rand.New(rand.NewPCG(seed, 7))
	tr := &trace.Trace{}
	var nodes, eps []trace.Sym
	for _, s := range []string{"a", "b", "c", "d"} {
		nodes = append(nodes, tr.Intern(s))
		eps = append(eps, tr.Intern(s+":1"), tr.Intern(s+":2"))
	}
	ids := []trace.Sym{0, tr.Intern("x"), tr.Intern("y")}
	ts := int64(1_000_000_000)
	for range 3000 {
		ts += rng.Int64N(400_000)
		s, d := rng.IntN(4), rng.IntN(4)
		m := trace.Message{
			SendTS: trace.Timestamp((ts + rng.Int64N(2_000_000)) / res * res), RecvTS: trace.Timestamp((ts + rng.Int64N(3_000_000)) / res * res),
			SrcNode: nodes[s], DstNode: nodes[d], Src: eps[2*s+rng.IntN(2)], Dst: eps[2*d+rng.IntN(2)],
			CallID: ids[rng.IntN(3)], Kind: trace.Kind(rng.IntN(3)),
		}
		m.Conn = uint32(rng.IntN(6)) * 3
		if rng.IntN(3) == 0 {
			m.Stream = uint64(rng.IntN(5))
		}
		if rng.IntN(3) == 0 {
			m.Seq = uint32(rng.IntN(5))
		}
		switch rng.IntN(20) {
		case 0:
			m.SendTS = trace.NoTime
		case 1:
			m.RecvTS = trace.NoTime
		case 2:
			m.Src = 0
		}
		tr.Messages = append(tr.Messages, m)
	}
	return tr
}

// generated returns Project 5's multi-tier system for 20 s, timestamps
// truncated to res.
func generated(t *testing.T, res int64) *trace.Trace {
	t.Helper()
	tr := multitierTrace(t, 20*time.Second)
	for i := range tr.Messages {
		m := &tr.Messages[i]
		if m.SendTS.Known() {
			m.SendTS = m.SendTS / trace.Timestamp(res) * trace.Timestamp(res)
		}
		if m.RecvTS.Known() {
			m.RecvTS = m.RecvTS / trace.Timestamp(res) * trace.Timestamp(res)
		}
	}
	return tr
}

// refLoad is load with the comparison sorts spreadTicks and pair had.
func refLoad(ms trace.Messages, tol int64) *loader {
	l := &loader{
		msgs:    trace.MessageSlice(ms),
		syms:    ms.Symbols(),
		offsets: causal.NodeOffsets(ms),
		tol:     tol,
		nodeOf:  make(map[trace.Sym]int32),
	}
	l.cnt.messages = int64(len(l.msgs))
	l.res = resolution(l.msgs)
	l.inferKinds(ms, DefaultOptions().Aggregate.Naming)
	l.sendSp, l.recvSp, l.spacing = refSpreadTicks(l.msgs, l.res)
	refPair(l)
	return l
}

// refSpreadTicks is spreadTicks with its comparison sort.
func refSpreadTicks(msgs []trace.Message, res int64) (send, recv []int64, spacing int64) {
	if res < spreadMinRes {
		return nil, nil, 0
	}
	arrival := arrivalEstimates(msgs, res)
	send = make([]int64, len(msgs))
	recv = make([]int64, len(msgs))
	evs := make([]tickEvent, 0, 2*len(msgs))
	for i := range msgs {
		m := &msgs[i]
		send[i], recv[i] = int64(m.SendTS), int64(m.RecvTS)
		if m.SendTS.Known() {
			evs = append(evs, tickEvent{int32(i), m.SrcNode, false, int64(m.SendTS), int64(i)})
		}
		if m.RecvTS.Known() {
			evs = append(evs, tickEvent{int32(i), m.DstNode, true, int64(m.RecvTS), arrival[i]})
		}
	}
	slices.SortFunc(evs, func(a, b tickEvent) int {
		return cmp.Or(cmp.Compare(a.node, b.node), cmp.Compare(a.tick, b.tick),
			-cmpBool(a.recv, b.recv), cmp.Compare(a.key, b.key), cmp.Compare(a.msg, b.msg))
	})
	most := 1
	for lo := 0; lo < len(evs); {
		hi := lo + 1
		for hi < len(evs) && evs[hi].node == evs[lo].node && evs[hi].tick == evs[lo].tick {
			hi++
		}
		n := int64(hi - lo)
		most = max(most, hi-lo)
		for j, e := range evs[lo:hi] {
			t := e.tick + res*int64(j+1)/(n+1)
			if e.recv {
				recv[e.msg] = t
			} else {
				send[e.msg] = t
			}
		}
		lo = hi
	}
	return send, recv, max(res/int64(most+1), 1)
}

// refPair is pair with its comparison sorts.
func refPair(l *loader) {
	n := len(l.msgs)
	keys := make([]pairKey, n)
	ts := make([]int64, n)
	idx := make([]int32, 0, n)
	for i := range n {
		i32 := int32(i)
		ts[i] = l.calleeTime(i32)
		if ts[i] == noTime {
			l.cnt.noTime++
			continue
		}
		switch l.kinds[i] {
		case trace.KindCall:
			l.cnt.calls++
		case trace.KindReturn:
			l.cnt.returns++
		default:
			l.cnt.oneWay++
			l.addCall(i32, -1, pairedNone)
			l.calls[len(l.calls)-1].flags |= flagOneWay
			continue
		}
		keys[i] = l.keyOf(i32)
		idx = append(idx, i32)
	}
	slices.SortFunc(idx, func(a, b int32) int {
		if c := cmpKey(&keys[a], &keys[b]); c != 0 {
			return c
		}
		if c := cmp.Compare(ts[a], ts[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	var cs, rs []int32
	for lo := 0; lo < len(idx); {
		hi := lo + 1
		for hi < len(idx) && cmpKey(&keys[idx[lo]], &keys[idx[hi]]) == 0 {
			hi++
		}
		cs, rs = cs[:0], rs[:0]
		for _, i := range idx[lo:hi] {
			if l.kinds[i] == trace.KindCall {
				cs = append(cs, i)
			} else {
				rs = append(rs, i)
			}
		}
		l.pairGroup(cs, rs, ts, keys[idx[lo]].idType)
		lo = hi
	}
	first := func(c *call) int32 {
		if c.callMsg >= 0 {
			return c.callMsg
		}
		return c.retMsg
	}
	slices.SortFunc(l.calls, func(a, b call) int {
		if c := cmp.Compare(a.start(), b.start()); c != 0 {
			return c
		}
		return cmp.Compare(first(&a), first(&b))
	})
}

// TestRanks: a key's rank among the distinct keys, whether they are small
// enough to index a table by or not.
func TestRanks(t *testing.T) {
	for _, c := range []struct {
		keys []uint32
		want []int32
		n    int
	}{
		{nil, []int32{}, 0},
		{[]uint32{5, 3, 5, 9}, []int32{1, 0, 1, 2}, 3},
		{[]uint32{1 << 31, 7, 1 << 31, 1 << 30, 7}, []int32{2, 0, 2, 1, 0}, 3},
	} {
		got, n := ranks(c.keys)
		if !slices.Equal(got, c.want) || n != c.n {
			t.Errorf("ranks(%v) = %v, %d; want %v, %d", c.keys, got, n, c.want, c.n)
		}
	}
}
