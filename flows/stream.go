package flows

import (
	"encoding/binary"
	"sort"

	"github.com/wirepath/wirepath/flows/internal/seqnum"
)

// segObs is one capture point's sighting of a segment: when the point saw
// it (first and last differ only for reassembled fragments) and the TTL.
type segObs struct {
	pt  Point
	ttl uint8
	// view is the packet's pcapio.Packet.Orig: which side of a NAT the
	// point saw it on (0: as sent).
	view  uint64
	first int64
	last  int64
}

// chunk is a run of stream bytes delivered in order: data the capture saw
// (possibly cut short by the snap length) or a gap the capture missed.
type chunk struct {
	seq seqnum.Value
	n   uint32 // stream bytes
	// data holds the captured bytes, len(data) <= n; the rest were cut off
	// by the snap length. It is only valid during the delivery call.
	data []byte
	gap  bool     // the capture never saw these n bytes
	obs  []segObs // the points that saw these bytes (none for a gap)
	ts   int64    // the earliest sighting (for gaps: when the gap was found)
	psh  bool     // the segment ended a write (TCP PSH)
}

// chunkSink receives a stream's output.
type chunkSink interface {
	// deliver receives the next chunk of the stream, in order.
	deliver(c *chunk)
	// late receives a copy of bytes already delivered: obs are all the
	// points that saw the copy, newObs those that had not seen the bytes
	// before (their sightings count; the others saw a retransmission).
	late(seq seqnum.Value, n uint32, obs, newObs []segObs)
}

// bufSeg is a segment buffered out of order. It owns data and obs.
type bufSeg struct {
	seq     seqnum.Value
	n       uint32
	data    []byte
	obs     []segObs
	ts      int64
	arrived int64 // stage clock when buffered, for the reorder timeout
	psh     bool
}

func (b *bufSeg) end() seqnum.Value { return b.seq.Add(seqnum.Size(b.n)) }

// digest summarises a delivered segment so that a later copy with the same
// boundaries can be checked for conflicting content without keeping the
// bytes: the length and the first 16 and last 8 captured bytes (two cache
// lines at most; the first is warm from decoding).
type digest struct {
	seq  seqnum.Value
	n    uint32
	capt uint32
	sum  uint64
}

func digestOf(b []byte) uint64 {
	if len(b) < 8 {
		var x [8]byte
		copy(x[:], b)
		return binary.LittleEndian.Uint64(x[:]) ^ uint64(len(b))<<56
	}
	h := binary.LittleEndian.Uint64(b) * 0x9e3779b97f4a7c15
	if len(b) >= 16 {
		h ^= binary.LittleEndian.Uint64(b[8:]) * 0xc2b2ae3d27d4eb4f
	}
	h ^= binary.LittleEndian.Uint64(b[len(b)-8:]) * 0x165667b19e3779f9
	return h ^ uint64(len(b))
}

// insertResult classifies the bytes of one inserted segment.
type insertResult struct {
	dup      uint32 // bytes already delivered or buffered
	late     uint32 // bytes of a hole already given up as a gap
	fresh    uint32 // bytes delivered or buffered now
	ooo      bool   // some bytes were buffered out of order
	overlap  bool   // the segment partly overlapped known bytes
	conflict bool   // overlapping bytes differed from the first copy
}

// stream reassembles one direction of a TCP connection: it delivers bytes
// in sequence order, each once, the first copy winning; holes are buffered
// around and given up as gaps when acknowledged, timed out, over the limits
// or at the end.
type stream struct {
	started  bool
	next     seqnum.Value // the next sequence number to deliver
	buf      []bufSeg     // out-of-order segments, sorted, disjoint
	bufBytes int
	// recent delivered segments, for conflict checks.
	recent  [4]digest
	recentN int
	// gaps given up recently, to tell late bytes from retransmissions.
	gaps  [4]seqRange
	gapsN int
	pool  *bufPool
	// scratch for the pieces of a segment not covered by buffered data.
	pieces []seqRange
}

// start sets the stream's origin: the first byte to deliver.
func (s *stream) start(seq seqnum.Value) {
	s.started, s.next = true, seq
}

