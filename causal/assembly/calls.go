package assembly

import (
	"cmp"
	"math"
	"slices"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/internal/runsort"
	"github.com/wirepath/wirepath/trace"
)

// noTime marks a time nobody observed.
const noTime = math.MinInt64

// How a call's CALL and RETURN were paired (call.paired).
const (
	pairedNone   uint8 = iota // one of the two was not seen
	pairedCallID              // by call id
	pairedStream              // by stream id within the connection
	pairedSeq                 // by ordinal on the connection
	pairedOrder               // by order on the connection
)

// pairNames name the pairings in requests' evidence.
var pairNames = [...]string{"unseen", "call-id", "stream", "order", "order"}

// Call flags.
const (
	flagReturnFirst uint8 = 1 << iota // the RETURN is stamped before its CALL
	flagSendGuessed                   // send or arrival taken from the other end
	flagBackGuessed                   // reply or its arrival taken from the other end
	flagOneWay                        // a message of unknown kind: no RETURN expected
)

// call is one CALL with its RETURN, either of which may be unseen. Times
// are on the reference clock (corrected by the trace's clock offsets);
// send and back are the caller's, arr and rep the callee's.
type call struct {
	callMsg, retMsg int32 // trace indices, -1 when unseen
	caller, callee  int32 // dense node ids
	send, arr       int64
	rep, back       int64
	reqBytes        int64 // -1 when the CALL was not seen
	repBytes        int64 // -1 when the RETURN was not seen
	kind            int32 // kind id (kinds.go)
	retClass        uint8
	paired          uint8
	flags           uint8
}

// seenSend returns the call's start on the caller's clock (its send, else
// its arrival, else noTime).
func (c *call) start() int64 {
	if c.send != noTime {
		return c.send
	}
	return c.arr
}

// pairCounts are the counters of the pairing.
type pairCounts struct {
	messages, noTime, calls, returns, oneWay     int64
	pairedByID, pairedByStream, pairedBySeq      int64
	pairedByOrder, unpairedCalls, unpairedReturn int64
	returnFirst, kindsInferred                   int64
}

// loader reads a trace into calls.
type loader struct {
	msgs    []trace.Message
	syms    *trace.Symbols
	offsets []int64
	tol     int64
	cnt     pairCounts
	calls   []call
	// node ids
	nodeOf map[trace.Sym]int32
	// nodeMemo remembers node's last answers by the symbol's low bits.
	nodeMemo [4]struct {
		s  trace.Sym
		id int32 // the node id plus one; 0: empty
	}
	nodeSym []trace.Sym
	// kinds of messages after inference (kinds are given or inferred)
	kinds []trace.Kind
	// res is the timestamps' resolution: the largest power of ten of
	// nanoseconds (up to a second) that divides them all.
	res int64
	// sendSp and recvSp are the messages' raw times spread within their
	// ticks (spreadTicks), nil when the timestamps are fine; spacing is
	// the finest spacing of two spread times.
	sendSp, recvSp []int64
	spacing        int64
	// arrLo and arrHi bound each message's arrival on the receiver's raw
	// clock where the times were spread (arrivalIntervals; fifotie.go).
	arrLo, arrHi []int64
}

// resolution returns the largest power of ten of nanoseconds, up to a
// second, that divides every known timestamp of msgs (1 when none is
// known).
func resolution(msgs []trace.Message) int64 {
	res := int64(1e9)
	for i := range msgs {
		for _, t := range [2]trace.Timestamp{msgs[i].SendTS, msgs[i].RecvTS} {
			for t.Known() && res > 1 && int64(t)%res != 0 {
				res /= 10
			}
		}
		if res == 1 {
			break
		}
	}
	return res
}

func (l *loader) off(s trace.Sym) int64 {
	if int(s) < len(l.offsets) {
		return l.offsets[s]
	}
	return 0
}

// sendTime and recvTime are message i's times on the reference clock,
// noTime when unseen.
func (l *loader) sendTime(i int32) int64 {
	m := &l.msgs[i]
	if !m.SendTS.Known() {
		return noTime
	}
	if l.sendSp != nil {
		return l.sendSp[i] - l.off(m.SrcNode)
	}
	return int64(m.SendTS) - l.off(m.SrcNode)
}

