package http2

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	xhttp2 "golang.org/x/net/http2"

	"github.com/wirepath/wirepath/proto"
)

// decodeBoth decodes events with the block memo and without it and
// fails when the Units (Evidence included) or the Stats differ; it
// returns the first decoder's blocks taken by the memo, per direction.
func decodeBoth(t *testing.T, cfg Config, events []event, chunk int) [2]int {
	t.Helper()
	run := func(off bool) ([]proto.Unit, Stats, [2]int) {
		noBlockMemo = off
		defer func() { noBlockMemo = false }()
		d := New(cfg)
		var o [2]int64
		var units []proto.Unit
		for _, e := range events {
			feedEvent(d, &o, e, chunk)
			units = drain(d, units)
		}
		d.Close()
		units = drain(d, units)
		return units, d.Stats(), [2]int{d.dirs[0].blockHits, d.dirs[1].blockHits}
	}
	want, wantSt, none := run(true)
	got, gotSt, hits := run(false)
	if none != [2]int{} {
		t.Fatalf("blocks taken with the memo off: %v", none)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("with the block memo:\n%s\nfield by field:\n%s", format(got), format(want))
	}
	if gotSt != wantSt {
		t.Fatalf("stats with the block memo %+v, field by field %+v", gotSt, wantSt)
	}
	return hits
}

// respond writes a response of status (HEADERS, DATA, trailers) on id.
func respond(c *conv, id uint32, grpcStatus int, extra ...string) {
	c.headers(proto.FromServer, id, false, append([]string{":status: 200", "content-type: application/grpc"}, extra...)...)
	c.data(proto.FromServer, id, false, 30)
	c.headers(proto.FromServer, id, true, fmt.Sprintf("grpc-status: %d", grpcStatus))
}

// call writes a gRPC request on id and its response.
func call(c *conv, id uint32, path string, grpcStatus int, extra ...string) {
	c.headers(proto.FromClient, id, false, ":method: POST", ":scheme: http", ":path: "+path,
		":authority: search:8082", "content-type: application/grpc", "te: trailers")
	c.data(proto.FromClient, id, true, 20)
	respond(c, id, grpcStatus, extra...)
}

