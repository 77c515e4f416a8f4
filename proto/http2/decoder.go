package http2

import (
	"bytes"
	"encoding/binary"

	xhttp2 "golang.org/x/net/http2"

	"github.com/wirepath/wirepath/proto"
)

// Mode says how a Decoder decides that a connection is HTTP/2.
type Mode uint8

// The detection modes.
const (
	// Detect: HTTP/2 only if the client's first bytes are the connection
	// preface (h2c with prior knowledge, or h2 inside TLS).
	Detect Mode = iota
	// PriorKnowledge: HTTP/2 from the first byte, with or without the
	// preface (a port known to carry HTTP/2, or ALPN h2). A connection
	// seen from its middle starts in resync with both HPACK tables
	// poisoned.
	PriorKnowledge
)

// State is what a Decoder has decided about its connection.
type State uint8

// The states of a Decoder.
const (
	Detecting State = iota // waiting for the client's first bytes
	Active                 // HTTP/2: Units are being decoded
	NotHTTP2               // not HTTP/2: the Decoder ignores the connection
)

// String returns the state's name.
func (s State) String() string {
	switch s {
	case Detecting:
		return "detecting"
	case Active:
		return "active"
	}
	return "not-http2"
}

// Config bounds and configures a Decoder.
type Config struct {
	Mode Mode
	// MaxBuffered is the largest frame payload, other than DATA, held to
	// be parsed; larger frames are skipped and counted (a header block
	// among them poisons its direction's HPACK table).
	MaxBuffered int
	// MaxHeaderTable caps the HPACK dynamic table a peer may ask for.
	MaxHeaderTable uint32
	// MaxHeaderList caps the decoded size of one header block (RFC 9113
	// accounting: name + value + 32 per field) that is looked at, and
	// the longest header string decoded.
	MaxHeaderList int
	// MaxStreams caps the streams open at once.
	MaxStreams int
	// Evidence asks for propagated ids and content tokens on request
	// and response Units.
	Evidence bool
	// MaxTokens caps the tokens of one Unit's Evidence.
	MaxTokens int
}

// DefaultConfig returns the limits used unless told otherwise.
func DefaultConfig() Config {
	return Config{
		Mode:           Detect,
		MaxBuffered:    256 << 10,
		MaxHeaderTable: 64 << 10,
		MaxHeaderList:  64 << 10,
		MaxStreams:     1024,
		MaxTokens:      32,
	}
}

// Frame header layout (RFC 9113 section 4.1).
const (
	headerLen   = 9
	prefaceLen  = 24
	defaultMax  = 16384     // SETTINGS_MAX_FRAME_SIZE until a peer says otherwise
	absoluteMax = 1<<24 - 1 // the largest frame length the format allows
	// resyncWindow is how many bytes a direction holds while looking
	// for a frame header after a loss; a candidate frame longer than
	// this cannot be confirmed by the header after it and is passed by.
	resyncWindow = 64 << 10
	// holdMax bounds the server's bytes held while the client preface
	// is awaited.
	holdMax = 64 << 10
	// closedRing is how many recently closed stream ids are remembered,
	// so that frames still in flight after a reset are not mistaken for
	// new streams.
	closedRing = 128
)

var clientPreface = []byte(xhttp2.ClientPreface)

// dirMode is where a direction's byte stream is.
type dirMode uint8

const (
	mPreface dirMode = iota // client: the preface is being matched
	mFrames                 // frames
	mResync                 // framing lost: looking for a frame header
)

// dirState is one direction of the connection.
type dirState struct {
	dir  proto.Dir
	next int64 // stream offset of the next byte expected
	mode dirMode
	pre  int // preface bytes matched

	checkFirst bool // the next frame header decides whether this is HTTP/2

	// The frame being read.
	hdr     [headerLen]byte
	nhdr    int
	inFrame bool
	fh      frameHeader
	fstart  int64 // offset of the frame's header
	remain  int64 // payload bytes still to come
	fed     int64 // bytes of this frame fed so far
	skip    bool  // payload not held (DATA, unknown type, too large)
	damaged bool  // a gap hit this frame's payload
	buf     []byte

	// A header block waiting for CONTINUATION frames.
	contStream uint32
	contEnd    bool // END_STREAM came with the block's HEADERS

	// HPACK.
	hp        *hpackDecoder
	tableMax  uint32 // dynamic table size the peer allows, capped
	poisoned  bool
	first     bool // the next fragment starts a header block
	cap       *half
	list      int
	over      bool
	kept      [numKept]string            // the values of the fields a half keeps, latest
	memo      *[memoSlots]fieldMemo      // what emit made of table entries' fields, made on first use
	blocks    *[blockMemoSlots]blockMemo // what whole blocks did, by their bytes, made on first use
	blockNext int                        // the slot of blocks to take next when none is empty
	blockLast uint8                      // the slot of blocks blockHit took last
	brun      blockRun                   // scratch of headersFrame
	blockHits int                        // blocks blockHit took (for the tests)

	// What the peer allows this direction's sender.
	maxFrame   uint32
	initWindow int64
	connWindow int64
	connStall  bool

	hold    []byte // server bytes held while detecting
	scan    []byte // resync window
	scanPos int    // first position of scan not yet rejected
	replay  []byte // bytes from a found frame header on, to decode
	rbuf    []byte // replay's storage

	d *Decoder
}

