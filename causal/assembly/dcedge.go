package assembly

import (
	"maps"
	"slices"
)

// Handoffs in the deconvolution (issue 11). A call handed a pooled
// connection (handoff.go) leaves when the previous user's reply frees
// it: right after that reply, whichever request it serves. Counted as a
// reply followed by a call, such pairs made a sharp bump that the first
// model read as a request's next call after the reply: at a gateway
// calling its API once per request over a pool of 16 at 64 in flight,
// that half the requests that got a reply call again, and the first
// pass gave a few requests up to 32 calls each (a request that waited
// long for a connection encloses that many) and 971 of the 1,000 none;
// every later pass learnt "no call" from that (TestNoCollapse). The
// search reads a handed call's timing from the freeing already. Where a
// kind of call waits for a saturated pool (poolWaits), the deconvolution
// leaves out the pair of a handed call and the reply that freed its
// connection (the call is still counted after every other trigger) and
// adds it back only as far as the replies' conservation allows
// (handed.addBack).

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

// handedBy reports whether a call whose connection was freed at freed
// (dcEvent.freed) was handed the connection
// that the reply e freed (matched by time: the freeing is that reply's
// arrival).
func handedBy(e *dcEvent, freed int64) bool {
	return !e.tk.arrival && freed != noTime && freed == e.t
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
	for _, k := range slices.SortedFunc(maps.Keys(hd), cmpDCKey) {
		own[k.tk] += hd[k].n
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