func TestBlockMemo(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(*Config)
		conv func(c *conv)
		// the least blocks the memo must take per direction
		minHits [2]int
	}{
		{"requests with fresh ids", nil, func(c *conv) {
			for i := range uint32(20) {
				id := 1 + 2*i
				c.headers(proto.FromClient, id, false, ":method: POST", ":scheme: http", ":path: /a.B/C",
					":authority: search:8082", "content-type: application/grpc", "te: trailers",
					fmt.Sprintf("traceparent: 00-%032x-%016x-01", 1000+i, i))
				c.data(proto.FromClient, id, true, 20)
				respond(c, id, 0)
			}
		}, [2]int{15, 30}},
		{"unary calls", nil, func(c *conv) {
			for i := range uint32(20) {
				call(c, 1+2*i, "/a.B/C", 0)
			}
		}, [2]int{15, 30}},
		{"statuses and paths alternate", nil, func(c *conv) {
			for i := range uint32(20) {
				call(c, 1+2*i, []string{"/a.B/C", "/a.B/D", "/x.Y/Z"}[i%3], int(i%2)*5)
			}
		}, [2]int{10, 30}},
		{"new entries move the indexes", nil, func(c *conv) {
			for i := range uint32(20) {
				var extra []string
				if i%4 == 3 {
					extra = []string{fmt.Sprintf("x-n: %d", i)}
				}
				call(c, 1+2*i, "/a.B/C", 0, extra...)
			}
		}, [2]int{10, 10}},
		{"entries evicted and added again", nil, func(c *conv) {
			// Each request adds a fresh traceparent (98 bytes): the
			// client's table of 4 KiB evicts the common entries every
			// forty calls or so, and the encoder adds them again; the
			// runs naming them are then taken from the fields' memos
			// (takeRun) rather than decoded.
			for i := range uint32(200) {
				id := 1 + 2*i
				c.headers(proto.FromClient, id, false, ":method: POST", ":scheme: http", ":path: "+[]string{"/a.B/C", "/a.B/D"}[i%2],
					":authority: search:8082", "content-type: application/grpc", "te: trailers",
					fmt.Sprintf("traceparent: 00-%032x-%016x-01", 1000+i, i))
				c.data(proto.FromClient, id, true, 20)
				respond(c, id, 0)
			}
		}, [2]int{195, 390}},
		{"table size updates", nil, func(c *conv) {
			for i := range uint32(20) {
				if i%5 == 4 {
					c.enc[proto.FromServer].SetMaxDynamicTableSize(uint32(64 * (i%3 + 1)))
				}
				call(c, 1+2*i, "/a.B/C", 0)
			}
		}, [2]int{15, 5}},
		{"header list limit", func(cfg *Config) { cfg.MaxHeaderList = 120 }, func(c *conv) {
			for i := range uint32(10) {
				call(c, 1+2*i, "/a.B/C", 0)
			}
		}, [2]int{0, 5}},
		{"no evidence", func(cfg *Config) { cfg.Evidence = false }, func(c *conv) {
			for i := range uint32(10) {
				call(c, 1+2*i, "/a.B/C", 0)
			}
		}, [2]int{5, 10}},
		{"reset streams", nil, func(c *conv) {
			for i := range uint32(10) {
				id := 1 + 2*i
				c.headers(proto.FromClient, id, false, ":method: POST", ":path: /a.B/C", "content-type: application/grpc")
				if i%2 == 1 {
					must(c.fr[1].WriteRSTStream(id, xhttp2.ErrCodeCancel))
					c.flush(1)
				}
				respond(c, id, 0)
			}
		}, [2]int{5, 5}},
	} {
		for _, chunk := range []int{0, 7} {
			t.Run(fmt.Sprintf("%s/chunk=%d", tc.name, chunk), func(t *testing.T) {
				c := newConv(true)
				c.settings(proto.FromServer)
				c.settings(proto.FromClient)
				tc.conv(c)
				cfg := DefaultConfig()
				cfg.Evidence = true
				if tc.cfg != nil {
					tc.cfg(&cfg)
				}
				hits := decodeBoth(t, cfg, c.events, chunk)
				for dir := range hits {
					if hits[dir] < tc.minHits[dir] {
						t.Errorf("%s: %d blocks taken by the memo, want at least %d", proto.Dir(dir), hits[dir], tc.minHits[dir])
					}
				}
			})
		}
	}
}

// TestBlockMemoLoss holds the memo to decoding field by field where a
// gap poisons the server's table and a size update to 0 recovers it.
func TestBlockMemoLoss(t *testing.T) {
	c := newConv(true)
	c.settings(proto.FromServer)
	c.settings(proto.FromClient)
	for i := range uint32(6) {
		call(c, 1+2*i, "/a.B/C", 0)
	}
	c.headers(proto.FromClient, 13, false, ":method: POST", ":path: /a.B/C", "content-type: application/grpc")
	c.headers(proto.FromServer, 13, false, ":status: 200", "content-type: application/grpc", "x-lost: a long value that the gap hits")
	cut := int(offsetOf(c, proto.FromServer, xhttp2.FrameHeaders, 12)) + headerLen + 3
	c.enc[proto.FromServer].SetMaxDynamicTableSize(0)
	c.enc[proto.FromServer].SetMaxDynamicTableSize(4096)
	for i := range uint32(6) {
		call(c, 15+2*i, "/a.B/C", 0)
	}
	in := script(cfgEvidence, c.events, proto.FromServer, cut, 4)
	for _, chunk := range []int{0, 1} {
		noBlockMemo = true
		want, wantSt := runScript(t, in, chunk)
		noBlockMemo = false
		got, gotSt := runScript(t, in, chunk)
		if !reflect.DeepEqual(got, want) || gotSt != wantSt {
			t.Fatalf("chunk %d: with the block memo:\n%s%+v\nfield by field:\n%s%+v", chunk, format(got), gotSt, format(want), wantSt)
		}
		if wantSt.HPACKPoisoned == 0 || wantSt.HPACKRecovered == 0 {
			t.Fatalf("the gap did not poison and recover the table: %+v", wantSt)
		}
	}
}

