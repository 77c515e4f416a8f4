package nat

import (
	"net/netip"
	"time"

	iring "github.com/wirepath/wirepath/internal/ring"
	"github.com/wirepath/wirepath/pcapio"
)

// Snapshot returns the table as the Learner knows it now, without ending
// learning: the rules judged on the matches so far, and the links applied
// so far renaming their views; a view still active is renamed from the
// start of its activity on, with no end. A Streamer renames with
// snapshots while it learns. The Learner goes on observing; Finish later
// gives the final table.
func (l *Learner) Snapshot() *Table {
	l.snapshot = true
	defer func() { l.snapshot = false }()
	saved := l.stats
	t := l.table()
	l.stats = saved
	return t
}

// openActivity reports whether view key is active now (during a
// Snapshot) on link L, and the start of its activity.
func (l *Learner) openActivity(key connKey, L *link) (int64, bool) {
	if !l.snapshot {
		return 0, false
	}
	id, ok := l.viewByKey.get(l.views, key, l.viewByKey.hash(key))
	if !ok {
		return 0, false
	}
	v := &l.views[id]
	lid := l.linkByKey[L.key] + 1
	if v.links[0] != lid && v.links[1] != lid && !containsID(v.moreLinks, lid) {
		return 0, false
	}
	return v.first, true
}

