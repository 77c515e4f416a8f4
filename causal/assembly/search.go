package assembly

import (
	"cmp"
	"math"
	"slices"
	"unsafe"
)

// Event types of a node's timeline, in the order they are taken at one
// instant: a request arrives, a call's reply comes back, a call leaves, a
// request's reply leaves.
const (
	evArr uint8 = iota
	evBack
	evSend
	evRep
)

// event is one point of a node's timeline.
type event struct {
	t    int64
	typ  uint8
	call int32
}

// backAt returns when call c's reply is taken in order: at its arrival,
// among the replies that can trigger what is sent at that instant; or,
// when it is stamped no later than the call's send (coarse timestamps),
// right after the send.
func backAt(send, back int64) (t int64, rank uint8) {
	if back <= send {
		return send, evSend
	}
	return back, evBack
}

// cmpEvent orders a node's events: by time; at one instant arrivals,
// replies, sends and request replies in that order, by call; a reply
// stamped with its call's send right after that send (rank says where an
// event sorts, which for such a reply is evSend).
func cmpEvent(at, bt int64, ar, br uint8, ac, bc int32, aBack, bBack bool) int {
	switch {
	case at != bt:
		if at < bt {
			return -1
		}
		return 1
	case ar != br:
		return int(ar) - int(br)
	case ac != bc:
		return int(ac - bc)
	case aBack != bBack:
		if aBack {
			return 1
		}
		return -1
	}
	return 0
}

// slot is the state of one open request in a hypothesis: the request's
// call, the time of the latest event that can have triggered its next
// message (its arrival or the reply of one of its calls), its last call
// sent and last call answered, how many calls it made and has
// outstanding, and the class of the last reply it received.
type slot struct {
	p       int32
	lastKid int32
	lastRet int32
	prev    int32  // kind of lastKid, noKind for none
	kinds   uint64 // the kinds of call it made (bit kind%64)
	last    int64
	start   int64 // its first call's send, when pos > 0 (fanorder.go)
	// hs caches hash() in the search's hypotheses (set where the search
	// changes a slot: rehash); elsewhere it is not kept
	hs  uint64
	pos uint8
	out uint8
	ret uint8
}

// rehash sets the slot's cached hash.
func (sl *slot) rehash() { sl.hs = sl.hash() }

// backFrom records that the slot's call c (cc) came back: one call fewer
// out, the reply's time and size class the state's latest.
func (sl *slot) backFrom(c int32, cc *call) {
	sl.out--
	sl.last = max(sl.last, cc.back)
	sl.lastRet, sl.ret = c, cc.retClass
}

// own records which request a call in flight belongs to in a hypothesis.
type own struct{ c, p int32 }

// decision is one call's request in a hypothesis, in a list shared
// between hypotheses (newest first).
type decision struct {
	c, p int32
	seq  int32 // the call's position among the node's calls sent
	prev *decision
}

// hyp is one hypothesis: the states of the node's open requests, the
// requests of its calls in flight, its log likelihood and its decisions.
type hyp struct {
	slots []slot
	owns  []own
	score float64
	hash  uint64
	asg   *decision
}

func mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

func (s *slot) hash() uint64 {
	h := mix64(uint64(uint32(s.p))<<32|uint64(uint32(s.lastKid))) ^ mix64(s.kinds)
	h = mix64(h ^ uint64(uint32(s.lastRet))<<32 ^ uint64(s.pos)<<8 ^ uint64(s.out)<<16 ^ uint64(s.ret))
	return mix64(h ^ uint64(s.last) ^ uint64(s.start)*0x9e3779b97f4a7c15)
}

func (o own) hash() uint64 { return mix64(uint64(uint32(o.c))<<32|uint64(uint32(o.p))) ^ 0x5bd1e995 }

// equal reports whether two hypotheses have the same state (their
// futures score alike, so the worse can be dropped: Viterbi).
func (h *hyp) equal(g *hyp) bool {
	if len(h.slots) != len(g.slots) || len(h.owns) != len(g.owns) {
		return false
	}
	for _, s := range h.slots {
		i := slices.IndexFunc(g.slots, func(t slot) bool { return t.p == s.p })
		if i < 0 || g.slots[i] != s {
			return false
		}
	}
	for _, o := range h.owns {
		if !slices.Contains(g.owns, o) {
			return false
		}
	}
	return true
}

func (h *hyp) slotOf(p int32) int {
	for i := range h.slots {
		if h.slots[i].p == p {
			return i
		}
	}
	return -1
}

// cand is one way to extend a hypothesis at a call's send: give the call
// to slot i (-1: to no request). Its hash, the state's it leads to, is
// computed (candHash) only for the candidates that can make the beam.
type cand struct {
	h     int32
	slot  int32
	score float64
	hash  uint64
}

// altScore is a parent's best score for a call among the hypotheses, when
// the call was sent.
type altScore struct {
	p     int32
	score float64
}

