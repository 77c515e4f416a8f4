package linking

import (
	"cmp"
	"slices"

	"github.com/wirepath/wirepath/internal/parallel"
	"github.com/wirepath/wirepath/trace"
)

// Call-aware linking (Options.Calls). A trace whose messages carry
// CALL/RETURN kinds (and, where the protocol gives them, call ids) says
// more than WAP5 assumes: a RETURN C→B answers one CALL B→C, belongs to the
// same path instance, and was caused by a message that reached C while C
// served that call — the CALL itself, or the RETURN of a call C made after
// the CALL arrived. A CALL B→C cannot have been caused by a CALL A→B that B
// had already answered by the time B→C's answer came back. These are the
// nesting relation of Project 5, stated on one node's clock at a time, so
// linking still needs no clock synchronisation.

// pairCalls matches every RETURN with its CALL and returns each message's
// mate (the RETURN of a CALL, the CALL of a RETURN, -1 for none). Calls are
// keyed by connection (both endpoints, else both nodes) and call id. Within
// a key a RETURN answers the earliest unanswered CALL, in the order of one
// clock: the callee's (the CALL's arrival and the RETURN's departure) when
// both are known, else the caller's (the CALL's departure and the RETURN's
// arrival). A pair is kept only when the clock the RETURN's parents are
// looked up on (see linkSender/linkReceiver) has seen the CALL: its arrival
// for a RETURN whose send was seen, its send otherwise.
func pairCalls(msgs []trace.Message, mode []uint8, nodeID []int32, nNodes int, w int) (mate []int32, orphans []bool) {
	n := len(msgs)
	mate = make([]int32, n)
	for i := range mate {
		mate[i] = -1
	}
	rpc := func(i int) bool {
		k := msgs[i].Kind
		return (k == trace.KindCall || k == trace.KindReturn) && mode[i] != linkNone
	}
	// Pass 1, callee's clock: CALLs arriving at a node and RETURNs leaving it.
	start, list := bucketize(nNodes, n, func(i int) int32 {
		if !rpc(i) {
			return -1
		}
		return calleeClock(&msgs[i], nodeID)
	})
	matchBuckets(msgs, start, list, mate, w, calleeTime)
	// Pass 2, caller's clock, for what pass 1 left: CALLs leaving a node and
	// RETURNs arriving at it.
	start, list = bucketize(nNodes, n, func(i int) int32 {
		if !rpc(i) || mate[i] >= 0 {
			return -1
		}
		return callerClock(&msgs[i], nodeID)
	})
	matchBuckets(msgs, start, list, mate, w, callerTime)
	orphans = findOrphans(msgs, mate, rpc)
	keepSeenCalls(msgs, mode, mate)
	return mate, orphans
}

// findOrphans marks the RETURNs whose CALL is not in the trace at all (a
// sniffer lost it): unpaired RETURNs with a call id that no CALL of the
// trace has with the same connection. It returns nil when there are none.
// An orphan's true parent is its lost CALL or a message of its own
// request that reached the callee during the call, which nothing tells
// apart from other requests' messages: linked as a free message it would
// join another request and spoil it as well, so it has no possible parent
// (callFilter.allowed) and starts an instance of its own.
func findOrphans(msgs []trace.Message, mate []int32, rpc func(int) bool) []bool {
	unpaired := map[linkCallKey]bool{}
	for i := range msgs {
		if mate[i] < 0 && msgs[i].Kind == trace.KindReturn && msgs[i].CallID != 0 && rpc(i) {
			unpaired[linkCallKeyOf(&msgs[i])] = true
		}
	}
	if len(unpaired) == 0 {
		return nil
	}
	for i := range msgs {
		if msgs[i].Kind == trace.KindCall {
			delete(unpaired, linkCallKeyOf(&msgs[i]))
		}
	}
	if len(unpaired) == 0 {
		return nil
	}
	orphans := make([]bool, len(msgs))
	for i := range msgs {
		if mate[i] < 0 && msgs[i].Kind == trace.KindReturn && rpc(i) && unpaired[linkCallKeyOf(&msgs[i])] {
			orphans[i] = true
		}
	}
	return orphans
}

