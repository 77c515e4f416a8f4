package assembly

import (
	"math"
	"slices"
)

// The local search improves a node's assignment by exact moves, each
// scored by replaying the requests it changes: a doubtful call (confidence
// below sure) moved to one of its alternative requests (or to none), two calls of one kind swapped between
// their requests, and the tails of two overlapping requests (every call
// after some instant) exchanged, which undoes the crossing of two
// interleaved sequences that a beam search, deciding call by call, makes.
// It accepts improving moves until none is left (or maxSweeps).

// local is the state of the local search of one node.
type local struct {
	r *run
	s *search // for the scores
	m *nodeModel
	x *crossFit // the cross-fitted models, if any (crossfit.go)
	n int32
	// by request, indexed by its position at the node
	// (run.parentPos): its calls in order of send, and its replay score
	kids [][]int32
	ps   []float64
	// by call, indexed by its position at the node (run.childPos): its
	// candidate requests
	cands  [][]int32
	buf    []int32
	moves  int64
	sweeps int
	// the node's calls in the order the search takes their sends, and
	// for each request (by position) the positions in order of the calls
	// it can hold
	order []int32
	inv   [][]int
	// orderAt[childPos[c]] is call c's position in order
	orderAt []int32
	span    int64
	memo    *replayMemo
	// buffers of the sweeps (with, without), affected and try: the
	// lists a move is tried with are copied only when it is made
	bufA, bufB, tmp []int32
	at              []int
	old             [][]int32
	oldParent       []int32
	// toPicked makes the search's request of each call a target of its
	// moves (targets)
	toPicked bool
	// tgt is targets' buffer
	tgt []int32
	// probs is fifo's buffer (fifoOf)
	probs []float64
	// spread caches fifoSpread (-1: not computed yet)
	spread float64
	// settled records which calls' moves need not be tried again
	// (lssettled.go)
	settled settledState
	// hold holds the calls' FIFO evidence (lsfifo.go)
	hold fifoHold
	// force is, for the kind matching, what a request loses by taking
	// no call of the kind (usualcall.go; none: nothing)
	force map[int32]float64
}

// positions returns, for every call, its index in its callee's
// parentsOf (as a request) and in its caller's childrenOf (as a call):
// the local search holds its state by these positions, in slices rather
// than maps.
func positions(nCalls int, parentsOf, childrenOf [][]int32) (parentPos, childPos []int32) {
	parentPos, childPos = make([]int32, nCalls), make([]int32, nCalls)
	for _, ps := range parentsOf {
		for i, p := range ps {
			parentPos[p] = int32(i)
		}
	}
	for _, ks := range childrenOf {
		for i, c := range ks {
			childPos[c] = int32(i)
		}
	}
	return parentPos, childPos
}

// kidsOf returns request p's calls.
func (ls *local) kidsOf(p int32) []int32 { return ls.kids[ls.r.parentPos[p]] }

// candsOf returns call c's candidate requests.
func (ls *local) candsOf(c int32) []int32 { return ls.cands[ls.r.childPos[c]] }

const improveEps = 1e-9

// newLocal returns the local search state of node n under its current
// assignment, scored with model m, or with the cross-fitted models x when
// not nil.
func newLocal(r *run, n int32, m *nodeModel, x *crossFit) *local {
	np := len(r.parentsOf[n])
	memo := r.replayMemoFor(n, m, x, np)
	if x != nil {
		m = x.ms[0]
	}
	ls := &local{r: r, s: &search{r: r, m: m}, m: m, x: x, n: n, ps: make([]float64, np), spread: -1, memo: memo}
	sh := r.localShapeOf(n)
	if sh == nil {
		sh = r.newLocalShape(n)
		r.keepLocalShape(n, sh)
	} else if checkLocalShape != nil {
		checkLocalShape(r, n, sh)
	}
	ls.cands, ls.order, ls.orderAt, ls.inv = sh.cands, sh.order, sh.orderAt, sh.inv
	ls.kids = groupKids(r, n)
	for i, p := range r.parentsOf[n] {
		ks := ls.kids[i]
		slices.SortStableFunc(ks, func(a, b int32) int { return cmpTime(r.sendOf(a), r.sendOf(b)) })
		ls.ps[i] = ls.score(p, ks)
	}
	ls.span = r.openSpan(n)
	return ls
}