func (l *loader) recvTime(i int32) int64 {
	m := &l.msgs[i]
	if !m.RecvTS.Known() {
		return noTime
	}
	if l.recvSp != nil {
		return l.recvSp[i] - l.off(m.DstNode)
	}
	return int64(m.RecvTS) - l.off(m.DstNode)
}

// calleeTime is the time of a CALL or RETURN on the callee's clock (a
// CALL's arrival, a RETURN's departure), else on the caller's.
func (l *loader) calleeTime(i int32) int64 {
	var t int64
	if l.kinds[i] == trace.KindReturn {
		t = l.sendTime(i)
		if t == noTime {
			t = l.recvTime(i)
		}
	} else {
		t = l.recvTime(i)
		if t == noTime {
			t = l.sendTime(i)
		}
	}
	return t
}

func (l *loader) node(s trace.Sym) int32 {
	m := &l.nodeMemo[s&3]
	if m.id > 0 && m.s == s {
		return m.id - 1
	}
	id, ok := l.nodeOf[s]
	if !ok {
		id = int32(len(l.nodeSym))
		l.nodeOf[s] = id
		l.nodeSym = append(l.nodeSym, s)
	}
	m.s, m.id = s, id+1
	return id
}

// load reads the messages of ms and pairs them into calls.
func load(ms trace.Messages, tol int64, naming causal.Naming) *loader {
	l := &loader{
		msgs:    trace.MessageSlice(ms),
		syms:    ms.Symbols(),
		offsets: causal.NodeOffsets(ms),
		tol:     tol,
		nodeOf:  make(map[trace.Sym]int32),
	}
	l.cnt.messages = int64(len(l.msgs))
	l.res = resolution(l.msgs)
	l.inferKinds(ms, naming)
	l.sendSp, l.recvSp, l.spacing = spreadTicks(l.msgs, l.res)
	if l.sendSp != nil {
		l.arrLo, l.arrHi = arrivalIntervals(l.msgs, l.res)
	}
	l.pair()
	return l
}

// inferKinds takes the messages' kinds as given when any message has one;
// otherwise it infers them from the roles of the endpoints (the receiver
// of a call is the fixed port, trace.ClassifyRoles) and, where both ends
// look alike, from order: the first message seen on a connection is a
// CALL.
func (l *loader) inferKinds(ms trace.Messages, naming causal.Naming) {
	l.kinds = make([]trace.Kind, len(l.msgs))
	given := false
	for i := range l.msgs {
		l.kinds[i] = l.msgs[i].Kind
		if l.kinds[i] != trace.KindUnknown {
			given = true
		}
	}
	if given || len(l.msgs) == 0 {
		return
	}
	roles := trace.ClassifyRoles(ms, naming.Roles)
	type conn struct{ a, b trace.Sym }
	server := make(map[conn]trace.Sym)
	for i := range l.msgs {
		m := &l.msgs[i]
		if m.Src == 0 || m.Dst == 0 {
			continue
		}
		k := conn{min(m.Src, m.Dst), max(m.Src, m.Dst)}
		fs, fd := roles.Fixed(m.Src), roles.Fixed(m.Dst)
		switch {
		case fd && !fs:
			server[k] = m.Dst
		case fs && !fd:
			server[k] = m.Src
		}
	}
	order := l.timeOrder()
	for _, i := range order {
		m := &l.msgs[i]
		if m.Src == 0 || m.Dst == 0 {
			continue
		}
		k := conn{min(m.Src, m.Dst), max(m.Src, m.Dst)}
		s, ok := server[k]
		if !ok {
			s = m.Dst
			server[k] = s
		}
		if m.Dst == s {
			l.kinds[i] = trace.KindCall
		} else {
			l.kinds[i] = trace.KindReturn
		}
		l.cnt.kindsInferred++
	}
}

// timeOrder returns the message indices in order of their time (send,
// else receive, on the reference clock), ties by index.
func (l *loader) timeOrder() []int32 {
	order := make([]int32, len(l.msgs))
	ts := make([]int64, len(l.msgs))
	for i := range order {
		order[i] = int32(i)
		ts[i] = l.sendTime(int32(i))
		if ts[i] == noTime {
			ts[i] = l.recvTime(int32(i))
		}
	}
	slices.SortStableFunc(order, func(a, b int32) int { return cmp.Compare(ts[a], ts[b]) })
	return order
}

