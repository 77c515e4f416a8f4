package http2

import (
	"cmp"
	"slices"

	xhttp2 "golang.org/x/net/http2"

	"github.com/wirepath/wirepath/proto"
)

// Gap tells the Decoder that the n bytes of dir's stream from offset off
// were lost. See the package doc for what a loss costs.
func (d *Decoder) Gap(dir proto.Dir, off, n int64) {
	d.beginCall()
	if dir > proto.FromServer || n <= 0 {
		return
	}
	s := &d.dirs[dir]
	end := off + n
	if end <= s.next {
		return
	}
	if off != s.next && s.next == 0 && !d.seen(dir) {
		d.startMidway(s, off) // a connection seen from its middle
	}
	n = end - s.next
	d.stats.GapBytes += n
	switch {
	case d.state == NotHTTP2:
		s.next = end
	case d.state == Detecting && dir == proto.FromServer:
		// The server's held bytes cannot be joined to what follows.
		d.stats.Skipped += int64(len(s.hold))
		s.hold = s.hold[:0]
		s.next = end
		d.loseFraming(s)
	case s.mode == mPreface:
		if d.cfg.Mode == Detect {
			s.next = end
			d.reject()
			return
		}
		d.stats.Skipped += int64(s.pre)
		s.next = end
		d.loseFraming(s)
	case s.mode == mResync:
		d.stats.Skipped += int64(len(s.scan))
		s.scan, s.scanPos = s.scan[:0], 0
		s.next = end
	case s.inFrame && end <= s.fstart+headerLen+int64(s.fh.length):
		d.payloadGap(s, n)
	default:
		d.loseFraming(s)
		s.next = end
	}
}

// payloadGap handles n bytes lost inside the payload of the frame being
// read: only the payload of a DATA frame, the whole of any other frame.
func (d *Decoder) payloadGap(s *dirState, n int64) {
	if st := d.streams.get(s.fh.stream); st != nil && s.fh.stream != 0 {
		st.h[s.dir].lost += n
	}
	if s.fh.typ == xhttp2.FrameData {
		d.stats.DataBytesLost += n
	} else {
		s.damaged = true
		s.skip = true
		s.buf = s.buf[:0]
	}
	s.next += n
	s.remain -= n
	if s.remain == 0 {
		d.frameDone(s, nil)
	}
}

// lostFrame handles a frame that is lost (hit by a gap, malformed or too
// large to hold): a header block's loss costs its stream and poisons the
// direction's HPACK table; other frames are only counted.
func (d *Decoder) lostFrame(s *dirState, fh frameHeader) {
	switch fh.typ {
	case xhttp2.FrameHeaders, xhttp2.FramePushPromise:
		d.poison(s)
		if st := d.streams.get(fh.stream); st != nil {
			d.loseHalf(st, s.dir)
		}
		s.cap = nil
		if fh.flags&fEndHeaders == 0 {
			s.contStream = fh.stream // its CONTINUATION frames are lost too
		} else {
			s.contStream, s.first = 0, true
		}
	case xhttp2.FrameContinuation:
		d.poison(s)
		if st := d.streams.get(fh.stream); st != nil {
			d.loseHalf(st, s.dir)
		}
		s.cap = nil
		if fh.flags&fEndHeaders != 0 {
			s.contStream, s.first = 0, true
		}
	}
}

