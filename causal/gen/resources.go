package gen

import (
	"fmt"
	"math"

	"github.com/wirepath/wirepath/trace"
)

// The resources calls contend for: a node's threads (NodeSpec.Threads, or
// unbounded for a traced node, whose thread ids the trace records) and the
// persistent connections a node's callers keep to it (NodeSpec.Pool).
// Instances are generated one after another in order of their start, so a
// resource is reserved from when a call takes it until it is given back,
// and a call that finds every unit busy waits for the first to free: the
// truth is always physically possible (a thread serves one call at a time,
// a connection carries one call at a time), though a call that arrives
// before another started earlier may be served after it.

// threadPool is one node's threads: when each is free again.
type threadPool struct {
	free []int64
	max  int  // 0: as many as needed
	loop bool // an event loop: every call on thread 0, none waits
}

// busy marks a unit taken until it is given back.
const busy = math.MaxInt64

// acquireThread gives the call arriving at node at time arr a thread: the
// lowest-numbered free one, a new one while the pool may grow, else the
// first to free. It returns the thread (-1 when the node has no pool) and
// when the call starts being served.
func (s *state) acquireThread(node int, arr int64) (int, int64) {
	if node < 0 || s.threads == nil || s.threads[node] == nil {
		return -1, arr
	}
	tp := s.threads[node]
	if tp.loop {
		return 0, arr
	}
	for i, f := range tp.free {
		if f <= arr {
			tp.free[i] = busy
			return i, arr
		}
	}
	if tp.max == 0 || len(tp.free) < tp.max {
		tp.free = append(tp.free, busy)
		return len(tp.free) - 1, arr
	}
	first := 0
	for i, f := range tp.free {
		if f < tp.free[first] {
			first = i
		}
	}
	start := max(arr, tp.free[first])
	if tp.free[first] == busy {
		// Every thread is held by calls still being generated further up
		// this instance (a node calling itself back): serve it at once
		// rather than never.
		start = arr
	}
	tp.free[first] = busy
	s.stats.ThreadWaits++
	return first, start
}

// releaseThread frees thread th of node at time t.
func (s *state) releaseThread(node, th int, t int64) {
	if th >= 0 && !s.threads[node].loop {
		s.threads[node].free[th] = t
	}
}

// task returns the task of thread th of node for the evidence, or the
// zero Task when the node is not traced.
func (s *state) task(node, th int) trace.Task {
	if node < 0 || th == -1 || !s.p.nodes[node].traced {
		return trace.Task{}
	}
	pid := int32(1000 + 100_000*node)
	if s.p.nodes[node].eventLoop {
		th = 0 // its background calls too
	}
	if th == bgThread {
		return trace.Task{PID: pid, TID: pid + 99_999}
	}
	return trace.Task{PID: pid, TID: pid + 1 + int32(th)}
}

// pooledConn is one persistent connection of a pool.
type pooledConn struct {
	src   trace.Sym // the caller's endpoint
	id    uint32    // evidence connection number
	free  int64     // when it is free again (busy while a call uses it)
	calls int       // calls it carried, for call ids
}

// connPool is the persistent connections one node keeps to another.
type connPool struct {
	conns []pooledConn
	max   int
}

// conn is the connection one call travels on.
type conn struct {
	src  trace.Sym // the caller's endpoint
	id   uint32    // evidence connection number (0 without conns evidence)
	send int64     // when the call can be sent (later than asked when it waited)
	pool *connPool // nil: a connection of its own
	slot int
	call int // the call's ordinal on a pooled connection, from 1
}

// newConnID numbers a new connection when the trace carries connections.
func (s *state) newConnID() uint32 {
	if !s.p.ev.conns {
		return 0
	}
	s.connSeq = append(s.connSeq, [2]uint32{})
	return uint32(len(s.connSeq) - 1)
}

// openConn returns the connection a call from caller to callee, to be
// sent at send, travels on: the client's connection of the instance for a
// client's root call, a pooled one when the callee has a pool, else a new
// one from an ephemeral port.
func (s *state) openConn(caller, callee party, send int64, root bool) conn {
	if caller.node < 0 {
		src := s.clientEP
		if !root {
			src = s.eph(caller)
		}
		return conn{src: src, id: s.newConnID(), send: send}
	}
	size := s.p.nodes[callee.node].pool
	if size == 0 {
		return conn{src: s.eph(caller), id: s.newConnID(), send: send}
	}
	key := [2]int{caller.node, callee.node}
	cp := s.pools[key]
	if cp == nil {
		cp = &connPool{max: size}
		s.pools[key] = cp
	}
	slot := -1
	for i, c := range cp.conns {
		// The most recently freed idle connection, as keep-alive caches do.
		if c.free <= send && (slot < 0 || c.free > cp.conns[slot].free) {
			slot = i
		}
	}
	if slot < 0 && len(cp.conns) < cp.max {
		cp.conns = append(cp.conns, pooledConn{src: s.eph(caller), id: s.newConnID()})
		slot = len(cp.conns) - 1
	}
	if slot < 0 {
		slot = 0
		for i, c := range cp.conns {
			if c.free < cp.conns[slot].free {
				slot = i
			}
		}
		if f := cp.conns[slot].free; f != busy {
			send = max(send, f)
		}
		s.stats.PoolWaits++
	}
	pc := &cp.conns[slot]
	pc.free = busy
	pc.calls++
	return conn{src: pc.src, id: pc.id, send: send, pool: cp, slot: slot, call: pc.calls}
}

// closeConn gives a pooled connection back at time t, when the call's
// RETURN has arrived.
func (c *conn) closeConn(t int64) {
	if c.pool != nil {
		c.pool.conns[c.slot].free = t
	}
}

// callID returns the call id of a call on c: its caller's endpoint, with
// the call's ordinal on a pooled connection.
func (s *state) callID(c conn) trace.Sym {
	if !s.p.callIDs {
		return 0
	}
	if c.pool == nil {
		return c.src
	}
	return s.t.Intern(fmt.Sprintf("%s#%d", s.t.Str(c.src), c.call))
}

// seq returns the next ordinal of connection id in direction dir (0: from
// the opener), or 0 without conns evidence.
func (s *state) seq(id uint32, dir int) uint32 {
	if !s.p.ev.conns {
		return 0
	}
	s.connSeq[id][dir]++
	return s.connSeq[id][dir]
}
