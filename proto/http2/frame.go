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
