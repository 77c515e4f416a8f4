package http2

import (
	"github.com/wirepath/wirepath/proto"
)

// halfState is where one direction of a stream is.
type halfState uint8

const (
	hIdle   halfState = iota // nothing sent yet
	hOpen                    // frames sent, END_STREAM not yet
	hDone                    // reported
	hLost                    // lost to a gap or an error: never reported
	hAbsent                  // not expected (the request of a stream seen only from its response, a push)
)

// half is one direction of a stream: one Unit.
type half struct {
	halfHead
	// body holds the first bytes of a gRPC half's DATA (grpcBodyEvidence):
	// only body[:nbody] is ever read, so a freed stream's bodies are left
	// as they are (a stream is 2 × maxBody bytes larger than its heads).
	body [maxBody]byte
}

// halfHead is a half but for its body's bytes.
type halfHead struct {
	state      halfState
	reset      bool
	unknown    bool // a header block could not be read: no label
	crossed    bool // open when its direction lost its framing
	idleAtLoss bool // not begun when its direction lost its framing
	stall      bool
	start, end int64
	bytes      int64
	lost       int64 // bytes of its frames the capture missed
	window     int64 // flow-control window of this half's sender

	// The values of the fields a half keeps, by their slot (keptMethod
	// and so on): an array, so that a field remembered by its table
	// entry is set by its slot without a switch.
	kept [numKept]string

	ev *proto.Evidence

	nbody int // bytes of body held
}

// stream is one HTTP/2 stream.
type stream struct {
	id   uint32
	push bool
	h    [2]half
}

// finished reports whether neither half will be reported any more.
func (st *stream) finished() bool {
	for i := range st.h {
		if s := st.h[i].state; s == hIdle || s == hOpen {
			return false
		}
	}
	return true
}

// recentlyClosed reports whether id is among the streams closed last.
func (d *Decoder) recentlyClosed(id uint32) bool {
	for _, c := range d.closed[:min(d.nclosed, closedRing)] {
		if c == id {
			return true
		}
	}
	return false
}

// open returns the stream a header block from dir on id belongs to,
// making it when the block opens it, or nil when the stream is closed
// (the block is then decoded only to keep the HPACK table in step).
func (d *Decoder) open(dir proto.Dir, id uint32) *stream {
	if dir == proto.FromClient && id > d.lastReq {
		if d.reqLoss || d.reqUnknown {
			d.requestIDs(id, true)
		} else {
			d.lastReq = id // the usual case, without a call
		}
	}
	if st := d.streams.get(id); st != nil {
		return st
	}
	// Every odd stream id closed was opened here, so is at most
	// maxClient: a new request's id, above it, needs no look in the ring.
	if id%2 == 0 || id <= d.maxClient && d.recentlyClosed(id) {
		d.stats.ClosedStreamFrames++
		return nil
	}
	if dir == proto.FromClient && id <= d.maxClient {
		d.stats.ClosedStreamFrames++
		return nil
	}
	st := d.newStream(id)
	if dir == proto.FromServer {
		d.responseFirst(st)
	}
	d.maxClient = max(d.maxClient, id)
	return st
}

// responseFirst handles a stream whose response begins before any frame
// of its request was seen: the request was lost, or is not on this
// capture, or is among the bytes the client's direction holds while it
// looks for its framing after a loss (its half is then left idle, and
// lost at Close if it never comes: newStream marked it).
func (d *Decoder) responseFirst(st *stream) {
	d.stats.ResponsesWithoutRequest++
	switch c := &st.h[proto.FromClient]; {
	case d.dirs[proto.FromClient].mode == mResync:
	case d.reqLoss && st.id > d.lastReq:
		d.requestIDs(st.id, false) // lost with the client's framing
	default:
		c.state = hAbsent
	}
}

