package assembly

import (
	"testing"

	"github.com/wirepath/wirepath/trace"
)

// TestSpreadTicks: the events of one tick of one host's clock are spread
// inside the tick in their likely order: receipts first, by when each
// most likely arrived (estimated from its send on the other host's
// clock), then sends in the trace's order; every time stays in its tick,
// and fine timestamps are left alone.
func TestSpreadTicks(t *testing.T) {
	const res = 1_000_000 // 1 ms
	tr := &trace.Trace{}
	a, b, c := tr.Intern("A"), tr.Intern("B"), tr.Intern("C")
	msg := func(src, dst trace.Sym, sendMS, recvMS int64) trace.Message {
		return trace.Message{SrcNode: src, DstNode: dst, SendTS: trace.Timestamp(sendMS * res), RecvTS: trace.Timestamp(recvMS * res), Kind: trace.KindCall}
	}
	// Messages from A arrive 1.4 ms later by B's clock than A's says they
	// left (A's clock behind B's, plus the network), those from C in the
	// tick C stamped (C's clock a little ahead of B's). In B's tick 10 the
	// message A sent in its tick 9 arrived in [10.4, 11) ms (the middle:
	// 10.7) and the one C sent in its tick 10 in [10, 11) (10.5): C's
	// first, though the trace lists A's first. B sends two messages in
	// the tick.
	ms := []trace.Message{
		msg(a, b, 0, 1), msg(a, b, 1, 3), msg(a, b, 2, 3), msg(a, b, 3, 5), // route A→B
		msg(c, b, 0, 0), msg(c, b, 1, 1), msg(c, b, 2, 2), msg(c, b, 3, 3), // route C→B
		msg(b, c, 10, 10), // 8: B's first send in its tick 10
		msg(a, b, 9, 10),  // 9
		msg(c, b, 10, 10), // 10
		msg(b, a, 10, 12), // 11: B's second send
	}
	send, recv, spacing := spreadTicks(ms, res)
	if send == nil || spacing <= 0 || spacing > res/2 {
		t.Fatalf("1 ms timestamps not spread (spacing %d)", spacing)
	}
	for i, m := range ms {
		for _, p := range [][2]int64{{int64(m.SendTS), send[i]}, {int64(m.RecvTS), recv[i]}} {
			if p[1] < p[0] || p[1] >= p[0]+res {
				t.Errorf("message %d: %d spread out of its tick %d", i, p[1], p[0])
			}
		}
	}
	// B's tick 10: receipts 9 and 10 before sends 8 and 11, 8 before 11.
	for _, r := range []int{9, 10} {
		if recv[r] >= send[8] {
			t.Errorf("receipt %d at %d after B's first send at %d", r, recv[r], send[8])
		}
	}
	if send[8] >= send[11] {
		t.Errorf("B's sends out of the trace's order: %d, %d", send[8], send[11])
	}
	if recv[10] >= recv[9] {
		t.Errorf("C's message (likely arrived at 10.5 ms) at %d, after A's (10.7 ms) at %d", recv[10], recv[9])
	}
	// Microseconds: left alone.
	for i := range ms {
		ms[i].SendTS += 1000
	}
	if s, r, _ := spreadTicks(ms, resolution(ms)); s != nil || r != nil {
		t.Errorf("µs timestamps spread")
	}
}
