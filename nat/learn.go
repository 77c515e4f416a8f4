package nat

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/wirepath/wirepath/clock"
	"github.com/wirepath/wirepath/pcapio"
)

// Options tune the Learner. The zero value is not useful; start from
// DefaultOptions.
type Options struct {
	// Window is how far apart in corrected time the two copies of one
	// packet may be: the NAT's delay plus what clock correction left of
	// the offset between the sniffers on either side.
	Window time.Duration
	// IdleTimeout ends a connection's activity when it has been silent this
	// long (closed TCP connections end after two windows). It must be at
	// least twice Window.
	IdleTimeout time.Duration
	// MinEvidence is the weighted match count a mapping needs (a data
	// match with a random sequence number or IP ID counts 1; see docs/nat.md).
	MinEvidence float64
	// MinData is how many matches of data-bearing packets (TCP with
	// payload, UDP and others with a payload that does not repeat) a
	// mapping needs: bare TCP segments and repeated datagrams alone never
	// make a mapping. Besides, one of them must have a random field (a TCP
	// sequence number from a random ISN, a non-zero IPv4 ID), or data must
	// have crossed both ways on one connection: byte-identical datagrams
	// sent by two unrelated hosts have neither.
	MinData int
	// MinScore is the lowest Score of an accepted mapping, in [0,1].
	MinScore float64
	// AnsweredTimeout ends sooner the activity of a connection other than
	// TCP whose packets so far were answered one for one (as many each
	// way: a DNS lookup, each on a port of its own): silent this long, it
	// has ended, as a closed TCP connection does after two windows. 0
	// means two windows; negative, IdleTimeout.
	AnsweredTimeout time.Duration
}

// DefaultOptions returns the defaults: a 2 s window, a 2 min idle timeout,
// evidence 3, 2 data matches, score 0.5.
func DefaultOptions() Options {
	return Options{
		Window:      2 * time.Second,
		IdleTimeout: 2 * time.Minute,
		MinEvidence: 3,
		MinData:     2,
		MinScore:    0.5,
	}
}

// Validate checks the options.
func (o Options) Validate() error {
	switch {
	case o.Window <= 0:
		return errors.New("nat: window must be positive")
	case o.IdleTimeout < 2*o.Window:
		return fmt.Errorf("nat: idle timeout %v must be at least twice the window %v", o.IdleTimeout, o.Window)
	case o.MinEvidence < 0 || o.MinData < 0:
		return errors.New("nat: thresholds must not be negative")
	case o.MinScore < 0 || o.MinScore > 1:
		return errors.New("nat: minimum score must be within [0,1]")
	}
	return nil
}

// Stats are the Learner's counters. Every examined packet is either skipped
// for one reason or observed; every candidate (two copies of one body on
// different connections) is either a match or rejected for one reason.
type Stats struct {
	Packets         int64 // packets examined
	NotIP           int64 // skipped: not decoded as IP
	Fragments       int64 // skipped: IP fragments (a NAT reassembles and refragments them)
	NotTranslatable int64 // skipped: multicast, broadcast, link-local or loopback addresses, IPv6 ND and MLD
	Observed        int64 // packets that entered the body window

	Candidates          int64 // copies of one body on two connections
	Matches             int64 // candidates accepted as two copies of one packet
	RejectedAmbiguous   int64 // the body was seen on three or more connections
	RejectedSameCapture int64 // same capture points and equal TTLs: two packets, not one
	RejectedFamily      int64 // IPv4 on one side and IPv6 on the other
	RejectedTTLGap      int64 // TTLs too far apart for one packet between two sniffers
	RepeatedBodies      int64 // matches that count nothing because the body repeats

	Links           int64 // connection pairs with at least one match
	LinksApplied    int64 // links whose translation is accepted
	LinksConflicted int64 // links dropped because a connection had a better one
	Mappings        int64 // accepted mappings
	Rejected        int64 // mappings below the thresholds
	// PacketsToRewrite counts the packets on applied links whose name
	// canonicalisation changes (the Canonicalizer's count on the same input).
	PacketsToRewrite int64
	// RenamedLate counts the packets a Streamer handed on unrenamed on a
	// view that the final table renames: its translation was learned
	// after they left the delay (see Streamer).
	RenamedLate int64

	PeakWindowCopies int // most packets held in the body window at once
	PeakConnections  int // most connections tracked at once
}