// groupKids returns, by request of node n (its position), its calls
// under the current assignment, in the order of the node's calls; the
// lists share one array, each with its capacity capped at its length.
func groupKids(r *run, n int32) [][]int32 {
	kids := make([][]int32, len(r.parentsOf[n]))
	cnt := make([]int32, len(kids)+1)
	for _, c := range r.childrenOf[n] {
		if p := r.parent[c]; p >= 0 {
			cnt[r.parentPos[p]+1]++
		}
	}
	for i := range kids {
		cnt[i+1] += cnt[i]
	}
	all := make([]int32, cnt[len(kids)])
	for i := range kids {
		kids[i] = all[cnt[i]:cnt[i]:cnt[i+1]]
	}
	for _, c := range r.childrenOf[n] {
		if p := r.parent[c]; p >= 0 {
			i := r.parentPos[p]
			kids[i] = append(kids[i], c)
		}
	}
	return kids
}

// invert returns, for each of the np requests (by position), the
// positions in ls.order of the calls it can hold, in order; the lists
// share one array.
func (ls *local) invert(np int) [][]int {
	r := ls.r
	inv := make([][]int, np)
	cnt := make([]int, np+1)
	for _, c := range ls.order {
		for _, p := range ls.candsOf(c) {
			cnt[r.parentPos[p]+1]++
		}
	}
	for i := range inv {
		cnt[i+1] += cnt[i]
	}
	all := make([]int, cnt[np])
	for i := range inv {
		inv[i] = all[cnt[i]:cnt[i]:cnt[i+1]]
	}
	for i, c := range ls.order {
		for _, p := range ls.candsOf(c) {
			j := r.parentPos[p]
			inv[j] = append(inv[j], i)
		}
	}
	return inv
}

func (r *run) improve(n int32, m *nodeModel, x *crossFit, maxSweeps int) int64 {
	ls := newLocal(r, n, m, x)
	ls.sweepAll(maxSweeps)
	return ls.moves
}

// sweepAll runs the sweeps until none moves a call, at most maxSweeps.
func (ls *local) sweepAll(maxSweeps int) {
	ls.initSettled(len(ls.ps), len(ls.cands))
	for ls.sweeps = 0; ls.sweeps < maxSweeps; ls.sweeps++ {
		before := ls.moves
		ls.moveSweep()
		ls.swapSweep()
		ls.tailSweep()
		if ls.moves == before {
			break
		}
	}
}

// with returns ks with c inserted in order of send, in *buf (reused).
func (ls *local) with(buf *[]int32, ks []int32, c int32) []int32 {
	t := ls.r.sendOf(c)
	out := (*buf)[:0]
	done := false
	for _, k := range ks {
		if !done && ls.r.sendOf(k) > t {
			out = append(out, c)
			done = true
		}
		out = append(out, k)
	}
	if !done {
		out = append(out, c)
	}
	*buf = out
	return out
}

// without returns ks without c, in *buf (reused).
func without(buf *[]int32, ks []int32, c int32) []int32 {
	out := (*buf)[:0]
	for _, k := range ks {
		if k != c {
			out = append(out, k)
		}
	}
	*buf = out
	return out
}

func (ls *local) canMove(c int32) bool { return ls.r.exact[c] < 0 }

// sure is the confidence from which the local search leaves a call where
// the search put it: moving it would cost more than any move gains.
const sure = 0.999

// doubtful reports whether call c is worth moving.
func (ls *local) doubtful(c int32) bool { return ls.canMove(c) && ls.r.conf[c] < sure }

func (ls *local) fitsIn(c, p int32) bool { return slices.Contains(ls.candsOf(c), p) }

// targets returns the requests a move of call c is tried to: its
// alternatives (the search's next most probable requests) that it fits,
// and, refining the chain matching's candidate (toPicked, chains.go), the
// search's own request when the call is elsewhere; a move to a request the search found
// improbable is not worth scoring.
func (ls *local) targets(c int32) []int32 {
	k := searchAlts
	out := ls.tgt[:0]
	defer func() { ls.tgt = out }() // reused: no sweep asks for targets while it goes through them
	if pk := ls.r.picked[c]; ls.toPicked && pk >= 0 && pk != ls.r.parent[c] && ls.fitsIn(c, pk) {
		out = append(out, pk)
	}
	for _, a := range ls.r.alts[int(c)*k : int(c)*k+k] {
		if a.p >= 0 && a.prob > 0 && ls.fitsIn(c, a.p) {
			out = append(out, a.p)
		}
	}
	return out
}

// score of request p with calls ks (-Inf if infeasible); bg for p < 0.
func (ls *local) score(p int32, ks []int32) float64 {
	i := ls.r.parentPos[p]
	h := ls.memo.hash(p, ks)
	if v, ok := ls.memo.get(i, h, ks); ok {
		return v
	}
	ls.s.m = ls.requestModel(p)
	v := ls.r.replay(ls.s, p, ks)
	ls.memo.put(i, h, ks, v)
	return v
}

