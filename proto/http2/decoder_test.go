package http2

import (
	"encoding/hex"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	xhttp2 "golang.org/x/net/http2"

	"github.com/wirepath/wirepath/proto"
)

func TestConversations(t *testing.T) {
	tests := []struct {
		name  string
		build func(c *conv)
		want  []string // application Units, briefly, in the order completed
	}{
		{"get", func(c *conv) {
			c.headers(proto.FromClient, 1, true, ":method: GET", ":scheme: http", ":authority: a", ":path: /item/42?x=1")
			c.headers(proto.FromServer, 1, false, ":status: 200")
			c.data(proto.FromServer, 1, true, 100)
		}, []string{`client request 1 "GET /item/{id}" 0`, `server response 1 "200" 200`}},
		{"grpc unary", func(c *conv) {
			c.unary(1, "/hotel.Search/Nearby", 0)
			c.unary(3, "/hotel.Search/Nearby", 5)
		}, []string{
			`client request 1 "grpc /hotel.Search/Nearby" 0`, `server response 1 "grpc OK" 0`,
			`client request 3 "grpc /hotel.Search/Nearby" 0`, `server response 3 "grpc NOT_FOUND" 5`}},
		{"trailers only", func(c *conv) {
			c.request(1, "/a.B/C", true)
			c.headers(proto.FromServer, 1, true, ":status: 200", "content-type: application/grpc", "grpc-status: 14")
		}, []string{`client request 1 "grpc /a.B/C" 0`, `server response 1 "grpc UNAVAILABLE" 14`}},
		{"interleaved streaming", func(c *conv) {
			c.request(1, "/s.S/ServerStream", false)
			c.request(3, "/s.S/ClientStream", false)
			c.data(proto.FromClient, 1, true, 10)
			c.data(proto.FromClient, 3, false, 10)
			c.headers(proto.FromServer, 1, false, ":status: 200", "content-type: application/grpc")
			c.data(proto.FromServer, 1, false, 10)
			c.data(proto.FromClient, 3, false, 10)
			c.data(proto.FromServer, 1, false, 10)
			c.data(proto.FromClient, 3, true, 10)
			c.headers(proto.FromServer, 3, false, ":status: 200", "content-type: application/grpc")
			c.data(proto.FromServer, 3, false, 10)
			c.headers(proto.FromServer, 3, true, "grpc-status: 0")
			c.data(proto.FromServer, 1, false, 10)
			c.headers(proto.FromServer, 1, true, "grpc-status: 0")
		}, []string{
			`client request 1 "grpc /s.S/ServerStream" 0`, `client request 3 "grpc /s.S/ClientStream" 0`,
			`server response 3 "grpc OK" 0`, `server response 1 "grpc OK" 0`}},
		{"continuation", func(c *conv) {
			blk := c.block(proto.FromClient, ":method: GET", ":scheme: https", ":authority: a", ":path: /long/path")
			must(c.fr[0].WriteHeaders(xhttp2.HeadersFrameParam{StreamID: 1, BlockFragment: blk[:3], EndStream: true}))
			must(c.fr[0].WriteContinuation(1, false, blk[3:6]))
			must(c.fr[0].WriteContinuation(1, true, blk[6:]))
			c.flush(0)
			c.headers(proto.FromServer, 1, true, ":status: 404")
		}, []string{`client request 1 "GET /long/path" 0`, `server response 1 "404" 404`}},
		{"reset by client", func(c *conv) {
			c.request(1, "/a.B/Slow", true)
			c.headers(proto.FromServer, 1, false, ":status: 200", "content-type: application/grpc")
			must(c.fr[0].WriteRSTStream(1, xhttp2.ErrCodeCancel))
			c.flush(0)
			c.data(proto.FromServer, 1, false, 10) // in flight: ignored
		}, []string{`client request 1 "grpc /a.B/Slow" 0`, `server response 1 "200 reset" 200`}},
		{"refused before any response", func(c *conv) {
			c.request(1, "/a.B/C", false)
			must(c.fr[1].WriteRSTStream(1, xhttp2.ErrCodeRefusedStream))
			c.flush(1)
		}, []string{`client request 1 "grpc /a.B/C reset" 0`}},
		{"push", func(c *conv) {
			c.headers(proto.FromClient, 1, true, ":method: GET", ":scheme: http", ":authority: a", ":path: /")
			must(c.fr[1].WritePushPromise(xhttp2.PushPromiseParam{StreamID: 1, PromiseID: 2, EndHeaders: true,
				BlockFragment: c.block(1, ":method: GET", ":scheme: http", ":authority: a", ":path: /style.css")}))
			c.flush(1)
			c.headers(proto.FromServer, 1, true, ":status: 200")
			c.headers(proto.FromServer, 2, true, ":status: 200")
		}, []string{`client request 1 "GET /" 0`, `server response 1 "200" 200`, `server one-way 0 "200" 200`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newConv(true)
			c.settings(proto.FromServer)
			c.settings(proto.FromClient)
			tt.build(c)
			for _, chunk := range []int{0, 1, 7} {
				units, st := decode(t, DefaultConfig(), c.events, chunk)
				var got []string
				for _, u := range appUnits(units) {
					got = append(got, brief(u))
				}
				if !slices.Equal(got, tt.want) {
					t.Fatalf("chunk %d: got\n%s\nwant\n%s\n%s", chunk, join(got), join(tt.want), format(units))
				}
				if st.FramesLost != 0 || st.HPACKPoisoned != 0 || st.Skipped != 0 {
					t.Errorf("chunk %d: losses on a clean conversation: %+v", chunk, st)
				}
			}
		})
	}
}