// FuzzBlockMemo checks that the block memo changes nothing: any script's
// Units and Stats are those of decoding every block field by field.
func FuzzBlockMemo(f *testing.F) {
	c := newConv(true)
	c.settings(proto.FromServer)
	c.settings(proto.FromClient)
	for i := range uint32(8) {
		var extra []string
		if i == 5 {
			extra = []string{"x-n: 1"}
		}
		call(c, 1+2*i, []string{"/a.B/C", "/a.B/D"}[i%2], int(i%3), extra...)
	}
	f.Add(script(cfgEvidence, c.events, 0, 0, 0))
	f.Add(script(0, c.events, 0, 0, 0))
	f.Add(script(cfgEvidence|cfgSmall, c.events, 0, 0, 0))
	f.Add(script(cfgEvidence, c.events, proto.FromServer, int(offsetOf(c, proto.FromServer, xhttp2.FrameHeaders, 4))+10, 3))
	f.Fuzz(func(t *testing.T, in []byte) {
		noBlockMemo = true
		want, wantSt := runScript(t, in, 0)
		noBlockMemo = false
		got, gotSt := runScript(t, in, 0)
		if !reflect.DeepEqual(got, want) || gotSt != wantSt {
			t.Fatalf("with the block memo:\n%s%+v\nfield by field:\n%s%+v", format(got), gotSt, format(want), wantSt)
		}
	})
}

// TestBlockRun checks the runs blockHit looks for: one-byte indexed
// fields naming an entry of the tables, up to maxMemoRun of them.
func TestBlockRun(t *testing.T) {
	cfg := DefaultConfig()
	d := New(cfg)
	s := &d.dirs[proto.FromServer]
	s.hp.add("x-a", "1") // index 62
	s.hp.add("x-b", "2") // index 62, x-a now 63
	a, b := uint64(firstDynamicRef), uint64(firstDynamicRef+1)
	for _, tc := range []struct {
		in   []byte
		refs []uint64
	}{
		{nil, nil},
		{[]byte{0x88}, []uint64{8}},
		{[]byte{0x88, 0xbe, 0xbf}, []uint64{8, b, a}},
		{[]byte{0x88, 0xc0}, []uint64{8}}, // index 64: no such entry
		{[]byte{0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89}, []uint64{1, 2, 3, 4, 5, 6, 7, 8}},
		{[]byte{0x80}, nil},                     // index 0
		{[]byte{0xff, 0x01}, nil},               // a two-byte index
		{[]byte{0x88, 0x40, 0x01}, []uint64{8}}, // a literal
		{[]byte{0x20, 0x88}, nil},               // a size update
		{[]byte{0xbe, 0x0f, 0x2f}, []uint64{b}}, // a literal without indexing
	} {
		var r blockRun
		s.run(tc.in, &r)
		var want [maxMemoRun]uint64
		copy(want[:], tc.refs)
		if r.n != len(tc.refs) || r.refs != want {
			t.Errorf("run(%x) = %v (%d), want %v", tc.in, r.refs, r.n, tc.refs)
		}
	}
}

// TestGRPCType holds grpcType, which knows the content-type it found
// gRPC's last by its pointer, to strings.HasPrefix.
func TestGRPCType(t *testing.T) {
	d := New(DefaultConfig())
	grpc := strings.Clone("application/grpc")
	for _, tc := range []struct {
		ct   string
		want bool
	}{
		{"", false},
		{grpc, true},
		{grpc, true}, // by its pointer
		{strings.Clone("application/grpc"), true},
		{"application/grpc+proto", true},
		{"application/json", false},
		{"application/grpX", false}, // as long as the one remembered
		{"", false},
		{"text/plain", false},
		{grpc, true},
	} {
		if got := d.grpcType(tc.ct); got != tc.want {
			t.Errorf("grpcType(%q) = %v, want %v", tc.ct, got, tc.want)
		}
	}
}

// TestFirstBytes holds firstBytes to a loop over the first eight bytes,
// for every length up to ten.
func TestFirstBytes(t *testing.T) {
	b := []byte{0x81, 0x02, 0xf3, 0x44, 0x05, 0xa6, 0x77, 0x08, 0x99, 0x1a}
	for n := range len(b) + 1 {
		var want uint64
		for i, c := range b[:min(n, 8)] {
			want |= uint64(c) << (8 * i)
		}
		if got := firstBytes(b[:n]); got != want {
			t.Errorf("firstBytes(%x) = %#x, want %#x", b[:n], got, want)
		}
	}
}