// Decoder decodes one HTTP/2 connection. The zero value is not usable:
// make one with New.
type Decoder struct {
	cfg   Config
	state State
	dirs  [2]dirState

	streams   streamTable
	free      []*stream
	closed    [closedRing]uint32
	nclosed   int
	maxClient uint32 // highest client stream id seen
	maxStream uint32 // highest stream id seen in either direction
	// The client's stream ids: the highest its own frames named, whether
	// its direction lost its framing since (the ids it then passes over
	// are requests lost whole), and whether it was seen from its middle
	// (the ids before the first it names are not known).
	lastReq    uint32
	reqLoss    bool
	reqUnknown bool

	labels     map[labelKey]string
	recent     [8]recentLabel    // the labels made last, replaced in turn
	grpcCType  string            // the content-type grpcType found gRPC's last (a kept value)
	nextRecent uint8             // the one to replace next
	kept       map[string]string // the values of the fields halves keep, interned

	out  []proto.Unit
	head int
	// Evidence storage: free, and handed out with Units not all taken.
	evFree, evUsed []*proto.Evidence
	// num is scratch for the digits of a number token (grpcBodyEvidence)
	num [20]byte
	ids idArena // the copies of the ids Evidence keeps

	stats Stats
}

// New returns a Decoder for one connection. Zero fields of cfg take
// DefaultConfig's values.
func New(cfg Config) *Decoder {
	def := DefaultConfig()
	if cfg.MaxBuffered <= 0 {
		cfg.MaxBuffered = def.MaxBuffered
	}
	if cfg.MaxHeaderTable == 0 {
		cfg.MaxHeaderTable = def.MaxHeaderTable
	}
	if cfg.MaxHeaderList <= 0 {
		cfg.MaxHeaderList = def.MaxHeaderList
	}
	if cfg.MaxStreams <= 0 {
		cfg.MaxStreams = def.MaxStreams
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = def.MaxTokens
	}
	d := &Decoder{cfg: cfg}
	for i := range d.dirs {
		s := &d.dirs[i]
		s.dir = proto.Dir(i)
		s.d = d
		s.tableMax = 4096
		s.maxFrame = defaultMax
		s.initWindow = 65535
		s.connWindow = 65535
		s.first = true
		s.hp = newHPACK(4096, cfg.MaxHeaderList, s.emit)
		s.hp.hit, s.hp.ds = s, s
		s.mode = mFrames
	}
	d.dirs[proto.FromClient].mode = mPreface
	if cfg.Mode == PriorKnowledge {
		d.state = Active
	}
	return d
}

// State reports what the Decoder has decided about the connection.
func (d *Decoder) State() State { return d.state }

// Stats returns the Decoder's counters so far.
func (d *Decoder) Stats() Stats {
	st := d.stats
	for i := range d.dirs {
		s := &d.dirs[i]
		st.Pending += int64(len(s.hold)) + int64(len(s.scan)) + int64(len(s.replay))
		if s.mode == mPreface && d.state != NotHTTP2 {
			st.Pending += int64(s.pre)
		}
		if s.inFrame || s.nhdr > 0 {
			st.Pending += s.fed
		}
	}
	return st
}

// Next copies the next decoded Unit into u and reports whether there was
// one. Units come out in the order they were completed, not by Start.
func (d *Decoder) Next(u *proto.Unit) bool {
	if d.head == len(d.out) {
		return false
	}
	*u = d.out[d.head]
	d.out[d.head] = proto.Unit{}
	d.head++
	if d.head == len(d.out) {
		d.head, d.out = 0, d.out[:0]
	}
	return true
}

