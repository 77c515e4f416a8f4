package reconcile

import (
	"cmp"
	"slices"

	"github.com/wirepath/wirepath/flows"
	"github.com/wirepath/wirepath/preload"
	"github.com/wirepath/wirepath/trace"
)

// span is the byte range [a, b) of one direction's stream that one sniffed
// message (i: index into Reconciler.msgs) or one data call (i: index into
// its connection's Msgs) covers.
type span struct {
	a, b int64
	i    int32
}

// spans is a sorted list of non-overlapping spans.
type spans []span

// cursor searches a spans list. Searches at nearby positions (the
// cutting loop's, which move forward through the stream) start from where
// the last ones ended and cost a comparison or two instead of a binary
// search; the answers are those of a binary search (slices.BinarySearchFunc)
// whatever the hint. The hints are used only when the spans' starts and
// ends never decrease, the condition under which the first index that
// satisfies a search is what the binary search returns.
type cursor struct {
	ss   spans
	mono bool
	// disjoint: each span starts at or after the end of the one before
	// (sorted and not overlapping, as a sniffer's spans are).
	disjoint bool
	hb, ha   int // where the last afterB and atA searches ended
}

// newCursor returns a cursor on ss.
func newCursor(ss spans) cursor {
	c := cursor{ss: ss, mono: true, disjoint: true}
	for i := 1; i < len(ss); i++ {
		if ss[i].a < ss[i-1].a || ss[i].b < ss[i-1].b {
			c.mono, c.disjoint = false, false
			break
		}
		if ss[i].a < ss[i-1].b {
			c.disjoint = false
		}
	}
	return c
}

// afterB returns the first index whose span ends after x (b > x), as
// slices.BinarySearchFunc finds it.
func (c *cursor) afterB(x int64) int {
	ss, h := c.ss, c.hb
	if c.mono {
		// The answer is h when ss[h-1].b <= x < ss[h].b (with ss[-1].b
		// below and ss[len].b above every x); else try h+1 and h-1.
		switch {
		case h < len(ss) && ss[h].b <= x:
			if h+1 == len(ss) || ss[h+1].b > x {
				c.hb = h + 1
				return h + 1
			}
		case h == 0 || ss[h-1].b <= x:
			return h
		case h == 1 || ss[h-2].b <= x:
			c.hb = h - 1
			return h - 1
		}
	}
	i, j := 0, len(ss)
	for i < j {
		h := int(uint(i+j) >> 1)
		if ss[h].b <= x {
			i = h + 1
		} else {
			j = h
		}
	}
	c.hb = i
	return i
}

// atA returns the first index whose span starts at or after x (a >= x), as
// slices.BinarySearchFunc finds it.
func (c *cursor) atA(x int64) int {
	ss, h := c.ss, c.ha
	if c.mono {
		// As afterB, with ss[h-1].a < x <= ss[h].a.
		switch {
		case h < len(ss) && ss[h].a < x:
			if h+1 == len(ss) || ss[h+1].a >= x {
				c.ha = h + 1
				return h + 1
			}
		case h == 0 || ss[h-1].a < x:
			return h
		case h == 1 || ss[h-2].a < x:
			c.ha = h - 1
			return h - 1
		}
	}
	i, j := 0, len(ss)
	for i < j {
		h := int(uint(i+j) >> 1)
		if ss[h].a < x {
			i = h + 1
		} else {
			j = h
		}
	}
	c.ha = i
	return i
}

// find returns the index of the span holding byte x, or -1.
func (c *cursor) find(x int64) int {
	if len(c.ss) == 0 {
		return -1
	}
	i := c.afterB(x)
	if i < len(c.ss) && c.ss[i].a <= x && x < c.ss[i].b {
		return i
	}
	return -1
}

// inside reports whether a span holds bytes on both sides of p.
func (c *cursor) inside(p int64) bool {
	i := c.find(p)
	return i >= 0 && c.ss[i].a < p
}

// endsAt returns the span that ends at p, or -1.
func (c *cursor) endsAt(p int64) int {
	if i := c.find(p - 1); i >= 0 && c.ss[i].b == p {
		return i
	}
	return -1
}

