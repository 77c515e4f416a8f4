package assembly

import "github.com/wirepath/wirepath/trace"

// Coarse timestamps (a log's milliseconds) give many of one host's events
// the same time, and what decides which request made a call is then their
// order. spreadTicks places the events of each tick of each host's clock
// at distinct times inside the tick, in the order they most likely
// happened:
//
//   - first what the host received in the tick (a request can only cause
//     a call after it arrived), then what it sent;
//   - what it sent in the order the trace lists it: a capture lists
//     packets in capture order and a log in the order it was written, so
//     the trace's order of one host's sends is their order;
//   - what it received by when each message most likely arrived, estimated
//     from the message's other end: the sender's tick, shifted by the mean
//     difference between receive and send ticks of the messages between
//     those two hosts (the clocks' offset plus the network's delay), gives
//     a second interval of one tick the arrival lies in, and the middle of
//     the two intervals' overlap is the estimate (hosts' clocks are not
//     aligned to each other's ticks, so the overlap is narrower than a
//     tick); ties keep the trace's order.
//
// The k events of a tick are placed at the (j+1)/(k+1) fractions of it,
// the expected places of k uniform times in order. Only timestamps at
// least 10 µs coarse are spread: finer ones rarely tie.

// spreadMinRes is the coarsest resolution left as it is.
const spreadMinRes = 10_000

// tickEvent is one timestamp of a host's clock: message msg's send or
// receipt at tick, and the key that orders it within its tick.
type tickEvent struct {
	msg  int32
	node trace.Sym
	recv bool
	tick int64
	key  int64
}

// Less orders events by host and tick, then receipts first, by key, and
// by message.
func (e *tickEvent) Less(o *tickEvent) bool {
	switch {
	case e.node != o.node:
		return e.node < o.node
	case e.tick != o.tick:
		return e.tick < o.tick
	case e.recv != o.recv:
		return e.recv
	case e.key != o.key:
		return e.key < o.key
	}
	return e.msg < o.msg
}

// spreadTicks returns every message's send and receive times (raw clocks,
// not offset) spread within their ticks, and the finest spacing of two
// spread events (the resolution their delays are read at), or nil, nil, 0
// when the resolution is finer than spreadMinRes.
func spreadTicks(msgs []trace.Message, res int64) (send, recv []int64, spacing int64) {
	if res < spreadMinRes {
		return nil, nil, 0
	}
	arrival := arrivalEstimates(msgs, res)
	send = make([]int64, len(msgs))
	recv = make([]int64, len(msgs))
	evs := make([]tickEvent, 0, 2*len(msgs))
	nodes := make([]uint32, 0, 2*len(msgs))
	class := make([]uint8, 0, 2*len(msgs))
	for i := range msgs {
		m := &msgs[i]
		send[i], recv[i] = int64(m.SendTS), int64(m.RecvTS)
		if m.SendTS.Known() {
			evs = append(evs, tickEvent{int32(i), m.SrcNode, false, int64(m.SendTS), int64(i)})
			nodes, class = append(nodes, uint32(m.SrcNode)), append(class, 1)
		}
		if m.RecvTS.Known() {
			evs = append(evs, tickEvent{int32(i), m.DstNode, true, int64(m.RecvTS), arrival[i]})
			nodes, class = append(nodes, uint32(m.DstNode)), append(class, 0)
		}
	}
	// By host and tick, then in the tick's order (tickEvent.less): a
	// host's sends, and mostly its receipts, are in the trace's order.
	evs = bucketSort[tickEvent](evs, nodes, class)
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

// arrivalEstimates returns, for every message with both timestamps, the
// estimate of its arrival from its send (spreadTicks), and its receive
// tick's middle otherwise.
func arrivalEstimates(msgs []trace.Message, res int64) []int64 {
	lo, hi := arrivalIntervals(msgs, res)
	est := make([]int64, len(msgs))
	for i := range msgs {
		r := int64(msgs[i].RecvTS)
		est[i] = min(max((lo[i]+hi[i])/2, r), r+res-1)
	}
	return est
}

// arrivalIntervals returns, for every message, the interval of the
// receiver's raw clock its arrival lies in as its timestamps state it:
// its receive tick, narrowed, when the send is known too, to the overlap
// with the send's tick shifted by the mean difference between receive
// and send ticks of the messages between those two hosts (the clocks'
// offset plus the network's delay). lo > hi when the two do not overlap
// (the mean misjudged this message).
func arrivalIntervals(msgs []trace.Message, res int64) (lo, hi []int64) {
	type route struct{ src, dst trace.Sym }
	type mean struct {
		sum float64
		n   int
	}
	diffs := make(map[route]*mean)
	var lastK route // the route met last, and its mean (runs of a connection's messages)
	var lastD *mean
	for i := range msgs {
		m := &msgs[i]
		if !m.SendTS.Known() || !m.RecvTS.Known() {
			continue
		}
		k := route{m.SrcNode, m.DstNode}
		d := lastD
		if d == nil || k != lastK {
			d = diffs[k]
		}
		if d == nil {
			d = &mean{}
			diffs[k] = d
		}
		lastK, lastD = k, d
		d.sum += float64(m.RecvTS - m.SendTS)
		d.n++
	}
	lo, hi = make([]int64, len(msgs)), make([]int64, len(msgs))
	lastD = nil
	for i := range msgs {
		m := &msgs[i]
		r := int64(m.RecvTS)
		lo[i], hi[i] = r, r+res
		if !m.SendTS.Known() || !m.RecvTS.Known() {
			continue
		}
		if k := (route{m.SrcNode, m.DstNode}); lastD == nil || k != lastK {
			lastK, lastD = k, diffs[k]
		}
		d := int64(lastD.sum / float64(lastD.n))
		s := int64(m.SendTS) + d // the send's tick on the receiver's clock
		lo[i], hi[i] = max(r, s), min(r+res, s+res)
	}
	return lo, hi
}

// measured returns t, a time of message i on the reference clock (its
// send or its receipt, spread within its tick), as the message's
// timestamp says: what reports show.
func (l *loader) measured(t int64, i int32) int64 {
	if l.sendSp == nil || i < 0 || t == noTime {
		return t
	}
	m := &l.msgs[i]
	switch {
	case m.RecvTS.Known() && t == l.recvTime(i):
		return int64(m.RecvTS) - l.off(m.DstNode)
	case m.SendTS.Known() && t == l.sendTime(i):
		return int64(m.SendTS) - l.off(m.SrcNode)
	}
	return t
}
