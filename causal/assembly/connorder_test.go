package assembly

import (
	"math"
	"testing"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

// TestCrossBin: gaps below 25 µs share the first bin, then octaves up to
// 1.6 ms, either sign; wider gaps have none (strict order).
func TestCrossBin(t *testing.T) {
	for _, c := range []struct {
		gap  int64
		want int
	}{
		{0, 0}, {24_999, 0}, {-24_999, 0}, {25_000, 1}, {49_999, 1}, {50_000, 2},
		{-300_000, 4}, {1_599_999, 6}, {1_600_000, -1}, {-5_000_000, -1},
	} {
		if got := crossBin(c.gap); got != c.want {
			t.Errorf("crossBin(%d) = %d, want %d", c.gap, got, c.want)
		}
	}
}

// TestCrossOrderProb: a bin's chance of the arrival order is its pairs
// kept in order, smoothed by two; open at crossMaxOpen or below, strict
// above it, in a closed table and beyond the last bin.
func TestCrossOrderProb(t *testing.T) {
	x := &crossOrder{}
	x.kept[2], x.swapped[2] = 8, 10 // (8+2)/20 = 0.5
	x.kept[3], x.swapped[3] = 18, 2 // 20/22
	for _, c := range []struct {
		name string
		x    *crossOrder
		gap  int64
		want float64
		open bool
	}{
		{"chance", x, 60_000, 0.5, true},
		{"mostly in order", x, 150_000, 20.0 / 22, false},
		{"no pairs: the prior", x, 10_000, 1, false},
		{"beyond the bins", x, 2_000_000, 1, false},
		{"closed", &crossOrder{kept: x.kept, swapped: x.swapped, closed: true}, 60_000, 1, false},
		{"none", nil, 60_000, 1, false},
	} {
		p, open := c.x.prob(c.gap)
		if open != c.open || math.Abs(p-c.want) > 1e-12 {
			t.Errorf("%s: %g %v, want %g %v", c.name, p, open, c.want, c.open)
		}
	}
}

// crossRun is a run at microsecond timestamps where T calls B on four
// keep-alive connections: requests 0 and 1 arrive 50 µs apart on
// connections 1 and 2, request 2 on connection 1 again 200 µs after
// request 1, request 3 3 ms later on connection 3; requests 4 and 5 arrive
// 30 µs apart on connections 5 and 6, both read by one thread. It returns
// the run and the calls in that order.
func crossRun(t *testing.T) (*run, []int32) {
	t.Helper()
	tr := &trace.Trace{}
	msg := func(us int64, conn uint32, id string, tid int32) trace.Message {
		m := trace.Message{SrcNode: tr.Intern("T"), DstNode: tr.Intern("B"), Src: tr.Intern("T:1"), Dst: tr.Intern("B:80"),
			SendTS: trace.Timestamp(us * 1000), RecvTS: trace.Timestamp(us*1000 + 7), Kind: trace.KindCall, CallID: tr.Intern(id)}
		m.Conn = conn
		if tid != 0 {
			m.Receiver = trace.Task{PID: 9, TID: tid}
		}
		return m
	}
	tr.Messages = []trace.Message{
		msg(1_000, 1, "a", 0), msg(1_050, 2, "b", 0), msg(1_250, 1, "c", 0), msg(4_250, 3, "d", 0),
		msg(9_000, 5, "e", 7), msg(9_030, 6, "f", 7),
	}
	opt := DefaultOptions()
	r := newRun(opt, tr, causal.NewAggregator(tr, opt.Aggregate).Namer())
	if r.l.arrLo != nil {
		t.Fatal("microsecond timestamps: arrival intervals")
	}
	byMsg := map[int32]int32{}
	for i := range r.calls {
		byMsg[r.calls[i].callMsg] = int32(i)
	}
	var cs []int32
	for i := range tr.Messages {
		cs = append(cs, byMsg[int32(i)])
	}
	return r, cs
}

// TestCrossProb: where a node's close pairs on different connections
// were served in either order, two requests that arrived 50 µs apart on
// different connections come first with the bin's chance; on one
// connection, read by one thread, or 3 ms apart, in their arrival order
// (crossProb not open), as everywhere at a node whose table is closed.
func TestCrossProb(t *testing.T) {
	r, c := crossRun(t)
	x := &crossOrder{}
	for b := range crossBins {
		x.kept[b], x.swapped[b] = 3, 7 // (3+2)/12
	}
	want := 5.0 / 12
	for _, k := range []struct {
		name string
		q, p int32
		open bool
		pr   float64
	}{
		{"different connections, 50 µs", c[0], c[1], true, want},
		{"the other way round", c[1], c[0], true, 1 - want},
		{"one connection, 250 µs", c[0], c[2], false, 0},
		{"different connections, 3 ms", c[2], c[3], false, 0},
		{"one thread read both", c[4], c[5], false, 0},
	} {
		pr, ok := r.crossProb(x, k.q, k.p)
		if ok != k.open || math.Abs(pr-k.pr) > 1e-12 {
			t.Errorf("%s: %g %v, want %g %v", k.name, pr, ok, k.pr, k.open)
		}
	}
	x.closed = true
	if _, ok := r.crossProb(x, c[0], c[1]); ok {
		t.Error("closed table: the order is open")
	}
}

// TestCrossRanks: at fine timestamps the search ranks two requests that
// arrived 50 µs apart on different connections by chance where the node's
// order is open (both between the first and second ranks' evidence, the
// later one above where the pairs were mostly swapped) and strictly
// without a table, as before; the third, on the first one's connection,
// (200 µs after the second: a gap no pair showed) stays behind both.
func TestCrossRanks(t *testing.T) {
	r, c := crossRun(t)
	m := &nodeModel{fifo: newFallingLR(fifoBins)}
	m.fifo.addLink(0, 9)
	m.fifo.addLink(1, 1)
	m.fifo.addOther(0, 2)
	m.fifo.addOther(1, 5)
	m.fifo.addOther(2, 5)
	s := &search{r: r, m: m}
	slots := []slot{{p: c[0]}, {p: c[1]}, {p: c[2]}}
	rank := func() []float64 {
		s.fifo = make([]float64, len(slots))
		s.tiedRanks(slots, []int32{0, 1, 2}, func(int32) bool { return true })
		return s.fifo
	}
	first, second, third := m.logFIFO(0), m.logFIFO(1), m.logFIFO(2)
	if got := rank(); got[0] != first || got[1] != second || got[2] != third {
		t.Errorf("no table: %v, want strict ranks %g %g %g", got, first, second, third)
	}
	x := &crossOrder{}
	x.kept[2], x.swapped[2] = 1, 9
	m.cross = x
	got := rank()
	if !(second < got[0] && got[0] < got[1] && got[1] < first) {
		t.Errorf("open order: %v, want %g < request 0's < request 1's < %g", got, second, first)
	}
	if !(got[2] < second) {
		t.Errorf("request 2, after request 0 on its connection: %g, want below the second rank's %g", got[2], second)
	}
}

// TestKeepCross: a node keeps the pairs' counts of its first assignment
// for its later models, closed where that assignment gave fewer than
// crossTrust of its calls to their oldest waiting request.
func TestKeepCross(t *testing.T) {
	for _, c := range []struct {
		name       string
		oldest     float64
		wantClosed bool
	}{
		{"the delays found the order", 6, false},
		{"they did not", 2, true},
	} {
		r := &run{crossFirst: make([]*crossOrder, 1)}
		m := &nodeModel{fifo: newFallingLR(fifoBins), cross: &crossOrder{}}
		m.cross.kept[1], m.cross.swapped[1] = 4, 5
		m.fifo.addLink(0, c.oldest)
		m.fifo.addLink(1, 10-c.oldest)
		r.keepCross(0, m)
		if r.crossFirst[0] != m.cross || m.cross.closed != c.wantClosed {
			t.Errorf("%s: kept %p (model's %p), closed %v, want closed %v", c.name, r.crossFirst[0], m.cross, m.cross.closed, c.wantClosed)
		}
		later := &nodeModel{cross: &crossOrder{}}
		r.keepCross(0, later)
		if later.cross != r.crossFirst[0] {
			t.Errorf("%s: a later model does not take the first counts", c.name)
		}
	}
}
