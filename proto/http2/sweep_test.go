package http2

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"testing"

	xhttp2 "golang.org/x/net/http2"

	"github.com/wirepath/wirepath/proto"
	"github.com/wirepath/wirepath/proto/grpctest"
)

// This file checks that a loss anywhere in a real connection costs the
// messages it really cost and that every one of them is counted: on a
// recording of 33 gRPC calls made concurrently over one h2c connection
// by net/http (testdata/grpc33.rec, made by -record), each direction is
// cut at chosen places and then at every third byte, and the messages of
// the cut direction that are not reported must be exactly StreamsLost.

var record = flag.Bool("record", false, "record testdata/grpc33.rec again on loopback")

const recording = "testdata/grpc33.rec"

// writeRecording stores events: per event its direction (one byte), its
// length (four bytes, big-endian) and its bytes.
func writeRecording(path string, evs []event) error {
	var b bytes.Buffer
	for _, e := range evs {
		b.WriteByte(byte(e.dir))
		b.Write(binary.BigEndian.AppendUint32(nil, uint32(len(e.data))))
		b.Write(e.data)
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// readRecording reads what writeRecording stored.
func readRecording(t testing.TB, path string) []event {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var evs []event
	for off := 0; off < len(b); {
		if len(b)-off < 5 {
			t.Fatalf("%s: event header cut at byte %d", path, off)
		}
		n := int(binary.BigEndian.Uint32(b[off+1:]))
		if len(b)-off-5 < n {
			t.Fatalf("%s: event at byte %d: %d bytes, %d left", path, off, n, len(b)-off-5)
		}
		evs = append(evs, event{proto.Dir(b[off]), b[off+5 : off+5+n]})
		off += 5 + n
	}
	return evs
}

// recorded returns the recording, made again first with -record.
func recorded(t *testing.T) []event {
	if *record {
		rec, err := grpctest.Record(32)
		if err != nil {
			t.Fatal(err)
		}
		if err := writeRecording(recording, events(rec)); err != nil {
			t.Fatal(err)
		}
	}
	return readRecording(t, recording)
}

// frameAt is one frame of a direction's stream: its offset and header.
type frameAt struct {
	off int64
	fh  frameHeader
}

// layout returns the frames of dir's stream in a recording (after the
// client preface), and where each event of dir starts.
func layout(evs []event, dir proto.Dir) (frames []frameAt, starts []int64) {
	var all []byte
	for _, e := range evs {
		if e.dir == dir {
			starts = append(starts, int64(len(all)))
			all = append(all, e.data...)
		}
	}
	off := 0
	if dir == proto.FromClient {
		off = prefaceLen
	}
	for off+headerLen <= len(all) {
		fh := parseHeader(all[off:])
		frames = append(frames, frameAt{int64(off), fh})
		off += headerLen + int(fh.length)
	}
	return frames, starts
}

// nth returns the n-th frame (from 0) of type typ with a payload of at
// least four bytes.
func nth(frames []frameAt, typ xhttp2.FrameType, n int) frameAt {
	for _, f := range frames {
		if f.fh.typ == typ && f.fh.length >= 4 {
			if n == 0 {
				return f
			}
			n--
		}
	}
	panic(fmt.Sprintf("no frame %d of type %v", n, typ))
}

// checkCut decodes the recording with [from, from+n) of dir's stream
// lost and checks that the calls the cut direction no longer reports are
// the stream halves counted lost, that no message names a call that was
// not made, that the other direction lost nothing, and that the bytes
// balance. It returns the number of messages lost.
func checkCut(t *testing.T, evs []event, calls int, dir proto.Dir, from, n int64) int {
	t.Helper()
	d := New(DefaultConfig())
	units, st := decodeGapD(t, d, evs, dir, from, n)
	if d.State() != Active {
		return 0 // the client preface was cut: not taken for HTTP/2
	}
	var seen [2]map[uint64]bool
	for i := range seen {
		seen[i] = map[uint64]bool{}
	}
	for _, u := range appUnits(units) {
		if u.Key == 0 || u.Key%2 == 0 || u.Key > uint64(2*calls-1) || seen[u.Dir][u.Key] {
			t.Errorf("cut [%d,+%d) of %s: message %s", from, n, dir, brief(u))
		}
		seen[u.Dir][u.Key] = true
	}
	missing := calls - len(seen[dir])
	if int64(missing) != st.StreamsLost || len(seen[dir.Other()]) != calls {
		t.Errorf("cut [%d,+%d) of %s: %d messages of %d missing, %d counted lost; %d of the other side's\n%s",
			from, n, dir, missing, calls, st.StreamsLost, len(seen[dir.Other()]), format(appUnits(units)))
	}
	return missing
}

// TestLossClasses cuts the recording where each kind of loss falls.
func TestLossClasses(t *testing.T) {
	evs := recorded(t)
	client, cstarts := layout(evs, proto.FromClient)
	server, sstarts := layout(evs, proto.FromServer)
	var total [2]int64
	for _, e := range evs {
		total[e.dir] += int64(len(e.data))
	}
	bw, bwLen := largest(client, cstarts, total[proto.FromClient])
	br, brLen := largest(server, sstarts, total[proto.FromServer])
	ch, sh := nth(client, xhttp2.FrameHeaders, 6), nth(server, xhttp2.FrameHeaders, 6)
	cd, sd := nth(client, xhttp2.FrameData, 6), nth(server, xhttp2.FrameData, 6)
	lastReq := client[len(client)-1].off
	for _, f := range client {
		if f.fh.typ == xhttp2.FrameHeaders {
			lastReq = f.off
		}
	}
	// The server's last frame to begin before the client's last request:
	// streams open after a loss there.
	early := server[0]
	for _, f := range server {
		if f.off < serverBefore(evs, lastReq) {
			early = f
		}
	}
	const some, none, either = 1, 0, -1
	tests := []struct {
		name    string
		dir     proto.Dir
		from, n int64
		lost    int // whether messages must be lost
	}{
		{"request HEADERS block", proto.FromClient, ch.off + headerLen + 1, 2, some},
		{"response HEADERS block", proto.FromServer, sh.off + headerLen + 1, 2, some},
		// The stream then begins at a later frame, marked incomplete,
		// or is lost (whichever the order of both sides' frames says).
		{"request HEADERS frame header", proto.FromClient, ch.off + 3, 2, either},
		{"response HEADERS frame header", proto.FromServer, sh.off + 3, 2, either},
		{"a response's frame header, requests still to come", proto.FromServer, early.off, 1, either},
		{"request DATA payload", proto.FromClient, cd.off + headerLen + 1, 3, none},
		{"response DATA payload", proto.FromServer, sd.off + headerLen + 1, 3, none},
		{"requests across frames", proto.FromClient, ch.off + headerLen, 120, some},
		{"responses across frames", proto.FromServer, sh.off + headerLen, 300, some},
		{"the client's busiest write", proto.FromClient, bw, bwLen, either},
		{"the server's busiest read (frames of several streams)", proto.FromServer, br, brLen, either},
		{"the client's first frames", proto.FromClient, prefaceLen + 1, 160, either},
		{"the server's first frames", proto.FromServer, 0, 1, either},
		{"the client's last requests", proto.FromClient, lastReq + 1, total[proto.FromClient], some},
		{"the server's last frames", proto.FromServer, server[len(server)-6].off + 1, total[proto.FromServer], some},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lost := checkCut(t, evs, 33, tt.dir, tt.from, tt.n)
			if tt.lost == some && lost == 0 || tt.lost == none && lost > 0 {
				t.Errorf("%d messages lost", lost)
			}
		})
	}
}

