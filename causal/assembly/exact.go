package assembly

import (
	"slices"

	"github.com/wirepath/wirepath/trace"
)

// window returns the times between which request p of node n was open,
// widened by the tolerance; an unseen arrival or reply is taken span away
// from the other end.
func (r *run) window(p int32, span int64) (lo, hi int64) {
	c := &r.calls[p]
	lo, hi = c.arr, c.rep
	if c.callMsg < 0 {
		lo = hi - span
	}
	if c.retMsg < 0 || c.flags&flagOneWay != 0 {
		hi = lo + span
	}
	t := r.tolAt(c.callee)
	return lo - t, hi + t
}

// sendOf is when call c left its caller (its reply's arrival when the
// CALL was not seen).
func (r *run) sendOf(c int32) int64 { return r.sendAt[c] }

// sendTimes returns sendOf of every call, computed from the calls: the
// searches compare calls by send all the time, and one dense slice of
// the times costs a cache line where the calls took one each.
func sendTimes(calls []call) []int64 {
	t := make([]int64, len(calls))
	for i := range calls {
		k := &calls[i]
		t[i] = k.send
		if k.callMsg < 0 {
			t[i] = k.back
		}
	}
	return t
}

// sweep calls fn for every call node n makes, in order of send, with the
// requests of n it can belong to (candidates, in order of arrival): those
// open when it left and, where both are known, still open when its reply
// came back (within the tolerance). cands is reused between calls, and
// must not be changed. The candidates depend only on the times, so a
// node's are found once and kept (r.swept) while solve solves the node,
// when there are at most maxSwept of them; a sweep at any other time is
// not kept.
func (r *run) sweep(n int32, fn func(c int32, cands []int32)) {
	switch sw := r.swept[n]; sw {
	case nil, &sweepTooMany:
		r.sweepTimes(n, fn)
		return
	case &sweepPending:
	default:
		for i, c := range sw.calls {
			lo, hi := sw.off[i], sw.off[i+1]
			fn(c, sw.cands[lo:hi:hi])
		}
		return
	}
	sw := &swept{off: []int32{0}}
	r.sweepTimes(n, func(c int32, cands []int32) {
		if sw != nil && len(sw.cands)+len(cands) > maxSwept {
			sw = nil
		}
		if sw != nil {
			sw.calls = append(sw.calls, c)
			sw.cands = append(sw.cands, cands...)
			sw.off = append(sw.off, int32(len(sw.cands)))
		}
		fn(c, cands)
	})
	if sw == nil {
		sw = &sweepTooMany
	}
	r.swept[n] = sw
}

// sweepPending marks in r.swept a node being solved whose candidates are
// not found yet; sweepTooMany one that has more than maxSwept (swept
// again each time).
var sweepPending, sweepTooMany swept

// maxSwept bounds the candidates kept per node (4 bytes each): a node
// with more is swept again each time.
const maxSwept = 1 << 22

// swept is one node's sweep: its calls in order, and the candidates of
// calls[i] at cands[off[i]:off[i+1]].
type swept struct {
	calls, off, cands []int32
	shape             *localShape // the node's local searches' (lsshape.go)
}

// sweepTimes is sweep, from the times.
func (r *run) sweepTimes(n int32, fn func(c int32, cands []int32)) {
	span := r.openSpan(n)
	parents := r.parentsOf[n]
	type win struct {
		p      int32
		lo, hi int64
	}
	ws := make([]win, len(parents))
	for i, p := range parents {
		lo, hi := r.window(p, span)
		ws[i] = win{p, lo, hi}
	}
	slices.SortStableFunc(ws, func(a, b win) int { return cmpTime(a.lo, b.lo) })
	kids := slices.Clone(r.childrenOf[n])
	slices.SortStableFunc(kids, func(a, b int32) int { return cmpTime(r.sendOf(a), r.sendOf(b)) })
	var active []win
	var cands []int32
	pi := 0
	for _, c := range kids {
		t := r.sendOf(c)
		for pi < len(ws) && ws[pi].lo <= t {
			active = append(active, ws[pi])
			pi++
		}
		active = slices.DeleteFunc(active, func(w win) bool { return w.hi < t })
		cands = cands[:0]
		for _, w := range active {
			if r.fits(c, w.p) {
				cands = append(cands, w.p)
			}
		}
		fn(c, cands)
	}
}