// pairKey groups the messages that can pair: one connection (its caller
// and callee endpoints, or its connection number, or its nodes) and one
// pairing id (call id, stream, ordinal or none).
type pairKey struct {
	conn   uint32
	a, b   trace.Sym // caller and callee endpoints (or nodes)
	byNode bool
	idType uint8
	id     uint64
}

func (l *loader) keyOf(i int32) pairKey {
	m := &l.msgs[i]
	k := pairKey{conn: m.Conn}
	if m.Conn == 0 {
		a, b := m.Src, m.Dst
		if a == 0 || b == 0 {
			a, b, k.byNode = m.SrcNode, m.DstNode, true
		}
		if l.kinds[i] == trace.KindReturn {
			a, b = b, a
		}
		k.a, k.b = a, b
	}
	switch {
	case m.CallID != 0:
		k.idType, k.id = pairedCallID, uint64(m.CallID)
	case m.Stream != 0:
		k.idType, k.id = pairedStream, m.Stream
	case m.Seq != 0:
		// The k-th request and the k-th response of a serial protocol.
		k.idType, k.id = pairedSeq, uint64(m.Seq)
	default:
		k.idType = pairedOrder
	}
	return k
}

func cmpKey(x, y *pairKey) int {
	if c := cmp.Compare(x.conn, y.conn); c != 0 {
		return c
	}
	if c := cmp.Compare(x.a, y.a); c != 0 {
		return c
	}
	if c := cmp.Compare(x.b, y.b); c != 0 {
		return c
	}
	if x.byNode != y.byNode {
		if x.byNode {
			return 1
		}
		return -1
	}
	if c := cmp.Compare(x.idType, y.idType); c != 0 {
		return c
	}
	return cmp.Compare(x.id, y.id)
}

// pair groups the CALLs and RETURNs by pairKey and pairs them within each
// group: the k-th CALL with the k-th RETURN when the group holds as many of
// each (whatever their timestamps say: a RETURN stamped before its CALL
// is counted, not dropped), else each RETURN with the latest unpaired CALL
// before it (within the tolerance), as on a serial connection where a
// message was lost. Messages of unknown kind are one-way calls.
func (l *loader) pair() {
	n := len(l.msgs)
	ts := make([]int64, n)
	ps := make([]pairMsg, 0, n)
	conns := make([]uint32, 0, n)
	class := make([]uint8, 0, n)
	for i := range n {
		i32 := int32(i)
		ts[i] = l.calleeTime(i32)
		if ts[i] == noTime {
			l.cnt.noTime++
			continue
		}
		switch l.kinds[i] {
		case trace.KindCall:
			l.cnt.calls++
		case trace.KindReturn:
			l.cnt.returns++
		default:
			l.cnt.oneWay++
			l.addCall(i32, -1, pairedNone)
			l.calls[len(l.calls)-1].flags |= flagOneWay
			continue
		}
		p := pairMsg{key: l.keyOf(i32), t: ts[i], i: i32}
		ps = append(ps, p)
		conns = append(conns, p.key.conn)
		class = append(class, uint8(l.kinds[i]-trace.KindCall)) // 0 CALL, 1 RETURN
	}
	ps = bucketSort[pairMsg](ps, conns, class)
	var cs, rs []int32
	for lo := 0; lo < len(ps); {
		hi := lo + 1
		for hi < len(ps) && cmpKey(&ps[lo].key, &ps[hi].key) == 0 {
			hi++
		}
		cs, rs = cs[:0], rs[:0]
		for _, p := range ps[lo:hi] {
			if l.kinds[p.i] == trace.KindCall {
				cs = append(cs, p.i)
			} else {
				rs = append(rs, p.i)
			}
		}
		l.pairGroup(cs, rs, ts, ps[lo].key.idType)
		lo = hi
	}
	l.sortCalls()
}

// pairMsg is a CALL or RETURN to pair: its group's key, its time on the
// callee's side and its index.
type pairMsg struct {
	key pairKey
	t   int64
	i   int32
}

// Less orders by group, then by time, then by index.
func (p *pairMsg) Less(o *pairMsg) bool {
	if c := cmpKey(&p.key, &o.key); c != 0 {
		return c < 0
	}
	if p.t != o.t {
		return p.t < o.t
	}
	return p.i < o.i
}

// callOrder is a call's sort key: its start and its first message.
type callOrder struct {
	start int64
	first int32
	pos   int32 // in l.calls
}