// startsAt reports whether a span starts at p.
func (c *cursor) startsAt(p int64) bool {
	i := c.find(p)
	return i >= 0 && c.ss[i].a == p
}

// overlaps reports whether a span overlaps [a, b).
func (c *cursor) overlaps(a, b int64) bool {
	i := c.afterB(a)
	return i < len(c.ss) && c.ss[i].a < b && c.ss[i].b > a
}

// lmsg is one logical message under construction: its bytes, what holds its
// first and last byte in the sniffed messages and in the traced calls, and
// its kind.
type lmsg struct {
	rc    int32
	dir   int8
	kind  trace.Kind
	bytes int64
	off   int64 // position in the direction's stream, for ordering
	// fa and fb are the sniffed messages holding the first and last byte
	// (-1: none); faStart and fbEnd say the logical message starts and
	// ends with them, so their first and last times are its own.
	fa, fb         int32
	faStart, fbEnd bool
	// fFrom and fTo bound the positions in the connection's fmsgs[dir]
	// of the sniffed messages it covers, evFrom and evTo of those that
	// start in it (whose evidence is its).
	fFrom, fTo   int32
	evFrom, evTo int32
	// sa is the sender's write holding the first byte, rb the receiver's
	// read holding the last.
	sa, rb pref
	// call is the call id: flows' (c<conn>.<n>), or one reconcile gave a
	// call no sniffer saw (p<connection>.<n>, pcall set).
	call  flows.CallID
	pcall bool
	// lost: the sniffed message holding its first byte is one no sniffer
	// saw a byte of (a gap flows gave up): it is labelled as unsniffed.
	lost bool
	// order is the message's place in the traced caller's sequence of
	// calls, for pairing calls and returns of unsniffed connections.
	order int64
	// hs and hr are the sender's and receiver's hosts, spc and rpc the
	// traced processes at either end (nil if untraced).
	hs, hr   int32
	spc, rpc *preload.Conn
}

// snifferSpans returns the stream spans of sniffed messages ids, in stream
// order, from their sequence numbers (the first at 0).
func (r *Reconciler) snifferSpans(ids []int32) spans {
	out := make(spans, 0, len(ids))
	var off int64
	for j, i := range ids {
		m := &r.msgs[i]
		if j > 0 {
			prev := &r.msgs[ids[j-1]]
			off += int64(m.seq - prev.seq) // uint32 arithmetic: sequence wrap
			if off < out[j-1].b {
				off = out[j-1].b
			}
		}
		out = append(out, span{off, off + m.bytes, i})
	}
	return out
}

// callSpans returns the spans of c's data calls in direction dir,
// shifted by k, and for each whether the process turned to the other
// direction after it (a direction change in its own sequence of calls).
func callSpans(c *preload.Conn, dir preload.Dir, k int64) (spans, []bool) {
	if c == nil {
		return nil, nil
	}
	var ss spans
	var turn []bool
	for i := range c.Msgs {
		m := &c.Msgs[i]
		if m.Dir != dir || m.Bytes <= 0 {
			continue
		}
		ss = append(ss, span{m.Offset + k, m.Offset + m.Bytes + k, int32(i)})
		t := true
		for j := i + 1; j < len(c.Msgs); j++ {
			if c.Msgs[j].Bytes > 0 {
				t = c.Msgs[j].Dir != dir
				break
			}
		}
		turn = append(turn, t)
	}
	return ss, turn
}

// alignShift returns k such that the call spans p shifted by k line up
// with the spans q (their ends coincide most), and whether one was found.
// It is needed when one of the two did not see the connection from its
// start (a capture started late, a trace of an inherited socket).
func alignShift(p, q spans) (int64, bool) {
	if len(p) == 0 || len(q) == 0 {
		return 0, false
	}
	qEnds := make(map[int64]bool, len(q))
	for _, s := range q {
		qEnds[s.b] = true
	}
	counts := map[int64]int{}
	for _, ps := range p[:min(len(p), 64)] {
		for _, qs := range q[:min(len(q), 256)] {
			counts[qs.b-ps.b] = 0
		}
	}
	bestK, best := int64(0), 0
	for k := range counts {
		n := 0
		for _, ps := range p {
			if qEnds[ps.b+k] {
				n++
			}
		}
		if n > best || (n == best && abs64(k) < abs64(bestK)) {
			bestK, best = k, n
		}
	}
	if best >= 2 || (best == 1 && len(p) == 1 && len(q) == 1) {
		return bestK, true
	}
	return 0, false
}

