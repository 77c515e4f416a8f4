package flows

import "github.com/wirepath/wirepath/flows/internal/seqnum"

// Early release. A cut message waits Config.Settle in the emit queue so
// that what can still change it joins it: copies of its bytes seen by
// other capture points (late sightings), and copies seen again by its own
// point (retransmissions, Sighting.Repeats). A message a decoder framed
// (an HTTP/2 stream's half up to END_STREAM, a Redis reply, ...) is
// complete when it is cut, and on a capture with a single capture point
// only a copy of its bytes can still change it; such a copy is sent when
// the sender did not see them acknowledged. So a decoded message leaves
// the queue without waiting for the settle time once
//
//   - every packet so far came from one capture point (no other point
//     can add a sighting),
//   - it is whole: framed by its protocol (EndProtocol), no gap, no loss
//     (nothing missing that a late copy could bring), one sighting, and
//   - its receiver acknowledged its last byte, or the connection ended,
//
// and every message cut before it has left (the queue stays in cut order,
// so the output order does not change). What it gives up is a copy of
// its bytes seen after the acknowledgement: a retransmission caused by an
// acknowledgement lost beyond the capture point is not counted in its
// Repeats (it still counts in Stats and the connection's figures), and a
// second capture point that appears later in the input adds no sighting
// to the messages released before it appeared (from then on every message
// waits the settle time again).

// notePoint records the capture points seen: whether there was more than
// one.
func (a *Assembler) notePoint(pt Point) {
	switch {
	case a.multiPoint:
	case !a.havePoint:
		a.point, a.havePoint = pt, true
	case pt != a.point:
		a.multiPoint = true
	}
}

// noteAck records the peer's acknowledgement of h's bytes.
func (a *Assembler) noteAck(h *half, ack seqnum.Value) {
	if !h.ackSeen || h.acked.LessThan(ack) {
		h.acked, h.ackSeen = ack, true
	}
}

// releasable reports whether a cut message may leave before its settle
// time (see above).
func (a *Assembler) releasable(m *msg) bool {
	if a.multiPoint || !m.unit || m.data || m.End != EndProtocol || m.Incomplete || len(m.Sightings) != 1 {
		return false
	}
	c := m.c
	if c.closed || c.removed {
		return true
	}
	h := &c.half[m.dir]
	return h.ackSeen && seqnum.Value(m.endSeq).LessThanEq(h.acked)
}