// Low returns an offset of dir's stream below which no Unit will start
// that was not reported yet: the Start of the oldest open stream or
// frame. A wrapping decoder (proto/tls) forgets what it knows of the
// bytes before it.
func (d *Decoder) Low(dir proto.Dir) int64 {
	s := &d.dirs[dir]
	low := s.next - int64(len(s.scan)) - int64(len(s.hold))
	if s.inFrame || s.nhdr > 0 {
		low = min(low, s.fstart)
	}
	for _, st := range d.streams.slots {
		if st == nil {
			continue
		}
		if h := &st.h[dir]; h.state == hOpen {
			low = min(low, h.start)
		}
	}
	return low
}

// emitUnit queues a Unit.
func (d *Decoder) emitUnit(u proto.Unit) {
	d.out = append(d.out, u)
	switch u.Kind {
	case proto.KindRequest:
		d.stats.Requests++
	case proto.KindResponse:
		d.stats.Responses++
	case proto.KindOneWay:
		d.stats.Pushes++
	case proto.KindControl:
		d.stats.Controls++
	}
}

// Feed gives the Decoder the bytes of dir's stream starting at offset off.
// Bytes before the end of what was already fed or gapped are ignored;
// a jump past it is a gap. b is not kept.
func (d *Decoder) Feed(dir proto.Dir, off int64, b []byte) {
	if dir > proto.FromServer || len(b) == 0 {
		return
	}
	d.beginCall()
	s := &d.dirs[dir]
	if off < s.next {
		if off+int64(len(b)) <= s.next {
			d.stats.Overlap += int64(len(b))
			return
		}
		d.stats.Overlap += s.next - off
		b = b[s.next-off:]
		off = s.next
	}
	if off > s.next {
		if s.next == 0 && off > 0 && !d.seen(dir) {
			d.startMidway(s, off)
		} else {
			d.Gap(dir, s.next, off-s.next)
		}
	}
	d.stats.In += int64(len(b))
	if d.state == NotHTTP2 {
		d.stats.Skipped += int64(len(b))
		s.next += int64(len(b))
		return
	}
	if d.state == Detecting && dir == proto.FromServer {
		d.holdServer(s, b)
		return
	}
	d.feed(s, b)
}

// seen reports whether dir's stream has had any byte or gap.
func (d *Decoder) seen(dir proto.Dir) bool {
	s := &d.dirs[dir]
	return s.next != 0 || s.pre != 0 || s.nhdr != 0 || s.inFrame
}

// startMidway handles a direction whose first bytes come after offset 0:
// the connection was seen from its middle. In Detect mode the client's
// preface cannot be seen, so the connection is not taken for HTTP/2.
func (d *Decoder) startMidway(s *dirState, off int64) {
	s.next = off
	if d.state == Detecting && s.dir == proto.FromServer {
		return // decided by the client's side
	}
	if d.cfg.Mode == Detect {
		d.reject()
		return
	}
	s.mode = mResync
	d.poison(s)
	if s.dir == proto.FromClient {
		d.reqUnknown = true
	}
}

// holdServer keeps the server's bytes until the client preface decides.
func (d *Decoder) holdServer(s *dirState, b []byte) {
	s.next += int64(len(b))
	if len(s.hold)+len(b) > holdMax {
		d.reject()
		d.stats.Skipped += int64(len(b))
		return
	}
	s.hold = append(s.hold, b...)
}

// reject decides the connection is not HTTP/2.
func (d *Decoder) reject() {
	if d.state == NotHTTP2 {
		return
	}
	d.state = NotHTTP2
	for i := range d.dirs {
		s := &d.dirs[i]
		d.stats.Skipped += int64(len(s.hold)) + int64(len(s.scan))
		if s.inFrame || s.nhdr > 0 {
			d.stats.Skipped += s.fed
		}
		s.hold, s.scan, s.inFrame, s.nhdr, s.fed = nil, nil, false, 0, 0
	}
	if c := &d.dirs[proto.FromClient]; c.mode == mPreface {
		d.stats.Skipped += int64(c.pre)
	}
}

// accept decides the connection is HTTP/2 and decodes the server bytes
// held so far.
func (d *Decoder) accept() {
	d.state = Active
	s := &d.dirs[proto.FromServer]
	if len(s.hold) == 0 {
		return
	}
	held := s.hold
	s.hold = nil
	s.next -= int64(len(held))
	d.feed(s, held)
}