// view is one connection under one name, while it is active.
type view struct {
	key         connKey
	first, last int64
	count       uint32 // packets in this activity period
	sinceMatch  uint32 // packets since the last match on this view
	synSeq      uint32
	hasSyn      bool
	closing     bool      // FIN or RST seen
	live        bool      // in viewByKey (not ended by a sweep); views not live are free
	sent        [2]uint32 // packets from each endpoint (srcSlot), in this activity period
	nrecent     uint8     // filled entries of recent
	rpos        uint8     // next position to overwrite
	recent      [8]uint64 // recent non-TCP body keys, to spot repeats
	links       [2]uint32 // link ids + 1 (0: none)
	moreLinks   []uint32  // further link ids + 1, rarely needed
	// plain counts the view's packets a Streamer handed on unrenamed.
	plain int64
}

// sawRecently reports whether key is among the view's recent body keys,
// and remembers it.
func (v *view) sawRecently(key uint64) bool {
	for i := 0; i < int(v.nrecent); i++ {
		if v.recent[i] == key {
			return true
		}
	}
	v.recent[v.rpos] = key
	v.rpos = (v.rpos + 1) % uint8(len(v.recent))
	if int(v.nrecent) < len(v.recent) {
		v.nrecent++
	}
	return false
}

func (v *view) addLink(id uint32) {
	for i := range v.links {
		if v.links[i] == id+1 {
			return
		}
		if v.links[i] == 0 {
			v.links[i] = id + 1
			return
		}
	}
	if !slices.Contains(v.moreLinks, id+1) {
		v.moreLinks = append(v.moreLinks, id+1)
	}
}

// linkKey names a link: two views of one connection and whether the lower
// endpoint of the first corresponds to the higher endpoint of the second.
type linkKey struct {
	v       [2]connKey
	crossed bool
}

// link accumulates the matches between two views of one connection. Slot s
// of v[0] corresponds to slot s (or 1-s when crossed) of v[1].
type link struct {
	key     linkKey
	matches uint32
	data    uint32
	random  uint32 // data matches with a random field
	// dataWay counts data matches by the slot of v[0] that sent them: both
	// are set when data crossed both ways.
	dataWay  [2]uint32
	repeats  uint32
	evidence float64
	// vote[s] > 0 says v[0] carries the outside name of slot s; absVote
	// sums the weights of all votes.
	vote    [2]float64
	absVote [2]float64
	byTTL   uint32
	byTime  uint32
	// tieDelta sums, per sending slot of v[0], the time of the v[0] copy
	// minus that of the v[1] copy over the matches the TTLs did not order;
	// tieN counts them.
	tieDelta [2]int64
	tieN     [2]uint32
	// fvote and fabs are vote and absVote with the time votes added
	// (Finish).
	fvote, fabs [2]float64
	// gap counts packets on each view between matches that did not match.
	gap [2]uint32
	// client is the slot of v[0] that opened the connection, -1 unknown.
	client      int8
	first, last int64
	// span is the activity of each view, for the applying pass.
	span    [2][2]int64
	hasSpan [2]bool
	pkts    [2]int64
	plain   [2]int64 // the views' packets a Streamer handed on unrenamed
	rule    [2]int32 // rule index per slot at Finish, -1 none
	applied bool
}

// Learner finds translations in a stream of packets. Feed it every packet
// in corrected time order with Observe, then call Finish. It is not safe
// for concurrent use.
type Learner struct {
	opts   Options
	window int64
	idle   int64
	// answered is how long a connection other than TCP answered one for
	// one lives silent (Options.AnsweredTimeout).
	answered int64

	now       int64
	lastSweep int64
	started   bool

	idx bodyIndex

	viewByKey viewIndex
	views     []view
	freeViews []uint32

	linkByKey map[linkKey]uint32
	links     []link

	clocks map[[2]pcapio.SnifferID]*clock.Pair

	stats    Stats
	finished bool
	snapshot bool // a Snapshot is being built: active views' renames have no end
}

// answeredTimeout is Options.AnsweredTimeout in ns, its zero and negative
// values resolved.
func answeredTimeout(o Options) int64 {
	switch {
	case o.AnsweredTimeout < 0:
		return int64(o.IdleTimeout)
	case o.AnsweredTimeout == 0:
		return 2 * int64(o.Window)
	}
	return int64(min(o.AnsweredTimeout, o.IdleTimeout))
}