// fromStart reports whether a traced socket's byte counts start at the
// connection's first byte.
func fromStart(c *preload.Conn) bool {
	return c != nil && (c.Origin == preload.OriginConnect || c.Origin == preload.OriginAccept || c.Origin == preload.OriginSocket)
}

// logicalMessages groups the sniffed messages into connections, gives
// them their traced ends, cuts every direction into logical messages
// (st.out) and labels those no sniffer saw. It returns each connection's
// range of st.out.
func (r *Reconciler) logicalMessages(st *state) [][2]int {
	r.buildSniffed(st)
	r.attachPreload(st)
	ranges := make([][2]int, len(st.conns))
	st.out = make([]lmsg, 0, len(r.msgs)+int(r.preloadCalls()))
	for _, rc := range st.conns {
		lo := len(st.out)
		if rc.dgram {
			r.datagrams(st, rc)
		} else {
			r.streamDir(st, rc, 0)
			r.streamDir(st, rc, 1)
		}
		ranges[rc.id] = [2]int{lo, len(st.out)}
	}
	st.preloadKinds(ranges)
	return ranges
}

// dirSpans are the byte ranges of one direction of a stream, lined up on
// one stream position: the sniffed messages (fs), the sender's writes
// (ss) and the receiver's reads (rs); sTurn and rTurn say, per write and
// read, whether the process turned to the other direction after it.
type dirSpans struct {
	fs, ss, rs   spans
	sTurn, rTurn []bool
	writes       bool // BoundWrites
	// fc, sc and rc search fs, ss and rs (index makes them).
	fc, sc, rc cursor
}

// index makes the cursors of the spans, once they are placed.
func (ds *dirSpans) index() {
	ds.fc, ds.sc, ds.rc = newCursor(ds.fs), newCursor(ds.ss), newCursor(ds.rs)
}

// streamDir cuts direction d of stream connection rc into logical
// messages, appending them to st.out: it lines up the spans, accounts for
// the traced calls, and cuts the covered bytes where ds.cut says.
func (r *Reconciler) streamDir(st *state, rc *rconn, d int) {
	ds := r.directionSpans(st, rc, d)
	st.accountCalls(rc, d, &ds)
	ds.messages(func(a, b int64) { r.emit(st, rc, d, a, b, &ds) })
}

// directionSpans returns the spans of direction d of rc. Where the
// sniffer or a traced process did not see the connection from its first
// byte, the calls are shifted to line up with the sniffed messages (or
// the reads with the writes); calls nothing lines up are dropped.
func (r *Reconciler) directionSpans(st *state, rc *rconn, d int) dirSpans {
	ds := dirSpans{fs: r.snifferSpans(rc.fmsgs[d]), writes: r.opts.Boundaries == BoundWrites}
	sc, rcv := rc.pc[d], rc.pc[1-d]
	ds.ss, ds.sTurn = callSpans(sc, preload.DirSend, 0)
	ds.rs, ds.rTurn = callSpans(rcv, preload.DirRecv, 0)
	kS, okS, kR, okR := ds.shifts(sc, rcv, rc.info == nil || !rc.info.midStream)
	st.placeCalls(sc, &ds.ss, &ds.sTurn, kS, okS)
	st.placeCalls(rcv, &ds.rs, &ds.rTurn, kR, okR)
	ds.index()
	return ds
}

// shifts returns how far the writes (kS) and the reads (kR) must move to
// line up, and whether they can: nothing moves when both sides saw the
// connection from its start.
func (ds *dirSpans) shifts(sc, rcv *preload.Conn, sniffedFromStart bool) (kS int64, okS bool, kR int64, okR bool) {
	okS, okR = true, true
	switch {
	case len(ds.fs) > 0:
		if len(ds.ss) > 0 && !(fromStart(sc) && sniffedFromStart) {
			kS, okS = alignShift(ds.ss, ds.fs)
		}
		if len(ds.rs) > 0 && !(fromStart(rcv) && sniffedFromStart) {
			kR, okR = alignShift(ds.rs, ds.fs)
		}
	case len(ds.ss) > 0 && len(ds.rs) > 0 && !(fromStart(sc) && fromStart(rcv)):
		kR, okR = alignShift(ds.rs, ds.ss)
	}
	return kS, okS, kR, okR
}

