package assembly

import (
	"cmp"
	"math"
	"slices"
)

// handoffMax is the longest time between the arrival of a call's reply and
// the next call its caller sends on the same connection for the second
// call to count as handed the connection: a call that waited for a pooled
// connection (a database or cache pool all of whose connections were
// busy) leaves as soon as the previous user's reply frees one, whatever
// its own request was doing.
const handoffMax = 300_000 // ns

// handoffWeight is the prior probability that a call sent on a connection
// just freed waited for it (rather than being sent then by chance).
const handoffWeight = 0.5

// handoffs returns, per call, when the serial connection it was sent on
// was freed just before it (the arrival of the reply to the previous call
// on that connection, within handoffMax before the send), or noTime. Calls
// on multiplexed connections (a stream id) never wait for one another.
func (r *run) handoffs() []int64 {
	freed := make([]int64, len(r.calls))
	type onConn struct {
		conn uint32
		c    int32
	}
	var cs []onConn
	for i := range r.calls {
		freed[i] = noTime
		c := &r.calls[i]
		if c.callMsg < 0 || c.send == noTime || c.flags&flagOneWay != 0 {
			continue
		}
		m := &r.l.msgs[c.callMsg]
		if m.Conn == 0 || m.Stream != 0 {
			continue
		}
		cs = append(cs, onConn{m.Conn, int32(i)})
	}
	slices.SortStableFunc(cs, func(a, b onConn) int {
		if x := cmp.Compare(a.conn, b.conn); x != 0 {
			return x
		}
		return cmp.Compare(r.calls[a.c].send, r.calls[b.c].send)
	})
	for i := 1; i < len(cs); i++ {
		if cs[i].conn != cs[i-1].conn {
			continue
		}
		prev, cur := &r.calls[cs[i-1].c], &r.calls[cs[i].c]
		if prev.retMsg < 0 || prev.back == noTime || prev.caller != cur.caller {
			continue
		}
		if d := cur.send - prev.back; d >= -r.tolAt(cur.caller) && d <= handoffMax {
			freed[cs[i].c] = prev.back
		}
	}
	return freed
}

// logHandoff is log(handoffWeight) and log(1-handoffWeight).
var logHandoff = [2]float64{math.Log(handoffWeight), math.Log1p(-handoffWeight)}

// callGap returns the log density of the timing of call c as the next
// call of a request whose latest trigger was at last and which arrived at
// arr. A call handed a connection freed after both may have waited for
// it: its timing is then that of the handoff, measured from the freeing,
// and the two readings are mixed.
func (r *run) callGap(m *nodeModel, sc *scorer, c int32, last, arr int64) float64 {
	send := r.calls[c].send
	raw := sc.gap(send-last, send-arr)
	f := r.freed[c]
	if f == noTime || f <= last {
		return raw
	}
	if !m.handApart {
		return logAdd(raw+logHandoff[1], sc.gap(send-f, send-max(arr, f))+logHandoff[0])
	}
	return logAdd(raw+logHandoff[1], sc.readyBy(f-last, f-arr)+m.logHand(send-f)+logHandoff[0])
}

// observedGaps returns the gaps the models learn call c's timing from, as
// the next call of a request whose latest trigger was at last and which
// arrived at arr, from the anchors (waited -1). A call handed a
// connection freed after both waited for it: at a node whose handoffs are
// apart (nodeModel.handApart) its delay after the freeing is learnt as
// the handoff's (waited ≥ 0), elsewhere measured from the freeing as the
// request's own. There a call handed the connection its request's own
// latest reply freed is not learnt at all (waited noGap): whether it was
// the request's own next call or a waiter's taken for it, its delay from
// the freeing is the engine's choice confirmed (docs/accuracy.md, "A
// connection handed to the next waiter").
func (r *run) observedGaps(m *nodeModel, c int32, last, arr int64) (gl, ga, waited int64) {
	send := r.calls[c].send
	f := r.freed[c]
	switch {
	case f == noTime:
	case f > last && m.handApart:
		return 0, 0, send - f
	case f > last:
		return send - f, send - max(arr, f), -1
	case m.handApart:
		return 0, 0, noGap
	}
	return send - last, send - arr, -1
}

// handedShare returns the share of node n's calls handed a connection
// just freed.
func (r *run) handedShare(n int32) float64 {
	ks := r.childrenOf[n]
	if len(ks) == 0 {
		return 0
	}
	h := 0
	for _, c := range ks {
		if r.freed[c] != noTime {
			h++
		}
	}
	return float64(h) / float64(len(ks))
}