// replayMemo holds the local search's replay scores: a request's score
// depends only on the request and its calls (the models do not change
// during the local search), and the sweeps score the same requests with
// the same calls again (four times in five on the scale benchmark).
// Each request (by position) has its own short list of entries; idx
// finds an entry by its request and hash (replaymemoidx.go: the lists
// were scanned, a hundred entries a look-up at 64 in flight); entries
// are checked call by call, so a collision of hashes is a miss.
type replayMemo struct {
	byReq [][]memoEntry
	arena []int32 // the entries' calls
	idx   u64Table
}

// memoEntry is one score: calls arena[off:off+n], whose hash is h; next
// is the next entry under the same key of idx (memoRef; 0: none).
type memoEntry struct {
	h      uint64
	off, n int32
	score  float64
	next   uint64
}

func (m *replayMemo) hash(p int32, ks []int32) uint64 {
	h := mix64(uint64(uint32(p)) + 0x9e3779b97f4a7c15)
	for _, k := range ks {
		h = mix64(h ^ uint64(uint32(k)))
	}
	return h
}

// get returns the score of the request at position i with calls ks
// (hash h), if held.
func (m *replayMemo) get(i int32, h uint64, ks []int32) (float64, bool) {
	if int(i) >= len(m.byReq) {
		return 0, false
	}
	if es := m.byReq[i]; len(es) <= memoScanMax {
		for k := range es {
			if e := &es[k]; e.h == h && slices.Equal(m.arena[e.off:e.off+e.n], ks) {
				return e.score, true
			}
		}
		return 0, false
	}
	ref, ok := m.idx.get(memoKey(i, h))
	for ok && ref != 0 {
		j, k := memoAt(ref)
		e := &m.byReq[j][k]
		if j == i && e.h == h && slices.Equal(m.arena[e.off:e.off+e.n], ks) {
			return e.score, true
		}
		ref = e.next
	}
	return 0, false
}

// maxMemo bounds the entries held per request: a request held open while
// thousands of calls left is scored again instead.
const maxMemo = 256

// put holds score v of the request at position i with calls ks (hash h),
// not held yet.
func (m *replayMemo) put(i int32, h uint64, ks []int32, v float64) {
	if int(i) >= len(m.byReq) {
		m.byReq = slices.Grow(m.byReq, int(i)+1-len(m.byReq))[:i+1]
	}
	if len(m.byReq[i]) >= maxMemo {
		return
	}
	m.byReq[i] = append(m.byReq[i], memoEntry{h: h, off: int32(len(m.arena)), n: int32(len(ks)), score: v})
	m.arena = append(m.arena, ks...)
	m.indexNew(i)
}

func (ls *local) bg(c int32) float64 { return ls.callModel(c).logBackgroundOf(c, ls.r.calls[c].kind) }

func (ls *local) moveSweep() {
	r := ls.r
	for _, c := range r.childrenOf[ls.n] {
		if !ls.doubtful(c) || ls.isSettled(sweepMove, c) {
			continue
		}
		before := ls.moves
		a := r.parent[c]
		kb := kindBit(r.calls[c].kind)
		t := r.sendOf(c)
		var aKids []int32
		aNew := 0.0
		if a >= 0 {
			aKids = without(&ls.bufA, ls.kidsOf(a), c)
			aNew = ls.score(a, aKids)
		}
		moved := [1]int32{c}
		for _, q := range ls.targets(c) {
			if q == a {
				continue
			}
			qk := ls.with(&ls.buf, ls.kidsOf(q), c)
			qs := ls.score(q, qk)
			ps, ks, sc := [2]int32{q, a}, [2][]int32{qk, aKids}, [2]float64{qs, aNew}
			m, bgd := 2, 0.0
			if a < 0 {
				m, bgd = 1, -ls.bg(c)
			}
			if ls.try(ps[:m], ks[:m], sc[:m], bgd, kb, t, moved[:]) {
				break
			}
		}
		if a >= 0 && r.parent[c] == a {
			ps, ks, sc := [1]int32{a}, [1][]int32{aKids}, [1]float64{aNew}
			ls.try(ps[:], ks[:], sc[:], ls.bg(c), kb, t, moved[:])
		}
		ls.markTried(sweepMove, c, before)
	}
}

