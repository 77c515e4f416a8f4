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
		st := d.streams.get(fh.stream)
		if st == nil && fh.typ == xhttp2.FrameHeaders && fh.stream != 0 {
			st = d.open(s.dir, fh.stream) // the block opened it: lost as it opens
		}
		if st != nil {
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
	if s.dir == proto.FromClient {
		d.reqLoss = true
	}
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

// requestIDs notes that the client's frames (or the server's, answering
// it) name stream id, above every id the client's named before; opened
// says that id's header block was seen. A client opens its streams in
// order, one odd id after the other (RFC 9113 section 5.1.1 allows it to
// skip ids; the clients we know skip none), so after its direction lost
// its framing the ids passed over are requests lost whole, and id
// itself, seen without its header block, lost its start: both are
// counted lost. The ids passed over are counted up to as many requests
// as the bytes lost or passed over could hold (a HEADERS frame takes at
// least ten), which a false resync naming a far id cannot exceed.
func (d *Decoder) requestIDs(id uint32, opened bool) {
	prev := d.lastReq
	d.lastReq = id
	switch {
	case d.reqUnknown:
		d.reqUnknown = false
		return
	case !d.reqLoss:
		return
	case opened:
		d.reqLoss = false
	default:
		d.loseRequest(id)
	}
	n := int64((id-1)/2 - (prev+1)/2)
	n = min(n, (d.stats.GapBytes+d.stats.Skipped+d.stats.Damaged)/(headerLen+1))
	first := prev + 2
	if prev == 0 {
		first = 1
	}
	for i := range uint32(n) {
		d.loseRequest(first + 2*i)
	}
}

// loseRequest counts the request of stream id lost, and marks it so if
// the stream is held (its response began while the client's direction
// looked for its framing).
func (d *Decoder) loseRequest(id uint32) {
	if st := d.streams.get(id); st != nil {
		if h := &st.h[proto.FromClient]; h.state == hIdle {
			d.loseHalf(st, proto.FromClient)
		}
		return
	}
	d.stats.StreamsLost++
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
		if i := d.search(s, false); i >= 0 {
			d.resume(s, i)
			return used, s.rbuf
		}
	}
	return used, nil
}

// search looks for a frame header in the resync window: a plausible
// header confirmed by a plausible header right after its frame. A
// candidate whose confirmation has not arrived yet does not hold up the
// search: a later one confirmed twice over (the two headers after it
// plausible, which one inside the earlier candidate's payload by chance
// rarely is) is taken instead. At the connection's end (final) a chain
// that ends exactly with the bytes is confirmed, and one that runs past
// them is not. search returns the position found, or -1 (s.scanPos is
// then the first position that may still be one).
func (d *Decoder) search(s *dirState, final bool) int {
	maxLen := max(s.maxFrame, defaultMax)
	maxStream := uint32(1<<31 - 1)
	if d.maxStream < maxStream-4096 {
		maxStream = d.maxStream + 4096
	}
	pending := -1
	p := s.scanPos
	for ; p+headerLen <= len(s.scan); p++ {
		switch chain(s.scan[p:], 2, final, maxLen, maxStream) {
		case confirmed:
			return p
		case waiting:
			if pending < 0 {
				pending = p
			}
		}
	}
	if pending >= 0 {
		p = pending
	}
	s.scanPos = p
	return -1
}

// A candidate frame header's standing in the resync window.
const (
	rejected  = iota // implausible, or a header after it is
	waiting          // plausible so far: the bytes that decide are to come
	confirmed        // it and the need headers after it are plausible
)

// chain follows the frame headers from the start of c: the first and the
// need after it must be plausible and within the resync window.
func chain(c []byte, need int, final bool, maxLen, maxStream uint32) int {
	if !plausibleHeader(c, maxLen, maxStream) {
		return rejected
	}
	pos := 0
	for range need {
		next := pos + headerLen + int(parseHeader(c[pos:]).length)
		switch {
		case next+headerLen > resyncWindow:
			return rejected // cannot be confirmed
		case final && next == len(c):
			return confirmed // the last frame of the connection
		case len(c) < next+headerLen && final:
			return rejected
		case len(c) < next+headerLen:
			return waiting
		case !plausibleHeader(c[next:], maxLen, maxStream):
			return rejected
		}
		pos = next
	}
	return confirmed
}

// Close ends the connection: streams still open are reported as they
// are (counted in OpenAtClose), except those open across a loss of
// framing (lost), and bytes of unfinished frames are counted as
// truncated.
func (d *Decoder) Close() {
	d.beginCall()
	for i := range d.dirs {
		s := &d.dirs[i]
		if s.mode == mResync && d.state == Active {
			d.finalResync(s)
		}
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

// resume leaves the resync at the frame header found at the window's
// offset i: the bytes before it are skipped, those from it on go to
// s.rbuf to be decoded as frames.
func (d *Decoder) resume(s *dirState, i int) {
	d.stats.Skipped += int64(i)
	d.stats.Resyncs++
	s.rbuf = append(s.rbuf[:0], s.scan[i:]...)
	s.next -= int64(len(s.rbuf))
	s.scan, s.scanPos = s.scan[:0], 0
	s.mode = mFrames
}

// finalResync looks once more for a frame header in the resync window
// at the connection's end, where a chain of frames that ends exactly
// with the bytes is confirmed, and decodes the frames from it.
func (d *Decoder) finalResync(s *dirState) {
	i := d.search(s, true)
	if i < 0 {
		return
	}
	d.resume(s, i)
	s.replay = s.rbuf
	d.feed(s, nil)
}