// placeCalls moves the calls ss of c by k, or drops them (not aligned)
// when no shift lined them up.
func (st *state) placeCalls(c *preload.Conn, ss *spans, turn *[]bool, k int64, ok bool) {
	if !ok {
		st.dropCalls(c, *ss, reasonNotAligned)
		*ss, *turn = nil, nil
		return
	}
	for i := range *ss {
		(*ss)[i].a += k
		(*ss)[i].b += k
	}
}

// accountCalls records what became of each traced call of direction d of
// rc: its bytes were sniffed, or not (and why).
func (st *state) accountCalls(rc *rconn, d int, ds *dirSpans) {
	only := rc.onlyReason()
	for _, cs := range [...]struct {
		c  *preload.Conn
		ss spans
	}{{rc.pc[d], ds.ss}, {rc.pc[1-d], ds.rs}} {
		for _, s := range cs.ss {
			if ds.fc.overlaps(s.a, s.b) {
				st.setCall(cs.c, s.i, callMatched)
			} else {
				st.setCall(cs.c, s.i, only)
			}
		}
	}
}

// messages calls fn with every logical message [a, b) of the direction:
// the covered bytes (the spans merged) cut at each span boundary where
// cut says so, and where the covered bytes end.
func (ds *dirSpans) messages(fn func(a, b int64)) {
	var pts []int64
	var cover spans
	for _, l := range [...]spans{ds.fs, ds.ss, ds.rs} {
		for _, s := range l {
			pts = append(pts, s.a, s.b)
			cover = append(cover, s)
		}
	}
	if len(cover) == 0 {
		return
	}
	slices.Sort(pts)
	pts = slices.Compact(pts)
	slices.SortFunc(cover, func(x, y span) int { return cmp.Compare(x.a, y.a) })
	var merged spans
	for _, s := range cover {
		if n := len(merged); n > 0 && s.a <= merged[n-1].b {
			merged[n-1].b = max(merged[n-1].b, s.b)
			continue
		}
		merged = append(merged, span{s.a, s.b, 0})
	}
	// With only the sniffed messages, sorted and disjoint, no boundary is
	// inside a span and the cut rules (cutFat, cutWrites, cutReads) cut at
	// every one: the messages are the spans and the gaps' edges.
	always := len(ds.ss) == 0 && len(ds.rs) == 0 && ds.fc.disjoint
	pi := 0
	for _, cv := range merged {
		a := cv.a
		for pi < len(pts) && pts[pi] <= cv.a {
			pi++
		}
		for ; pi < len(pts) && pts[pi] <= cv.b; pi++ {
			p := pts[pi]
			if p < cv.b && !always && !ds.cut(p) {
				continue
			}
			fn(a, p)
			a = p
		}
	}
}

// cut reports whether a logical message ends at span boundary p: by the
// boundary rule's own cuts (cutWrites, cutFat), else where the receiver's
// reads allow (cutReads).
func (ds *dirSpans) cut(p int64) bool {
	rule := ds.cutFat
	if ds.writes {
		rule = ds.cutWrites
	}
	if c, decided := rule(p); decided {
		return c
	}
	return ds.cutReads(p)
}

// cutWrites is BoundWrites: never inside a write, at every write's ends;
// elsewhere never inside a sniffed message, at its ends.
func (ds *dirSpans) cutWrites(p int64) (cut, decided bool) {
	switch {
	case ds.sc.inside(p):
		return false, true
	case ds.sc.endsAt(p) >= 0 || ds.sc.startsAt(p):
		return true, true
	case ds.fc.inside(p):
		return false, true
	case ds.fc.endsAt(p) >= 0 || ds.fc.startsAt(p):
		return true, true
	}
	return false, false
}