func join(s []string) string {
	out := ""
	for _, x := range s {
		out += "  " + x + "\n"
	}
	return out
}

func TestPlausibleHeader(t *testing.T) {
	c := newConv(false)
	c.settings(0, xhttp2.Setting{ID: xhttp2.SettingMaxFrameSize, Val: 1 << 20})
	must(c.fr[0].WriteSettingsAck())
	c.flush(0)
	c.request(1, "/a.B/C", false)
	c.data(0, 1, true, 10)
	must(c.fr[0].WritePriority(3, xhttp2.PriorityParam{StreamDep: 1, Weight: 5}))
	must(c.fr[0].WriteRSTStream(3, xhttp2.ErrCodeCancel))
	must(c.fr[0].WritePing(true, [8]byte{}))
	must(c.fr[0].WriteGoAway(7, xhttp2.ErrCodeNo, []byte("bye")))
	must(c.fr[0].WriteWindowUpdate(0, 100))
	must(c.fr[0].WriteWindowUpdate(1, 100))
	must(c.fr[0].WriteContinuation(1, true, []byte{0x82}))
	must(c.fr[0].WritePushPromise(xhttp2.PushPromiseParam{StreamID: 1, PromiseID: 2, EndHeaders: true, BlockFragment: []byte{0x82}}))
	c.flush(0)
	var all []byte
	for _, e := range c.events {
		all = append(all, e.data...)
	}
	n := 0
	for b := all; len(b) > 0; n++ {
		if !plausibleHeader(b, 1<<14, 100) {
			t.Errorf("frame %d (% x) not plausible", n, b[:headerLen])
		}
		b = b[headerLen+int(parseHeader(b).length):]
	}
	if n != 12 {
		t.Fatalf("%d frames", n)
	}
	for _, tt := range []struct {
		name string
		hdr  string
	}{
		{"unknown type", "000000 0a 00 00000000"},
		{"data on stream 0", "000001 00 00 00000000"},
		{"data with ACK-less undefined flag", "000001 00 02 00000001"},
		{"reserved bit", "000001 00 00 80000001"},
		{"too long", "004001 00 00 00000001"},
		{"stream beyond the window", "000001 00 00 00001000"},
		{"settings not a multiple of 6", "000005 04 00 00000000"},
		{"settings ack with payload", "000006 04 01 00000000"},
		{"settings on a stream", "000006 04 00 00000001"},
		{"ping of 7", "000007 06 00 00000000"},
		{"rst of 5", "000005 03 00 00000001"},
		{"goaway of 4", "000004 07 00 00000000"},
		{"push promise of 3", "000003 05 04 00000001"},
		{"short", "000001 00 00 0000"},
	} {
		b, err := hex.DecodeString(strings.ReplaceAll(tt.hdr, " ", ""))
		if err != nil {
			t.Fatal(err)
		}
		if plausibleHeader(b, 1<<14, 100) {
			t.Errorf("%s: % x plausible", tt.name, b)
		}
	}
}

// TestStreamTable runs random additions, deletions and look-ups of
// stream ids (runs of consecutive odd ids, as clients open them, and
// random ones) against a map.
func TestStreamTable(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	var tab streamTable
	ref := map[uint32]*stream{}
	next := uint32(1)
	for i := range 200000 {
		var id uint32
		if r.IntN(4) == 0 {
			id = uint32(r.IntN(4096))
		} else {
			id = next
			next += 2
		}
		switch op := r.IntN(3); {
		case op == 0 || len(ref) < 32 && op == 1:
			if ref[id] == nil && len(ref) < 1024 {
				st := &stream{id: id}
				ref[id] = st
				tab.put(st)
			}
		case op == 1:
			for k := range ref { // a random one of those held
				delete(ref, k)
				tab.del(k)
				break
			}
		default:
			tab.del(id)
			delete(ref, id)
		}
		if got, want := tab.get(id), ref[id]; got != want {
			t.Fatalf("op %d: get(%d) = %v, want %v", i, id, got, want)
		}
		if tab.len() != len(ref) {
			t.Fatalf("op %d: len %d, want %d", i, tab.len(), len(ref))
		}
		if i%1000 == 0 {
			for k, st := range ref {
				if tab.get(k) != st {
					t.Fatalf("op %d: stream %d lost", i, k)
				}
			}
		}
	}
	all := tab.all(nil)
	if len(all) != len(ref) {
		t.Fatalf("all: %d streams, want %d", len(all), len(ref))
	}
	for _, st := range all {
		if ref[st.id] != st {
			t.Fatalf("all: stream %d not held", st.id)
		}
	}
}
