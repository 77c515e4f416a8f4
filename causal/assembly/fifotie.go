package assembly

import (
	"cmp"
	"math"
	"math/bits"
)

// The FIFO evidence (search.fifoBins) ranks a call's candidate requests
// by the order they became ready to make it. Where coarse timestamps were
// spread (spreadTicks) two things change (docs/accuracy.md, "Calls inside
// one tick").
//
// Ready, not arrived. A node that serves events in order (an event loop,
// a queue) makes a request's next call when the event that lets it
// arrives: the request's own arrival for its first calls, the return of
// its last call for a call made after it (a chain: the gateway calls auth,
// then todo when auth answered). Ranked by arrival, two requests whose
// first calls' returns came back in the other order are ranked the wrong
// way round for their second calls; with microsecond timestamps the
// delay from the return decides, at 1 ms ticks it reads as an interval of
// the tick and the arrival's rank decided. The ready time is the later of
// the arrival and the latest return before the call (slot.last in the
// search).
//
// A distribution, not a guess. Two events received in the same tick of a
// node's clock may have an order the timestamps do not state: spreadTicks
// guesses it (the middle of the interval the sender's tick allows, else
// the trace's order), and the search used to score the rank read from
// that guess as if it were seen. Scoring, a candidate is now surely ready
// before another when the node's clock says so (different ticks) or when
// both events came from one sender (its order of sends), and otherwise
// with the chance that one uniform time in its event's arrival interval
// (arrivalIntervals) comes before one in the other's; the FIFO evidence
// is the ratio's mean over the rank's distribution (softFIFO). The order
// of two requests is one fact shared by all their calls, so the calls
// each already made move its chance (readyProb). The FIFO table is learnt
// from ranks read from the guessed order (observeFIFO): learnt from the
// rank's distribution, media lost 0.8 points and nothing gained.

// readyEv is the event that made a request ready for a call: its time
// (the reference clock, spread) and the message that brought it.
type readyEv struct {
	t   int64
	msg int32
}

// arrivalEv is request p's arrival as a readyEv.
func (r *run) arrivalEv(p int32) readyEv { return readyEv{r.arrOf(p), r.calls[p].callMsg} }

// slotReady is the event that made slot sl's request ready (its latest
// event, slot.last): the return of its last answered call when that is
// the latest, else its arrival.
func (r *run) slotReady(sl *slot) readyEv {
	if sl.lastRet >= 0 {
		if c := &r.calls[sl.lastRet]; c.back == sl.last && c.retMsg >= 0 {
			return readyEv{sl.last, c.retMsg}
		}
	}
	return readyEv{sl.last, r.calls[sl.p].callMsg}
}

// msgTied reports whether the timestamps leave the order of messages a
// and b's arrivals open: where times were spread, both were received by
// one node from different senders and the intervals their timestamps
// place the arrivals in (arrivalIntervals) overlap.
func (r *run) msgTied(a, b int32) bool {
	if r.l.arrLo == nil || a < 0 || b < 0 || a == b {
		return false
	}
	ma, mb := &r.l.msgs[a], &r.l.msgs[b]
	if !ma.RecvTS.Known() || !mb.RecvTS.Known() || ma.DstNode != mb.DstNode || ma.SrcNode == mb.SrcNode {
		return false
	}
	la, ha := r.l.arrivalBounds(a)
	lb, hb := r.l.arrivalBounds(b)
	return la < hb && lb < ha
}

// arrTied is msgTied for requests p's and q's CALLs.
func (r *run) arrTied(p, q int32) bool { return r.msgTied(r.calls[p].callMsg, r.calls[q].callMsg) }

// arrivalBounds is message i's arrival interval (arrivalIntervals), its
// whole receive tick when the send's tick does not overlap it.
func (l *loader) arrivalBounds(i int32) (lo, hi int64) {
	lo, hi = l.arrLo[i], l.arrHi[i]
	if lo >= hi {
		r := int64(l.msgs[i].RecvTS)
		return r, r + l.res
	}
	return lo, hi
}

// readyBefore reports whether request q (event eq) was ready before
// request p (event ep) as the guessed order has it: by time, then by
// arrival.
func (r *run) readyBefore(q, p int32, eq, ep readyEv) bool {
	if eq.t != ep.t {
		return eq.t < ep.t
	}
	return r.arrivedBefore(q, p)
}