// fits reports whether call c, sent while request p was open, was also
// answered before p's reply left (when both are known).
func (r *run) fits(c, p int32) bool {
	cc, pc := &r.calls[c], &r.calls[p]
	if cc.retMsg < 0 || pc.retMsg < 0 || cc.flags&flagOneWay != 0 || pc.flags&flagOneWay != 0 {
		return true
	}
	return cc.back <= pc.rep+r.tolAt(pc.callee)
}

// exactLinks finds the calls of node n whose request the trace says
// exactly: the only candidate request carrying the call's propagated
// request id, or the only candidate request received by the thread that
// sent the call, when that thread served no other request while it was
// open (vPath). It also counts every call's candidates.
func (r *run) exactLinks(n int32) {
	excl := r.threadExclusive(n)
	var match []int32
	r.sweep(n, func(c int32, cands []int32) {
		r.nCand[c] = int32(len(cands))
		cm := r.callMessage(c)
		if cm == nil || len(cands) == 0 {
			return
		}
		if cm.ReqID != 0 {
			match = match[:0]
			for _, p := range cands {
				if pm := r.callMessage(p); pm != nil && pm.ReqID == cm.ReqID {
					match = append(match, p)
				}
			}
			if len(match) == 1 {
				r.exact[c], r.evid[c] = match[0], evExactID
				return
			}
		}
		if cm.Sender.Known() {
			match = match[:0]
			for _, p := range cands {
				if r.servedBy(p, cm.Sender) {
					match = append(match, p)
				}
			}
			if len(match) == 1 && excl[match[0]] {
				r.exact[c], r.evid[c] = match[0], evThread
			}
		}
	})
}

// callMessage returns the CALL message of call c, nil when it was not
// seen.
func (r *run) callMessage(c int32) *trace.Message {
	if m := r.calls[c].callMsg; m >= 0 {
		return &r.l.msgs[m]
	}
	return nil
}

// servedBy reports whether request p was received (and, when seen,
// answered) by thread t.
func (r *run) servedBy(p int32, t trace.Task) bool {
	c := &r.calls[p]
	if c.callMsg >= 0 && r.l.msgs[c.callMsg].Receiver != t {
		return false
	}
	if c.retMsg >= 0 {
		if s := r.l.msgs[c.retMsg].Sender; s.Known() && s != t {
			return false
		}
	}
	return c.callMsg >= 0 || c.retMsg >= 0 && r.l.msgs[c.retMsg].Sender == t
}

// threadExclusive returns the requests of node n whose thread served no
// other request while they were open; requests of unknown thread are not.
func (r *run) threadExclusive(n int32) map[int32]bool {
	span, tol := r.openSpan(n), r.tolAt(n)
	byTask := map[trace.Task][]int32{}
	for _, p := range r.parentsOf[n] {
		if m := r.callMessage(p); m != nil && m.Receiver.Known() {
			byTask[m.Receiver] = append(byTask[m.Receiver], p)
		}
	}
	if len(byTask) == 0 {
		return nil
	}
	excl := make(map[int32]bool)
	for _, ps := range byTask {
		// ps is in order of arrival: a request overlaps another when it
		// starts before the latest end so far, or ends after the next start.
		for i, p := range ps {
			lo, hi := r.window(p, span)
			ok := true
			if i > 0 {
				_, phi := r.window(ps[i-1], span)
				ok = phi-tol <= lo+tol
			}
			if ok && i+1 < len(ps) {
				nlo, _ := r.window(ps[i+1], span)
				ok = hi-tol <= nlo+tol
			}
			excl[p] = ok
		}
	}
	return excl
}

// tokens returns message i's content token hashes, sorted.
func (l *loader) tokens(i int32) []uint64 {
	if i < 0 || l.syms == nil {
		return nil
	}
	return l.syms.Tokens(l.msgs[i].Tokens)
}

// tokFeature returns the token bin of a call with tokens ct for a
// request: pool holds the request's own tokens, then those of its last
// call sent and of its last reply. What the call shares with the request
// itself and what it shares only with the request's other calls are
// binned apart (tokBin each; the bin is own·tokBins0 + others): a value
// the request carries and the call repeats is not the same evidence as
// a service's name or host the call repeats from the request's previous
// call, which any call to that service carries, a health check as well
// as the request's next call. Summed, they fell in one bin as soon as a
// request's first call to a service carried the request's value.
func tokFeature(idf map[uint64]float64, ct []uint64, pool [3][]uint64) int {
	own, all := sharedIDFs(idf, ct, &pool)
	return tokBin(own)*tokBins0 + tokBin(all-own)
}

