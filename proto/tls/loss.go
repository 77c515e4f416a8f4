package tls

import (
	"github.com/wirepath/wirepath/proto"
)

// Gap tells the Decoder that the n bytes of dir's stream from offset off
// were lost. See the package doc for what a loss costs.
func (d *Decoder) Gap(dir proto.Dir, off, n int64) {
	if dir > proto.FromServer || n <= 0 {
		return
	}
	d.begin()
	s := &d.dirs[dir]
	end := off + n
	if end <= s.next {
		return
	}
	n = end - s.next
	d.stats.GapBytes += n
	switch {
	case d.state == NotTLS:
	case d.state == Detecting && dir == proto.FromClient:
		d.reject() // the ClientHello cannot be checked
	case d.state == Detecting:
		d.stats.Skipped += int64(len(s.hold))
		s.hold = s.hold[:0]
		s.next = end
		d.loseFraming(s, n)
	case s.mode == mResync:
		d.stats.Skipped += int64(len(s.scan))
		s.scan, s.scanPos = s.scan[:0], 0
		d.innerGap(s, n, s.next, end)
	case s.inRec && end <= s.rstart+recHeaderLen+int64(s.rh.length):
		s.damaged = true
		s.skip = true
		s.buf = s.buf[:0]
		s.next = end
		s.remain -= int(n)
		if s.remain == 0 {
			d.recordDone(s, nil)
		}
		return
	default:
		s.next = end
		d.loseFraming(s, n)
		return
	}
	s.next = end
}

// lostRecord handles a record a gap hit: its bounds are known, so it is
// reported as an undamaged one would be, but its content is not read. A
// lost encrypted record still takes a sequence number, and its plaintext
// is a gap to the inner decoder.
func (d *Decoder) lostRecord(s *dirState, start, end int64) {
	typ := s.rh.typ
	if s.cur != nil && (s.encrypted || typ == ctApplicationData) && typ != ctChangeCipherSpec {
		s.seq++
		if typ == ctApplicationData && (s.appKeys || !d.suite.tls13) {
			d.innerGap(s, d.plainLen(s.rh.length), start, end)
			return
		}
		d.control(s, start, end, ctHandshake)
		return
	}
	switch typ {
	case ctApplicationData:
		d.opaque(s, start, end)
	case ctHandshake:
		s.hs.reset()
		d.control(s, start, end, typ)
	case ctChangeCipherSpec:
		d.changeCipherSpec(s)
		d.control(s, start, end, typ)
	default:
		d.control(s, start, end, typ)
	}
}

// loseFraming gives up the record framing of s after a loss of n bytes
// (0: garbage, not a gap): the record being read is lost, the sequence
// number is no longer known, and a record header is looked for.
func (d *Decoder) loseFraming(s *dirState, n int64) {
	if s.inRec || s.nhdr > 0 {
		d.stats.Damaged += s.fed
		d.stats.RecordsLost++
	}
	s.inRec, s.nhdr, s.fed, s.buf = false, 0, 0, s.buf[:0]
	s.mode = mResync
	s.scan, s.scanPos = s.scan[:0], 0
	s.hs.reset()
	d.stats.FramingLost++
	if s.cur != nil || s.pend != nil {
		s.lostSeq = true
	}
	if n > 0 {
		d.innerGap(s, n, s.next-n, s.next)
	}
}

// resync moves b into the resync window and looks there for a record
// header. It returns how many bytes of b it used and, once it has found
// one, the window's bytes from it on.
func (d *Decoder) resync(s *dirState, b []byte) (int, []byte) {
	used := 0
	for len(b) > 0 {
		if len(s.scan) == resyncWindow {
			drop := max(s.scanPos, 1)
			d.stats.Skipped += int64(drop)
			s.scan = s.scan[:copy(s.scan, s.scan[drop:])]
			s.scanPos = max(0, s.scanPos-drop)
		}
		take := min(len(b), resyncWindow-len(s.scan))
		s.scan = append(s.scan, b[:take]...)
		s.next += int64(take)
		used += take
		b = b[take:]
		if i := d.search(s); i >= 0 {
			d.stats.Skipped += int64(i)
			d.stats.Resyncs++
			s.rbuf = append(s.rbuf[:0], s.scan[i:]...)
			s.next -= int64(len(s.rbuf))
			s.scan, s.scanPos = s.scan[:0], 0
			s.mode = mRecords
			return used, s.rbuf
		}
	}
	return used, nil
}

// search looks for a plausible record header in the resync window,
// confirmed by another right after its record.
func (d *Decoder) search(s *dirState) int {
	for ; s.scanPos+recHeaderLen <= len(s.scan); s.scanPos++ {
		c := s.scan[s.scanPos:]
		if !plausibleRecord(c, d.recVersion) {
			continue
		}
		next := recHeaderLen + parseRecHeader(c).length
		if len(c) < next+recHeaderLen {
			return -1
		}
		if plausibleRecord(c[next:], d.recVersion) {
			return s.scanPos
		}
	}
	return -1
}

// Close ends the connection: unfinished records are counted as
// truncated, a held-back 19-byte record is reported as an alert, and the
// inner decoder is closed.
func (d *Decoder) Close() {
	d.begin()
	for i := range d.dirs {
		s := &d.dirs[i]
		if s.inRec || s.nhdr > 0 {
			d.stats.Truncated += s.fed
		}
		d.stats.Skipped += int64(len(s.hold) + len(s.scan))
		s.inRec, s.nhdr, s.fed = false, 0, 0
		s.hold, s.scan, s.buf, s.scanPos = nil, nil, nil, 0
		d.flushAlert(s, true)
	}
	if d.inner != nil {
		d.inner.Close()
		d.drainInner()
	}
}