// searchCounts are the counters of a node's search.
type searchCounts struct {
	windows, windowsExact     int64
	decisions, decisionsExact int64
	relaxed, forcedCommits    int64
	pruned, moves             int64
}

// search is the time-ordered Viterbi search of one node in one pass.
type search struct {
	r    *run
	node int32
	m    *nodeModel
	// x, when set, holds the cross-fitted models: m is then the one that
	// scores the current event (crossfit.go)
	x     *crossFit
	beam  int
	hyps  []*hyp
	next  []*hyp
	cands []cand
	// seen holds, by state hash, the first of the kept hypotheses
	// (indices of next) with that hash; sameHash[j] the next after j
	// (-1: none): a chain per hash, without a slice per entry
	seen     u64Table
	sameHash []int32
	// the calls sent since the last commit, in order, with their best
	// score per parent when they were sent
	pend []int32
	// pendAlt[i] holds pend[i]'s best scores per parent, carved from the
	// slab altSlab; altBuf is noteAlt's buffer
	pendAlt []([]altScore)
	altSlab []altScore
	altBuf  []altScore
	topBuf  []altScore
	// altAt[1+parentPos[p]] is noteAlt's index of request p in
	// its list (altAt[0]: no request), -1 when not in it
	altAt []int32
	// commit's buffers: per committed call, the best final score per
	// parent, and the parent of the best hypothesis
	margBuf   [][]altScore
	choiceBuf []int32
	seq       int32
	// pruned says whether the current window lost a hypothesis.
	pruned bool
	// sum makes each call's score per request the sum over the
	// hypotheses giving it that request (a marginal over the beam), not
	// the best of them (a max-marginal): run.posterior's search.
	sum bool
	// pendMass[i] holds pend[i]'s masses at its send, in the summing
	// pass (pruned.go)
	pendMass []sendMass
	// shadow, when set, makes this a shadow search (shadow.go): its
	// decisions go there (K+1 per call: its request and probability,
	// then the alternatives), not to the run, and unforced holds the
	// calls whose exact parent it found open in no hypothesis
	shadow    []alt
	unforced  map[int32]bool
	cnt       searchCounts
	commitLag int
	// memo holds, within one call's send, the link score of each slot
	// state met; free holds hypotheses to reuse; decs is the slab that
	// decisions are carved from.
	memo   u64Table // of math.Float64bits
	scores []float64
	fifo   []float64 // FIFO evidence per slot (tiedRanks)
	held   fifoHeld  // fifoRanks's answers within a send (fifoheld.go)
	// wait and waiters are waitRanks's
	wait    []int8
	waiters []waiter
	elig    []int32
	elig2   []int32   // tiedRanks's
	probs   []float64 // tiedRanks's
	// feas and ord are slotOrder's
	feas []bool
	ord  []int32
	free []*hyp
	decs []decision
	// stepBuf is replay's buffer
	stepBuf []step
	// scCache holds scorers looked up (scorer)
	scCache *[scCacheSize]scCacheEntry
}

// scCacheBits is the log2 of the number of entries of a search's
// scorer cache, scCacheSize. With 256 entries indexed by the key alone, a
// search under cross-fitted models (two models taking turns by block) or
// the local search (a model per request) evicted one model's entries with
// the other's: 15 % of the look-ups missed on the realistic mix; indexed
// by the model too, in 1,024 entries, 2.5 % do.
const (
	scCacheBits = 10
	scCacheSize = 1 << scCacheBits
)

// scCacheEntry is a scorer looked up: model m's for context cx and kind
// next (key k, packKey's).
type scCacheEntry struct {
	m    *nodeModel
	k    uint64
	cx   ctxKey
	next int32
	sc   *scorer
}

// scorer returns s.m's scorer of next in context cx: the model's map
// costs a look-up at every link scored, where a few contexts recur, so
// a direct-mapped cache in front of it answers most. The models do not
// change while a search, chain matching or local search uses them (they
// are fitted between passes), and each entry is checked against the
// model and the whole key, so the cache answers what the map would.
func (s *search) scorer(cx ctxKey, next int32) *scorer {
	if s.scCache == nil {
		s.scCache = new([scCacheSize]scCacheEntry)
	}
	k := packKey(cx, next)
	mk := uint64(uintptr(unsafe.Pointer(s.m)))
	e := &s.scCache[((k^mk)*0x9e3779b97f4a7c15)>>(64-scCacheBits)]
	if e.m == s.m && e.k == k && e.cx == cx && e.next == next {
		return e.sc
	}
	sc := s.m.scorer(cx, next)
	*e = scCacheEntry{m: s.m, k: k, cx: cx, next: next, sc: sc}
	return sc
}

func newSearch(r *run, node int32, m *nodeModel) *search {
	return &search{
		r: r, node: node, m: m, beam: r.opt.Beam,
		hyps:      []*hyp{{}},
		commitLag: 256,
	}
}

// ctx returns slot s's context.
func (s *search) ctx(sl *slot) ctxKey {
	return ctxKey{pk: s.r.calls[sl.p].kind, prev: sl.prev, pos: min(sl.pos, maxPos), ret: sl.ret}
}