// callEvid is what features reads of a call's CALL message, held by
// call in one dense slice: features runs for every call and request the
// searches weigh, and reading the messages themselves (through the call,
// then the message, then the token table) was a cache miss at each step.
type callEvid struct {
	tok              []uint64 // the CALL's content tokens (nil: none, or not seen)
	sender, receiver trace.Task
	reqID            trace.Sym
	seen             bool // the CALL was seen
}

// evidence returns every call's callEvid and its RETURN's content tokens.
func (r *run) evidence() ([]callEvid, [][]uint64) {
	ev := make([]callEvid, len(r.calls))
	ret := make([][]uint64, len(r.calls))
	for i := range r.calls {
		c := &r.calls[i]
		ret[i] = r.l.tokens(c.retMsg)
		if m := r.callMessage(int32(i)); m != nil {
			ev[i] = callEvid{tok: r.l.tokens(c.callMsg), sender: m.Sender, receiver: m.Receiver, reqID: m.ReqID, seen: true}
		}
	}
	return ev, ret
}

// features returns the bins of the evidence a call c gives for request p
// whose last call sent was lastKid and last answered lastRet: shared
// content tokens, an equal request id, the same thread (each -1 when the
// trace does not say).
func (r *run) features(c, p, lastKid, lastRet int32) (tok, rid, thr int) {
	tok, rid, thr = -1, -1, -1
	ce, pe := &r.ev[c], &r.ev[p]
	if !ce.seen {
		return
	}
	if r.idf != nil {
		if ct := ce.tok; len(ct) > 0 {
			var pool [3][]uint64
			pool[0] = pe.tok
			if lastKid >= 0 {
				pool[1] = r.ev[lastKid].tok
			}
			if lastRet >= 0 {
				pool[2] = r.retTok[lastRet]
			}
			if len(pool[0])+len(pool[1])+len(pool[2]) > 0 {
				tok = tokFeature(r.idf, ct, pool)
			}
		}
	}
	if !pe.seen {
		return
	}
	if ce.reqID != 0 && pe.reqID != 0 {
		rid = 0
		if ce.reqID == pe.reqID {
			rid = 1
		}
	}
	if ce.sender.Known() && pe.receiver.Known() {
		thr = 0
		if ce.sender == pe.receiver {
			thr = 1
		}
	}
	return
}

// evidenceScore is the log likelihood ratio of the evidence call c gives
// for the request in slot sl.
func (r *run) evidenceScore(m *nodeModel, c int32, sl *slot) float64 {
	if r.idf == nil && !r.hasIDs {
		return 0
	}
	tok, rid, thr := r.features(c, sl.p, sl.lastKid, sl.lastRet)
	sc := 0.0
	if tok >= 0 {
		sc += m.tok.logLR(tok)
	}
	if rid >= 0 {
		sc += m.rid.logLR(rid)
	}
	if thr >= 0 {
		sc += m.thr.logLR(thr)
	}
	if r.idf != nil && r.ev[c].seen && r.ev[sl.p].seen {
		sc += m.assoc.score(r.calls[sl.p].kind, r.calls[c].kind, r.ev[sl.p].tok, r.ev[c].tok)
	}
	return sc
}

// arrOf is when request p arrived (estimated, when its CALL was not
// seen, as the search's timeline does).
func (r *run) arrOf(p int32) int64 { return r.arrAt[p] }

// arrivals returns arrOf of every call, computed from the calls and the
// nodes' open spans (a dense slice, as sendTimes).
func (r *run) arrivals() []int64 {
	t := make([]int64, len(r.calls))
	for p := range t {
		t[p] = r.arrival(int32(p))
	}
	return t
}

// arrival is arrOf computed from call p.
func (r *run) arrival(p int32) int64 {
	c := &r.calls[p]
	if c.callMsg >= 0 {
		return c.arr
	}
	lo, _ := r.window(p, r.openSpan(c.callee))
	return lo + r.tolAt(c.callee)
}