// newStream makes stream id, dropping the oldest open stream if there
// are too many.
func (d *Decoder) newStream(id uint32) *stream {
	if d.streams.len() >= d.cfg.MaxStreams {
		var oldest *stream
		for _, st := range d.streams.slots {
			if st == nil {
				continue
			}
			if oldest == nil || st.id < oldest.id {
				oldest = st
			}
		}
		d.stats.StreamsEvicted++
		for dir := range oldest.h {
			if oldest.h[dir].state == hOpen {
				d.loseHalf(oldest, proto.Dir(dir))
			}
		}
		d.freeStream(oldest)
	}
	var st *stream
	if n := len(d.free); n > 0 {
		st, d.free = d.free[n-1], d.free[:n-1]
	} else {
		st = new(stream)
	}
	st.id = id
	for dir := range st.h {
		st.h[dir].window = d.dirs[dir].initWindow
		// Opened while its direction looks for its framing again: its
		// first frames may be among the bytes passed over.
		st.h[dir].idleAtLoss = d.dirs[dir].mode == mResync
	}
	d.streams.put(st)
	d.stats.Streams++
	return st
}

// freeStream forgets a stream and remembers its id as closed.
func (d *Decoder) freeStream(st *stream) {
	d.streams.del(st.id)
	d.closed[d.nclosed%closedRing] = st.id
	d.nclosed++
	for i := range d.dirs {
		s := &d.dirs[i]
		if s.cap == &st.h[0] || s.cap == &st.h[1] {
			s.cap = nil
		}
	}
	st.id, st.push = 0, false // every field of st but its halves' bodies
	for i := range st.h {
		st.h[i].halfHead = halfHead{}
	}
	if len(d.free) < 64 {
		d.free = append(d.free, st)
	}
}

// begin makes h open at the frame starting at start, if it is not yet,
// and returns it, or nil when h takes no more frames.
func (d *Decoder) begin(st *stream, dir proto.Dir, start int64) *half {
	h := &st.h[dir]
	switch h.state {
	case hIdle, hAbsent:
		h.state = hOpen
		h.start = start
		h.idleAtLoss = false
		return h
	case hOpen:
		return h
	}
	d.stats.ClosedStreamFrames++
	return nil
}

// loseHalf marks an open or idle half lost.
func (d *Decoder) loseHalf(st *stream, dir proto.Dir) {
	h := &st.h[dir]
	if h.state == hOpen || h.state == hIdle {
		d.stats.StreamsLost++
		h.state = hLost
		if st.finished() {
			d.freeStream(st)
		}
	}
}

// finishHalf reports an open half.
func (d *Decoder) finishHalf(st *stream, dir proto.Dir) {
	h := &st.h[dir]
	h.state = hDone
	u := proto.Unit{Dir: dir, Start: h.start, End: h.end, Bytes: h.bytes}
	switch {
	case dir == proto.FromClient:
		u.Kind, u.Key = proto.KindRequest, uint64(st.id)
		u.Label = d.requestLabel(h)
	case st.push:
		u.Kind = proto.KindOneWay
		u.Label, u.Status = responseLabel(h)
	default:
		u.Kind, u.Key = proto.KindResponse, uint64(st.id)
		u.Label, u.Status = responseLabel(h)
	}
	if h.reset {
		u.Label = resetLabel(u.Label)
	}
	u.Lost, u.Incomplete = h.lost, h.crossed || h.lost > 0
	if h.nbody > 0 {
		if h.ev == nil {
			h.ev = d.newEvidence()
		}
		grpcBodyEvidence(h.ev, h.body[:h.nbody], &d.num)
		h.nbody = 0
	}
	if h.ev != nil {
		u.Evidence = finishEvidence(h.ev, d.cfg.MaxTokens)
		d.evUsed = append(d.evUsed, h.ev)
		h.ev = nil
	}
	d.emitUnit(u)
}

// endHalf reports a half that ended with END_STREAM, and forgets the
// stream once both halves are done.
func (d *Decoder) endHalf(st *stream, dir proto.Dir) {
	d.finishHalf(st, dir)
	if st.finished() {
		d.freeStream(st)
	}
}