// step takes event e of the node's timeline, under the model of its time.
func (s *search) step(e *event) {
	s.m = s.modelAt(e.t)
	switch e.typ {
	case evArr:
		s.arrive(e.call, e.t)
	case evSend:
		s.send(e.call)
	case evBack:
		s.back(e.call)
	case evRep:
		s.reply(e.call)
	}
}

// run solves the node's timeline.
func (s *search) run(evs []event) {
	for i := range evs {
		s.step(&evs[i])
		if len(s.hyps) == 1 && len(s.hyps[0].slots) == 0 && len(s.hyps[0].owns) == 0 {
			s.closeWindow()
		} else if len(s.pend) >= 2*s.commitLag {
			s.commit(s.commitLag, true)
		}
	}
	s.closeWindow()
}

func (s *search) arrive(p int32, t int64) {
	sl := slot{p: p, lastKid: -1, lastRet: -1, prev: noKind, last: t + s.r.tolAt(s.r.calls[p].callee)}
	if c := &s.r.calls[p]; c.arr != noTime {
		sl.last = c.arr
	}
	sl.rehash()
	hs := sl.hs
	for _, h := range s.hyps {
		h.slots = append(h.slots, sl)
		h.hash ^= hs
	}
}

// feasible reports whether call c, sent while request p was open, can
// belong to it (run.fits).
func (s *search) feasible(c, p int32) bool { return s.r.fits(c, p) }

// linkScore is the log likelihood of call c as the next call of the
// request in slot sl.
func (s *search) linkScore(c int32, sl *slot) float64 {
	r := s.r
	cc := &r.calls[c]
	cx := s.ctx(sl)
	scr := s.scorer(cx, cc.kind)
	last, arr := r.queued(sl.p, cc.send, sl.last, r.arrOf(sl.p))
	sc := scr.logT + r.callGap(s.m, scr, c, last, arr) + s.m.logOverlap(cx.pk, sl.out > 0)
	sc += s.m.logRepeat(sl.kinds, kindBit(cc.kind)) + s.m.sets.lr(cx.pk, sl.kinds, sl.pos, cc.kind)
	if sl.lastRet >= 0 && cc.reqBytes >= 0 {
		lr := &r.calls[sl.lastRet]
		if lr.repBytes >= 0 {
			sc += s.m.logSize(lr.kind, cc.kind, cx.pk, cc.reqBytes-lr.repBytes)
		}
	}
	sc += s.m.logOrigin(cx.pk, cc.kind, r.calls[sl.p].reqBytes, cc.reqBytes)
	return sc + r.evidenceScore(s.m, c, sl)
}

// endScore is the log likelihood of request p's reply after the state sl.
func (s *search) endScore(sl *slot) float64 {
	r := s.r
	pc := &r.calls[sl.p]
	if pc.retMsg < 0 || pc.flags&flagOneWay != 0 {
		return 0
	}
	cx := s.ctx(sl)
	scr := s.scorer(cx, endKind)
	last, arr := r.queued(sl.p, pc.rep, sl.last, r.arrOf(sl.p))
	sc := scr.logT + scr.gap(pc.rep-last, pc.rep-arr) + s.m.sets.lr(cx.pk, sl.kinds, sl.pos, endKind)
	if sl.lastRet >= 0 {
		lr := &r.calls[sl.lastRet]
		if lr.repBytes >= 0 && pc.repBytes >= 0 {
			sc += s.m.logSize(lr.kind, endKind, cx.pk, pc.repBytes-lr.repBytes)
		}
	}
	return sc + s.m.logOrigin(cx.pk, endKind, pc.reqBytes, pc.repBytes)
}

func (s *search) send(c int32) {
	r := s.r
	cc := &r.calls[c]
	forced := r.exact[c]
	if s.unforced[c] {
		forced = -1
	}
	s.cands = s.cands[:0]
	bg := s.m.logBackgroundOf(c, cc.kind)
	s.memo.reset()
	kb := kindBit(cc.kind)
	shared := s.slotOrder(c) && !s.readyOrder() && !s.r.fanOrder(s.m)
	if shared {
		s.held.reset(len(s.hyps[0].slots))
	}
	s.startAlts()
	for hi, h := range s.hyps {
		if forced < 0 {
			sc := h.score + bg
			s.cands = append(s.cands, cand{h: int32(hi), slot: -1, score: sc})
			s.noteAlt(-1, 0, sc)
		}
		if shared {
			s.fifoRanksHeld(h, kb)
		} else {
			s.fifoBins(h, c, kb)
		}
		s.waitRanks(h, c)
		for i := range h.slots {
			sl := &h.slots[i]
			if forced >= 0 && sl.p != forced {
				continue
			}
			if shared && !s.feas[i] || !shared && !s.feasible(c, sl.p) {
				continue
			}
			// the link score held by slot state alone (the FIFO and
			// waiters' evidence, which the other slots decide, added
			// after it as before: the same sum)
			lb, ok := s.memo.get(sl.hs)
			ls := math.Float64frombits(lb)
			if !ok {
				ls = s.linkScore(c, sl)
				s.memo.put(sl.hs, math.Float64bits(ls))
			}
			ls = ls + s.fifo[i] + s.m.logWait(s.wait[i])
			sc := h.score + ls
			s.cands = append(s.cands, cand{h: int32(hi), slot: int32(i), score: sc})
			s.noteAlt(sl.p, 1+s.r.parentPos[sl.p], sc)
		}
	}
	if len(s.cands) == 0 {
		// The forced parent is open in no hypothesis: decide freely.
		if s.shadow != nil {
			s.unforced[c] = true
		} else {
			r.exact[c] = -1
		}
		s.send(c)
		return
	}
	s.endAlts()
	s.select_(c, func(cd *cand) *hyp { return s.apply(cd, c) })
	s.pend = append(s.pend, c)
	s.seq++
}