// cutFat is BoundFat: never inside a sniffed message or a write, at a
// sniffed message's ends; between two writes only where the sender
// turned to the other direction.
func (ds *dirSpans) cutFat(p int64) (cut, decided bool) {
	switch {
	case ds.fc.inside(p) || ds.sc.inside(p):
		return false, true
	case ds.fc.endsAt(p) >= 0 || ds.fc.startsAt(p):
		return true, true
	}
	if j := ds.sc.endsAt(p); j >= 0 {
		return !ds.sc.startsAt(p) || ds.sTurn[j], true
	}
	if ds.sc.startsAt(p) {
		return true, true
	}
	return false, false
}

// cutReads decides where neither the sniffers nor the writes do: never
// inside a read, between two reads where the receiver turned, elsewhere
// always.
func (ds *dirSpans) cutReads(p int64) bool {
	if ds.rc.inside(p) {
		return false
	}
	if j := ds.rc.endsAt(p); j >= 0 && ds.rc.startsAt(p) {
		return ds.rTurn[j]
	}
	return true
}

// emit appends the logical message [a, b) of direction d of rc.
func (r *Reconciler) emit(st *state, rc *rconn, d int, a, b int64, ds *dirSpans) {
	fs := ds.fs
	lm := lmsg{rc: rc.id, dir: int8(d), bytes: b - a, off: a, fa: -1, fb: -1, order: -1}
	if i := ds.fc.find(a); i >= 0 {
		lm.fa, lm.faStart = fs[i].i, fs[i].a == a
	}
	if i := ds.fc.find(b - 1); i >= 0 {
		lm.fb, lm.fbEnd = fs[i].i, fs[i].b == b
	}
	from := ds.fc.afterB(a) // the first span with b >= a+1
	evFrom := ds.fc.atA(a)  // before atA(b): the cursor moves forward
	to := ds.fc.atA(b)
	lm.fFrom, lm.fTo = int32(from), int32(max(from, to))
	lm.evFrom, lm.evTo = int32(evFrom), int32(max(evFrom, to))
	if i := ds.sc.find(a); i >= 0 {
		lm.sa = pref{rc.pc[d], ds.ss[i].i}
	}
	if i := ds.rc.find(b - 1); i >= 0 {
		lm.rb = pref{rc.pc[1-d], ds.rs[i].i}
	}
	if lm.faStart {
		m := &r.msgs[lm.fa]
		if m.gapBytes >= m.bytes {
			lm.lost = true
		} else {
			lm.kind, lm.call = m.kind, m.call
		}
	}
	st.out = append(st.out, lm)
}

// preloadKinds labels the messages of a connection that no sniffer saw (a
// whole connection, or the part before or after the capture): the side
// that connected calls, each of its messages a CALL with a new id; the
// other side's next message is the RETURN of the last CALL. Sniffed
// messages keep flows' labels and take part in the pairing. The order is
// the traced caller's own sequence of calls (or the callee's when only it
// was traced); without one, nothing is labelled.
func (st *state) preloadKinds(ranges [][2]int) {
	for _, rc := range st.conns {
		ms := st.out[ranges[rc.id][0]:ranges[rc.id][1]]
		if rc.dgram || rc.caller < 0 || !anyUnsniffed(ms) {
			continue
		}
		view := rc.pc[rc.caller]
		if view == nil {
			view = rc.pc[1-rc.caller]
		}
		if view == nil || !orderByCalls(ms, view) {
			continue
		}
		slices.SortStableFunc(ms, func(a, b lmsg) int { return cmp.Compare(a.order, b.order) })
		labelCalls(ms, rc)
	}
}

func anyUnsniffed(ms []lmsg) bool {
	for i := range ms {
		if !ms[i].sniffed() {
			return true
		}
	}
	return false
}

// sniffed reports whether a sniffer saw the start of lm.
func (lm *lmsg) sniffed() bool { return lm.fa >= 0 && !lm.lost }

// orderByCalls gives each message its place in view's sequence of calls;
// it reports false when one is not among view's calls.
func orderByCalls(ms []lmsg, view *preload.Conn) bool {
	for i := range ms {
		lm := &ms[i]
		switch {
		case lm.sa.ok() && lm.sa.c == view:
			lm.order = int64(lm.sa.i)
		case lm.rb.ok() && lm.rb.c == view:
			lm.order = int64(lm.rb.i)
		default:
			return false
		}
	}
	return true
}

