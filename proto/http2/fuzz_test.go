package http2

import (
	"encoding/binary"
	"reflect"
	"testing"

	xhttp2 "golang.org/x/net/http2"

	"github.com/wirepath/wirepath/proto"

	"github.com/wirepath/wirepath/internal/fuzzseed"
)

// A fuzz script is a config byte, then operations: an op byte (bit 0:
// the direction, bit 1: a gap rather than bytes), a 2-byte length, and
// for bytes that many bytes.
const (
	opServer = 1
	opGap    = 2
)

// Config byte bits.
const (
	cfgPrior    = 1 // Mode PriorKnowledge
	cfgEvidence = 2 // Evidence on
	cfgSmall    = 4 // tiny MaxBuffered, MaxStreams and MaxHeaderList
)

// script encodes a conversation as a fuzz script, with the bytes
// [gapFrom, gapFrom+gapN) of direction gapDir replaced by a gap.
func script(cfg byte, events []event, gapDir proto.Dir, gapFrom, gapN int) []byte {
	out := []byte{cfg}
	op := func(code byte, b []byte, n int) {
		out = append(out, code, byte(n>>8), byte(n))
		out = append(out, b...)
	}
	var off [2]int
	for _, e := range events {
		b, o := e.data, off[e.dir]
		off[e.dir] += len(b)
		code := byte(e.dir)
		if gapN == 0 || e.dir != gapDir || o+len(b) <= gapFrom || o >= gapFrom+gapN {
			op(code, b, len(b))
			continue
		}
		if o < gapFrom {
			op(code, b[:gapFrom-o], gapFrom-o)
		}
		if o <= gapFrom {
			op(code|opGap, nil, gapN)
		}
		if end := o + len(b); end > gapFrom+gapN {
			op(code, b[gapFrom+gapN-o:], end-gapFrom-gapN)
		}
	}
	return out
}

// runScript runs a fuzz script, feeding bytes in pieces of at most chunk
// bytes (0: whole), checking the accounting and every Unit on the way.
func runScript(t *testing.T, in []byte, chunk int) ([]proto.Unit, Stats) {
	if len(in) == 0 {
		return nil, Stats{}
	}
	cfg := DefaultConfig()
	if in[0]&cfgPrior != 0 {
		cfg.Mode = PriorKnowledge
	}
	cfg.Evidence = in[0]&cfgEvidence != 0
	if in[0]&cfgSmall != 0 {
		cfg.MaxBuffered, cfg.MaxStreams, cfg.MaxHeaderList = 64, 2, 100
	}
	d := New(cfg)
	var off [2]int64
	var units []proto.Unit
	for b := in[1:]; len(b) >= 3; {
		code, n := b[0], int(binary.BigEndian.Uint16(b[1:]))
		b = b[3:]
		dir := proto.Dir(code & opServer)
		if code&opGap != 0 {
			d.Gap(dir, off[dir], int64(n))
			off[dir] += int64(n)
		} else {
			data := b[:min(n, len(b))]
			b = b[len(data):]
			for len(data) > 0 {
				k := len(data)
				if chunk > 0 {
					k = min(k, chunk)
				}
				d.Feed(dir, off[dir], data[:k])
				off[dir] += int64(k)
				data = data[k:]
			}
		}
		units = checkUnits(t, d, units, off)
	}
	d.Close()
	units = checkUnits(t, d, units, off)
	return units, d.Stats()
}

// checkUnits drains d and checks its new Units and its accounting.
func checkUnits(t *testing.T, d *Decoder, units []proto.Unit, off [2]int64) []proto.Unit {
	n := len(units)
	units = drain(d, units)
	for _, u := range units[n:] {
		if u.Dir > proto.FromServer || u.Start < 0 || u.Start >= u.End || u.End > off[u.Dir] ||
			u.Bytes <= 0 || u.Bytes > u.End-u.Start || u.Kind < proto.KindRequest || u.Kind > proto.KindControl {
			t.Fatalf("bad unit %s(fed %v)", format([]proto.Unit{u}), off)
		}
		if (u.Kind == proto.KindRequest || u.Kind == proto.KindResponse) && (u.Key == 0 || u.Key >= 1<<31) {
			t.Fatalf("bad key: %s", format([]proto.Unit{u}))
		}
	}
	st := d.Stats()
	if err := st.Check(); err != nil {
		t.Fatal(err)
	}
	for i := range d.dirs {
		s := &d.dirs[i]
		if len(s.buf) > d.cfg.MaxBuffered || len(s.scan) > resyncWindow || len(s.hold) > holdMax || d.streams.len() > d.cfg.MaxStreams {
			t.Fatalf("bounds: buf %d scan %d hold %d streams %d", len(s.buf), len(s.scan), len(s.hold), d.streams.len())
		}
	}
	return units
}

