package flows

// maxRecObs is how many capture points one log record remembers; the
// sightings of further points of the same bytes are dropped and counted
// (Stats.LogObsDropped).
const maxRecObs = 4

// maxLogRecords bounds the records one direction's log keeps; beyond it
// the oldest are dropped (Stats.LogRecordsDropped), and a Unit that began
// in them is timed from the oldest record left (Stats.UnitsClamped).
const maxLogRecords = 4096

// segRec is one run of in-order stream bytes of one direction, as
// delivered (one segment's new bytes, or a gap), with the capture points
// that saw it. Offsets are stream offsets (see half.off).
type segRec struct {
	off  int64
	n    int32
	capt int32 // bytes captured (the rest were cut by the snap length)
	gap  bool
	psh  bool
	nobs uint8
	obs  [maxRecObs]segObs
}

func (r *segRec) end() int64 { return r.off + int64(r.n) }

// addObs records that o's point saw the record, widening its times if the
// point is there already. It reports false when the record is full.
func (r *segRec) addObs(o segObs) bool {
	for i := range r.obs[:r.nobs] {
		p := &r.obs[i]
		if p.pt == o.pt {
			p.first = min(p.first, o.first)
			p.last = max(p.last, o.last)
			return true
		}
	}
	if int(r.nobs) == maxRecObs {
		return false
	}
	r.obs[r.nobs] = o
	r.nobs++
	return true
}

// segLog maps the stream offsets of one direction of a decoded connection
// to the packets that carried them, for as long as a protocol Unit that is
// not yet reported may need them: a Unit is timed by the records of its
// first and last byte. It is a queue of records sorted by offset, trimmed
// from the front (trim) below the oldest offset the decoder may still
// start a Unit at, and bounded by maxLogRecords.
type segLog struct {
	recs []segRec
	head int
	// dropped counts records dropped by the bound while still needed.
	dropped int64
	// obsDropped counts sightings a full record could not keep.
	obsDropped int64
	// hint is the index find returned last: the Units of a direction
	// are timed in the order of their bytes, so the next is often found
	// in the same record (one segment carries several gRPC messages) or
	// the next.
	hint int
}

// len returns the number of records held.
func (l *segLog) len() int { return len(l.recs) - l.head }

// add appends the record of a delivered chunk at offset off.
func (l *segLog) add(off int64, ch *chunk) {
	if l.len() >= maxLogRecords {
		l.head++
		l.dropped++
	}
	if l.head > 0 && l.head >= len(l.recs)/2 {
		n := copy(l.recs, l.recs[l.head:])
		l.recs = l.recs[:n]
		l.head = 0
	}
	l.recs = append(l.recs, segRec{off: off, n: int32(ch.n), capt: int32(min(len(ch.data), int(ch.n))), gap: ch.gap, psh: ch.psh})
	r := &l.recs[len(l.recs)-1]
	for _, o := range ch.obs {
		if !r.addObs(o) {
			l.obsDropped++
		}
	}
}

// trim forgets the records that end at or before low.
func (l *segLog) trim(low int64) {
	for l.head < len(l.recs) && l.recs[l.head].end() <= low {
		l.head++
	}
	if l.head == len(l.recs) {
		l.recs, l.head = l.recs[:0], 0
	}
}

// first returns the offset of the oldest byte held, and false when the
// log is empty.
func (l *segLog) first() (int64, bool) {
	if l.head == len(l.recs) {
		return 0, false
	}
	return l.recs[l.head].off, true
}

// find returns the index of the first record that ends after off (the
// records end in increasing order): the hint or the record after it if
// that is the one (the record before it, if held, ends at or before
// off), else a binary search written out, which costs half what
// sort.Search's call of a closure per step did.
func (l *segLog) find(off int64) int {
	recs := l.recs
	for i := max(l.hint, l.head); i < min(l.hint+2, len(recs)); i++ {
		if recs[i].end() > off && (i == l.head || recs[i-1].end() <= off) {
			l.hint = i
			return i
		}
	}
	lo, hi := l.head, len(recs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if recs[m].end() > off {
			hi = m
		} else {
			lo = m + 1
		}
	}
	l.hint = lo
	return lo
}

// late records that the points of newObs saw the bytes [lo, hi) again
// for the first time.
func (l *segLog) late(lo, hi int64, newObs []segObs) {
	if len(newObs) == 0 {
		return
	}
	for i := l.find(lo); i < len(l.recs) && l.recs[i].off < hi; i++ {
		for _, o := range newObs {
			if !l.recs[i].addObs(o) {
				l.obsDropped++
			}
		}
	}
}