// reset ends stream id at an RST_STREAM: its open halves are reported,
// marked as reset, and the stream is closed.
func (d *Decoder) reset(id uint32) {
	st := d.streams.get(id)
	if st == nil {
		return
	}
	for dir := range st.h {
		switch h := &st.h[dir]; h.state {
		case hOpen:
			h.reset = true
			d.finishHalf(st, proto.Dir(dir))
		case hIdle:
			h.state = hAbsent
		}
	}
	d.freeStream(st)
}

// dataPrefix keeps the first maxBody bytes of the DATA of a gRPC
// request for its evidence, from p, the part of the current DATA frame's
// payload just read (padded frames are left out). Responses are left out:
// a response's message is read as a protocol buffer when its first bytes
// happen to parse as one (the testbed's backends answer with a run of
// "b"s, which gave every long response the same token).
func (d *Decoder) dataPrefix(s *dirState, p []byte) {
	fh := &s.fh
	if fh.flags&fPadded != 0 || s.damaged || s.dir != proto.FromClient {
		return
	}
	st := d.streams.get(fh.stream)
	if st == nil {
		return
	}
	h := &st.h[s.dir]
	if h.state != hOpen || h.nbody >= len(h.body) || !d.grpcType(h.kept[keptCType]) {
		return
	}
	h.nbody += copy(h.body[h.nbody:], p)
}

// dataFrame adds a DATA frame to its stream. p is its whole payload when
// it came in one piece (wholeFrames), whose first bytes a gRPC request
// keeps here, with the one look-up of its stream, as dataPrefix does for
// a frame read in pieces (and is nil then): a request whose body is this
// one frame, ending it, has them read in place, for finishHalf.
func (d *Decoder) dataFrame(s *dirState, fh frameHeader, p []byte, start, end int64) {
	st := d.streams.get(fh.stream)
	var h *half
	if st != nil {
		switch h0 := &st.h[s.dir]; {
		case h0.state == hOpen:
			h = h0
			if len(p) > 0 && s.dir == proto.FromClient && fh.flags&fPadded == 0 &&
				h.nbody < len(h.body) && d.grpcType(h.kept[keptCType]) {
				if h.nbody == 0 && fh.flags&fEndStream != 0 {
					// The whole body, read in place: what finishHalf,
					// called next, would read of its copy.
					if h.ev == nil {
						h.ev = d.newEvidence()
					}
					grpcBodyEvidence(h.ev, p[:min(len(p), maxBody)], &d.num)
				} else {
					h.nbody += copy(h.body[h.nbody:], p)
				}
			}
		case h0.state == hIdle && h0.idleAtLoss:
			// Its header block was lost with its direction's framing:
			// it begins here, incomplete.
			if s.dir == proto.FromClient && fh.stream > d.lastReq {
				d.requestIDs(fh.stream, true)
			}
			h = d.begin(st, s.dir, start)
			h.crossed = true
		}
	}
	d.spend(s, h, int64(fh.length))
	if h == nil {
		if s.dir == proto.FromClient && fh.stream > d.lastReq && fh.stream%2 == 1 {
			d.requestIDs(fh.stream, false) // its header block was lost
		}
		if st == nil && !d.recentlyClosed(fh.stream) {
			d.stats.OrphanFrames++
		} else if st == nil || st.h[s.dir].state != hLost {
			d.stats.ClosedStreamFrames++
		}
		return
	}
	h.end = end
	h.bytes += end - start
	if fh.flags&fEndStream != 0 {
		d.endHalf(st, s.dir)
	}
}