// feed decodes b, the next bytes of s's stream. After a resync the bytes
// from the frame header found on (s.replay, a copy of the resync window)
// are decoded before the rest of b.
func (d *Decoder) feed(s *dirState, b []byte) {
	for d.state != NotHTTP2 {
		in := &b
		if len(s.replay) > 0 {
			in = &s.replay
		}
		if len(*in) == 0 {
			return
		}
		switch s.mode {
		case mPreface:
			*in = (*in)[d.matchPreface(s, *in):]
		case mResync:
			n, found := d.resync(s, *in)
			*in = (*in)[n:]
			if found != nil {
				s.replay = found
			}
		default:
			*in = (*in)[d.frames(s, *in):]
		}
	}
	// Decided on the way that this is not HTTP/2: the rest is skipped.
	rest := int64(len(b) + len(s.replay))
	d.stats.Skipped += rest
	s.next += rest
	s.replay = nil
}

// matchPreface consumes the client preface.
func (d *Decoder) matchPreface(s *dirState, b []byte) int {
	n := min(len(b), prefaceLen-s.pre)
	if !bytes.Equal(b[:n], clientPreface[s.pre:s.pre+n]) {
		if d.cfg.Mode == Detect {
			d.reject()
			d.stats.Skipped += int64(len(b))
			s.next += int64(len(b))
			return len(b)
		}
		// Prior knowledge and no preface: frames from the first byte,
		// if the first is a frame header. The bytes that matched the
		// preface so far are the first frame's.
		s.mode = mFrames
		s.checkFirst = true
		matched := s.pre
		s.pre = 0
		s.next -= int64(matched)
		if rest := matched - d.frames(s, clientPreface[:matched]); rest > 0 {
			d.stats.Skipped += int64(rest) // rejected on the way
			s.next += int64(rest)
		}
		return 0
	}
	s.pre += n
	s.next += int64(n)
	if s.pre == prefaceLen {
		d.stats.Framed += prefaceLen
		s.mode = mFrames
		d.emitUnit(proto.Unit{Dir: proto.FromClient, Kind: proto.KindControl,
			Start: s.next - prefaceLen, End: s.next, Bytes: prefaceLen, Label: "PREFACE"})
		if d.state == Detecting {
			d.accept()
		}
	}
	return n
}

// frames decodes frames from b and returns how many bytes it used.
func (d *Decoder) frames(s *dirState, b []byte) int {
	used := 0
	for len(b) > 0 && s.mode == mFrames && d.state != NotHTTP2 {
		if !s.inFrame {
			if s.nhdr == 0 && !s.checkFirst {
				if n := d.wholeFrames(s, b); n > 0 {
					used += n
					b = b[n:]
					continue
				}
			}
			n := d.readHeader(s, b)
			used += n
			b = b[n:]
			continue
		}
		take := int(min(s.remain, int64(len(b))))
		if s.skip {
			if s.fh.typ == xhttp2.FrameData {
				d.dataPrefix(s, b[:take])
			}
			s.next += int64(take)
			s.fed += int64(take)
			s.remain -= int64(take)
			used += take
			b = b[take:]
			if s.remain == 0 {
				d.frameDone(s, nil)
			}
			continue
		}
		if len(s.buf) == 0 && int64(take) == s.remain {
			// The whole payload is in b: parse it in place.
			s.next += int64(take)
			s.fed += int64(take)
			s.remain = 0
			d.frameDone(s, b[:take])
		} else {
			s.buf = append(s.buf, b[:take]...)
			s.next += int64(take)
			s.fed += int64(take)
			s.remain -= int64(take)
			if s.remain == 0 {
				d.frameDone(s, s.buf)
				s.buf = s.buf[:0]
			}
		}
		used += take
		b = b[take:]
	}
	return used
}