// insert adds a segment of n stream bytes at seq whose captured content is
// data (len(data) <= n), seen by obs at ts; newObs are the points that see
// its already-delivered part for the first time, restObs those that see
// the rest for the first time. now is the stage clock.
func (s *stream) insert(seq seqnum.Value, n uint32, data []byte, obs, newObs, restObs []segObs, ts, now int64, psh bool, sink chunkSink) insertResult {
	var res insertResult
	if n == 0 {
		return res
	}
	if !s.started {
		s.start(seq)
	}
	// Bytes before the cursor were delivered (or given up as a gap).
	if seq.LessThan(s.next) {
		k := min(uint32(seq.Size(s.next)), n)
		res.late = s.lateBytes(seq, k)
		res.dup = k - res.late
		if k < n {
			res.overlap = true
		}
		if s.conflictsWithRecent(seq, k, n, data) {
			res.conflict = true
		}
		if res.dup > 0 {
			sink.late(seq, k, obs, newObs)
		}
		seq = seq.Add(seqnum.Size(k))
		n -= k
		if int(k) < len(data) {
			data = data[k:]
		} else {
			data = nil
		}
		if n == 0 {
			return res
		}
	}
	// Cut the rest into pieces not already buffered (first copy wins).
	pieces := s.uncovered(seq, n, data, restObs, &res)
	if len(pieces) > 0 && pieces[0].lo != s.next {
		res.ooo = true
	}
	// Deliver what is now contiguous, buffer the rest.
	pi := 0
	for {
		if pi < len(pieces) && pieces[pi].lo == s.next {
			p := pieces[pi]
			pn := uint32(p.lo.Size(p.hi))
			off := seq.Size(p.lo)
			s.emit(sink, chunk{seq: p.lo, n: pn, data: sub(data, int(off), int(pn)), obs: obs, ts: ts,
				psh: psh && p.hi == seq.Add(seqnum.Size(n))})
			res.fresh += pn
			pi++
			continue
		}
		if len(s.buf) > 0 && s.buf[0].seq == s.next {
			s.popFront(sink)
			continue
		}
		break
	}
	for ; pi < len(pieces); pi++ {
		p := pieces[pi]
		pn := uint32(p.lo.Size(p.hi))
		off := seq.Size(p.lo)
		s.add(bufSeg{seq: p.lo, n: pn, data: sub(data, int(off), int(pn)), obs: obs, ts: ts, arrived: now,
			psh: psh && p.hi == seq.Add(seqnum.Size(n))})
		res.fresh += pn
	}
	return res
}

// sub returns data[off:off+n] clipped to what data holds.
func sub(data []byte, off, n int) []byte {
	if off >= len(data) {
		return nil
	}
	end := off + n
	if end > len(data) {
		end = len(data)
	}
	return data[off:end]
}

// uncovered returns the parts of [seq, seq+n) not already buffered. For
// the parts that are, it checks for conflicting content and adds the
// sightings of points new to those bytes to the buffered segment.
func (s *stream) uncovered(seq seqnum.Value, n uint32, data []byte, newObs []segObs, res *insertResult) []seqRange {
	s.pieces = s.pieces[:0]
	end := seq.Add(seqnum.Size(n))
	pos := seq
	// The first buffered segment that ends after seq.
	i := 0
	if len(s.buf) > 8 {
		i = sort.Search(len(s.buf), func(k int) bool { return seq.LessThan(s.buf[k].end()) })
	} else {
		for i < len(s.buf) && s.buf[i].end().LessThanEq(seq) {
			i++
		}
	}
	for ; i < len(s.buf) && s.buf[i].seq.LessThan(end); i++ {
		b := &s.buf[i]
		if pos.LessThan(b.seq) {
			s.pieces = append(s.pieces, seqRange{pos, b.seq})
		}
		// Overlap with b: b's copy came first and wins.
		os, on := seqnum.Overlap(seq, seqnum.Size(n), b.seq, seqnum.Size(b.n))
		res.dup += uint32(on)
		res.overlap = true
		if differ(sub(data, int(seq.Size(os)), int(on)), sub(b.data, int(b.seq.Size(os)), int(on))) {
			res.conflict = true
		}
		for _, o := range newObs {
			if !hasPoint(b.obs, o.pt) {
				b.obs = append(b.obs, o)
			}
		}
		pos = seqnum.Max(pos, b.end())
	}
	if pos.LessThan(end) {
		s.pieces = append(s.pieces, seqRange{pos, end})
	}
	if res.dup == 0 {
		res.overlap = false
	}
	return s.pieces
}

// differ reports whether the captured bytes two copies both hold differ.
func differ(a, b []byte) bool {
	k := min(len(a), len(b))
	return string(a[:k]) != string(b[:k])
}

// add buffers b, copying its data and sightings.
func (s *stream) add(b bufSeg) {
	b.data = s.pool.copyBytes(b.data)
	b.obs = s.pool.copyObs(b.obs)
	i := len(s.buf)
	for i > 0 && b.seq.LessThan(s.buf[i-1].seq) {
		i--
	}
	s.buf = append(s.buf, bufSeg{})
	copy(s.buf[i+1:], s.buf[i:])
	s.buf[i] = b
	s.bufBytes += int(b.n)
	s.pool.buffered += int64(b.n)
}

