package flows

import (
	"github.com/wirepath/wirepath/flows/internal/seqnum"
	"github.com/wirepath/wirepath/pcapio"
)

// tcp processes one TCP segment.
func (a *Assembler) tcp(pk *pkt) {
	key, d := keyOf(pk.src, pk.dst, pk.sport, pk.dport, pcapio.ProtoTCP)
	syn := pk.flags&pcapio.FlagSYN != 0
	ack := pk.flags&pcapio.FlagACK != 0
	fin := pk.flags&pcapio.FlagFIN != 0
	rst := pk.flags&pcapio.FlagRST != 0
	a.st.TCPBytes += int64(pk.n)

	c := a.conns[key]
	if c != nil && syn && !ack {
		h := &c.half[d]
		switch {
		case c.closed:
			// A new connection on the 4-tuple of a closed one.
			a.removeConn(c, c.end)
			c = nil
		case h.synSeen && seqnum.Value(pk.seq) != h.isn,
			!h.synSeen && h.st.started && farFrom(h.st.next, seqnum.Value(pk.seq+1)):
			// The 4-tuple was reused while the old connection never closed.
			a.removeConn(c, EndReused)
			c = nil
		}
	}
	if c == nil {
		c = a.newConn(key, pcapio.ProtoTCP)
		if !syn {
			c.midStream = true
			a.st.MidStream++
			for d := range c.half {
				c.half[d].off = midStreamOffset
				c.half[d].fr.mid = true
			}
		}
	}
	a.touch(c)
	h := &c.half[d]
	h.packets++
	if c.closed {
		a.st.DroppedAfterClose += int64(pk.n)
		return
	}
	dataSeq := seqnum.Value(pk.seq)
	if syn {
		a.onSYN(c, d, pk, ack)
		dataSeq = dataSeq.Add(1)
	} else if ack && len(c.hs) > 0 {
		a.onHandshakeACK(c, d, pk)
	}
	if ack {
		a.onAck(c, 1-d, seqnum.Value(pk.ack))
		a.noteAck(&c.half[1-d], seqnum.Value(pk.ack))
	}
	a.passive(c, d, pk, dataSeq)
	if pk.n > 0 {
		a.tcpData(c, d, pk, dataSeq)
	}
	if fin && !h.finSeen {
		h.finSeen = true
		h.finSeq = dataSeq.Add(seqnum.Size(pk.n))
		if !h.st.started {
			h.st.start(h.finSeq)
		}
	}
	if rst {
		a.endConn(c, EndRST)
		return
	}
	a.checkFIN(c)
	if c.closed {
		return
	}
	a.reorderTimeout(c)
	a.bufferLimits(c, d)
}

// onSYN handles a SYN or SYN-ACK from direction d.
func (a *Assembler) onSYN(c *conn, d int, pk *pkt, ack bool) {
	h := &c.half[d]
	seq := seqnum.Value(pk.seq)
	if !h.synSeen {
		h.synSeen, h.isn = true, seq
		if !h.st.started {
			h.st.start(seq.Add(1))
		}
		if !ack {
			c.setCaller(d, callerSYN)
		} else if !c.callerDone {
			c.setCaller(1-d, callerSYNACK)
		}
	} else if seq != h.isn {
		return
	}
	for _, o := range pk.obs {
		p := c.hsAt(o.pt)
		t, ttl, view := &p.syn, &p.synTTL, &p.synView
		if ack {
			t, ttl, view = &p.synack, &p.synackTTL, &p.synackView
		}
		if *t != 0 {
			// The same SYN with another TTL or NAT view at this point is
			// its copy on the other side of a router or NAT (a twin), not
			// a retransmission.
			if *view == o.view && (*ttl == 0 || o.ttl == 0 || *ttl == o.ttl) {
				p.synRetx = true
				a.st.SYNRetrans++
			}
			continue
		}
		*t, *ttl, *view = o.first, o.ttl, o.view
	}
}