// readyProb is the probability that request q (event eq) was ready before
// request p (event ep) as the timestamps state it: 0 or 1 (readyBefore)
// unless their order is left open (msgTied), and then the chance that a
// time uniform over eq's arrival interval comes before one uniform over
// ep's, updated by the calls the two made so far (kq and kp, kind bits;
// 0 and 0 when not known): a node that serves its requests in order
// makes the first request's calls first, so each kind of call one of
// them made and the other did not yet is evidence that it came first,
// worth the log ratio of the first and second FIFO ranks among m's links
// (orderLead). Scored call by call without this update, the FIFO
// evidence of a request's several calls would each draw the order afresh
// (media 1.7 points below main).
func (r *run) readyProb(m *nodeModel, q, p int32, eq, ep readyEv, kq, kp uint64) float64 {
	if !r.msgTied(eq.msg, ep.msg) {
		if pr, ok := r.crossProb(m.cross, q, p); ok {
			return pr
		}
		if r.readyBefore(q, p, eq, ep) {
			return 1
		}
		return 0
	}
	lq, hq := r.l.arrivalBounds(eq.msg)
	lp, hp := r.l.arrivalBounds(ep.msg)
	pr := uniformBefore(float64(lq), float64(hq), float64(lp), float64(hp))
	n := bits.OnesCount64(kq&^kp) - bits.OnesCount64(kp&^kq)
	if n == 0 {
		return pr
	}
	pr = min(max(pr, 1e-6), 1-1e-6)
	lo := math.Log(pr/(1-pr)) + float64(n)*m.orderLead()
	return 1 / (1 + math.Exp(-lo))
}

// orderProb is readyProb for two requests' arrivals.
func (r *run) orderProb(m *nodeModel, q, p int32, kq, kp uint64) float64 {
	return r.readyProb(m, q, p, r.arrivalEv(q), r.arrivalEv(p), kq, kp)
}

// orderLead is the log odds that one call made by a request and not yet
// by another adds to its having come first (readyProb): the weighted log
// ratio of the first and the second FIFO rank among the links of m's
// FIFO table (add-one smoothed), 0 before it has links.
func (m *nodeModel) orderLead() float64 {
	t := &m.fifo
	if t.nl < 1 || len(t.link) < 2 {
		return 0
	}
	return m.fifoWeight() * math.Log((t.link[0]+1)/(t.link[1]+1))
}

// uniformBefore is P(A < B) for A uniform over [la, ha] and B over
// [lb, hb] (both intervals of positive width): the mean over B of A's
// distribution function, (G(hb) - G(lb)) / (hb - lb) with G its integral.
func uniformBefore(la, ha, lb, hb float64) float64 {
	wa := ha - la
	g := func(x float64) float64 {
		switch {
		case x <= la:
			return 0
		case x <= ha:
			return (x - la) * (x - la) / (2 * wa)
		}
		return wa/2 + x - ha
	}
	return min(1, max(0, (g(hb)-g(lb))/(hb-lb)))
}

// rankDist is the distribution of a request's FIFO rank (capped at
// fifoBins-1) when sure other candidates surely came before it and each
// of the others with the probabilities ps: a Poisson-binomial.
func rankDist(sure int, ps []float64) [fifoBins]float64 {
	var d [fifoBins]float64
	d[min(sure, fifoBins-1)] = 1
	for _, p := range ps {
		for b := fifoBins - 1; b >= 0; b-- {
			up := 0.0
			if b > 0 {
				up = d[b-1] * p
			}
			if b == fifoBins-1 {
				d[b] += up
				continue
			}
			d[b] = d[b]*(1-p) + up
		}
	}
	return d
}

// softFIFO is the FIFO evidence of a request whose rank is uncertain:
// the log of the likelihood ratios' mean under rankDist(sure, ps), and
// logFIFO of the rank when it is certain.
func (m *nodeModel) softFIFO(sure int, ps []float64) float64 {
	if len(ps) == 0 {
		return m.logFIFO(int8(min(sure, fifoBins-1)))
	}
	d := rankDist(sure, ps)
	sum := 0.0
	for b, w := range d {
		if w > 0 {
			sum += w * math.Exp(m.logFIFO(int8(b)))
		}
	}
	return math.Log(sum)
}

// fifoCtx says what fifoOf knows of the candidates beside their arrival:
// the kinds of call each made so far and the event that made each ready
// (nil: not known; the arrival).
type fifoCtx struct {
	kinds func(q int32) uint64
	ready func(q int32) readyEv
}