// kindBit is the bit of kind k in a slot's kinds.
func kindBit(k int32) uint64 { return 1 << (uint32(k) % 64) }

// arrivedBefore reports whether request p arrived before request q: by
// their arrival times, and at one instant (coarse timestamps) by their
// order in the trace, which is the order the capture or the log saw them.
func (r *run) arrivedBefore(p, q int32) bool {
	a, b := r.arrOf(p), r.arrOf(q)
	if a != b {
		return a < b
	}
	return p < q
}

// fifoBins sets s.fifo[i], for each slot i of h, to the FIFO bin of call c
// (kind bit kb) going to it: how many requests that arrived before it,
// and could hold c, have made no call of c's kind yet (capped at
// fifoBins-1); -1 when the slot already made one (a repeated call) or
// cannot hold c. A node that serves its requests in order of arrival (an
// event loop, a queue) gives a request's next call of a kind to the
// earliest request that has not made it: bin 0.
func (s *search) fifoBins(h *hyp, c int32, kb uint64) {
	s.fifo = s.fifo[:0]
	for range h.slots {
		s.fifo = append(s.fifo, 0)
	}
	if !s.m.fifoInformative() {
		return
	}
	// the slots that could take c and made no call of its kind, in order
	// of arrival: a slot's bin is its rank
	s.elig = s.elig[:0]
	for i := range h.slots {
		sl := &h.slots[i]
		if sl.kinds&kb == 0 && s.feasible(c, sl.p) {
			s.elig = append(s.elig, int32(i))
		}
	}
	switch {
	case s.readyOrder():
		slices.SortFunc(s.elig, s.byReady(h.slots))
	case s.r.fanOrder(s.m):
		s.fanRanks(h.slots, s.r.sendOf(c))
		return
	default:
		slices.SortFunc(s.elig, s.byArrival(h.slots))
	}
	s.tiedRanks(h.slots, s.elig, func(int32) bool { return true })
}

// byArrival orders slot indices by their requests' arrival.
func (s *search) byArrival(slots []slot) func(a, b int32) int {
	return func(a, b int32) int {
		pa, pb := slots[a].p, slots[b].p
		switch {
		case pa == pb:
			return 0
		case s.r.arrivedBefore(pa, pb):
			return -1
		}
		return 1
	}
}

// slotOrder prepares, for call c, what depends only on the requests
// open and not on a hypothesis's states, when every hypothesis holds the
// same requests in the same slots (arrive appends a request to all of
// them, reply deletes it from all, apply copies them): feas[i], whether
// slot i's request can hold c, and ord, the slots that can, in order of
// their requests' arrival (fifoRanks). It reports whether that holds;
// when not, send takes each hypothesis on its own (fifoBins).
func (s *search) slotOrder(c int32) bool {
	ref := s.hyps[0].slots
	for _, h := range s.hyps[1:] {
		if len(h.slots) != len(ref) {
			return false
		}
		for i := range ref {
			if h.slots[i].p != ref[i].p {
				return false
			}
		}
	}
	s.feas = s.feas[:0]
	s.ord = s.ord[:0]
	for i := range ref {
		ok := s.feasible(c, ref[i].p)
		s.feas = append(s.feas, ok)
		if ok {
			s.ord = append(s.ord, int32(i))
		}
	}
	if s.m.fifoInformative() {
		slices.SortFunc(s.ord, s.byArrival(ref))
	}
	return true
}

// fifoRanks is fifoBins for hypothesis h from slotOrder's order: the
// eligible slots are those of ord that made no call of kind bit kb, in
// the same order.
func (s *search) fifoRanks(h *hyp, kb uint64) {
	s.fifo = s.fifo[:0]
	for range h.slots {
		s.fifo = append(s.fifo, 0)
	}
	if !s.m.fifoInformative() {
		return
	}
	s.tiedRanks(h.slots, s.ord, func(i int32) bool { return h.slots[i].kinds&kb == 0 })
}

