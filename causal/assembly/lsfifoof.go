package assembly

// The local search weighs the FIFO evidence of a call under the current
// assignment (fifoOne) for every move it tries, hundreds of thousands of
// times a run at 64 requests in flight. run.fifoOf takes its candidates
// and their kinds and ready events as functions: its closures escaped,
// four allocations a call and two more for fifoOne's, 80 % of the
// engine's allocations on ids-sniffed-64-grpc. localFIFO is the same
// computation written out for the local search: the same candidates in
// the same order, the same readyProb of each, the same softFIFO, so the
// same value bit for bit (TestLocalFIFOIsFifoOf).

// prefix returns what request q did before call d under the current
// assignment, in one walk of its calls sent before d: whether it made a
// call of kind bit kb (made's answer; the walk stops there), the kind
// bits of its calls (kindsBefore's, when it did not) and the event that
// made it ready for d (readyFor's, when it did not).
func (ls *local) prefix(q, d int32, kb uint64) (made bool, kinds uint64, ev readyEv) {
	r := ls.r
	ev = r.arrivalEv(q)
	sd := r.sendOf(d)
	for _, e := range ls.kidsOf(q) {
		if ls.cmpSend(e, d) >= 0 {
			break
		}
		c := &r.calls[e]
		k := kindBit(c.kind)
		if k&kb != 0 {
			return true, 0, ev
		}
		kinds |= k
		if c.back != noTime && c.back < sd && c.back > ev.t {
			ev = readyEv{c.back, c.retMsg}
		}
	}
	return false, kinds, ev
}

// localFIFO is run.fifoOf of request p taking call d (kind bit k) in the
// local search: the other candidates of d that made no call of kind k
// before it, ranked by the events that made them ready (their arrivals
// where the ticks were not spread), with their kinds before d where the
// order is left open. kp and ep are p's kinds and ready event before d
// (prefix).
func (ls *local) localFIFO(p, d int32, k, kp uint64, ep readyEv) float64 {
	r := ls.r
	ready := r.l.arrLo != nil
	if !ready {
		ep = r.arrivalEv(p)
	}
	sure := 0
	buf := ls.probs[:0]
	for _, q := range ls.candsOf(d) {
		if q == p {
			continue
		}
		made, kq, eq := ls.prefix(q, d, k)
		if made {
			continue
		}
		if !ready {
			eq = r.arrivalEv(q)
		}
		if !r.msgTied(eq.msg, ep.msg) {
			kq = 0
		}
		switch pr := r.readyProb(ls.m, q, p, eq, ep, kq, kp); {
		case pr >= 1:
			sure++
		case pr > 0:
			buf = append(buf, pr)
		}
	}
	ls.probs = buf
	return ls.m.softFIFO(sure, buf)
}