// NewLearner returns a Learner; invalid options are replaced by the defaults.
func NewLearner(opts Options) *Learner {
	if opts.Validate() != nil {
		opts = DefaultOptions()
	}
	return &Learner{
		opts:      opts,
		window:    int64(opts.Window),
		idle:      int64(opts.IdleTimeout),
		answered:  answeredTimeout(opts),
		idx:       newBodyIndex(),
		linkByKey: make(map[linkKey]uint32),
		clocks:    make(map[[2]pcapio.SnifferID]*clock.Pair),
	}
}

// Finish ends learning and returns the table: the links are grouped into
// translation rules, each judged against the thresholds (accepted into
// Mappings or Rejected with its reason), the accepted links become the
// rename table, and the translated copies give the sniffer clocks. Later
// calls return a table built from the same state.
func (l *Learner) Finish() *Table {
	if !l.finished {
		for id := range l.views {
			if l.views[id].live {
				l.closeView(uint32(id))
			}
		}
		l.finished = true
	}
	return l.table()
}

// table builds the table from the links as they are (Finish, Snapshot).
func (l *Learner) table() *Table {
	t := &Table{window: l.window, apply: make(map[connKey][]applyEntry)}
	rules := l.aggregateRules()
	for i := range rules {
		r := &rules[i]
		l.judge(r)
		if r.accepted {
			t.Mappings = append(t.Mappings, r.m)
		} else {
			t.Rejected = append(t.Rejected, r.m)
		}
	}
	sortMappings(t.Mappings)
	sortMappings(t.Rejected)
	l.buildApply(t, rules)
	t.Clocks = l.clockOffsets()
	l.stats.Mappings = int64(len(t.Mappings))
	l.stats.Rejected = int64(len(t.Rejected))
	t.Stats = l.stats
	return t
}

// Stats returns the counters so far.
func (l *Learner) Stats() Stats { return l.stats }

// Observe takes one packet. It does not keep p or anything p points to.
// Packets after Finish are ignored.
func (l *Learner) Observe(p *pcapio.Packet) {
	var key connKey
	var srcSlot uint8
	trans := p.Status == pcapio.StatusOK && len(p.Obs) > 0 && !p.IsFragment() && translatable(p)
	if trans {
		key, srcSlot = connOf(p)
	}
	l.observe(p, key, srcSlot, trans)
}

// noView is observe's answer for a packet it did not observe.
const noView = ^uint32(0)

// observe is Observe with what the caller worked out of p: whether it is
// a translatable IP packet, not a fragment (trans), and if so its
// connection key and source slot (connOf). It returns p's view, or noView
// when p was not observed.
func (l *Learner) observe(p *pcapio.Packet, key connKey, srcSlot uint8, trans bool) uint32 {
	if l.finished {
		return noView
	}
	l.stats.Packets++
	switch {
	case p.Status != pcapio.StatusOK || len(p.Obs) == 0:
		l.stats.NotIP++
		return noView
	case p.IsFragment():
		l.stats.Fragments++
		return noView
	case !trans:
		l.stats.NotTranslatable++
		return noView
	}
	l.stats.Observed++
	ts := p.TS()
	if !l.started || ts > l.now {
		l.now = ts
		if !l.started {
			l.started, l.lastSweep = true, ts
		}
	}
	l.idx.expire(l.now - l.window)
	if l.now-l.lastSweep >= min(l.window, l.idle/4) {
		l.sweep()
	}

	vid := l.viewFor(key, p, ts)
	v := &l.views[vid]
	v.count++
	v.sent[srcSlot]++
	v.sinceMatch++
	v.last = max(v.last, ts)
	if p.Proto == pcapio.ProtoTCP && p.TCPFlags&(pcapio.FlagFIN|pcapio.FlagRST) != 0 {
		v.closing = true
	}
	repeat := p.Proto != pcapio.ProtoTCP && v.sawRecently(p.BodyKey)

	sig, ttlMin, ttlMax := observed(p.Obs)
	c := copyRec{ts: ts, sig: sig, view: vid, ttlMin: ttlMin, ttlMax: ttlMax, srcSlot: srcSlot, sniffer: p.Obs[0].Sniffer}
	eid := l.idx.entry(p.BodyKey)
	e := &l.idx.entries[eid]
	e.prune(l.now - l.window)
	e.noteView(vid)
	partner := -1
	for i := 0; i < int(e.n); i++ {
		q := &e.copies[i]
		if q.view == vid {
			e.repeated = true
		} else if !q.paired && partner < 0 {
			partner = i
		}
	}
	if partner >= 0 {
		l.stats.Candidates++
		q := &e.copies[partner]
		qv := &l.views[q.view]
		switch {
		case e.ambiguous:
			l.stats.RejectedAmbiguous++
		case qv.key.v6 != key.v6:
			l.stats.RejectedFamily++
		case q.sig == c.sig && ttlTie(q, &c):
			l.stats.RejectedSameCapture++
		case ttlGap(q, &c) > maxTTLGap:
			l.stats.RejectedTTLGap++
		default:
			q.paired, c.paired = true, true
			l.match(*q, c, p, repeat || e.repeated)
		}
	}
	e.push(c)
	l.idx.add(eid, ts)

	if n := l.idx.q.n; n > l.stats.PeakWindowCopies {
		l.stats.PeakWindowCopies = n
	}
	return vid
}