// onHandshakeACK records when each point saw the ACK that completes the
// handshake: the first ACK from the SYN's sender that acknowledges the
// SYN-ACK.
func (a *Assembler) onHandshakeACK(c *conn, d int, pk *pkt) {
	if c.callerFrom != callerSYN || int(c.caller) != d {
		return
	}
	peer := &c.half[1-d]
	if !peer.synSeen || seqnum.Value(pk.ack) != peer.isn.Add(1) {
		return
	}
	for _, o := range pk.obs {
		for i := range c.hs {
			p := &c.hs[i]
			if p.pt != o.pt || p.synack == 0 {
				continue
			}
			if p.ack != 0 {
				if pk.n == 0 {
					p.ackRetx = true
				}
				continue
			}
			p.ack = o.first
		}
	}
}

// onAck applies an acknowledgement to direction d's stream: bytes the
// receiver acknowledged but the capture never saw become a gap at once,
// and a stream whose start was not seen starts there.
func (a *Assembler) onAck(c *conn, d int, ack seqnum.Value) {
	h := &c.half[d]
	if !h.st.started {
		h.st.start(ack)
		return
	}
	limit := ack
	if h.finSeen && ack == h.finSeq.Add(1) {
		limit = h.finSeq
	}
	if h.st.next.LessThan(limit) && h.st.next.Size(limit) < maxWindow {
		g, gb := h.st.skipTo(limit, a.now, &h.sink)
		a.st.GapsAcked += int64(g)
		c.acc.gaps += int64(g)
		c.acc.gapBytes += gb
	}
}

// tcpData inserts a segment's payload into direction d's stream.
func (a *Assembler) tcpData(c *conn, d int, pk *pkt, seq seqnum.Value) {
	h := &c.half[d]
	n := uint32(pk.n)
	data := pk.payload
	if len(data) < pk.n {
		a.st.TruncatedBytes += int64(pk.n - len(data))
	}
	if !h.st.started {
		h.st.start(seq)
	}
	// Sequence numbers far from the stream's belong to no window of it.
	if farFrom(h.st.next, seq) {
		a.st.DroppedOutOfWindow += int64(n)
		return
	}
	// Before the stream's first byte (data from before the capture began,
	// or before a SYN-derived start).
	if h.synSeen && seq.LessThan(h.isn.Add(1)) {
		k := min(seq.Size(h.isn.Add(1)), seqnum.Size(n))
		a.st.DroppedBeforeStart += int64(k)
		seq = seq.Add(k)
		n -= uint32(k)
		data = sub(data, int(k), int(n))
		if n == 0 {
			return
		}
	}
	repeats, twins := a.sightings(h, pk.obs, seq, n)
	psh := pk.flags&pcapio.FlagPSH != 0
	res := h.st.insert(seq, n, data, pk.obs, a.newObs, a.restObs, pk.ts, a.now, psh, &h.sink)
	a.accountInsert(c, h, &res, repeats, twins)
}

// sightings finds the capture points that see the n bytes at seq for the
// first time (a.newObs for the part before the stream's cursor, already
// delivered, a.restObs for the rest, so that a point's sighting joins the
// right bytes) and returns how many points had seen some of them before
// (repeats), and how many had seen them with another TTL (twins: the
// segment's copy on the other side of a router the same sniffer sees).
func (a *Assembler) sightings(h *half, obs []segObs, seq seqnum.Value, n uint32) (repeats, twins int) {
	k := uint32(0)
	if seq.LessThan(h.st.next) {
		k = min(uint32(seq.Size(h.st.next)), n)
	}
	a.newObs, a.restObs = a.newObs[:0], a.restObs[:0]
	for i := range obs {
		o := &obs[i]
		newLate, seenLate, twinLate := h.cov.add(o, seq, k)
		newRest, seenRest, twinRest := h.cov.add(o, seq.Add(seqnum.Size(k)), n-k)
		if newLate {
			a.newObs = append(a.newObs, *o)
		}
		if newRest {
			a.restObs = append(a.restObs, *o)
		}
		switch {
		case seenLate || seenRest:
			repeats++
		case twinLate || twinRest:
			twins++
		}
	}
	return repeats, twins
}

