package assembly

import (
	"math"
	"slices"
	"testing"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

// TestUniformBefore: the chance that a time uniform over one interval
// comes before one uniform over another.
func TestUniformBefore(t *testing.T) {
	for _, c := range []struct {
		name           string
		la, ha, lb, hb float64
		want           float64
	}{
		{"same interval", 0, 1, 0, 1, 0.5},
		{"wholly before", 0, 1, 2, 3, 1},
		{"wholly after", 2, 3, 0, 1, 0},
		{"half a width earlier", 0, 1, 0.5, 1.5, 0.875},
		{"half a width later", 0.5, 1.5, 0, 1, 0.125},
		{"inside a wider one", 0.4, 0.6, 0, 1, 0.5},
		{"narrow, early in a wide one", 0, 0.2, 0, 1, 0.9},
	} {
		if got := uniformBefore(c.la, c.ha, c.lb, c.hb); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: %g, want %g", c.name, got, c.want)
		}
	}
}

// TestRankDist: the rank of a request is the number of candidates that
// arrived before it, capped at fifoBins-1, and a Poisson-binomial over
// those whose order is open.
func TestRankDist(t *testing.T) {
	for _, c := range []struct {
		name string
		sure int
		ps   []float64
		want [fifoBins]float64
	}{
		{"first, surely", 0, nil, [fifoBins]float64{1, 0, 0, 0}},
		{"second, surely", 1, nil, [fifoBins]float64{0, 1, 0, 0}},
		{"one open, even", 0, []float64{0.5}, [fifoBins]float64{0.5, 0.5, 0, 0}},
		{"two open", 1, []float64{0.5, 0.2}, [fifoBins]float64{0, 0.4, 0.5, 0.1}},
		{"capped", 3, []float64{0.7}, [fifoBins]float64{0, 0, 0, 1}},
		{"capped from below", 2, []float64{0.5, 0.5}, [fifoBins]float64{0, 0, 0.25, 0.75}},
	} {
		got := rankDist(c.sure, c.ps)
		for b := range got {
			if math.Abs(got[b]-c.want[b]) > 1e-12 {
				t.Errorf("%s: %v, want %v", c.name, got, c.want)
				break
			}
		}
	}
}

// TestSoftFIFO: a certain rank scores as logFIFO does; an open one as
// the ratio's mean, between the two ranks' scores.
func TestSoftFIFO(t *testing.T) {
	m := &nodeModel{fifo: newFallingLR(fifoBins)}
	for range 90 {
		m.fifo.addLink(0, 1)
	}
	for range 10 {
		m.fifo.addLink(1, 1)
	}
	for range 50 {
		m.fifo.addOther(0, 1)
		m.fifo.addOther(1, 1)
	}
	if got, want := m.softFIFO(1, nil), m.logFIFO(1); got != want {
		t.Errorf("certain rank 1: %g, want logFIFO %g", got, want)
	}
	first, second := m.logFIFO(0), m.logFIFO(1)
	even := m.softFIFO(0, []float64{0.5})
	if want := math.Log((math.Exp(first) + math.Exp(second)) / 2); math.Abs(even-want) > 1e-12 {
		t.Errorf("even odds: %g, want %g", even, want)
	}
	if !(second < even && even < first) {
		t.Errorf("even odds %g not between the ranks' %g and %g", even, second, first)
	}
}

// TestOrderProb: two requests from different clients received by B in
// one tick have an order the timestamps leave open, its chance read from
// where their senders' ticks place them in it; the calls one of them
// already made move it toward that one's having arrived first; requests
// from one sender, or in different ticks, are ordered.
func TestOrderProb(t *testing.T) {
	r, callOf := orderRun(t)
	m := &nodeModel{fifo: newFallingLR(fifoBins)}
	m.fifo.addLink(0, 9)
	m.fifo.addLink(1, 1)
	m.fifo.addOther(1, 5)
	c1, c2, c2b, c2c := callOf[5], callOf[6], callOf[7], callOf[8]
	open := r.orderProb(m, c2, c1, 0, 0)
	if !(open > 0.5 && open < 1) {
		t.Errorf("C2's request (arrived in [10, 11) ms) before C1's ([10.25, 11) ms) with chance %g, want in (0.5, 1)", open)
	}
	if lead := r.orderProb(m, c1, c2, kindBit(3), 0); !(lead > 1-open) {
		t.Errorf("C1's request, having made a call C2's did not, first with chance %g, not above %g", lead, 1-open)
	}
	for _, c := range []struct {
		name string
		q, p int32
		want float64
	}{
		{"one sender, in its order", c2, c2b, 1},
		{"one sender, reversed", c2b, c2, 0},
		{"next tick", c2c, c1, 0},
		{"previous tick", c1, c2c, 1},
	} {
		if got := r.orderProb(m, c.q, c.p, 0, 0); got != c.want {
			t.Errorf("%s: %g, want %g", c.name, got, c.want)
		}
	}
}