// notePlain counts a packet of view key handed on unrenamed on the view,
// if it is still active: vid, the view observe gave the packet, when it
// is still that view (no map look-up), else the view key has now.
func (l *Learner) notePlain(key connKey, vid uint32) {
	if vid < uint32(len(l.views)) {
		if v := &l.views[vid]; v.live && v.key.same(&key) {
			v.plain++
			return
		}
	}
	if id, ok := l.viewByKey.get(l.views, key, l.viewByKey.hash(key)); ok {
		l.views[id].plain++
	}
}

// maxTTLGap is the largest TTL difference between two copies of one packet:
// the routers between two sniffers of one site. A larger one means two
// senders with different initial TTLs (64, 128, 255).
const maxTTLGap = 16

// ttlGap returns how far apart the TTL ranges of two copies are.
func ttlGap(a, b *copyRec) int {
	return max(int(a.ttlMin)-int(b.ttlMax), int(b.ttlMin)-int(a.ttlMax), 0)
}

// ttlOrder orders two copies by TTL: 1 when a was seen before b (closer
// to the sender), -1 when b was, 0 when the TTLs do not tell. Each copy
// has the range of TTLs its capture points saw; a copy is before when its
// range lies above the other's at both ends, so that one capture point
// that saw the translated packet before the router decremented its TTL (a
// bridge with netfilter, a sniffer on the NAT box) does not blur the
// order.
func ttlOrder(a, b *copyRec) int {
	switch {
	case a.ttlMin >= b.ttlMin && a.ttlMax >= b.ttlMax && (a.ttlMin > b.ttlMin || a.ttlMax > b.ttlMax):
		return 1
	case b.ttlMin >= a.ttlMin && b.ttlMax >= a.ttlMax && (b.ttlMin > a.ttlMin || b.ttlMax > a.ttlMax):
		return -1
	}
	return 0
}

// ttlTie reports whether the TTLs of two copies do not order them.
func ttlTie(a, b *copyRec) bool { return ttlOrder(a, b) == 0 }

// viewFor returns the view of key, creating it, or starting a new activity
// period when a TCP SYN opens a new connection on a reused 4-tuple.
func (l *Learner) viewFor(key connKey, p *pcapio.Packet, ts int64) uint32 {
	syn := p.Proto == pcapio.ProtoTCP && p.TCPFlags&(pcapio.FlagSYN|pcapio.FlagACK) == pcapio.FlagSYN
	h := l.viewByKey.hash(key)
	if id, ok := l.viewByKey.get(l.views, key, h); ok {
		v := &l.views[id]
		if syn && ((v.hasSyn && v.synSeq != p.Seq) || (!v.hasSyn && ts-v.last > l.window)) {
			l.closeView(id)
			l.views[id] = view{key: key, first: ts, last: ts, hasSyn: true, synSeq: p.Seq, live: true}
		} else if syn && !v.hasSyn {
			v.hasSyn, v.synSeq = true, p.Seq
		}
		return id
	}
	var id uint32
	nv := view{key: key, first: ts, last: ts, hasSyn: syn, synSeq: p.Seq, live: true}
	if n := len(l.freeViews); n > 0 {
		id = l.freeViews[n-1]
		l.freeViews = l.freeViews[:n-1]
		l.views[id] = nv
	} else {
		id = uint32(len(l.views))
		l.views = append(l.views, nv)
	}
	l.viewByKey.set(key, id, h)
	if n := l.viewByKey.len(); n > l.stats.PeakConnections {
		l.stats.PeakConnections = n
	}
	return id
}