// span is what the records of the bytes [start, end) say: per capture
// point, when it saw them (m's Sightings, created or widened), and the
// segments, writes, gap and truncated bytes among them. clamped reports
// that start was older than the log.
type span struct {
	segments, writes int32
	gapBytes, trunc  int64
	clamped, empty   bool
}

// fill adds the sightings of the bytes [start, end) to m and returns what
// else the records say. Each point's Bytes count the span's bytes it saw,
// at most limit (the message's own bytes, when other messages' bytes
// interleave in the span). What it returns goes to *sp, which must be
// zero (a span returned by value cost its copies, some 45 instructions a
// message).
func (l *segLog) fill(m *msg, start, end, limit int64, sp *span) {
	if l.len() == 0 {
		sp.empty = true
		return
	}
	if l.recs[l.head].off > start {
		sp.clamped = true
	}
	i := l.findHint(start)
	if l.fillOne(m, i, start, end, limit, sp) {
		return
	}
	for ; i < len(l.recs) && l.recs[i].off < end; i++ {
		r := &l.recs[i]
		k := min(end, r.end()) - max(start, r.off)
		if k <= 0 {
			continue
		}
		sp.segments++
		if r.psh && r.end() <= end {
			sp.writes++
		}
		if r.gap {
			sp.gapBytes += k
			continue
		}
		if c := r.off + int64(r.capt); c < r.end() {
			sp.trunc += max(min(r.end(), end)-max(c, start), 0)
		}
		for _, o := range r.obs[:r.nobs] {
			s := m.sighting(o)
			if s.Segments == 0 {
				s.FirstBytes = min(k, limit)
			}
			s.Bytes = min(s.Bytes+k, limit)
			s.Segments++
		}
	}
	if sp.segments == 0 {
		sp.empty = true
	}
}

// findHint is find for fill: the hint's record, or the next one, tested
// in place (find's first steps, without its call), else find.
func (l *segLog) findHint(off int64) int {
	recs, i := l.recs, l.hint
	if i >= l.head && i < len(recs) && recs[i].end() <= off {
		i++
	}
	if i >= l.head && i < len(recs) && recs[i].end() > off && (i == l.head || recs[i-1].end() <= off) {
		l.hint = i
		return i
	}
	return l.find(off)
}

// fillOne is fill's loop for the common case, a message whose bytes
// [start, end) one record i holds alone (the next record starts at or
// after end), seen at one point, with no sighting yet: its one step,
// without the loop's tests and sighting's search. It reports false,
// having done nothing, in every other case.
func (l *segLog) fillOne(m *msg, i int, start, end, limit int64, sp *span) bool {
	if i >= len(l.recs) || i+1 < len(l.recs) && l.recs[i+1].off < end {
		return false
	}
	r := &l.recs[i]
	rend := r.end()
	if r.off > start || end > rend || start >= end || r.gap || r.nobs != 1 || len(m.Sightings) != 0 {
		return false
	}
	sp.segments = 1
	if r.psh && rend <= end {
		sp.writes = 1
	}
	if c := r.off + int64(r.capt); c < rend {
		sp.trunc = max(end-max(c, start), 0)
	}
	kb := min(end-start, limit)
	o := &r.obs[0]
	m.Sightings = append(m.Sightings, Sighting{Point: o.pt, TTL: o.ttl, First: o.first, Last: o.last, FirstBytes: kb, Bytes: kb, Segments: 1})
	return true
}

// timeAt returns when the byte at off was first seen (the earliest
// sighting of its record), and false when the log does not hold it or
// no point saw it.
func (l *segLog) timeAt(off int64) (int64, bool) {
	if l.len() == 0 {
		return 0, false
	}
	i := l.find(off)
	if i == len(l.recs) || l.recs[i].off > off || l.recs[i].nobs == 0 {
		return 0, false
	}
	r := &l.recs[i]
	t := r.obs[0].first
	for _, o := range r.obs[1:r.nobs] {
		t = min(t, o.first)
	}
	return t, true
}

// reset empties the log, keeping its memory.
func (l *segLog) reset() {
	l.recs, l.head = l.recs[:0], 0
	l.dropped, l.obsDropped = 0, 0
}
