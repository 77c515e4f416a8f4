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
	if h.reserved || h.length > maxLen || maxStream != 0 && h.stream > maxStream {
		return false
	}
	onStream := h.stream != 0
	switch h.typ {
	case xhttp2.FrameData:
		return onStream && h.flags&^(fEndStream|fPadded) == 0
	case xhttp2.FrameHeaders:
		return onStream && h.flags&^(fEndStream|fEndHeaders|fPadded|fPriority) == 0
	case xhttp2.FramePriority:
		return onStream && h.length == 5 && h.flags == 0
	case xhttp2.FrameRSTStream:
		return onStream && h.length == 4 && h.flags == 0
	case xhttp2.FrameSettings:
		if h.flags == fAck {
			return !onStream && h.length == 0
		}
		return !onStream && h.flags == 0 && h.length%6 == 0
	case xhttp2.FramePushPromise:
		return onStream && h.flags&^(fEndHeaders|fPadded) == 0 && h.length >= 4
	case xhttp2.FramePing:
		return !onStream && h.length == 8 && h.flags&^fAck == 0
	case xhttp2.FrameGoAway:
		return !onStream && h.length >= 8 && h.flags == 0
	case xhttp2.FrameWindowUpdate:
		return h.length == 4 && h.flags == 0
	case xhttp2.FrameContinuation:
		return onStream && h.flags&^fEndHeaders == 0
	}
	return false
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