// serverBefore returns how many of the server's bytes come before the
// client's byte at offset off in the recording.
func serverBefore(evs []event, off int64) int64 {
	var n [2]int64
	for _, e := range evs {
		if e.dir == proto.FromClient && n[0]+int64(len(e.data)) > off {
			break
		}
		n[e.dir] += int64(len(e.data))
	}
	return n[proto.FromServer]
}

// largest returns the offset and length of the event of a direction
// (starts: where each begins; total: the direction's length) that holds
// frames of the most streams, the longest of them.
func largest(frames []frameAt, starts []int64, total int64) (off, n int64) {
	most := 0
	for i, start := range starts {
		end := total
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		ids := map[uint32]bool{}
		for _, f := range frames {
			if f.off >= start && f.off < end && f.fh.stream != 0 {
				ids[f.fh.stream] = true
			}
		}
		if len(ids) > most || len(ids) == most && end-start > n {
			most, off, n = len(ids), start, end-start
		}
	}
	return off, n
}

// TestLossSweep cuts each direction of the recording at every third byte,
// by losses of several lengths.
func TestLossSweep(t *testing.T) {
	evs := recorded(t)
	var total [2]int64
	for _, e := range evs {
		total[e.dir] += int64(len(e.data))
	}
	step := int64(3)
	if testing.Short() {
		step = 31
	}
	for dir := proto.FromClient; dir <= proto.FromServer; dir++ {
		for _, n := range []int64{1, 9, 40, 300, 1500} {
			for from := int64(0); from < total[dir]; from += step {
				checkCut(t, evs, 33, dir, from, n)
				if t.Failed() {
					return
				}
			}
		}
	}
}