func (ls *local) swapSweep() {
	r := ls.r
	for _, c := range r.childrenOf[ls.n] {
		a := r.parent[c]
		if a < 0 || !ls.doubtful(c) || ls.isSettled(sweepSwap, c) {
			continue
		}
		before := ls.moves
		kc := r.calls[c].kind
	next:
		for _, q := range ls.targets(c) {
			if q == a {
				continue
			}
			for _, d := range ls.kidsOf(q) {
				if d == c || r.calls[d].kind != kc || !ls.doubtful(d) || !ls.fitsIn(d, a) {
					continue
				}
				ak := ls.with(&ls.bufA, without(&ls.tmp, ls.kidsOf(a), c), d)
				qk := ls.with(&ls.bufB, without(&ls.tmp, ls.kidsOf(q), d), c)
				lo := min(r.sendOf(c), r.sendOf(d))
				ps, ks := [2]int32{a, q}, [2][]int32{ak, qk}
				sc, moved := [2]float64{ls.score(a, ak), ls.score(q, qk)}, [2]int32{c, d}
				if ls.try(ps[:], ks[:], sc[:], 0, kindBit(kc), lo, moved[:]) {
					break next
				}
			}
		}
		ls.markTried(sweepSwap, c, before)
	}
}

// tailSweep exchanges, for pairs of requests that overlap, every call
// after some instant.
func (ls *local) tailSweep() {
	r := ls.r
	for _, p := range r.parentsOf[ls.n] {
		// the instants at which p's calls left, as they were when the
		// sweep came to p (a move replaces a request's list, never
		// changes it)
		for _, c := range ls.kidsOf(p) {
			if !ls.doubtful(c) || r.parent[c] == p && ls.isSettled(sweepTail, c) {
				continue
			}
			before := ls.moves
			for _, q := range ls.targets(c) {
				if q != p && ls.tailSwap(p, q, r.sendOf(c)) {
					break
				}
			}
			if r.parent[c] == p { // else the kids were a stale list of p's
				ls.markTried(sweepTail, c, before)
			}
		}
	}
}

// tailSwap exchanges the calls of p and q sent at or after t, if that is
// feasible and better.
func (ls *local) tailSwap(p, q int32, t int64) bool {
	r := ls.r
	split := func(ks []int32) (head, tail []int32) {
		i := slices.IndexFunc(ks, func(k int32) bool { return r.sendOf(k) >= t })
		if i < 0 {
			return ks, nil
		}
		return ks[:i], ks[i:]
	}
	ph, pt := split(ls.kidsOf(p))
	qh, qt := split(ls.kidsOf(q))
	if len(pt) == 0 && len(qt) == 0 {
		return false
	}
	for _, k := range pt {
		if !ls.canMove(k) || !ls.fitsIn(k, q) {
			return false
		}
	}
	for _, k := range qt {
		if !ls.canMove(k) || !ls.fitsIn(k, p) {
			return false
		}
	}
	np := append(append(ls.bufA[:0], ph...), qt...)
	nq := append(append(ls.bufB[:0], qh...), pt...)
	moved := append(append(ls.tmp[:0], pt...), qt...)
	ls.bufA, ls.bufB, ls.tmp = np, nq, moved
	slices.SortStableFunc(np, func(a, b int32) int { return cmpTime(r.sendOf(a), r.sendOf(b)) })
	slices.SortStableFunc(nq, func(a, b int32) int { return cmpTime(r.sendOf(a), r.sendOf(b)) })
	var kb uint64
	for _, k := range moved {
		kb |= kindBit(r.calls[k].kind)
	}
	ps, ks, sc := [2]int32{p, q}, [2][]int32{np, nq}, [2]float64{ls.score(p, np), ls.score(q, nq)}
	return ls.try(ps[:], ks[:], sc[:], 0, kb, t, moved)
}

// cmpSend orders calls as the search takes their sends.
func (ls *local) cmpSend(a, b int32) int {
	return cmpEvent(ls.r.sendOf(a), ls.r.sendOf(b), evSend, evSend, a, b, false, false)
}

// made reports whether request q made a call of kind bit kb before call d.
func (ls *local) made(q, d int32, kb uint64) bool {
	for _, e := range ls.kidsOf(q) {
		if ls.cmpSend(e, d) >= 0 {
			break
		}
		if kindBit(ls.r.calls[e].kind)&kb != 0 {
			return true
		}
	}
	return false
}

// maxAffected bounds how many calls' FIFO evidence a move may change for
// the local search to weigh it; a move that would change more is not
// tried (at high concurrency, where a request is open while many calls
// leave).
const maxAffected = 48