// headersFrame adds a HEADERS frame to its stream and decodes its block.
func (d *Decoder) headersFrame(s *dirState, fh frameHeader, frag []byte, start, end int64) {
	var h *half
	st := d.open(s.dir, fh.stream)
	if st != nil {
		h = d.begin(st, s.dir, start)
	}
	if h != nil {
		h.end = end
		h.bytes += end - start
	}
	d.beginBlock(s, h)
	// The run of indexed fields the block starts with, if remembered,
	// is taken at once (blockmemo.go).
	if k := s.blockHit(h, frag); k > 0 {
		if k < len(frag) { // else the run was the whole block (a response's, its trailers')
			d.writeBlock(s, frag[k:])
		}
	} else {
		d.takeRun(s, h, frag)
	}
	endStream := fh.flags&fEndStream != 0
	if fh.flags&fEndHeaders == 0 {
		s.contStream, s.contEnd = fh.stream, endStream
		return
	}
	d.endBlock(s)
	if h != nil && endStream && h.state == hOpen {
		d.endHalf(st, s.dir)
	}
}

// continuationFrame adds a CONTINUATION frame to the block it continues.
func (d *Decoder) continuationFrame(s *dirState, fh frameHeader, frag []byte, start, end int64) {
	if s.contStream == 0 {
		d.stats.ContinuationErrors++
		if s.dir == proto.FromClient && fh.stream > d.lastReq && fh.stream%2 == 1 {
			d.requestIDs(fh.stream, false) // its HEADERS frame was lost
		}
		return
	}
	st := d.streams.get(fh.stream)
	var h *half
	if st != nil && st.h[s.dir].state == hOpen {
		h = &st.h[s.dir]
		h.end = end
		h.bytes += end - start
	}
	d.writeBlock(s, frag)
	if fh.flags&fEndHeaders == 0 {
		return
	}
	endStream := s.contEnd
	d.endBlock(s)
	if h != nil && endStream && h.state == hOpen {
		d.endHalf(st, s.dir)
	}
}

// pushPromise adds a PUSH_PROMISE frame to the response it belongs to,
// makes the promised stream, and decodes the promised request's headers
// (for the HPACK table only).
func (d *Decoder) pushPromise(s *dirState, fh frameHeader, f frame, start, end int64) {
	if st := d.streams.get(fh.stream); st != nil && st.h[s.dir].state == hOpen {
		h := &st.h[s.dir]
		h.end = end
		h.bytes += end - start
	}
	if s.dir == proto.FromServer && f.promise%2 == 0 && d.streams.get(f.promise) == nil {
		ps := d.newStream(f.promise)
		ps.push = true
		ps.h[proto.FromClient].state = hAbsent
		d.maxStream = max(d.maxStream, f.promise)
	}
	d.beginBlock(s, nil)
	d.writeBlock(s, f.frag)
	if fh.flags&fEndHeaders == 0 {
		s.contStream, s.contEnd = fh.stream, false
		return
	}
	d.endBlock(s)
}

// spend charges a DATA frame to its sender's flow-control windows and
// counts the moments a window runs out.
func (d *Decoder) spend(s *dirState, h *half, n int64) {
	s.connWindow -= n
	if s.connWindow <= 0 && !s.connStall {
		s.connStall = true
		d.stats.ConnStalls++
	}
	if h == nil {
		return
	}
	h.window -= n
	if h.window <= 0 && !h.stall {
		h.stall = true
		d.stats.StreamStalls++
	}
}

// windowUpdate credits the window a WINDOW_UPDATE from s's side grants
// the other side's sender.
func (d *Decoder) windowUpdate(s *dirState, id uint32, inc int64) {
	o := &d.dirs[s.dir.Other()]
	if id == 0 {
		o.connWindow += inc
		if o.connWindow > 0 {
			o.connStall = false
		}
		return
	}
	if st := d.streams.get(id); st != nil {
		h := &st.h[o.dir]
		h.window += inc
		if h.window > 0 {
			h.stall = false
		}
	}
}

// initialWindow applies a new SETTINGS_INITIAL_WINDOW_SIZE to o's sender.
func (d *Decoder) initialWindow(o *dirState, v int64) {
	delta := v - o.initWindow
	o.initWindow = v
	for _, st := range d.streams.slots {
		if st == nil {
			continue
		}
		h := &st.h[o.dir]
		h.window += delta
		if h.window > 0 {
			h.stall = false
		}
	}
}