// loseFraming gives up the framing of s: the frame being read is lost,
// the HPACK table is poisoned, and a frame header is looked for from the
// next byte. The streams open in s's direction are kept, marked: one
// that ends later is reported (its bounds are known), one that never
// does most likely had its end in what is missing, and is lost at Close.
func (d *Decoder) loseFraming(s *dirState) {
	if s.inFrame || s.nhdr > 0 {
		d.stats.Damaged += s.fed
		d.stats.FramesLost++
		if s.inFrame {
			d.lostFrame(s, s.fh)
		}
	}
	if s.contStream != 0 {
		if st := d.streams.get(s.contStream); st != nil {
			d.loseHalf(st, s.dir)
		}
	}
	s.inFrame, s.nhdr, s.fed, s.buf = false, 0, 0, s.buf[:0]
	s.contStream, s.cap, s.first = 0, nil, true
	s.mode = mResync
	s.scan, s.scanPos = s.scan[:0], 0
	d.stats.FramingLost++
	d.poison(s)
	for _, st := range d.streams.slots {
		if st == nil {
			continue
		}
		switch h := &st.h[s.dir]; h.state {
		case hOpen:
			h.crossed = true
		case hIdle:
			h.idleAtLoss = true
		}
	}
}

// resync moves b into the resync window and looks there for a frame
// header. It returns how many bytes of b it used and, once it has found
// one, the window's bytes from it on (to be decoded as frames).
func (d *Decoder) resync(s *dirState, b []byte) (int, []byte) {
	used := 0
	for len(b) > 0 {
		if len(s.scan) == resyncWindow {
			drop := max(s.scanPos, 1)
			d.stats.Skipped += int64(drop)
			s.scan = s.scan[:copy(s.scan, s.scan[drop:])]
			s.scanPos -= drop
			if s.scanPos < 0 {
				s.scanPos = 0
			}
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
			s.mode = mFrames
			return used, s.rbuf
		}
	}
	return used, nil
}

// search looks for a plausible frame header in the resync window,
// confirmed by a plausible header right after its frame. It returns its
// position, or -1 (s.scanPos is then the first position that may still
// be one).
func (d *Decoder) search(s *dirState) int {
	maxLen := max(s.maxFrame, defaultMax)
	maxStream := uint32(1<<31 - 1)
	if d.maxStream < maxStream-4096 {
		maxStream = d.maxStream + 4096
	}
	for ; s.scanPos+headerLen <= len(s.scan); s.scanPos++ {
		c := s.scan[s.scanPos:]
		if !plausibleHeader(c, maxLen, maxStream) {
			continue
		}
		next := headerLen + int(parseHeader(c).length)
		if next+headerLen > resyncWindow {
			continue // cannot be confirmed
		}
		if len(c) < next+headerLen {
			return -1 // wait for the bytes that confirm it
		}
		if plausibleHeader(c[next:], maxLen, maxStream) {
			return s.scanPos
		}
	}
	return -1
}

// Close ends the connection: streams still open are reported as they
// are (counted in OpenAtClose), except those open across a loss of
// framing (lost), and bytes of unfinished frames are counted as
// truncated.
func (d *Decoder) Close() {
	d.beginCall()
	for i := range d.dirs {
		s := &d.dirs[i]
		if s.inFrame || s.nhdr > 0 {
			d.stats.Truncated += s.fed
			if s.inFrame {
				d.stats.FramesLost++
				d.lostFrame(s, s.fh)
			}
		}
		d.stats.Skipped += int64(len(s.hold)) + int64(len(s.scan))
		if s.mode == mPreface && d.state != NotHTTP2 {
			d.stats.Skipped += int64(s.pre)
		}
		s.inFrame, s.nhdr, s.fed = false, 0, 0
		s.hold, s.scan, s.buf = nil, nil, nil
		s.scanPos = 0
		s.pre = 0
	}
	open := d.streams.all(make([]*stream, 0, d.streams.len()))
	slices.SortFunc(open, func(a, b *stream) int { return cmp.Compare(a.id, b.id) })
	for _, st := range open {
		for dir := range st.h {
			switch h := &st.h[dir]; {
			case h.state == hOpen && h.crossed:
				d.stats.StreamsLost++ // its end was most likely lost
				h.state = hLost
			case h.state == hIdle && h.idleAtLoss:
				d.stats.StreamsLost++ // all of it was most likely lost
				h.state = hLost
			case h.state == hOpen:
				d.stats.OpenAtClose++
				d.finishHalf(st, proto.Dir(dir))
			}
		}
		d.freeStream(st)
	}
}