// wholeFrames decodes the frames at the start of b that b holds all of
// (and whose length is one readHeader takes), as readHeader and frames
// would, each in one step, while frames would take them so (its tests
// made again after each frame, which may change what s is doing), and
// returns their length, or 0. A loop of its own, so that b stays in
// registers and a frame costs no call but frameDone. frames calls it
// between frames only (not in a frame, nor in a header, nor at the
// first header's check), which no frame handled here changes (only
// readHeader and matchPreface do): the loop tests again only what
// frameDone may change, the direction's mode and the Decoder's state.
// b is read from the offset used, not resliced.
func (d *Decoder) wholeFrames(s *dirState, b []byte) int {
	used := 0
	for len(b)-used >= headerLen && s.mode == mFrames && d.state != NotHTTP2 {
		fh := parseHeader(b[used:])
		n := headerLen + int(fh.length)
		if len(b)-used < n || fh.length > s.maxFrame && fh.length > uint32(d.cfg.MaxBuffered) {
			break
		}
		start := s.next
		s.next += int64(n)
		// A DATA frame's payload goes to dataFrame, which keeps a gRPC
		// request's first bytes (dataPrefix's work).
		payload := b[used+headerLen : used+n]
		if s.contStream == 0 && (fh.typ == xhttp2.FrameData || fh.typ == xhttp2.FrameHeaders &&
			fh.flags&(fPadded|fPriority) == 0 && fh.stream != 0 && int(fh.length) <= d.cfg.MaxBuffered) {
			// A call's frames: what frameDone does for them (s.inFrame
			// and s.damaged are false here), without its call. The
			// frame's fields of s (fstart, fed, fh, damaged, remain) are
			// left as they are: only frameDone and what a frame read in
			// pieces does (s.inFrame or s.nhdr set) read them, and
			// readHeader sets them again first.
			d.stats.countFrame(fh.typ)
			d.maxStream = max(d.maxStream, fh.stream)
			d.stats.Framed += int64(n)
			if fh.typ == xhttp2.FrameData {
				d.dataFrame(s, fh, payload, start, s.next)
			} else {
				d.headersFrame(s, fh, payload, start, s.next)
			}
		} else {
			s.fstart, s.fed, s.fh, s.damaged, s.remain = start, int64(n), fh, false, 0
			if fh.typ != xhttp2.FrameData && (fh.typ > xhttp2.FrameContinuation || int(fh.length) > d.cfg.MaxBuffered) {
				payload = nil // frameDone takes none
			}
			d.frameDone(s, payload)
		}
		used += n
	}
	return used
}

// readHeader reads (part of) a frame header from b.
func (d *Decoder) readHeader(s *dirState, b []byte) int {
	if s.nhdr == 0 {
		s.fstart = s.next
		s.fed = 0
	}
	var hdr []byte
	var n int
	if s.nhdr == 0 && len(b) >= headerLen {
		hdr, n = b[:headerLen], headerLen // read in place
	} else {
		n = copy(s.hdr[s.nhdr:], b)
		hdr = s.hdr[:]
	}
	s.nhdr += n
	s.next += int64(n)
	s.fed += int64(n)
	if s.nhdr < headerLen {
		return n
	}
	s.nhdr = 0
	fh := parseHeader(hdr)
	if s.checkFirst {
		s.checkFirst = false
		if !plausibleHeader(hdr, absoluteMax, 0) {
			s.fed = 0
			d.reject()
			d.stats.Skipped += headerLen
			return n
		}
	}
	if fh.length > s.maxFrame && fh.length > uint32(d.cfg.MaxBuffered) {
		// Longer than this peer may send: the framing is wrong (a
		// frame header is looked for again after this one).
		d.stats.MalformedFrames++
		d.stats.Skipped += s.fed
		s.fed = 0
		d.loseFraming(s)
		return n
	}
	s.fh = fh
	s.inFrame = true
	s.damaged = false
	s.remain = int64(fh.length)
	s.skip = fh.typ == xhttp2.FrameData || fh.typ > xhttp2.FrameContinuation ||
		int(fh.length) > d.cfg.MaxBuffered
	if s.remain == 0 {
		d.frameDone(s, nil)
	}
	return n
}

// frameDone handles the frame whose last byte was just read.
func (d *Decoder) frameDone(s *dirState, payload []byte) {
	s.inFrame = false
	fh := s.fh
	start, end := s.fstart, s.fstart+headerLen+int64(fh.length)
	d.stats.countFrame(fh.typ)
	if fh.stream > d.maxStream {
		d.maxStream = fh.stream
	}
	if s.damaged {
		d.stats.Damaged += s.fed
		d.stats.FramesLost++
		d.lostFrame(s, fh)
		return
	}
	d.stats.Framed += s.fed
	if s.contStream != 0 && (fh.typ != xhttp2.FrameContinuation || fh.stream != s.contStream) {
		d.stats.ContinuationErrors++
		d.abandonBlock(s)
	}
	switch {
	case fh.typ == xhttp2.FrameData:
		d.dataFrame(s, fh, payload, start, end)
	case fh.typ > xhttp2.FrameContinuation:
		d.stats.UnknownFrames++
		d.control(s, start, end, "UNKNOWN")
	case int(fh.length) > d.cfg.MaxBuffered:
		d.stats.TooLargeFrames++
		d.lostFrame(s, fh)
	case fh.typ == xhttp2.FrameHeaders && fh.flags&(fPadded|fPriority) == 0 && fh.stream != 0:
		// Most frames a call sends: its payload is its fragment, which
		// parseFrame would find well formed (without a frame to copy).
		d.headersFrame(s, fh, payload, start, end)
	default:
		d.parsed(s, payload, start, end)
	}
}