// extend returns slot sl after it sent call c.
func (s *search) extend(sl *slot, c int32) slot {
	cc := &s.r.calls[c]
	ns := *sl
	if ns.pos == 0 && s.r.fanOrder(s.m) {
		ns.start = s.r.sendOf(c)
	}
	ns.pos++
	ns.prev = cc.kind
	ns.kinds |= kindBit(cc.kind)
	ns.lastKid = c
	if cc.retMsg >= 0 && cc.flags&flagOneWay == 0 {
		ns.out++
	}
	return ns
}

// apply materialises candidate cd for call c; cd.hash must be set
// (candHash).
func (s *search) apply(cd *cand, c int32) *hyp {
	h := s.hyps[cd.h]
	nh := s.alloc()
	nh.score, nh.hash = cd.score, cd.hash
	nh.slots = append(nh.slots, h.slots...)
	nh.owns = append(nh.owns, h.owns...)
	p := int32(-1)
	if cd.slot >= 0 {
		sl := &nh.slots[cd.slot]
		p = sl.p
		// the new slot's hash is in cd.hash (candHash): h's hash with
		// the old slot's and the call's own taken out, not hashed again
		hs := cd.hash ^ h.hash ^ sl.hs
		*sl = s.extend(sl, c)
		if cc := &s.r.calls[c]; cc.retMsg >= 0 && cc.flags&flagOneWay == 0 {
			nh.owns = append(nh.owns, own{c, p})
			hs ^= own{c, p}.hash()
		}
		sl.hs = hs
	}
	nh.asg = s.decision(decision{c: c, p: p, seq: s.seq, prev: h.asg})
	return nh
}

// alloc returns an empty hypothesis, reusing a dropped one.
func (s *search) alloc() *hyp {
	if n := len(s.free); n > 0 {
		h := s.free[n-1]
		s.free = s.free[:n-1]
		h.slots, h.owns, h.asg = h.slots[:0], h.owns[:0], nil
		return h
	}
	return &hyp{}
}

// release returns hypotheses no longer used.
func (s *search) release(hs ...*hyp) {
	for _, h := range hs {
		h.asg = nil
		s.free = append(s.free, h)
	}
}

// decision returns d stored in the slab.
func (s *search) decision(d decision) *decision {
	if len(s.decs) == cap(s.decs) {
		s.decs = make([]decision, 0, 1024)
	}
	s.decs = append(s.decs, d)
	return &s.decs[len(s.decs)-1]
}

// startAlts, noteAlt and endAlts record, for the call being sent, the
// best score of each parent among the candidates (the sum of their
// masses in the summing pass), noted as the candidates are made, in
// their order.
func (s *search) startAlts() {
	s.altBuf = s.altBuf[:0]
	if s.altAt == nil {
		s.altAt = make([]int32, 1+len(s.r.parentsOf[s.node]))
		for i := range s.altAt {
			s.altAt[i] = -1
		}
	}
}

// noteAlt notes a candidate giving the call to request p (-1: none) with
// score sc; at is p's index in altAt (1+parentPos[p], 0 for none): an
// index by the request's position, not a scan of the list, since a node
// with thousands of open requests has as many alternatives for each call.
func (s *search) noteAlt(p, at int32, sc float64) {
	i := s.altAt[at]
	switch {
	case i < 0:
		s.altAt[at] = int32(len(s.altBuf))
		s.altBuf = append(s.altBuf, altScore{p, sc})
	case s.sum:
		s.altBuf[i].score = logAddExact(s.altBuf[i].score, sc)
	case sc > s.altBuf[i].score:
		s.altBuf[i].score = sc
	}
}

// endAlts keeps the call's alternatives noted (startAlts) and clears
// their index.
func (s *search) endAlts() {
	alts := s.altBuf
	for _, a := range alts {
		if a.p < 0 {
			s.altAt[0] = -1
		} else {
			s.altAt[1+s.r.parentPos[a.p]] = -1
		}
	}
	s.pendAlt = append(s.pendAlt, s.keepAlts(topAlts(&s.topBuf, alts, searchAlts+1)))
	var m sendMass
	if s.sum {
		// every candidate's mass, per request: the send's distribution
		m.all = logSumAlts(alts)
	}
	s.pendMass = append(s.pendMass, m)
}

// logSumAlts returns log Σ exp(score) over alts.
func logSumAlts(alts []altScore) float64 {
	return logSumExpOf(alts, func(a altScore) float64 { return a.score })
}

// cmpAlt orders alternatives best first, by request at equal scores (a
// total order: the requests are distinct).
func cmpAlt(a, b altScore) int {
	if c := cmp.Compare(b.score, a.score); c != 0 {
		return c
	}
	return cmp.Compare(a.p, b.p)
}