// affected returns the positions in ls.order of the calls whose FIFO
// evidence a change of the requests ps can change: those of the kinds kb
// sent from lo on that one of ps could have held (and the moved calls),
// in order; nil and false when there are more than maxAffected.
func (ls *local) affected(ps, moved []int32, kb uint64, lo int64) ([]int, bool) {
	r := ls.r
	out := ls.at[:0]
	defer func() { ls.at = out }() // reused by the next call (try is done with it by then)
	add := func(i int) bool {
		if k, found := slices.BinarySearch(out, i); !found {
			out = slices.Insert(out, k, i)
		}
		return len(out) <= maxAffected
	}
	for _, p := range ps {
		for _, i := range ls.inv[r.parentPos[p]] {
			c := ls.order[i]
			if r.sendOf(c) >= lo && kindBit(r.calls[c].kind)&kb != 0 && !add(i) {
				return nil, false
			}
		}
	}
	for _, c := range moved {
		if !add(int(ls.orderAt[r.childPos[c]])) {
			return nil, false
		}
	}
	return out, true
}

// fifo is the FIFO evidence (search.fifoBins) of the calls at positions
// at of ls.order, under the current assignment.
func (ls *local) fifo(at []int) float64 {
	total := 0.0
	for _, i := range at {
		total += ls.fifoOne(i)
	}
	return total
}

// fifoOne is the FIFO evidence of the call at position i of ls.order,
// under the current assignment.
func (ls *local) fifoOne(i int) float64 {
	r := ls.r
	d := ls.order[i]
	k := kindBit(r.calls[d].kind)
	p := r.parent[d]
	if p < 0 {
		return 0
	}
	made, kp, ep := ls.prefix(p, d, k)
	if made {
		return 0
	}
	if r.fanOrder(ls.m) {
		return ls.fanFIFO(p, d, k)
	}
	return ls.localFIFO(p, d, k, kp, ep)
}

// fifoSpread is how much one call's FIFO evidence can change, computed
// once: ls.m does not change during the local search.
func (ls *local) fifoSpread() float64 {
	if ls.spread >= 0 {
		return ls.spread
	}
	best, worst := 0.0, 0.0
	for b := range fifoBins {
		v := ls.m.logFIFO(int8(b))
		best, worst = max(best, v), min(worst, v)
	}
	ls.spread = best - worst
	return ls.spread
}

// try applies the change of requests ps to calls ks (with their replay
// scores sc; a request -1 stands for calls moved to none, scored in
// bgDelta) if it improves the whole objective, FIFO evidence included,
// and reports whether it did.
func (ls *local) try(ps []int32, ks [][]int32, sc []float64, bgDelta float64, kb uint64, lo int64, moved []int32) bool {
	d := bgDelta
	for i, p := range ps {
		d += sc[i] - ls.ps[ls.r.parentPos[p]]
	}
	if math.IsInf(d, -1) || d+maxAffected*ls.fifoSpread() <= improveEps {
		return false
	}
	var at []int
	if ls.fifoSpread() > 0 {
		var ok bool
		if at, ok = ls.affected(ps, moved, ls.movedKinds(kb), lo); !ok {
			return false
		}
		if d+float64(len(at))*ls.fifoSpread() <= improveEps {
			return false
		}
	}
	before := ls.fifoHeld(at)
	old, oldParent := ls.old[:0], ls.oldParent[:0]
	for _, c := range moved {
		oldParent = append(oldParent, ls.r.parent[c])
	}
	for i, p := range ps {
		j := ls.r.parentPos[p]
		old = append(old, ls.kids[j])
		ls.kids[j] = ks[i]
		for _, k := range ks[i] {
			ls.r.parent[k] = p
		}
	}
	ls.old, ls.oldParent = old, oldParent
	for _, c := range moved {
		if !slices.ContainsFunc(ks, func(x []int32) bool { return slices.Contains(x, c) }) {
			ls.r.parent[c] = -1
		}
	}
	after := ls.fifoTried(at)
	if d+after-before > improveEps {
		ls.fifoMoved(ps, moved, at, ks, old)
		for i, p := range ps {
			j := ls.r.parentPos[p]
			ls.ps[j] = sc[i]
			ls.kids[j] = slices.Clone(ks[i]) // ks are the sweeps' buffers
		}
		ls.moves++
		ls.noteChanged(ps)
		return true
	}
	for i, p := range ps {
		ls.kids[ls.r.parentPos[p]] = old[i]
	}
	for i, c := range moved {
		ls.r.parent[c] = oldParent[i]
	}
	return false
}