// labelCalls labels the unsniffed messages of connection rc, in call
// order: the caller's are CALLs with new ids (p<connection>.<n>), the
// callee's next one the RETURN of the pending CALL; a sniffed CALL is
// pending until its RETURN. A sniffed RETURN that answered no sniffed
// CALL (flows' orphan: the sniffer lost its CALL) answers the unsniffed
// CALL pending before it, which takes its id: the pair the loss broke is
// whole again, and nothing else is paired differently.
func labelCalls(ms []lmsg, rc *rconn) {
	var pending flows.CallID
	pendingP := false
	pendingAt := -1 // the unsniffed CALL pending, if any
	n := uint32(0)
	for i := range ms {
		lm := &ms[i]
		switch {
		case lm.sniffed() && lm.kind == trace.KindCall:
			pending, pendingP, pendingAt = lm.call, lm.pcall, -1
		case lm.sniffed():
			if lm.kind == trace.KindReturn {
				if pendingAt >= 0 && !lm.pcall && !hasCall(ms, lm.call) {
					ms[pendingAt].call, ms[pendingAt].pcall = lm.call, false
				}
				pending, pendingP, pendingAt = flows.CallID{}, false, -1
			}
		case lm.dir == rc.caller:
			lm.kind = trace.KindCall
			lm.call, lm.pcall = flows.CallID{Conn: uint64(rc.id), Index: n}, true
			n++
			pending, pendingP, pendingAt = lm.call, true, i
		case !pending.IsZero() || pendingP:
			lm.kind = trace.KindReturn
			lm.call, lm.pcall = pending, pendingP
			pending, pendingP, pendingAt = flows.CallID{}, false, -1
		}
	}
}

// hasCall reports whether a sniffed CALL of ms has flows' call id id.
func hasCall(ms []lmsg, id flows.CallID) bool {
	return slices.ContainsFunc(ms, func(lm lmsg) bool { return lm.kind == trace.KindCall && !lm.pcall && lm.call == id })
}

// dgramSlackNS is how far apart in time (after the rough offset of the
// traced host) a traced datagram and a sniffed one of equal size may be
// and still be one: a host that sends from one port again, seconds later
// (a resolver's socket per lookup), sends another datagram.
const dgramSlackNS = 500e6

// datagrams turns a datagram group into messages: each sniffed datagram,
// with the traced send and receive of equal size in order, near in time
// where the traced host's rough offset is known (dgramSlackNS); traced
// datagrams no sniffer saw pair with each other by size and checksum.
func (r *Reconciler) datagrams(st *state, rc *rconn) {
	sendOf, recvOf := r.alignDatagrams(st, rc)
	fsz := rc.fmsgs[0]
	fSend := make([]int, len(fsz))
	fRecv := make([]int, len(fsz))
	for j := range fsz {
		fSend[j], fRecv[j] = -1, -1
	}
	for s, f := range sendOf {
		if f >= 0 {
			fSend[f] = s
			st.setCall(rc.sends[s].c, rc.sends[s].i, callMatched)
		}
	}
	for s, f := range recvOf {
		if f >= 0 {
			fRecv[f] = s
			st.setCall(rc.recvs[s].c, rc.recvs[s].i, callMatched)
		}
	}
	if len(rc.sends) > 0 {
		rc.pc[0] = rc.sends[0].c
	}
	if len(rc.recvs) > 0 {
		rc.pc[1] = rc.recvs[0].c
	}
	for j, i := range rc.fmsgs[0] {
		m := &r.msgs[i]
		lm := lmsg{rc: rc.id, bytes: m.bytes, fa: i, fb: i, faStart: true, fbEnd: true, kind: m.kind, call: m.call, order: -1, off: int64(j), fFrom: int32(j), fTo: int32(j + 1), evFrom: int32(j), evTo: int32(j + 1)}
		if s := fSend[j]; s >= 0 {
			lm.sa = rc.sends[s]
		}
		if s := fRecv[j]; s >= 0 {
			lm.rb = rc.recvs[s]
		}
		st.out = append(st.out, lm)
	}
	// Traced datagrams no sniffer saw.
	var us, ur []pref
	for s, f := range sendOf {
		if f < 0 {
			us = append(us, rc.sends[s])
		}
	}
	for s, f := range recvOf {
		if f < 0 {
			ur = append(ur, rc.recvs[s])
		}
	}
	reason := rc.onlyReason()
	same := func(i, j int) bool {
		a, b := us[i].msg(), ur[j].msg()
		if a.HasSum && b.HasSum {
			return a.Sum == b.Sum && a.Bytes == b.Bytes
		}
		return a.Bytes == b.Bytes
	}
	pairOf := alignSeq(make([]int64, len(us)), make([]int64, len(ur)), same)
	got := make([]bool, len(ur))
	n := int64(len(rc.fmsgs[0]))
	for s, j := range pairOf {
		lm := lmsg{rc: rc.id, bytes: us[s].msg().Bytes, fa: -1, fb: -1, sa: us[s], order: -1, off: n}
		n++
		st.setCall(us[s].c, us[s].i, reason)
		if j >= 0 {
			lm.rb = ur[j]
			got[j] = true
			st.setCall(ur[j].c, ur[j].i, reason)
		}
		st.out = append(st.out, lm)
	}
	for j, p := range ur {
		if !got[j] {
			st.setCall(p.c, p.i, reason)
			st.out = append(st.out, lmsg{rc: rc.id, bytes: p.msg().Bytes, fa: -1, fb: -1, rb: p, order: -1, off: n})
			n++
		}
	}
}