// TestReadyRanks: where the ticks were spread the search ranks a call's
// candidates by when each became ready (slot.last: a request that
// arrived later but whose last call came back earlier is ready first),
// and two requests whose readiness a tick leaves open share the first
// rank's evidence by the chance of each order.
func TestReadyRanks(t *testing.T) {
	r, calls := orderRun(t)
	c1, c2, c2c := calls[5], calls[6], calls[8]
	m := &nodeModel{fifo: newFallingLR(fifoBins)}
	m.fifo.addLink(0, 9)
	m.fifo.addLink(1, 1)
	m.fifo.addOther(0, 2)
	m.fifo.addOther(1, 5)
	s := &search{r: r, m: m}
	rank := func(slots []slot) []float64 {
		ord := []int32{}
		for i := range slots {
			ord = append(ord, int32(i))
		}
		slices.SortFunc(ord, s.byReady(slots))
		s.fifo = make([]float64, len(slots))
		s.tiedRanks(slots, ord, func(int32) bool { return true })
		return s.fifo
	}
	first, second := m.logFIFO(0), m.logFIFO(1)
	// c2c arrived a tick after c1 but is ready first
	sl := []slot{{p: c1, lastRet: -1, last: 20_000_000}, {p: c2c, lastRet: -1, last: 15_000_000}}
	if got := rank(sl); got[0] != second || got[1] != first {
		t.Errorf("ready later, arrived first: evidence %v, want [%g %g]", got, second, first)
	}
	// c1 and c2 arrived in one tick of B's clock from different senders:
	// open, both between the two ranks' evidence, c2 (likelier first) above
	sl = []slot{{p: c1, lastRet: -1, last: r.arrOf(c1)}, {p: c2, lastRet: -1, last: r.arrOf(c2)}}
	got := rank(sl)
	if !(second < got[0] && got[0] < got[1] && got[1] < first) {
		t.Errorf("open order: evidence %v, want %g < c1's < c2's < %g", got, second, first)
	}
}

// orderRun is the run of TestOrderProb's trace (requests to B from C1 and
// C2 at 1 ms timestamps) and each CALL's call by trace index.
func orderRun(t *testing.T) (*run, map[int32]int32) {
	t.Helper()
	tr := &trace.Trace{}
	msg := func(src, dst string, sendUS, recvUS int64, id string) trace.Message {
		return trace.Message{SrcNode: tr.Intern(src), DstNode: tr.Intern(dst), Src: tr.Intern(id), Dst: tr.Intern(dst + ":80"),
			SendTS: trace.Timestamp(sendUS * 1000), RecvTS: trace.Timestamp(recvUS * 1000), Kind: trace.KindCall, CallID: tr.Intern(id)}
	}
	// C1's messages reach B 1.25 ms later by B's clock than C1's says they
	// left (the mean over the route), C2's in the tick C2 stamped: C1's
	// request sent in its tick 9 arrived in [10.25, 11) ms of B's clock,
	// C2's two of tick 10 in [10, 11), and C2's of tick 11 later.
	ms := []trace.Message{
		msg("C1", "B", 0, 1_000, "c1:1"), msg("C1", "B", 2_000, 4_000, "c1:2"), msg("C1", "B", 4_000, 5_000, "c1:3"),
		msg("C2", "B", 0, 0, "c2:1"), msg("C2", "B", 2_000, 2_000, "c2:2"),
		msg("C1", "B", 9_000, 10_000, "c1:4"),  // 5
		msg("C2", "B", 10_000, 10_000, "c2:3"), // 6
		msg("C2", "B", 10_000, 10_000, "c2:4"), // 7
		msg("C2", "B", 11_000, 11_000, "c2:5"), // 8
	}
	tr.Messages = ms
	opt := DefaultOptions()
	r := newRun(opt, tr, causal.NewAggregator(tr, opt.Aggregate).Namer())
	if r.l.arrLo == nil {
		t.Fatal("1 ms timestamps: no arrival intervals")
	}
	callOf := map[int32]int32{}
	for i := range r.calls {
		callOf[r.calls[i].callMsg] = int32(i)
	}
	return r, callOf
}