// Less orders by start, then by first message.
func (c *callOrder) Less(o *callOrder) bool {
	if c.start != o.start {
		return c.start < o.start
	}
	return c.first < o.first
}

// sortCalls puts the calls in order of start, and at one instant (coarse
// timestamps) in the order the trace lists their first messages: the
// order the capture or the log saw them.
func (l *loader) sortCalls() {
	keys := make([]callOrder, len(l.calls))
	for k := range l.calls {
		c := &l.calls[k]
		first := c.callMsg
		if first < 0 {
			first = c.retMsg
		}
		keys[k] = callOrder{c.start(), first, int32(k)}
	}
	keys, _ = runsort.Sort[callOrder](keys, nil)
	sorted := make([]call, len(l.calls))
	for k, o := range keys {
		sorted[k] = l.calls[o.pos]
	}
	l.calls = sorted
}

// pairGroup pairs the CALLs cs with the RETURNs rs of one group, both in
// time order.
func (l *loader) pairGroup(cs, rs []int32, ts []int64, how uint8) {
	if len(cs) == len(rs) {
		for k := range cs {
			l.addCall(cs[k], rs[k], how)
		}
		return
	}
	// Each RETURN answers the latest unpaired CALL before it: on a serial
	// connection a lost message then costs its own call only.
	var open []int32
	ci := 0
	for _, r := range rs {
		for ci < len(cs) && ts[cs[ci]] <= ts[r]+l.tol {
			open = append(open, cs[ci])
			ci++
		}
		if len(open) == 0 {
			l.addCall(-1, r, pairedNone)
			continue
		}
		c := open[len(open)-1]
		open = open[:len(open)-1]
		for _, u := range open {
			l.addCall(u, -1, pairedNone)
		}
		open = open[:0]
		l.addCall(c, r, how)
	}
	for _, u := range open {
		l.addCall(u, -1, pairedNone)
	}
	for ; ci < len(cs); ci++ {
		l.addCall(cs[ci], -1, pairedNone)
	}
}

// addCall adds the call of CALL c and RETURN r (either -1).
func (l *loader) addCall(c, r int32, how uint8) {
	k := call{callMsg: c, retMsg: r, reqBytes: -1, repBytes: -1, paired: how,
		send: noTime, arr: noTime, rep: noTime, back: noTime}
	switch {
	case c >= 0 && r >= 0:
		switch how {
		case pairedCallID:
			l.cnt.pairedByID++
		case pairedStream:
			l.cnt.pairedByStream++
		case pairedSeq:
			l.cnt.pairedBySeq++
		default:
			l.cnt.pairedByOrder++
		}
	case c >= 0:
		if l.kinds[c] == trace.KindCall {
			l.cnt.unpairedCalls++
		}
	default:
		l.cnt.unpairedReturn++
	}
	if c >= 0 {
		m := &l.msgs[c]
		k.caller, k.callee = l.node(m.SrcNode), l.node(m.DstNode)
		k.send, k.arr = l.sendTime(c), l.recvTime(c)
		if k.send == noTime {
			k.send, k.flags = k.arr, k.flags|flagSendGuessed
		}
		if k.arr == noTime {
			k.arr, k.flags = k.send, k.flags|flagSendGuessed
		}
		k.reqBytes = m.Bytes
	}
	if r >= 0 {
		m := &l.msgs[r]
		k.caller, k.callee = l.node(m.DstNode), l.node(m.SrcNode)
		k.rep, k.back = l.sendTime(r), l.recvTime(r)
		if k.rep == noTime {
			k.rep, k.flags = k.back, k.flags|flagBackGuessed
		}
		if k.back == noTime {
			k.back, k.flags = k.rep, k.flags|flagBackGuessed
		}
		k.repBytes = m.Bytes
	}
	if c >= 0 && r >= 0 {
		k.caller, k.callee = l.node(l.msgs[c].SrcNode), l.node(l.msgs[c].DstNode)
		if k.rep < k.arr || k.back < k.send {
			if l.measured(k.rep, r) < l.measured(k.arr, c) || l.measured(k.back, r) < l.measured(k.send, c) {
				k.flags |= flagReturnFirst
				l.cnt.returnFirst++
			} else {
				// A reply received in the tick its call left in, spread
				// before it (spreadTicks puts receipts first): it came
				// right after.
				k.rep, k.back = max(k.rep, k.arr), max(k.back, k.send)
			}
		}
	}
	l.calls = append(l.calls, k)
}