// alignDatagrams pairs the traced sends and receives of datagram group rc
// with its sniffed datagrams (alignSeq): equal in size and, where the
// traced host's rough offset is known, within dgramSlackNS in time. It
// returns, per traced send and per traced receive, the sniffed datagram's
// index or -1.
func (r *Reconciler) alignDatagrams(st *state, rc *rconn) (sendOf, recvOf []int) {
	fsz := make([]int64, len(rc.fmsgs[0]))
	for j, i := range rc.fmsgs[0] {
		fsz[j] = r.msgs[i].bytes
	}
	sz := func(ps []pref) []int64 {
		out := make([]int64, len(ps))
		for j, p := range ps {
			out[j] = p.msg().Bytes
		}
		return out
	}
	near := func(ps []pref) func(i, j int) bool {
		return func(i, j int) bool {
			p := ps[i]
			if p.msg().Bytes != fsz[j] {
				return false
			}
			if len(st.roughSamples[p.c.Host]) == 0 {
				return true
			}
			return abs64(p.ts()-st.rough[p.c.Host]-r.msgStart(rc.fmsgs[0][j])) <= dgramSlackNS
		}
	}
	return alignSeq(sz(rc.sends), fsz, near(rc.sends)), alignSeq(sz(rc.recvs), fsz, near(rc.recvs))
}

// alignSeq pairs the items of a with items of b in order, either equal
// sizes or, when same is set, items same says are equal: it returns for
// each item of a the index of its partner in b or -1. An item missing from
// one side (a datagram a sniffer or a trace missed) is skipped by looking
// ahead a few items on both sides.
func alignSeq(a, b []int64, same func(i, j int) bool) []int {
	const look = 8
	eq := func(i, j int) bool {
		if same != nil {
			return same(i, j)
		}
		return a[i] == b[j]
	}
	out := make([]int, len(a))
	for i := range out {
		out[i] = -1
	}
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if eq(i, j) {
			out[i] = j
			i++
			j++
			continue
		}
		// The nearest pair (i+di, j+dj) with the least skipped.
		bi, bj := -1, -1
		for s := 1; s < 2*look && bi < 0; s++ {
			for di := 0; di <= s; di++ {
				dj := s - di
				if i+di < len(a) && j+dj < len(b) && eq(i+di, j+dj) {
					bi, bj = i+di, j+dj
					break
				}
			}
		}
		if bi < 0 {
			i++
			continue
		}
		i, j = bi, bj
	}
	return out
}

// onlyReason says why traced calls of rc that no sniffer saw were not
// sniffed.
func (rc *rconn) onlyReason() callStatus {
	switch {
	case rc.proto == trace.ProtoUnix:
		return reasonUnix
	case rc.sniffed:
		return reasonOutsideCapture
	case rc.ep[0].ap.Addr().IsLoopback():
		return reasonLoopback
	}
	return reasonUnsniffed
}