// popFront delivers the first buffered segment, which starts at next.
func (s *stream) popFront(sink chunkSink) {
	b := s.buf[0]
	s.emit(sink, chunk{seq: b.seq, n: b.n, data: b.data, obs: b.obs, ts: b.ts, psh: b.psh})
	s.bufBytes -= int(b.n)
	s.pool.buffered -= int64(b.n)
	s.pool.freeBytes(b.data)
	s.pool.freeObs(b.obs)
	copy(s.buf, s.buf[1:])
	s.buf[len(s.buf)-1] = bufSeg{}
	s.buf = s.buf[:len(s.buf)-1]
}

// emit delivers ch and advances the cursor. The chunk handed to the
// sink is the pool's scratch (so that delivering does not allocate and a
// stream does not carry one of its own).
func (s *stream) emit(sink chunkSink, ch chunk) {
	c := s.pool.chunk()
	defer s.pool.releaseChunk(c)
	*c = ch
	if !c.gap {
		s.recent[s.recentN%len(s.recent)] = digest{seq: c.seq, n: c.n, capt: uint32(len(c.data)), sum: digestOf(c.data)}
		s.recentN++
	}
	s.next = c.seq.Add(seqnum.Size(c.n))
	sink.deliver(c)
}

// conflictsWithRecent reports whether a copy of [seq, seq+k) (of a segment
// of n bytes) differs from a recently delivered segment with the same
// boundaries.
func (s *stream) conflictsWithRecent(seq seqnum.Value, k, n uint32, data []byte) bool {
	if k != n {
		return false
	}
	for i := 0; i < len(s.recent) && i < s.recentN; i++ {
		d := &s.recent[i]
		if d.seq == seq && d.n == n && d.capt == uint32(len(data)) {
			return d.sum != digestOf(data)
		}
	}
	return false
}

// lateBytes counts the bytes of [seq, seq+k) inside recently given-up gaps.
func (s *stream) lateBytes(seq seqnum.Value, k uint32) uint32 {
	var late uint32
	for i := 0; i < len(s.gaps) && i < s.gapsN; i++ {
		g := s.gaps[i]
		_, on := seqnum.Overlap(seq, seqnum.Size(k), g.lo, g.lo.Size(g.hi))
		late += uint32(on)
	}
	return min(late, k)
}

// skipTo gives up every hole before limit: holes become gap chunks and
// buffered data up to limit is delivered. It returns the gap bytes.
func (s *stream) skipTo(limit seqnum.Value, now int64, sink chunkSink) (gaps int, gapBytes int64) {
	for s.next.LessThan(limit) {
		target := limit
		if len(s.buf) > 0 && s.buf[0].seq.LessThan(limit) {
			target = s.buf[0].seq
		}
		if s.next.LessThan(target) {
			n := s.next.Size(target)
			g := seqRange{s.next, target}
			s.gaps[s.gapsN%len(s.gaps)] = g
			s.gapsN++
			ts := now
			if len(s.buf) > 0 && s.buf[0].seq == target {
				ts = s.buf[0].ts
			}
			s.emit(sink, chunk{seq: s.next, n: uint32(n), gap: true, ts: ts})
			gaps++
			gapBytes += int64(n)
		}
		for len(s.buf) > 0 && s.buf[0].seq == s.next {
			s.popFront(sink)
		}
	}
	return gaps, gapBytes
}

// skipAll gives up every hole and delivers everything buffered.
func (s *stream) skipAll(now int64, sink chunkSink) (int, int64) {
	if len(s.buf) == 0 {
		return 0, 0
	}
	return s.skipTo(s.buf[len(s.buf)-1].end(), now, sink)
}

// skipFirstHole gives up the first hole only.
func (s *stream) skipFirstHole(now int64, sink chunkSink) (int, int64) {
	if len(s.buf) == 0 {
		return 0, 0
	}
	return s.skipTo(s.buf[0].seq, now, sink)
}

// release frees the buffered data without delivering it.
func (s *stream) release() {
	for i := range s.buf {
		s.pool.buffered -= int64(s.buf[i].n)
		s.pool.freeBytes(s.buf[i].data)
		s.pool.freeObs(s.buf[i].obs)
		s.buf[i] = bufSeg{}
	}
	s.buf = s.buf[:0]
	s.bufBytes = 0
}

// reset makes s a fresh stream, keeping its memory and pool.
func (s *stream) reset() {
	s.release()
	buf, pieces, pool := s.buf, s.pieces, s.pool
	*s = stream{buf: buf, pieces: pieces, pool: pool}
}

func hasPoint(obs []segObs, pt Point) bool {
	for i := range obs {
		if obs[i].pt == pt {
			return true
		}
	}
	return false
}
