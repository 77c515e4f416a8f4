package http2

import (
	"encoding/binary"

	xhttp2 "golang.org/x/net/http2"
)

// frameHeader is a decoded 9-byte frame header (RFC 9113 section 4.1).
type frameHeader struct {
	length   uint32
	typ      xhttp2.FrameType
	flags    xhttp2.Flags
	stream   uint32
	reserved bool // the reserved bit before the stream id
}

// Offsets in a frame header.
const (
	offLength = 0 // 24-bit payload length
	offType   = 3
	offFlags  = 4
	offStream = 5 // reserved bit and 31-bit stream id
)

// parseHeader decodes the frame header at the start of b (len(b) >= 9).
func parseHeader(b []byte) frameHeader {
	_ = b[headerLen-1]
	sid := binary.BigEndian.Uint32(b[offStream:])
	return frameHeader{
		length:   uint32(b[offLength])<<16 | uint32(b[offLength+1])<<8 | uint32(b[offLength+2]),
		typ:      xhttp2.FrameType(b[offType]),
		flags:    xhttp2.Flags(b[offFlags]),
		stream:   sid & (1<<31 - 1),
		reserved: sid&(1<<31) != 0,
	}
}

// Flag bits defined per frame type (RFC 9113 section 6).
const (
	fEndStream  = xhttp2.Flags(0x1)
	fAck        = xhttp2.Flags(0x1)
	fEndHeaders = xhttp2.Flags(0x4)
	fPadded     = xhttp2.Flags(0x8)
	fPriority   = xhttp2.Flags(0x20)
)

// frameRule is what RFC 9113 section 6 requires of one frame type's
// header.
type frameRule struct {
	stream   int8         // 1: on a stream, -1: on stream 0, 0: either
	flags    xhttp2.Flags // the flags defined for the type
	fixed    int32        // the payload length, or -1
	min, per uint32       // the least payload length, and a length's divisor
}

// frameRules are the rules of the ten frame types, by type.
var frameRules = [...]frameRule{
	xhttp2.FrameData:         {1, fEndStream | fPadded, -1, 0, 1},
	xhttp2.FrameHeaders:      {1, fEndStream | fEndHeaders | fPadded | fPriority, -1, 0, 1},
	xhttp2.FramePriority:     {1, 0, 5, 0, 1},
	xhttp2.FrameRSTStream:    {1, 0, 4, 0, 1},
	xhttp2.FrameSettings:     {-1, fAck, -1, 0, 6},
	xhttp2.FramePushPromise:  {1, fEndHeaders | fPadded, -1, 4, 1},
	xhttp2.FramePing:         {-1, fAck, 8, 0, 1},
	xhttp2.FrameGoAway:       {-1, 0, -1, 8, 1},
	xhttp2.FrameWindowUpdate: {0, 0, 4, 0, 1},
	xhttp2.FrameContinuation: {1, fEndHeaders, -1, 0, 1},
}

// plausibleHeader reports whether the 9 bytes at the start of b could be
// a frame header that a well-behaved peer sends: a known type, only that
// type's flags, the stream id and length that type requires, a length up
// to maxLen and a stream id up to maxStream (0: any). It is how a
// direction finds its framing again after a loss, where a random match
// costs a wrong frame, so it is stricter than the RFC asks a receiver to
// be.
func plausibleHeader(b []byte, maxLen, maxStream uint32) bool {
	if len(b) < headerLen {
		return false
	}
	h := parseHeader(b)
	if h.reserved || h.length > maxLen || maxStream != 0 && h.stream > maxStream || int(h.typ) >= len(frameRules) {
		return false
	}
	r := frameRules[h.typ]
	switch {
	case r.stream == 1 && h.stream == 0, r.stream == -1 && h.stream != 0:
		return false
	case h.flags&^r.flags != 0:
		return false
	case r.fixed >= 0 && h.length != uint32(r.fixed), h.length < r.min, h.length%r.per != 0:
		return false
	}
	// A SETTINGS acknowledgement is empty.
	return h.typ != xhttp2.FrameSettings || h.flags&fAck == 0 || h.length == 0
}

// rstLabels and goawayLabels are the labels of RST_STREAM and GOAWAY
// frames by error code, made once so that a frame costs no allocation.
var (
	rstLabels    = codeLabels("RST_STREAM")
	goawayLabels = codeLabels("GOAWAY")
)

func codeLabels(frame string) []string {
	var l []string
	for c := xhttp2.ErrCodeNo; c <= xhttp2.ErrCodeHTTP11Required; c++ {
		l = append(l, frame+" "+c.String())
	}
	return l
}