// FuzzDecoder checks that any input keeps the accounting balanced, the
// Units well-formed and within what was fed, the buffers bounded, a
// stream reported at most once per direction, and the result the same
// whether bytes come whole or one at a time.
func FuzzDecoder(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	fuzzseed.Files(f, "flows/testdata/*.pcap*", "proto/tls/testdata/*.conn")
	five := fiveCalls()
	hdr1 := int(offsetOf(five, 0, xhttp2.FrameHeaders, 1))
	data1 := int(offsetOf(five, 1, xhttp2.FrameData, 1))
	// Five clean calls: preface, SETTINGS, HPACK with a warm table, pairing.
	f.Add(script(0, five.events, 0, 0, 0))
	// The same with evidence and tiny limits: eviction, too-large frames, header list cap.
	f.Add(script(cfgEvidence|cfgSmall, five.events, 0, 0, 0))
	// A gap inside a DATA payload: payloadGap's DATA branch, the stream kept.
	f.Add(script(0, five.events, 0, int(offsetOf(five, 0, xhttp2.FrameData, 2))+10, 4))
	// A gap inside a request's HEADERS: lostFrame, the table poisoned.
	f.Add(script(0, five.events, 0, hdr1+10, 3))
	// A gap across a frame boundary: loseFraming, resync and search.
	f.Add(script(0, five.events, 1, data1+20, 15))
	// Prior knowledge from the middle of the connection: startMidway, resync.
	f.Add(script(cfgPrior, five.events[3:], 0, 0, 0))
	// HTTP/1.1: the preface does not match, reject.
	f.Add(script(0, []event{{0, []byte("GET / HTTP/1.1\r\nHost: a\r\n\r\n")}, {1, []byte("HTTP/1.1 200 OK\r\n\r\n")}}, 0, 0, 0))
	// Prior knowledge, HTTP/1.1: the first frame header decides, reject.
	f.Add(script(cfgPrior, []event{{0, []byte("GET / HTTP/1.1\r\nHost: a\r\n\r\n")}}, 0, 0, 0))
	// CONTINUATION, RST_STREAM, PUSH_PROMISE, PING, GOAWAY: their branches.
	c := newConv(true)
	blk := c.block(0, ":method: GET", ":scheme: https", ":authority: a", ":path: /long/path")
	must(c.fr[0].WriteHeaders(xhttp2.HeadersFrameParam{StreamID: 1, BlockFragment: blk[:3], EndStream: true}))
	must(c.fr[0].WriteContinuation(1, true, blk[3:]))
	c.flush(0)
	must(c.fr[1].WritePushPromise(xhttp2.PushPromiseParam{StreamID: 1, PromiseID: 2, EndHeaders: true, BlockFragment: c.block(1, ":method: GET", ":path: /p")}))
	c.flush(1)
	must(c.fr[1].WriteRSTStream(1, xhttp2.ErrCodeCancel))
	must(c.fr[1].WritePing(false, [8]byte{1}))
	must(c.fr[1].WriteGoAway(1, xhttp2.ErrCodeNo, nil))
	c.flush(1)
	f.Add(script(cfgEvidence, c.events, 0, 0, 0))
	// A HEADERS without its CONTINUATION: abandonBlock.
	c = newConv(true)
	must(c.fr[0].WriteHeaders(xhttp2.HeadersFrameParam{StreamID: 1, BlockFragment: c.block(0, ":method: GET")}))
	must(c.fr[0].WriteData(1, true, []byte("x")))
	c.flush(0)
	f.Add(script(0, c.events, 0, 0, 0))

	f.Fuzz(func(t *testing.T, in []byte) {
		whole, st1 := runScript(t, in, 0)
		bytewise, st2 := runScript(t, in, 1)
		if !reflect.DeepEqual(whole, bytewise) {
			t.Fatalf("whole:\n%s\nbyte by byte:\n%s", format(whole), format(bytewise))
		}
		if st1 != st2 {
			t.Fatalf("stats differ:\n%+v\n%+v", st1, st2)
		}
		seen := map[[2]uint64]bool{}
		for _, u := range whole {
			if u.Kind == proto.KindRequest || u.Kind == proto.KindResponse {
				k := [2]uint64{uint64(u.Dir), u.Key}
				if seen[k] {
					t.Fatalf("stream %d reported twice in %s", u.Key, u.Dir)
				}
				seen[k] = true
			}
		}
	})
}