// fifoOf is the FIFO evidence of request p taking a call when the
// requests others(yield) are the other candidates that made no call of
// its kind yet: softFIFO over their readyProb. buf is reused.
func (r *run) fifoOf(m *nodeModel, p int32, buf []float64, x fifoCtx, others func(yield func(q int32))) (float64, []float64) {
	sure := 0
	buf = buf[:0]
	ev := r.arrivalEv
	if x.ready != nil && r.l.arrLo != nil {
		ev = x.ready
	}
	ep := ev(p)
	kp := uint64(0)
	if x.kinds != nil {
		kp = x.kinds(p)
	}
	others(func(q int32) {
		if q == p {
			return
		}
		eq := ev(q)
		kq := uint64(0)
		if x.kinds != nil && r.msgTied(eq.msg, ep.msg) {
			kq = x.kinds(q)
		}
		switch pr := r.readyProb(m, q, p, eq, ep, kq, kp); {
		case pr >= 1:
			sure++
		case pr > 0:
			buf = append(buf, pr)
		}
	})
	return m.softFIFO(sure, buf), buf
}

// readyOrder reports whether the search ranks its slots by readiness
// (slot.last) rather than arrival: where the ticks were spread. At fine
// timestamps the delay from a return already tells which request made
// the next call, and ranking by readiness there too broke the worker pool
// of causal/accuracy/testdata/unseen at 64 in flight (67.7 → 0.1 % of
// requests right): a pool's threads do not take their next call in the
// order their returns came back.
func (s *search) readyOrder() bool { return s.r.l.arrLo != nil }

// byReady orders slot indices by when their requests became ready, then
// by arrival.
func (s *search) byReady(slots []slot) func(a, b int32) int {
	return func(a, b int32) int {
		sa, sb := &slots[a], &slots[b]
		switch {
		case sa.last != sb.last:
			return cmp.Compare(sa.last, sb.last)
		case sa.p == sb.p:
			return 0
		case s.r.arrivedBefore(sa.p, sb.p):
			return -1
		}
		return 1
	}
}

// tiedRanks sets s.fifo[i], for the slots ord lists in order (of arrival,
// or where the ticks were spread of readiness; those with ok(i) true
// eligible), to the FIFO evidence of slot i taking the call: the eligible
// slots before it surely came before it, those after it surely after,
// except those whose order with it is left open (readyProb), which came
// at most two ticks apart. Slots not eligible keep 0.
func (s *search) tiedRanks(slots []slot, ord []int32, ok func(i int32) bool) {
	s.elig2 = s.elig2[:0]
	for _, i := range ord {
		if ok(i) {
			s.elig2 = append(s.elig2, i)
		}
	}
	r := s.r
	for k, i := range s.elig2 {
		if !s.readyOrder() {
			if s.m.cross != nil && !s.m.cross.closed {
				s.crossRank(slots, k, i)
				continue
			}
			s.fifo[i] = s.m.logFIFO(int8(min(k, fifoBins-1)))
			continue
		}
		ep := r.slotReady(&slots[i])
		sure := k
		s.probs = s.probs[:0]
		open := func(j int32, before bool) {
			if eq := r.slotReady(&slots[j]); r.msgTied(eq.msg, ep.msg) {
				s.probs = append(s.probs, r.readyProb(s.m, slots[j].p, slots[i].p, eq, ep, slots[j].kinds, slots[i].kinds))
				if before {
					sure--
				}
			}
		}
		for j := k - 1; j >= 0 && slots[s.elig2[j]].last > slots[i].last-2*r.l.res; j-- {
			open(s.elig2[j], true)
		}
		for j := k + 1; j < len(s.elig2) && slots[s.elig2[j]].last < slots[i].last+2*r.l.res; j++ {
			open(s.elig2[j], false)
		}
		s.fifo[i] = s.m.softFIFO(sure, s.probs)
	}
}

// kindsBefore is the kind bits of the calls request q made, under the
// current assignment, before call d.
func (ls *local) kindsBefore(q, d int32) uint64 {
	var kb uint64
	for _, e := range ls.kidsOf(q) {
		if ls.cmpSend(e, d) >= 0 {
			break
		}
		kb |= kindBit(ls.r.calls[e].kind)
	}
	return kb
}

// readyFor is the event that made request q ready for call d under the
// current assignment: the latest return, before d left, of the calls q
// made before d, when later than its arrival.
func (ls *local) readyFor(q, d int32) readyEv {
	ev := ls.r.arrivalEv(q)
	sd := ls.r.sendOf(d)
	for _, e := range ls.kidsOf(q) {
		if ls.cmpSend(e, d) >= 0 {
			break
		}
		if c := &ls.r.calls[e]; c.back != noTime && c.back < sd && c.back > ev.t {
			ev = readyEv{c.back, c.retMsg}
		}
	}
	return ev
}
