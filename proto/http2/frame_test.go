package http2

import (
	"bytes"
	"encoding/binary"
	"testing"

	xhttp2 "golang.org/x/net/http2"
)

// xnetFrame reads one frame with x/net's Framer, configured as the
// decoder once used it, and returns what parseFrame should return.
func xnetFrame(hdr, payload []byte) (frame, bool) {
	fr := xhttp2.NewFramer(nil, bytes.NewReader(append(hdr[:len(hdr):len(hdr)], payload...)))
	fr.AllowIllegalReads = true
	fr.SetMaxReadFrameSize(absoluteMax)
	got, err := fr.ReadFrame()
	if err != nil {
		return frame{}, false
	}
	var f frame
	switch g := got.(type) {
	case *xhttp2.HeadersFrame:
		f.frag = g.HeaderBlockFragment()
	case *xhttp2.ContinuationFrame:
		f.frag = g.HeaderBlockFragment()
	case *xhttp2.PushPromiseFrame:
		f.frag, f.promise = g.HeaderBlockFragment(), g.PromiseID
	case *xhttp2.RSTStreamFrame:
		f.code = g.ErrCode
	case *xhttp2.GoAwayFrame:
		f.code = g.ErrCode
	case *xhttp2.WindowUpdateFrame:
		f.inc = g.Increment
	case *xhttp2.SettingsFrame:
		for i := range g.NumSettings() {
			s := g.Setting(i)
			f.settings = binary.BigEndian.AppendUint16(f.settings, uint16(s.ID))
			f.settings = binary.BigEndian.AppendUint32(f.settings, s.Val)
		}
	}
	return f, true
}

// FuzzParseFrame checks parseFrame against x/net's Framer: the same
// frames accepted, the same fields read.
func FuzzParseFrame(f *testing.F) {
	f.Add(byte(xhttp2.FrameHeaders), byte(fEndHeaders|fPadded|fPriority), uint32(1), []byte{2, 0, 0, 0, 3, 16, 0x82, 0x84, 0, 0})
	f.Add(byte(xhttp2.FrameHeaders), byte(fPadded), uint32(3), []byte{5, 0x82})
	f.Add(byte(xhttp2.FrameContinuation), byte(fEndHeaders), uint32(1), []byte{0x82})
	f.Add(byte(xhttp2.FramePushPromise), byte(fPadded|fEndHeaders), uint32(1), []byte{1, 0, 0, 0, 2, 0x82, 0})
	f.Add(byte(xhttp2.FrameSettings), byte(0), uint32(0), []byte{0, 4, 0x80, 0, 0, 0, 0, 1, 0, 0, 0x10, 0})
	f.Add(byte(xhttp2.FrameSettings), byte(fAck), uint32(0), []byte{})
	f.Add(byte(xhttp2.FramePing), byte(fAck), uint32(0), []byte{1, 2, 3, 4, 5, 6, 7, 8})
	f.Add(byte(xhttp2.FrameGoAway), byte(0), uint32(0), []byte{0, 0, 0, 7, 0, 0, 0, 2, 'x'})
	f.Add(byte(xhttp2.FrameWindowUpdate), byte(0), uint32(5), []byte{0x80, 0, 0, 0})
	f.Add(byte(xhttp2.FrameWindowUpdate), byte(0), uint32(0), []byte{0, 0, 1, 0})
	f.Add(byte(xhttp2.FrameRSTStream), byte(0), uint32(5), []byte{0, 0, 0, 8})
	f.Add(byte(xhttp2.FramePriority), byte(0), uint32(5), []byte{0x80, 0, 0, 1, 15})
	f.Fuzz(func(t *testing.T, typ, flags byte, stream uint32, payload []byte) {
		typ = 1 + typ%9 // the types the decoder holds and parses
		if len(payload) > 1<<16 {
			payload = payload[:1<<16]
		}
		hdr := []byte{byte(len(payload) >> 16), byte(len(payload) >> 8), byte(len(payload)), typ, flags, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(hdr[5:], stream)
		want, wantOK := xnetFrame(hdr, payload)
		got, ok := parseFrame(parseHeader(hdr), payload)
		if ok != wantOK {
			t.Fatalf("type %d flags %#x stream %d payload %x: ok %v, x/net %v", typ, flags, stream, payload, ok, wantOK)
		}
		if !ok {
			return
		}
		if !bytes.Equal(got.frag, want.frag) || got.promise != want.promise || got.code != want.code ||
			got.inc != want.inc || !bytes.Equal(got.settings, want.settings) {
			t.Fatalf("type %d flags %#x stream %d payload %x: %+v, x/net %+v", typ, flags, stream, payload, got, want)
		}
	})
}