// accountInsert counts what inserting a segment did: retransmitted bytes
// (a point saw them again) or copies from other sniffers, overlaps,
// conflicts, and out-of-order data, which puts the connection on the list
// of those holding holes.
func (a *Assembler) accountInsert(c *conn, h *half, res *insertResult, repeats, twins int) {
	if res.dup > 0 || res.late > 0 {
		retx := repeats > 0 || (len(a.newObs) == 0 && len(a.restObs) == 0 && twins == 0)
		a.accountRepeat(c, res, retx)
	}
	if res.conflict {
		a.st.ConflictSegments++
	}
	if res.ooo {
		a.st.OutOfOrderSegments++
		if !c.holey && len(h.st.buf) > 0 {
			c.holey = true
			a.holey = append(a.holey, c)
		}
	}
	if a.pool.buffered > a.st.PeakBufferedBytes {
		a.st.PeakBufferedBytes = a.pool.buffered
	}
}

// accountRepeat counts the bytes of a segment that were known already: a
// retransmission (retx) or a copy another sniffer saw first.
func (a *Assembler) accountRepeat(c *conn, res *insertResult, retx bool) {
	if res.fresh == 0 && res.dup > 0 {
		if retx {
			a.st.RetransSegments++
			c.acc.retxSegs++
		} else {
			a.st.CopySegments++
		}
	} else if res.fresh > 0 {
		a.st.OverlapSegments++
	}
	if retx {
		a.st.RetransBytes += int64(res.dup)
		c.acc.retxBytes += int64(res.dup)
	} else {
		a.st.CopyBytes += int64(res.dup)
	}
	a.st.DroppedLate += int64(res.late)
}

// checkFIN marks directions whose FIN has been reached and closes the
// connection when both have.
func (a *Assembler) checkFIN(c *conn) {
	for d := range c.half {
		h := &c.half[d]
		if h.finSeen && !h.finDone && h.st.started && h.finSeq.LessThanEq(h.st.next) {
			h.finDone = true
		}
	}
	if c.half[0].finDone && c.half[1].finDone {
		a.endConn(c, EndFIN)
	}
}

// reorderTimeout gives up holes whose out-of-order data has waited longer
// than the reorder timeout.
func (a *Assembler) reorderTimeout(c *conn) {
	for d := range c.half {
		h := &c.half[d]
		for len(h.st.buf) > 0 && a.now-h.st.buf[0].arrived > int64(a.cfg.ReorderTimeout) {
			g, gb := h.st.skipFirstHole(a.now, &h.sink)
			a.st.GapsTimeout += int64(g)
			c.acc.gaps += int64(g)
			c.acc.gapBytes += gb
		}
	}
	a.checkFIN(c)
}

// bufferLimits gives up holes while direction d buffers more than its
// limit or all connections together more than theirs.
func (a *Assembler) bufferLimits(c *conn, d int) {
	h := &c.half[d]
	for h.st.bufBytes > a.cfg.MaxBufferPerConn || (a.pool.buffered > int64(a.cfg.MaxBufferTotal) && len(h.st.buf) > 0) {
		a.st.BufferLimitHits++
		g, gb := h.st.skipFirstHole(a.now, &h.sink)
		a.st.GapsLimit += int64(g)
		c.acc.gaps += int64(g)
		c.acc.gapBytes += gb
	}
	// Still over the total: give up holes of the least recently active
	// connections that buffer data.
	for i := 0; a.pool.buffered > int64(a.cfg.MaxBufferTotal) && i < len(a.holey); i++ {
		o := a.holey[i]
		for k := range o.half {
			oh := &o.half[k]
			for len(oh.st.buf) > 0 && a.pool.buffered > int64(a.cfg.MaxBufferTotal) {
				a.st.BufferLimitHits++
				g, gb := oh.st.skipFirstHole(a.now, &oh.sink)
				a.st.GapsLimit += int64(g)
				o.acc.gaps += int64(g)
				o.acc.gapBytes += gb
			}
		}
		a.checkFIN(o)
	}
	a.checkFIN(c)
}

// farFrom reports whether seq is too far from next, either way, to belong
// to the same stream.
func farFrom(next, seq seqnum.Value) bool {
	dist := next.Diff(seq)
	return dist > maxWindow || dist < -maxWindow
}