// parsed reads a held frame and acts on it.
func (d *Decoder) parsed(s *dirState, payload []byte, start, end int64) {
	fh := s.fh
	f, ok := parseFrame(fh, payload)
	if !ok {
		d.stats.MalformedFrames++
		d.lostFrame(s, fh)
		return
	}
	switch fh.typ {
	case xhttp2.FrameHeaders:
		d.headersFrame(s, fh, f.frag, start, end)
	case xhttp2.FrameContinuation:
		d.continuationFrame(s, fh, f.frag, start, end)
	case xhttp2.FramePushPromise:
		d.pushPromise(s, fh, f, start, end)
	case xhttp2.FrameSettings:
		d.settings(s, fh, f.settings, start, end)
	case xhttp2.FramePing:
		d.control(s, start, end, pick(fh.flags&fAck != 0, "PING ACK", "PING"))
	case xhttp2.FrameWindowUpdate:
		d.windowUpdate(s, fh.stream, int64(f.inc))
		d.control(s, start, end, "WINDOW_UPDATE")
	case xhttp2.FramePriority:
		d.control(s, start, end, "PRIORITY")
	case xhttp2.FrameRSTStream:
		d.stats.Resets++
		d.control(s, start, end, codeLabel(rstLabels, f.code))
		d.reset(fh.stream)
	case xhttp2.FrameGoAway:
		d.stats.GoAways++
		d.control(s, start, end, codeLabel(goawayLabels, f.code))
	}
}

// control reports one control frame.
func (d *Decoder) control(s *dirState, start, end int64, label string) {
	d.emitUnit(proto.Unit{Dir: s.dir, Kind: proto.KindControl, Start: start, End: end,
		Bytes: end - start, Label: label})
}

func pick(c bool, a, b string) string {
	if c {
		return a
	}
	return b
}

// settings applies a SETTINGS frame (its settings p, 6 bytes each): what
// s's sender allows the other direction's sender.
func (d *Decoder) settings(s *dirState, fh frameHeader, p []byte, start, end int64) {
	if fh.flags&fAck != 0 {
		d.control(s, start, end, "SETTINGS ACK")
		return
	}
	o := &d.dirs[s.dir.Other()]
	for ; len(p) >= 6; p = p[6:] {
		val := binary.BigEndian.Uint32(p[2:])
		switch xhttp2.SettingID(binary.BigEndian.Uint16(p)) {
		case xhttp2.SettingHeaderTableSize:
			o.tableMax = min(val, d.cfg.MaxHeaderTable)
			o.hp.setAllowedMaxDynamicTableSize(o.tableMax)
		case xhttp2.SettingMaxFrameSize:
			if val >= defaultMax && val <= absoluteMax {
				o.maxFrame = val
			}
		case xhttp2.SettingInitialWindowSize:
			d.initialWindow(o, int64(val))
		}
	}
	d.control(s, start, end, "SETTINGS")
}

// beginCall starts a call that may report Units: once every Unit was taken,
// the Evidence handed out with them is reused.
func (d *Decoder) beginCall() {
	if d.head == len(d.out) && len(d.evUsed) > 0 {
		d.evFree = append(d.evFree, d.evUsed...)
		clear(d.evUsed)
		d.evUsed = d.evUsed[:0]
	}
}

// newEvidence returns an empty Evidence for a stream half.
func (d *Decoder) newEvidence() *proto.Evidence {
	if n := len(d.evFree); n > 0 {
		ev := d.evFree[n-1]
		d.evFree = d.evFree[:n-1]
		ev.IDs, ev.Tokens = ev.IDs[:0], ev.Tokens[:0]
		return ev
	}
	return new(proto.Evidence)
}