func containsID(ids []uint32, id uint32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// DefaultMaxDelayBytes bounds the memory of the packets a Streamer holds
// back (their buffers' capacity and heldOverhead each).
const DefaultMaxDelayBytes = 48 << 20

// heldOverhead is what a held packet costs besides its frame.
const heldOverhead = 300

// StreamOptions configure a Streamer.
type StreamOptions struct {
	// Learn configures the Learner (the zero value means DefaultOptions).
	Learn Options
	// Delay is how long, in corrected capture time, a packet is held back
	// before it is renamed and handed on: a translation learned within
	// Delay of a connection's first packet renames all of it (0 means the
	// learning window, Learn.Window).
	Delay time.Duration
	// MaxDelayBytes bounds the memory of the packets held back (their
	// buffers' capacity and 300 bytes each); past it the oldest packets
	// leave early (0 means DefaultMaxDelayBytes).
	MaxDelayBytes int64
	// Given, if set, renames what learning does not (SetGiven).
	Given *Given
}

// Streamer learns translations and renames packets in one pass over a
// stream in corrected time order: every packet is observed at once, held
// back for the delay, then renamed with what was learned by then (a
// Snapshot, taken again as matches come in) and handed on. At the end of
// the stream the rest are renamed with the final table. A packet whose
// translation was learned too late to rename it is counted (ApplyStats
// Late), as is one renamed by a snapshot that the final table renames
// otherwise or not at all (Provisional): a two-pass run renames exactly
// the final table's packets. It is not safe for concurrent use.
type Streamer struct {
	l         *Learner
	delay     int64
	maxBytes  int64
	q         iring.Ring[held]
	qBytes    int64
	free      [len(sizeClasses)][]*pcapio.Packet // recycled copies by buffer size
	slab      []pcapio.Packet                    // packets not yet used for a copy (newCopy)
	out       *pcapio.Packet                     // the packet last handed on
	newest    int64
	c         Canonicalizer
	snapMatch int64 // the Learner's matches at the last snapshot
	sinceSnap int64 // packets handed on since
	final     *Table
	given     *Given
	renamed   map[renameKey]int64
	stats     ApplyStats
}

// held is a packet held back, with what Push worked out of it for the
// renaming (the packet is not changed while it is held).
type held struct {
	p     *pcapio.Packet
	key   connKey // p's connection key and source slot, if keyed
	vid   uint32  // the Learner's view of p at Push, or noView
	slot  uint8
	keyed bool // an IP packet, not a fragment: key and slot are set
	trans bool // and translatable
}

// renameKey is one view renamed to one pair of canonical names.
type renameKey struct {
	view  connKey
	canon [2]netip.AddrPort
}

// NewStreamer returns a Streamer; invalid learning options are replaced
// by the defaults (see NewLearner).
func NewStreamer(o StreamOptions) *Streamer {
	if o.Learn == (Options{}) {
		o.Learn = DefaultOptions()
	}
	l := NewLearner(o.Learn)
	s := &Streamer{l: l, delay: int64(o.Delay), maxBytes: o.MaxDelayBytes, given: o.Given, renamed: map[renameKey]int64{}}
	if s.delay <= 0 {
		s.delay = l.window
	}
	if s.maxBytes <= 0 {
		s.maxBytes = DefaultMaxDelayBytes
	}
	s.c.t = &Table{window: l.window, apply: map[connKey][]applyEntry{}, given: o.Given}
	return s
}

// sizeClasses are the largest buffers of the recycled copies' classes: a
// copy is made in a buffer of its frame's class, so that a small frame
// does not hold a buffer a large one grew (each reused buffer would
// otherwise grow to the largest frame it ever held).
var sizeClasses = [...]int{128, 512, 2048, 1 << 30}

// sizeClass is the class of a buffer of n bytes.
func sizeClass(n int) int {
	k := 0
	for k < len(sizeClasses)-1 && n > sizeClasses[k] {
		k++
	}
	return k
}

// Push observes p and holds a copy of it back, in a buffer of its size's
// class. p is not kept. Its connection key, worked out once here, serves
// the learner now and the renaming when it leaves.
func (s *Streamer) Push(p *pcapio.Packet) {
	var h held
	if p.Status == pcapio.StatusOK && len(p.Obs) > 0 && !p.IsFragment() {
		h.key, h.slot = connOf(p)
		h.keyed, h.trans = true, translatable(p)
	}
	h.vid = s.l.observe(p, h.key, h.slot, h.trans)
	var c *pcapio.Packet
	k := sizeClass(p.CopySize())
	if n := len(s.free[k]); n > 0 {
		c, s.free[k] = s.free[k][n-1], s.free[k][:n-1]
	} else {
		c = s.newCopy()
	}
	p.CopyTo(c)
	h.p = c
	s.q.Push(h)
	s.qBytes += int64(c.BufferCap()) + heldOverhead
	if s.q.Len() == 1 || c.TS() > s.newest {
		s.newest = c.TS()
	}
}

// slabSize is how many packets newCopy allocates at once.
const slabSize = 64

// newCopy returns a packet for a new copy, taken from a slab of them: one
// allocation per 64 packets while the delay fills (the copies are
// recycled, never freed, while the Streamer lives).
func (s *Streamer) newCopy() *pcapio.Packet {
	if len(s.slab) == 0 {
		s.slab = make([]pcapio.Packet, slabSize)
	}
	c := &s.slab[0]
	s.slab = s.slab[1:]
	return c
}

// Pop returns the next packet whose delay is over, renamed, or nil when
// none is yet (with end set, once the stream has ended: every packet left,
// renamed with the final table; nil when none is left). The packet is
// valid until the next call.
func (s *Streamer) Pop(end bool) *pcapio.Packet {
	s.recycle()
	if s.q.Len() == 0 {
		return nil
	}
	front := s.q.Front().p
	switch {
	case end:
		if s.final == nil {
			s.finish()
		}
	case s.newest-front.TS() > s.delay:
	case s.qBytes > s.maxBytes:
		s.stats.Early++
	default:
		return nil
	}
	h := s.q.Pop()
	p := h.p
	s.qBytes -= int64(p.BufferCap()) + heldOverhead
	if s.final == nil {
		s.maybeSnapshot()
	}
	s.rewrite(&h)
	s.out = p
	return p
}

// recycle takes back the packet last handed on.
func (s *Streamer) recycle() {
	if s.out != nil {
		s.Recycle(s.out)
		s.out = nil
	}
}

// Keep makes the packet Pop returned last the caller's: the next Pop does
// not take it back. The caller gives it back with Recycle (a packet never
// given back is left to the garbage collector).
func (s *Streamer) Keep() { s.out = nil }

// Recycle gives back a packet kept with Keep, for reuse.
func (s *Streamer) Recycle(p *pcapio.Packet) {
	k := sizeClass(p.BufferCap())
	s.free[k] = append(s.free[k], p)
}

// maybeSnapshot takes a new snapshot when matches came in since the last
// and enough packets went by to pay for it: a snapshot costs a walk over
// the links, so at least an eighth of the links' count of packets.
func (s *Streamer) maybeSnapshot() {
	s.sinceSnap++
	if s.l.stats.Matches == s.snapMatch || 8*s.sinceSnap < int64(len(s.l.links)) {
		return
	}
	s.c.t = s.l.Snapshot()
	s.c.t.given = s.given
	s.snapMatch, s.sinceSnap = s.l.stats.Matches, 0
}

// rewrite renames p with the current table and notes how, while
// learning goes on: a packet renamed, by its view and names; one left
// unrenamed, on its view in the Learner (the final table counts those of
// views it renames as renamed late).
func (s *Streamer) rewrite(h *held) {
	p := h.p
	before := s.c.stats.Untouched
	var renamed bool
	if h.keyed {
		s.c.stats.Packets++
		renamed = s.c.rewriteConn(p, h.key, h.slot)
	} else {
		renamed = s.c.Rewrite(p)
	}
	switch {
	case s.final != nil:
	case renamed && s.c.lastGiven: // the given table's, not provisional
	case renamed:
		s.renamed[renameKey{view: s.c.lastView, canon: s.c.lastCanon}]++
	case s.c.stats.Untouched != before && h.trans:
		s.l.notePlain(h.key, h.vid)
	}
}

// finish ends learning: the final table renames the rest.
func (s *Streamer) finish() {
	s.final = s.l.Finish()
	s.final.given = s.given
	s.c.t = s.final
}

// Finish ends the stream (if Pop(true) has not) and returns the final
// table, to be called once every packet was popped.
func (s *Streamer) Finish() *Table {
	if s.final == nil {
		s.finish()
	}
	return s.final
}

// Table returns the translations learned so far (the final table once
// learning ended), for lookups while the stream goes on; nil before the
// first snapshot.
func (s *Streamer) Table() *Table { return s.c.t }

// Stats returns the renaming counters. Once Finish was called, Late and
// Provisional are set: Late is the final table's RenamedLate; of the
// packets renamed while learning, those whose view the final table
// renames to other names or not at all are Provisional.
func (s *Streamer) Stats() ApplyStats {
	st := s.c.Stats()
	st.Early = s.stats.Early
	if s.final == nil {
		return st
	}
	var agreed, streamed int64
	for _, n := range s.renamed {
		streamed += n
	}
	for k, es := range s.final.apply {
		seen := map[[2]netip.AddrPort]bool{}
		for i := range es {
			if !es[i].rewrites || seen[es[i].canon] {
				continue
			}
			seen[es[i].canon] = true
			agreed += s.renamed[renameKey{view: k, canon: es[i].canon}]
		}
	}
	st.Provisional = streamed - agreed
	st.Late = s.final.Stats.RenamedLate
	return st
}
