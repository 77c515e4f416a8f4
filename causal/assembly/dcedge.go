package assembly

import "math"

// The floor of unrelated pairs near the end of the capture (issue 11).
// dcHistograms measures the floor after a trigger from the messages sent
// between deconvLag and 2·deconvLag after it. A trigger less than
// 2·deconvLag before the capture's end has no such window, or part of
// one, and so counted no floor, or too little, while its near window
// still held its pairs: on a generated trace of 0.4 s (a thousand
// requests at 64 in flight) an eighth of the triggers did, and the
// unrelated pairs left over above the floor were fourteen times the
// true ones at the eventloop gateway (1.7 times once corrected). Each
// trigger's floor is read from the part of its far window the capture
// covers, or, where it covers less than a quarter of it, from the
// node's mean rate of each kind of message; and it is laid over the
// part of the near window the capture covers only.

// dcRates returns the time of the last event of the node's timeline and
// its mean rate (per ns) of each kind of message sent (indexed from
// endKind), over the timeline's span.
func dcRates(evs []dcEvent, nk int32) (end int64, rates []float64) {
	rates = make([]float64, nk)
	if len(evs) == 0 {
		return 0, rates
	}
	start := evs[0].t
	end = evs[len(evs)-1].t
	for i := range evs {
		if !evs[i].trig {
			rates[evs[i].next-endKind]++
		}
	}
	span := float64(max(end-start, 1))
	for i := range rates {
		rates[i] /= span
	}
	return end, rates
}

// trigFloor adds, for trigger e, the floor of unrelated pairs of every
// kind of message to its row (creating the row's floors as needed), from
// far: the messages of each kind counted in its far window (reset here).
// farKinds lists the kinds counted; kinds the far window did not see
// still get a floor where it was cut short by the end of the capture.
func (r *run) trigFloor(row *dcRow, floor map[dcKey]*[nGapBins]float64, e *dcEvent, end int64, far []float64, farKinds *[]int32, rates []float64) {
	covered := min(float64(deconvLag), float64(end-e.t-deconvLag))
	near := min(float64(deconvLag), float64(end-e.t))
	short := covered < deconvLag/4
	add := func(x int32, rate float64) {
		f := row.floor[x]
		if f == nil {
			f = new([nGapBins]float64)
			row.floor[x] = f
			floor[dcKey{e.tk, x + endKind}] = f
		}
		r.addFloorUpTo(f, rate, near)
	}
	if short {
		for x, rate := range rates {
			if rate > 0 {
				add(int32(x), rate)
			}
		}
	} else {
		for _, next := range *farKinds {
			x := next - endKind
			add(x, far[x]/covered)
		}
	}
	for _, next := range *farKinds {
		far[next-endKind] = 0
	}
	*farKinds = (*farKinds)[:0]
}

// addFloorUpTo adds to floor f what unrelated messages arriving at rate
// (per ns) put in each bin, over the delays up to limit (ns).
func (r *run) addFloorUpTo(f *[nGapBins]float64, rate, limit float64) {
	for b := 1; b < nGapBins && gapLow[b] <= limit; b++ {
		w := math.Min(gapWidth[b], limit-gapLow[b])
		f[b] += rate * w
	}
	f[0] += rate * float64(r.tol)
}

// Handoffs in the deconvolution. A call handed a pooled connection
// (handoff.go) leaves when the previous user's reply frees it: right
// after that reply, whichever request it serves. Counted as a reply
// followed by a call, such pairs made a sharp bump that the first model
// read as a request's next call after the reply: at a gateway calling
// its API once per request over a pool of 16 at 64 in flight, that most
// requests that got a reply call again (0.64), and the first pass gave
// a few requests up to 32 calls each (a request that waited long for a
// connection encloses that many) and 972 of the 1,000 none; every later
// pass learnt "no call" from that (TestFirstModelHandoffs). The search
// reads a handed call's timing from the freeing already; the
// deconvolution leaves out the pair of a handed call and the reply that
// freed its connection (the call is still counted after every other
// trigger). A request's own next call on the connection its last call
// freed is left out too: its delay after that reply is then learnt
// from the other triggers' pairs and from the passes.

// poolWaitShare is the share of a node's calls of a kind that must have
// been handed their connection for the calls of the kind to be taken to
// wait for a saturated pool.
const poolWaitShare = 0.9

// poolWaits returns the kinds of call of node n that wait for a
// saturated pool: at least poolWaitShare of their calls were handed a
// connection just freed. Where a kind's calls are handed their
// connections now and then (half of the testbed's backends' queries at
// 64 in flight: a request's next query on the connection its last one
// freed, as often as another's), the pair says as much about the
// request as about the pool, and the deconvolution keeps it (leaving it
// out there cost 1.5 points of requests on a testbed run); where nearly
// every call waited (992 of the eventloop gateway's 1,000 calls to its
// API), the freeing reply and the call are the pool's pair.
func (r *run) poolWaits(n int32) map[int32]bool {
	if r.freed == nil {
		return nil
	}
	count := map[int32][2]int{}
	for _, c := range r.childrenOf[n] {
		v := count[r.calls[c].kind]
		v[1]++
		if r.freed[c] != noTime {
			v[0]++
		}
		count[r.calls[c].kind] = v
	}
	waits := map[int32]bool{}
	for k, v := range count {
		if float64(v[0]) >= poolWaitShare*float64(v[1]) {
			waits[k] = true
		}
	}
	return waits
}

// freedIf returns when call c's connection was freed just before it was
// sent (handoffs), where its kind waits for a saturated pool (waits),
// else noTime.
func (r *run) freedIf(c int32, waits map[int32]bool) int64 {
	if !waits[r.calls[c].kind] {
		return noTime
	}
	return r.freed[c]
}

// handedBy reports whether message s was a call handed the connection
// that the reply e freed (matched by time: the freeing is that reply's
// arrival).
func handedBy(e, s *dcEvent) bool {
	return !e.tk.arrival && s.freed != noTime && s.freed == e.t
}

// handed holds, by pair of a reply's kind and a kind of call, the
// histogram of the delays of the calls handed the connection the reply
// freed.
type handed map[dcKey]*hist

// add counts a handed call of pair k in bin b.
func (hd handed) add(k dcKey, b int) {
	h := hd[k]
	if h == nil {
		h = &hist{}
		hd[k] = h
	}
	h.add(b, 1)
}

// addBack adds the handed calls to sig, the pairs above the floor, as
// far as the replies' conservation allows: each reply to a request's
// call is followed by one next message of that request, so where the
// other pairs of a kind of reply (net: the pairs above the floor, before
// clipping, whose upward noise would count) already account for its
// replies, its handed calls were other requests' (weight 0), and where
// they leave some unexplained, up to that many handed calls may be the
// requests' own next calls (weighed so that the reply kind's pairs add
// up to its replies, at most 1).
func (hd handed) addBack(sig map[dcKey]*hist, net, ntrig map[trigKind]float64) {
	own := map[trigKind]float64{}
	for k, h := range hd {
		own[k.tk] += h.n
	}
	for k, h := range hd {
		w := min(1, max(0, ntrig[k.tk]-net[k.tk])/own[k.tk])
		if w <= 0 {
			continue
		}
		s := sig[k]
		if s == nil {
			s = &hist{}
			sig[k] = s
		}
		for b, v := range h.w {
			if v > 0 {
				s.add(b, w*v)
			}
		}
	}
}