// sweep ends the views that have been idle for the idle timeout (two
// windows for closed TCP connections, and for other flows answered one for
// one so far, such as DNS lookups, each on a port of its own: a later
// packet on the view starts another activity period).
func (l *Learner) sweep() {
	l.lastSweep = l.now
	for id := range l.views {
		v := &l.views[id]
		if !v.live {
			continue
		}
		idle := l.idle
		switch {
		case v.closing:
			idle = 2 * l.window
		case v.key.proto != pcapio.ProtoTCP && v.sent[0] > 0 && v.sent[0] == v.sent[1]:
			idle = l.answered
		}
		if v.last < l.now-idle {
			l.closeView(uint32(id))
			v.live = false
			l.viewByKey.del(v.key, uint32(id), l.viewByKey.hash(v.key))
			l.freeViews = append(l.freeViews, uint32(id))
		}
	}
}

// closeView records the end of a view's activity period on its links.
func (l *Learner) closeView(id uint32) {
	v := &l.views[id]
	for _, lid := range v.links {
		l.endSpan(v, lid)
	}
	for _, lid := range v.moreLinks {
		l.endSpan(v, lid)
	}
	v.links = [2]uint32{}
	v.moreLinks = nil
}

// endSpan records v's activity period on link lid+1 (0: none).
func (l *Learner) endSpan(v *view, lid uint32) {
	if lid == 0 {
		return
	}
	lk := &l.links[lid-1]
	side := 0
	if lk.key.v[1] == v.key {
		side = 1
	}
	if !lk.hasSpan[side] {
		lk.span[side] = [2]int64{v.first, v.last}
		lk.hasSpan[side] = true
	} else {
		lk.span[side][0] = min(lk.span[side][0], v.first)
		lk.span[side][1] = max(lk.span[side][1], v.last)
	}
	lk.pkts[side] += int64(v.count)
	lk.plain[side] += v.plain
}

// addVotes adds n votes of weight w from matches of packets sent by slot
// src of v[0], whose v[0] copy was seen first when aFirst: the copy before
// the translation carries the outside name of the packet's destination and
// the inside name of its source.
func (L *link) addVotes(src uint8, aFirst bool, w float64) {
	for s := uint8(0); s < 2; s++ {
		if !L.changed(s) {
			continue
		}
		isDst := s != src
		if aFirst == isDst {
			L.vote[s] += w
		} else {
			L.vote[s] -= w
		}
		L.absVote[s] += w
	}
}

// changed reports whether slot s of v[0] has another name in v[1].
func (L *link) changed(s uint8) bool {
	t := s
	if L.key.crossed {
		t = 1 - s
	}
	return L.key.v[0].ep[s] != L.key.v[1].ep[t]
}

// finishVotes sets fvote and fabs: the TTL votes plus the votes of the
// matches the TTLs did not order. For those, the copy seen first is found
// per direction: with a clock offset off between the two sides and a NAT
// delay d, packets whose v[0] copy came first differ by off-d and the
// others by off+d, so the direction with the smaller mean difference had
// its v[0] copy first, whatever the offset. With one direction only, the
// sign of the difference decides (the offset must be below the delay).
func (L *link) finishVotes() {
	saved, savedAbs := L.vote, L.absVote
	for d := uint8(0); d < 2; d++ {
		if L.tieN[d] == 0 {
			continue
		}
		mean := float64(L.tieDelta[d]) / float64(L.tieN[d])
		if o := 1 - d; L.tieN[o] > 0 {
			mean -= float64(L.tieDelta[o]) / float64(L.tieN[o])
		}
		if mean == 0 {
			continue
		}
		L.addVotes(d, mean < 0, voteTime*float64(L.tieN[d]))
	}
	L.fvote, L.fabs = L.vote, L.absVote
	L.vote, L.absVote = saved, savedAbs
}

// clock records that copy before (seen first, by TTL) and copy after were
// one packet crossing a translation between their sniffers: a one-way
// sample between their clocks (after pcapio's correction).
func (l *Learner) clock(before, after copyRec) {
	x, y := before.sniffer, after.sniffer
	if x == y {
		return
	}
	k := [2]pcapio.SnifferID{min(x, y), max(x, y)}
	p := l.clocks[k]
	if p == nil {
		p = &clock.Pair{}
		l.clocks[k] = p
	}
	s := clock.Sample{Send: before.ts, Recv: after.ts}
	if x < y {
		p.AB.Add(s)
	} else {
		p.BA.Add(s)
	}
}