// codeLabel returns the label for code from labels ("RST_STREAM CANCEL"),
// or the frame's name alone for a code outside the RFC's.
func codeLabel(labels []string, code xhttp2.ErrCode) string {
	if int(code) < len(labels) {
		return labels[code]
	}
	return labels[0][:len(labels[0])-len(" NO_ERROR")]
}

// frame is what parseFrame reads from the payload of a frame of a type
// the decoder holds (HEADERS to CONTINUATION, DATA aside). Its slices
// point into the payload.
type frame struct {
	frag     []byte         // HEADERS, PUSH_PROMISE, CONTINUATION: the header block fragment
	promise  uint32         // PUSH_PROMISE: the promised stream
	code     xhttp2.ErrCode // RST_STREAM, GOAWAY
	inc      uint32         // WINDOW_UPDATE: the increment
	settings []byte         // SETTINGS: the 6-byte settings
}

// parseFrame reads the payload p of a frame with header fh, in place, and
// reports whether it is well formed. It accepts exactly what x/net's
// Framer.ReadFrame accepts for these types (with AllowIllegalReads: the
// order of frames is checked by the decoder), which a differential fuzz
// test checks; unlike ReadFrame it neither copies nor allocates.
func parseFrame(fh frameHeader, p []byte) (frame, bool) {
	var f frame
	ok := true
	switch fh.typ {
	case xhttp2.FrameHeaders:
		f.frag, ok = headersFragment(fh, p)
	case xhttp2.FramePriority:
		ok = fh.stream != 0 && len(p) == 5
	case xhttp2.FrameRSTStream:
		ok = fh.stream != 0 && len(p) == 4
		if ok {
			f.code = xhttp2.ErrCode(binary.BigEndian.Uint32(p))
		}
	case xhttp2.FrameSettings:
		ok = settingsOK(fh, p)
		f.settings = p
	case xhttp2.FramePushPromise:
		f.frag, f.promise, ok = pushFragment(fh, p)
	case xhttp2.FramePing:
		ok = fh.stream == 0 && len(p) == 8
	case xhttp2.FrameGoAway:
		ok = fh.stream == 0 && len(p) >= 8
		if ok {
			f.code = xhttp2.ErrCode(binary.BigEndian.Uint32(p[4:]))
		}
	case xhttp2.FrameWindowUpdate:
		if ok = len(p) == 4; ok {
			f.inc = binary.BigEndian.Uint32(p) & (1<<31 - 1)
			ok = f.inc != 0
		}
	case xhttp2.FrameContinuation:
		f.frag, ok = p, fh.stream != 0
	default:
		ok = false
	}
	return f, ok
}

// headersFragment returns a HEADERS frame's header block fragment: the
// payload without its padding and priority fields.
func headersFragment(fh frameHeader, p []byte) ([]byte, bool) {
	if fh.stream == 0 {
		return nil, false
	}
	pad := 0
	if fh.flags&fPadded != 0 {
		if len(p) < 1 {
			return nil, false
		}
		pad, p = int(p[0]), p[1:]
	}
	if fh.flags&fPriority != 0 {
		if len(p) < 5 {
			return nil, false
		}
		p = p[5:]
	}
	if pad > len(p) {
		return nil, false
	}
	return p[:len(p)-pad], true
}

// pushFragment returns a PUSH_PROMISE frame's header block fragment and
// promised stream id.
func pushFragment(fh frameHeader, p []byte) ([]byte, uint32, bool) {
	if fh.stream == 0 {
		return nil, 0, false
	}
	pad := 0
	if fh.flags&fPadded != 0 {
		if len(p) < 1 {
			return nil, 0, false
		}
		pad, p = int(p[0]), p[1:]
	}
	if len(p) < 4 {
		return nil, 0, false
	}
	id := binary.BigEndian.Uint32(p) & (1<<31 - 1)
	p = p[4:]
	if pad > len(p) {
		return nil, 0, false
	}
	return p[:len(p)-pad], id, true
}

// settingsOK checks a SETTINGS frame: on stream 0, whole settings, empty
// when an acknowledgement, and an initial window size (its first
// occurrence) of at most 2^31-1.
func settingsOK(fh frameHeader, p []byte) bool {
	if fh.flags&fAck != 0 && len(p) > 0 || fh.stream != 0 || len(p)%6 != 0 {
		return false
	}
	for i := 0; i+6 <= len(p); i += 6 {
		if xhttp2.SettingID(binary.BigEndian.Uint16(p[i:])) == xhttp2.SettingInitialWindowSize {
			return binary.BigEndian.Uint32(p[i+2:]) <= 1<<31-1
		}
	}
	return true
}