// topAlts returns the k first of alts in cmpAlt's order, in that order,
// in *buf: what sorting alts and keeping k gives, without sorting the
// rest (a call has an alternative per open request).
func topAlts(buf *[]altScore, alts []altScore, k int) []altScore {
	top := (*buf)[:0]
	for _, a := range alts {
		if len(top) == k && cmpAlt(a, top[k-1]) >= 0 {
			continue
		}
		if len(top) < k {
			top = append(top, a)
		} else {
			top[k-1] = a
		}
		for j := len(top) - 1; j > 0 && cmpAlt(top[j], top[j-1]) < 0; j-- {
			top[j], top[j-1] = top[j-1], top[j]
		}
	}
	*buf = top
	return top
}

// keepAlts returns a copy of alts carved from the slab (a pending call's
// alternatives are kept until it is committed).
func (s *search) keepAlts(alts []altScore) []altScore {
	if len(s.altSlab)+len(alts) > cap(s.altSlab) {
		s.altSlab = make([]altScore, 0, max(1024, len(alts)))
	}
	n := len(s.altSlab)
	s.altSlab = append(s.altSlab, alts...)
	return s.altSlab[n:len(s.altSlab):len(s.altSlab)]
}

// select_ keeps the best beam candidates, one per state (the best of
// candidates that lead to the same state: Viterbi), materialised by mk.
// Only the candidates that can make the beam are sorted: those at least
// as good as the 2·beam-th best score, unless merging leaves the beam
// short, when the rest follow.
func (s *search) select_(c int32, mk func(*cand) *hyp) {
	s.next, s.sameHash = s.next[:0], s.sameHash[:0]
	s.seen.reset()
	cands := s.cands
	pruned := false
	for len(cands) > 0 {
		head := cands
		if len(cands) > 2*s.beam {
			th := s.kth(cands, 2*s.beam)
			head = partition(cands, th)
		}
		if s.take(head, c, mk) {
			pruned = true
		}
		if len(s.next) == s.beam || len(head) == len(cands) {
			pruned = pruned || len(head) < len(cands)
			break
		}
		cands = cands[len(head):]
	}
	if pruned {
		s.pruned = true
		s.cnt.pruned++
	}
	s.release(s.hyps...)
	s.hyps, s.next = s.next, s.hyps
	if s.sum {
		pm := &s.pendMass[len(s.pendMass)-1]
		pm.kept = lseScores(s.hyps) - pm.all
	}
}

// take keeps the candidates of head in cmpCand's order, one per state,
// until the beam is full and a candidate of another state comes, when it
// reports true (a state lost). Within head it sorts only the beam+1 best
// (a beam's worth and the one that finds it full), then, when merging
// leaves the beam short or full without that one (about one candidate in
// a hundred is merged), the next beam+1, and so on: select_'s order and
// its count of prunings are the same as sorting head whole.
func (s *search) take(head []cand, c int32, mk func(*cand) *hyp) bool {
	for len(head) > 0 {
		part := head
		if len(head) > s.beam+1 {
			part = partition(head, s.kth(head, s.beam+1))
			if len(part) == 0 { // a NaN threshold: sort all
				part = head
			}
		}
		sortCands(part)
		for i := range part {
			cd := &part[i]
			cd.hash = s.candHash(cd, c)
			if s.dup(cd.hash, nil, mk, cd) {
				continue
			}
			if len(s.next) == s.beam {
				return true
			}
			s.keep(cd.hash, mk(cd))
		}
		head = head[len(part):]
	}
	return false
}

// sortCands sorts cands in cmpCand's order: by insertion when they are
// few (a select_ sorts about twenty, where slices.SortFunc's calls of
// its comparison cost more than the moves), else by slices.SortFunc.
// cmpCand is a total order, so both give the same order.
func sortCands(cands []cand) {
	if len(cands) > 32 {
		slices.SortFunc(cands, cmpCand)
		return
	}
	for i := 1; i < len(cands); i++ {
		x := cands[i]
		j := i
		for ; j > 0 && candLess(&x, &cands[j-1]); j-- {
			cands[j] = cands[j-1]
		}
		cands[j] = x
	}
}

// candLess reports whether a comes before b in cmpCand's order.
func candLess(a, b *cand) bool {
	if a.score > b.score {
		return true
	}
	if a.score < b.score {
		return false
	}
	return cmpCand(*a, *b) < 0
}

// cmpCand orders candidates best first, then by hypothesis and slot (a
// total order: the sorted order does not depend on the algorithm). It
// is cmp.Compare's order, which puts NaN last, with the comparisons of
// ordinary scores first.
func cmpCand(a, b cand) int {
	switch {
	case a.score > b.score:
		return -1
	case a.score < b.score:
		return 1
	case a.score != b.score: // a NaN
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
	}
	switch {
	case a.h != b.h:
		return int(a.h - b.h)
	case a.slot != b.slot:
		return int(a.slot - b.slot)
	}
	return 0
}

// candHash returns the hash of the state candidate cd (for call c) leads
// to.
func (s *search) candHash(cd *cand, c int32) uint64 {
	h := s.hyps[cd.h]
	if cd.slot < 0 {
		return h.hash
	}
	sl := &h.slots[cd.slot]
	ns := s.extend(sl, c)
	hh := h.hash ^ sl.hs ^ ns.hash()
	if cc := &s.r.calls[c]; cc.retMsg >= 0 && cc.flags&flagOneWay == 0 {
		hh ^= own{c, sl.p}.hash()
	}
	return hh
}