// opener says whether p's sender opened its connection (1: a TCP SYN, an
// ICMP echo request), its receiver did (-1: a SYN-ACK, an echo reply), or
// p does not tell (0).
func opener(p *pcapio.Packet) int {
	switch p.Proto {
	case pcapio.ProtoTCP:
		if p.TCPFlags&pcapio.FlagSYN != 0 {
			if p.TCPFlags&pcapio.FlagACK == 0 {
				return 1
			}
			return -1
		}
	case pcapio.ProtoICMP, pcapio.ProtoICMPv6:
		if len(p.Payload) == 0 {
			return 0
		}
		switch t := p.Payload[0]; {
		case t == 8 && p.Proto == pcapio.ProtoICMP, t == 128 && p.Proto == pcapio.ProtoICMPv6:
			return 1
		case t == 0 && p.Proto == pcapio.ProtoICMP, t == 129 && p.Proto == pcapio.ProtoICMPv6:
			return -1
		}
	}
	return 0
}

// Match weights (see docs/nat.md).
const (
	weightData       = 1.0  // payload and a random sequence number or IP ID
	weightDataPlain  = 0.5  // payload only: UDP with IP ID 0, IPv6 UDP, fixed-ISN TCP
	weightBare       = 0.25 // no payload, but a random sequence number or IP ID
	voteTTL          = 1.0  // a direction vote decided by TTL
	voteTime         = 0.5  // a direction vote decided by timestamps
	randomSeqCeiling = 1 << 20
)

// match records that copies a and b (on different views) are one packet p.
func (l *Learner) match(a, b copyRec, p *pcapio.Packet, repeat bool) {
	l.stats.Matches++
	va, vb := &l.views[a.view], &l.views[b.view]
	if vb.key.cmp(va.key) < 0 {
		a, b = b, a
		va, vb = vb, va
	}
	lk := linkKey{v: [2]connKey{va.key, vb.key}, crossed: a.srcSlot != b.srcSlot}
	id, ok := l.linkByKey[lk]
	if !ok {
		id = uint32(len(l.links))
		l.links = append(l.links, link{key: lk, client: -1, first: max(a.ts, b.ts), rule: [2]int32{-1, -1}})
		l.linkByKey[lk] = id
		l.stats.Links++
	}
	L := &l.links[id]
	ts := max(a.ts, b.ts)
	L.first = min(L.first, ts)
	L.last = max(L.last, ts)

	// Which copy was seen before the translation: the TTLs say it, or the
	// timestamps do, per direction, when the link is complete (Finish).
	var byTTL bool
	switch ord := ttlOrder(&a, &b); ord {
	case 0:
		L.byTime++
		L.tieDelta[a.srcSlot] += a.ts - b.ts
		L.tieN[a.srcSlot]++
	default:
		byTTL = true
		L.byTTL++
		L.addVotes(a.srcSlot, ord == 1, voteTTL)
		if ord == 1 {
			l.clock(a, b)
		} else {
			l.clock(b, a)
		}
	}

	// How much this match says.
	data := p.PayloadLen > 0
	var random bool
	if p.Proto == pcapio.ProtoTCP {
		random = p.Seq >= randomSeqCeiling || p.Ack >= randomSeqCeiling
	} else {
		random = p.IPVersion == 4 && p.IPID != 0
	}
	var w float64
	switch {
	case repeat:
		L.repeats++
		l.stats.RepeatedBodies++
	case !byTTL:
		// Equal TTLs are also what two unrelated hosts sending the same
		// bytes look like: only a payload with a random field counts.
		if data && random {
			w = weightData / 2
		}
	case data && random:
		w = weightData
	case data:
		w = weightDataPlain
	case random:
		w = weightBare
	}
	if data && !repeat {
		L.data++
		if random {
			L.random++
		}
		L.dataWay[a.srcSlot]++
	}
	L.evidence += w

	// Which endpoint opened the connection: the sender of a SYN or of an
	// ICMP echo request.
	if L.client < 0 {
		switch opener(p) {
		case 1:
			L.client = int8(a.srcSlot)
		case -1:
			L.client = int8(1 - a.srcSlot)
		}
	}

	// Unmatched packets on either view since the previous match.
	if L.matches > 0 {
		L.gap[0] += va.sinceMatch - min(va.sinceMatch, 1)
		L.gap[1] += vb.sinceMatch - min(vb.sinceMatch, 1)
	}
	va.sinceMatch, vb.sinceMatch = 0, 0
	L.matches++
	va.addLink(id)
	vb.addLink(id)
}
