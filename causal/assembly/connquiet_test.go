package assembly

import (
	"testing"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/trace"
)

// TestQuietBetween: B's requests a, b and c arrive 50 µs apart on
// different keep-alive connections, and B replies to an earlier request z
// between a's and b's arrivals. Where the node's close pairs it was quiet
// between were served in either order, b and c keep that open chance;
// a and b do not (B ran between them, so it read a first) unless the
// pairs B was active between were served in either order too.
func TestQuietBetween(t *testing.T) {
	tr := &trace.Trace{}
	msg := func(us int64, conn uint32, id string, kind trace.Kind) trace.Message {
		m := trace.Message{SrcNode: tr.Intern("T"), DstNode: tr.Intern("B"), Src: tr.Intern("T:1"), Dst: tr.Intern("B:80"),
			SendTS: trace.Timestamp(us * 1000), RecvTS: trace.Timestamp(us*1000 + 7), Kind: kind, CallID: tr.Intern(id)}
		if kind == trace.KindReturn {
			m.SrcNode, m.DstNode, m.Src, m.Dst = m.DstNode, m.SrcNode, m.Dst, m.Src
		}
		m.Conn = conn
		return m
	}
	tr.Messages = []trace.Message{
		msg(500, 4, "z", trace.KindCall), msg(1_000, 1, "a", trace.KindCall), msg(1_020, 4, "z", trace.KindReturn),
		msg(1_050, 2, "b", trace.KindCall), msg(1_100, 3, "c", trace.KindCall),
	}
	opt := DefaultOptions()
	r := newRun(opt, tr, causal.NewAggregator(tr, opt.Aggregate).Namer())
	id := map[string]int32{}
	for i := range r.calls {
		if m := r.calls[i].callMsg; m >= 0 {
			id[tr.Syms.String(tr.Messages[m].CallID)] = int32(i)
		}
	}
	x := &crossOrder{}
	for b := range crossBins {
		x.kept[b], x.swapped[b] = 3, 7
	}
	active := &crossOrder{}
	for b := range crossBins {
		active.kept[b], active.swapped[b] = 3, 7
	}
	for _, c := range []struct {
		name   string
		q, p   string
		active *crossOrder
		quiet  bool
		open   bool
	}{
		{"B replied to z between a and b", "a", "b", nil, false, false},
		{"the other way round", "b", "a", nil, false, false},
		{"B quiet between b and c", "b", "c", nil, true, true},
		{"B quiet between c and b", "c", "b", nil, true, true},
		{"active pairs served in either order", "a", "b", active, false, true},
	} {
		q, p := id[c.q], id[c.p]
		if got := r.quietBetween(q, p); got != c.quiet {
			t.Errorf("%s: quiet %v, want %v", c.name, got, c.quiet)
		}
		x.active = c.active
		if _, ok := r.crossProb(x, q, p); ok != c.open {
			t.Errorf("%s: open %v, want %v", c.name, ok, c.open)
		}
	}
}
