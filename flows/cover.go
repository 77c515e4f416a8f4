package flows

import "github.com/wirepath/wirepath/flows/internal/seqnum"

// seqRange is the half-open range [lo, hi) of sequence space.
type seqRange struct{ lo, hi seqnum.Value }

// maxCoverRanges bounds the disjoint ranges remembered per capture point;
// beyond it the two lowest are merged (the hole between them is then
// taken as seen, so a later first sighting there counts as a repeat).
const maxCoverRanges = 16

// pointCover is the set of sequence ranges one capture point has seen of
// one direction of a connection.
type pointCover struct {
	pt Point
	// ttl and view are the TTL (hop limit; 0 if unknown) and the NAT
	// view (segObs.view) of the point's first sighting: a copy seen again
	// at the point with another TTL or view passed a router or NAT in
	// between (a twin, when one sniffer sees both sides).
	ttl  uint8
	view uint64
	r    []seqRange // sorted, disjoint, non-adjacent
}

// coverage tracks, per capture point, which bytes of one direction each
// point has seen. A copy of bytes that some point saw already is a
// retransmission at that point; a copy seen only by points that had not
// seen its bytes is another sighting of the same segment (for example the
// other side of a NAT).
type coverage struct {
	pts []pointCover
	// base: bytes before it are forgotten and count as seen everywhere.
	base    seqnum.Value
	hasBase bool
	merges  int64 // ranges merged because of maxCoverRanges
}

// add records that o's point saw [s, s+n) and reports whether some of
// those bytes were new to it and whether it had seen some of them before:
// with the TTL and NAT view of its first sighting (seen: a
// retransmission), or with another (twin: the same segment on the other
// side of a router or NAT that this one sniffer also sees, as "tcpdump -i
// any" on a load balancer does; not a retransmission). Bytes before the
// base count as already seen.
func (c *coverage) add(o *segObs, s seqnum.Value, n uint32) (isNew, seen, twin bool) {
	isNew, seen, pc := c.addRange(o, s, n)
	if seen && pc != nil && (pc.view != o.view || pc.ttl != 0 && o.ttl != 0 && pc.ttl != o.ttl) {
		return isNew, false, true
	}
	return isNew, seen, false
}

// addRange is add without telling twins apart; it returns pt's coverage
// (nil when the bytes were all before the base).
func (c *coverage) addRange(o *segObs, s seqnum.Value, n uint32) (isNew, seen bool, pc *pointCover) {
	pt := o.pt
	if n == 0 {
		return false, false, nil
	}
	e := s.Add(seqnum.Size(n))
	if c.hasBase {
		if e.LessThanEq(c.base) {
			return false, true, nil
		}
		if s.LessThan(c.base) {
			s, seen = c.base, true
		}
	}
	for i := range c.pts {
		if c.pts[i].pt == pt {
			pc = &c.pts[i]
			break
		}
	}
	if pc == nil {
		pc = c.newPoint(pt)
		pc.ttl, pc.view = o.ttl, o.view
	}
	r := pc.r
	// Fast path: in-order data extends the last range or starts a new one
	// after it.
	if k := len(r); k == 0 || r[k-1].hi.LessThan(s) {
		pc.r = append(r, seqRange{s, e})
		c.bound(pc)
		return true, seen, pc
	} else if r[k-1].hi == s {
		r[k-1].hi = e
		return true, seen, pc
	} else if r[k-1].lo.LessThanEq(s) && e.LessThanEq(r[k-1].hi) {
		return false, true, pc // a repeat of the latest bytes: the common retransmission
	}
	isNew, before := c.merge(pc, s, e)
	return isNew, seen || before, pc
}

// newPoint adds an empty cover for pt, reusing the memory of one reset
// dropped.
func (c *coverage) newPoint(pt Point) *pointCover {
	if len(c.pts) < cap(c.pts) {
		c.pts = c.pts[:len(c.pts)+1]
		pc := &c.pts[len(c.pts)-1]
		pc.pt, pc.r = pt, pc.r[:0]
		return pc
	}
	c.pts = append(c.pts, pointCover{pt: pt})
	return &c.pts[len(c.pts)-1]
}

// merge is add's general case: it merges [s, e) into the ranges of pc
// that it touches, and reports whether it held new bytes and whether some
// were seen before.
func (c *coverage) merge(pc *pointCover, s, e seqnum.Value) (isNew, seen bool) {
	r := pc.r
	i := 0
	for i < len(r) && r[i].hi.LessThan(s) {
		i++
	}
	j := i
	for j < len(r) && r[j].lo.LessThanEq(e) {
		j++
	}
	// r[i:j] touch or overlap [s, e).
	if j-i == 1 && r[i].lo.LessThanEq(s) && e.LessThanEq(r[i].hi) {
		return false, true
	}
	for k := i; k < j; k++ {
		if r[k].lo.LessThan(e) && s.LessThan(r[k].hi) {
			seen = true
		}
	}
	lo, hi := s, e
	if j > i {
		lo = seqnum.Min(lo, r[i].lo)
		hi = seqnum.Max(hi, r[j-1].hi)
	}
	// Replace r[i:j] with the merged range.
	if j == i {
		r = append(r, seqRange{})
		copy(r[i+1:], r[i:])
	} else {
		r = append(r[:i+1], r[j:]...)
	}
	r[i] = seqRange{lo, hi}
	pc.r = r
	c.bound(pc)
	return true, seen
}

// bound merges the lowest ranges of pc until it holds at most
// maxCoverRanges.
func (c *coverage) bound(pc *pointCover) {
	for len(pc.r) > maxCoverRanges {
		pc.r[1].lo = pc.r[0].lo
		pc.r = append(pc.r[:0], pc.r[1:]...)
		c.merges++
	}
}

// trim forgets every byte before base: ranges end there, and later copies
// of such bytes count as repeats everywhere.
func (c *coverage) trim(base seqnum.Value) {
	if c.hasBase && base.LessThanEq(c.base) {
		return
	}
	c.base, c.hasBase = base, true
	for k := range c.pts {
		r := c.pts[k].r
		i := 0
		for i < len(r) && r[i].hi.LessThanEq(base) {
			i++
		}
		if i > 0 {
			r = append(r[:0], r[i:]...)
		}
		if len(r) > 0 && r[0].lo.LessThan(base) {
			r[0].lo = base
		}
		c.pts[k].r = r
	}
}

// reset empties c, keeping its memory.
func (c *coverage) reset() {
	for k := range c.pts {
		c.pts[k].r = c.pts[k].r[:0]
	}
	c.pts = c.pts[:0]
	c.hasBase = false
	c.merges = 0
}