// kth returns the k-th largest score among cands (k >= 1).
func (s *search) kth(cands []cand, k int) float64 {
	sc := s.scores[:0]
	for i := range cands {
		sc = append(sc, cands[i].score)
	}
	s.scores = sc
	lo, hi := 0, len(sc)-1
	k--
	for lo < hi {
		p := sc[(lo+hi)/2]
		i, j := lo, hi
		for i <= j {
			for sc[i] > p {
				i++
			}
			for sc[j] < p {
				j--
			}
			if i <= j {
				sc[i], sc[j] = sc[j], sc[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return sc[k]
		}
	}
	return sc[k]
}

// partition moves the candidates scoring at least th to the front of
// cands and returns them.
func partition(cands []cand, th float64) []cand {
	n := 0
	for i := range cands {
		if cands[i].score >= th {
			cands[i], cands[n] = cands[n], cands[i]
			n++
		}
	}
	return cands[:n]
}

// dup reports whether a hypothesis with the state of candidate cd (or of
// h) is already kept. Equal hashes are compared state by state.
func (s *search) dup(hash uint64, h *hyp, mk func(*cand) *hyp, cd *cand) bool {
	jv, ok := s.seen.get(hash)
	if !ok {
		return false
	}
	j := int32(jv)
	if h == nil {
		h = mk(cd)
		defer s.release(h)
	}
	for ; j >= 0; j = s.sameHash[j] {
		if s.next[j].equal(h) {
			return true
		}
	}
	return false
}

// keep appends h, whose state hash is hash, to the kept hypotheses, last
// in its hash's chain.
func (s *search) keep(hash uint64, h *hyp) {
	j := int32(len(s.next))
	s.next = append(s.next, h)
	s.sameHash = append(s.sameHash, -1)
	iv, ok := s.seen.get(hash)
	if !ok {
		s.seen.put(hash, uint64(j))
		return
	}
	i := int32(iv)
	for s.sameHash[i] >= 0 {
		i = s.sameHash[i]
	}
	s.sameHash[i] = j
}

func (s *search) back(c int32) {
	cc := &s.r.calls[c]
	for _, h := range s.hyps {
		oi := slices.IndexFunc(h.owns, func(o own) bool { return o.c == c })
		if oi < 0 {
			continue
		}
		o := h.owns[oi]
		h.owns = slices.Delete(h.owns, oi, oi+1)
		h.hash ^= o.hash()
		i := h.slotOf(o.p)
		sl := &h.slots[i]
		h.hash ^= sl.hs
		sl.backFrom(c, cc)
		sl.rehash()
		h.hash ^= sl.hs
	}
}

func (s *search) reply(p int32) {
	pc := &s.r.calls[p]
	strict := pc.retMsg >= 0 && pc.flags&flagOneWay == 0
	s.next = s.next[:0]
	var relaxed []*hyp
	// the hypotheses mostly hold the request in one state or a few: its
	// end is scored once per state
	s.memo.reset()
	for _, h := range s.hyps {
		i := h.slotOf(p)
		if i < 0 {
			s.next = append(s.next, h)
			continue
		}
		sl := h.slots[i]
		sh := sl.hs
		h.hash ^= sh
		h.slots = slices.Delete(h.slots, i, i+1)
		eb, ok := s.memo.get(sh)
		es := math.Float64frombits(eb)
		if !ok {
			es = s.endScore(&sl)
			s.memo.put(sh, math.Float64bits(es))
		}
		h.score += es
		if sl.out > 0 {
			// calls still in flight when the request closed (its reply
			// not seen, and taken to leave when its span ends) are
			// forgotten
			s.dropOwns(h, p)
		}
		if strict && sl.out > 0 {
			// A call of the request was answered after its reply left:
			// not this hypothesis, unless no hypothesis can avoid it.
			relaxed = append(relaxed, h)
			continue
		}
		s.next = append(s.next, h)
	}
	if len(s.next) == 0 {
		s.cnt.relaxed++
		for _, h := range relaxed {
			h.score -= 50
			s.next = append(s.next, h)
		}
	}
	s.hyps, s.next = s.next, s.hyps
	s.dedupe()
}

// dropOwns forgets the calls in flight of request p in h.
func (s *search) dropOwns(h *hyp, p int32) {
	h.owns = slices.DeleteFunc(h.owns, func(o own) bool {
		if o.p == p {
			h.hash ^= o.hash()
			return true
		}
		return false
	})
}

// dedupe merges hypotheses of equal state, keeping the best.
func (s *search) dedupe() {
	if len(s.hyps) < 2 {
		return
	}
	s.next, s.sameHash = s.next[:0], s.sameHash[:0]
	s.seen.reset()
outer:
	for _, h := range s.hyps {
		jv, ok := s.seen.get(h.hash)
		for j := int32(jv); ok && j >= 0; j = s.sameHash[j] {
			if g := s.next[j]; g.equal(h) {
				if h.score > g.score {
					s.next[j] = h
					s.release(g)
				} else {
					s.release(h)
				}
				continue outer
			}
		}
		s.keep(h.hash, h)
	}
	s.hyps, s.next = s.next, s.hyps
}

// closeWindow commits every pending decision: the node has no open
// request, so all hypotheses agree on the state.
func (s *search) closeWindow() {
	if len(s.pend) == 0 {
		s.pruned = false
		return
	}
	s.commit(len(s.pend), false)
	s.cnt.windows++
	if !s.pruned {
		s.cnt.windowsExact++
	}
	s.pruned = false
	best := s.hyps[0]
	for _, h := range s.hyps[1:] {
		if h.score > best.score {
			best = h
		}
	}
	best.asg = nil
	s.hyps = append(s.hyps[:0], best)
}

// commit decides the n oldest pending calls by the best hypothesis, with
// each call's confidence and alternatives from the hypotheses that are
// left; forced commits (the window is still open) drop the hypotheses
// that disagree.
func (s *search) commit(n int, forced bool) {
	r := s.r
	slices.SortFunc(s.hyps, func(a, b *hyp) int { return cmp.Compare(b.score, a.score) })
	set := s.pend[:n]
	firstSeq := s.seq - int32(len(s.pend))
	lastSeq := firstSeq + int32(n) - 1
	// smoothed max-marginals: per committed call (by seq - firstSeq), the
	// best final score per parent (parent -1: none)
	marg, choice := s.commitBufs(n)
	keep := s.hyps[:0:0]
	for hi, h := range s.hyps {
		agree := true
		for d := h.asg; d != nil && d.seq >= firstSeq; d = d.prev {
			if d.seq > lastSeq {
				continue
			}
			k := d.seq - firstSeq
			if hi == 0 {
				choice[k] = d.p
			} else if choice[k] != d.p {
				agree = false
			}
			mc := marg[k]
			i := slices.IndexFunc(mc, func(a altScore) bool { return a.p == d.p })
			switch {
			case i < 0:
				marg[k] = append(mc, altScore{d.p, h.score})
			case s.sum:
				mc[i].score = logAddExact(mc[i].score, h.score)
			case h.score > mc[i].score:
				mc[i].score = h.score
			}
			if d.seq == firstSeq {
				d.prev = nil
			}
		}
		if agree || !forced {
			keep = append(keep, h)
		}
	}
	if forced {
		if len(keep) < len(s.hyps) {
			s.pruned = true
		}
		s.hyps = keep
		s.cnt.forcedCommits++
	}
	for k, c := range set {
		if s.shadow != nil {
			k1 := searchAlts + 1
			posteriorOf(choice[k], marg[k], s.pendAlt[k], s.shadow[int(c)*k1:int(c)*k1+k1])
			continue
		}
		r.assign(c, choice[k], marg[k], s.pendAlt[k])
		if s.sum {
			pm := s.pendMass[k]
			r.noteSend(c, math.Exp(min(0, pm.kept)), s.pendAlt[k], pm.all)
		}
		s.cnt.decisions++
		if !s.pruned {
			s.cnt.decisionsExact++
		}
	}
	s.pend = append(s.pend[:0], s.pend[n:]...)
	clear(s.pendAlt[:n])
	s.pendAlt = append(s.pendAlt[:0], s.pendAlt[n:]...)
	s.pendMass = append(s.pendMass[:0], s.pendMass[n:]...)
}

// commitBufs returns commit's buffers for n calls, empty.
func (s *search) commitBufs(n int) (marg [][]altScore, choice []int32) {
	if cap(s.margBuf) < n {
		s.margBuf = append(s.margBuf[:cap(s.margBuf)], make([][]altScore, n-cap(s.margBuf))...)
	}
	marg = s.margBuf[:n]
	for k := range marg {
		marg[k] = marg[k][:0]
	}
	if cap(s.choiceBuf) < n {
		s.choiceBuf = make([]int32, n)
	}
	choice = s.choiceBuf[:n]
	clear(choice)
	return marg, choice
}

// logSumExp returns log Σ exp(v).
func logSumExp(v []float64) float64 {
	return logSumExpOf(v, func(x float64) float64 { return x })
}

// logSumExpOf returns log Σ exp(score(x)) over xs.
func logSumExpOf[T any](xs []T, score func(T) float64) float64 {
	m := math.Inf(-1)
	for _, x := range xs {
		m = max(m, score(x))
	}
	if math.IsInf(m, -1) {
		return m
	}
	s := 0.0
	for _, x := range xs {
		s += math.Exp(score(x) - m)
	}
	return m + math.Log(s)
}

// logAddExact returns log(e^a + e^b).
func logAddExact(a, b float64) float64 {
	if a < b {
		a, b = b, a
	}
	if math.IsInf(b, -1) {
		return a
	}
	return a + math.Log1p(math.Exp(b-a))
}