// calleeClock returns the dense id of the node on whose clock a CALL or
// RETURN m is paired in the first pass, the callee (where the CALL
// arrived and the RETURN left), or -1 when that clock did not see it.
func calleeClock(m *trace.Message, nodeID []int32) int32 {
	switch {
	case m.Kind == trace.KindCall && m.RecvTS.Known() && m.DstNode != 0:
		return nodeID[m.DstNode]
	case m.Kind == trace.KindReturn && m.SendTS.Known():
		return nodeID[m.SrcNode]
	}
	return -1
}

// calleeTime is m's time on the callee's clock.
func calleeTime(m *trace.Message) int64 {
	if m.Kind == trace.KindCall {
		return int64(m.RecvTS)
	}
	return int64(m.SendTS)
}

// callerClock returns the dense id of the node on whose clock a CALL or
// RETURN m is paired in the second pass, the caller (where the CALL left
// and the RETURN arrived), or -1 when that clock did not see it.
func callerClock(m *trace.Message, nodeID []int32) int32 {
	switch {
	case m.Kind == trace.KindCall && m.SendTS.Known():
		return nodeID[m.SrcNode]
	case m.Kind == trace.KindReturn && m.RecvTS.Known() && m.DstNode != 0:
		return nodeID[m.DstNode]
	}
	return -1
}

// callerTime is m's time on the caller's clock.
func callerTime(m *trace.Message) int64 {
	if m.Kind == trace.KindCall {
		return int64(m.SendTS)
	}
	return int64(m.RecvTS)
}

// keepSeenCalls unpairs every RETURN whose linking clock did not see its
// CALL before it: the CALL's arrival for a RETURN whose send was seen,
// its send for a RETURN linked on its receiver's clock.
func keepSeenCalls(msgs []trace.Message, mode []uint8, mate []int32) {
	for r := range msgs {
		q := mate[r]
		if q < 0 || msgs[r].Kind != trace.KindReturn {
			continue
		}
		ok := false
		switch mode[r] {
		case linkSender:
			ok = msgs[q].RecvTS.Known() && msgs[q].RecvTS <= msgs[r].SendTS
		case linkReceiver:
			ok = msgs[q].SendTS.Known() && msgs[q].SendTS <= msgs[r].RecvTS
		}
		if !ok {
			mate[r], mate[q] = -1, -1
		}
	}
}

// linkCallKey identifies the calls a RETURN may answer: the caller's and the
// callee's endpoints (or nodes, marked by the low bit) and the call id.
type linkCallKey [2]uint64

func linkCallKeyOf(m *trace.Message) linkCallKey {
	caller, callee := m.Src, m.Dst
	if m.Kind == trace.KindReturn {
		caller, callee = m.Dst, m.Src
	}
	if caller != 0 && callee != 0 {
		return linkCallKey{uint64(caller)<<32 | uint64(callee), uint64(m.CallID) << 1}
	}
	caller, callee = m.SrcNode, m.DstNode
	if m.Kind == trace.KindReturn {
		caller, callee = m.DstNode, m.SrcNode
	}
	return linkCallKey{uint64(caller)<<32 | uint64(callee), uint64(m.CallID)<<1 | 1}
}

// matchBuckets pairs the CALLs and RETURNs of every bucket (one node's
// events on its clock) in time order: a RETURN answers the earliest
// unanswered CALL of its key that came at or before it.
func matchBuckets(msgs []trace.Message, start, list []int32, mate []int32, w int, ts func(*trace.Message) int64) {
	type event struct {
		t   int64
		msg int32
		ret bool
	}
	type fifo struct{ head, tail int32 }
	type worker struct {
		ev   []event
		open map[linkCallKey]fifo
		next []int32 // pending CALLs: the next CALL of the same key, by slot
		msg  []int32
	}
	ws := make([]worker, max(1, w))
	parallel.For(len(start)-1, w, 1, func(wi, b int) {
		wk := &ws[wi]
		if wk.open == nil {
			wk.open = make(map[linkCallKey]fifo)
		}
		clear(wk.open)
		wk.ev = wk.ev[:0]
		wk.next, wk.msg = wk.next[:0], wk.msg[:0]
		for _, i := range list[start[b]:start[b+1]] {
			m := &msgs[i]
			wk.ev = append(wk.ev, event{ts(m), i, m.Kind == trace.KindReturn})
		}
		// Time, then CALLs before RETURNs (a RETURN may leave the instant
		// its CALL arrived), then trace order.
		slices.SortFunc(wk.ev, func(a, b event) int {
			if c := cmp.Compare(a.t, b.t); c != 0 {
				return c
			}
			if a.ret != b.ret {
				if a.ret {
					return 1
				}
				return -1
			}
			return cmp.Compare(a.msg, b.msg)
		})
		for _, e := range wk.ev {
			k := linkCallKeyOf(&msgs[e.msg])
			q, ok := wk.open[k]
			if !e.ret {
				slot := int32(len(wk.msg))
				wk.msg = append(wk.msg, e.msg)
				wk.next = append(wk.next, -1)
				if ok {
					wk.next[q.tail] = slot
					q.tail = slot
				} else {
					q = fifo{slot, slot}
				}
				wk.open[k] = q
				continue
			}
			if !ok {
				continue
			}
			c := wk.msg[q.head]
			if nx := wk.next[q.head]; nx < 0 {
				delete(wk.open, k)
			} else {
				wk.open[k] = fifo{nx, q.tail}
			}
			mate[c], mate[e.msg] = e.msg, c
		}
	})
}

// callFilter applies the nesting relation to the possible parents of one
// message, on the clock linking uses for it.
type callFilter struct {
	msgs    []trace.Message
	mate    []int32
	orphans []bool // RETURNs whose CALL is not in the trace (findOrphans)
}

// orphan reports whether message i is a RETURN whose CALL is not in the
// trace (false for a nil filter).
func (f *callFilter) orphan(i int32) bool {
	return f != nil && f.orphans != nil && f.orphans[i]
}

// anchor returns the CALL that message i answers when i is a RETURN paired
// with it, else -1 (always -1 for a nil filter: calls are not used).
func (f *callFilter) anchor(i int32) int32 {
	if f == nil || f.mate == nil || f.msgs[i].Kind != trace.KindReturn {
		return -1
	}
	return f.mate[i]
}

// allowed reports whether j, a message into i's sender that arrived before
// i left (sender's clock), may have caused i:
//
//   - i a RETURN answering q: j is q, or a RETURN (or a message of unknown
//     kind) that arrived after q did; a RETURN j must answer a call sent
//     after q arrived. Another CALL cannot have caused i.
//   - i a CALL: a CALL j that was answered before i's RETURN arrived (or,
//     when that was not seen, before i left) cannot have caused i.
//   - i a RETURN whose CALL is not in the trace (an orphan): nothing.
//
// The caller scans only arrivals after q's for a RETURN i.
func (f *callFilter) allowed(i, j int32) bool {
	if f.orphan(i) {
		return false
	}
	mi, mj := &f.msgs[i], &f.msgs[j]
	switch mi.Kind {
	case trace.KindReturn:
		q := f.mate[i]
		if q < 0 || j == q {
			return true
		}
		switch mj.Kind {
		case trace.KindCall:
			return false
		case trace.KindReturn:
			if cj := f.mate[j]; cj >= 0 && f.msgs[cj].SendTS.Known() {
				return f.msgs[cj].SendTS >= f.msgs[q].RecvTS
			}
		}
	case trace.KindCall:
		if mj.Kind != trace.KindCall {
			return true
		}
		rj := f.mate[j]
		if rj < 0 || !f.msgs[rj].SendTS.Known() {
			return true
		}
		end := mi.SendTS
		if ri := f.mate[i]; ri >= 0 && f.msgs[ri].RecvTS.Known() {
			end = f.msgs[ri].RecvTS
		}
		return f.msgs[rj].SendTS >= end
	}
	return true
}
