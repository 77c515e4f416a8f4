package http2

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/wirepath/wirepath/proto"
)

// TestNextUnit decodes unary gRPC calls with evidence, their frames whole
// in the bytes fed (dataFrame keeps a request's body, read in place when
// it is one DATA frame) or fed in pieces (dataPrefix copies it), and
// drained by Next or by NextUnit: the Units must be the same.
func TestNextUnit(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Evidence = true
	// Requests whose body is one DATA frame (short, or longer than the
	// bytes kept), two frames, or one frame and an empty one ending it.
	c := newConv(true)
	const calls = 40
	for i := range uint32(calls) {
		id := 1 + 2*i
		msg := grpcMsg(0, slices.Concat(pbString(1, fmt.Appendf(nil, "sku-%d", i)), pbVarint(2, uint64(i)),
			pbString(3, bytes.Repeat([]byte{'y'}, int(i%4)*50))))
		c.request(id, "/shop.Cart/Add", false)
		switch i % 3 {
		case 0:
			must(c.fr[proto.FromClient].WriteData(id, true, msg))
		case 1:
			must(c.fr[proto.FromClient].WriteData(id, false, msg[:9]))
			must(c.fr[proto.FromClient].WriteData(id, true, msg[9:]))
		case 2:
			must(c.fr[proto.FromClient].WriteData(id, false, msg))
			must(c.fr[proto.FromClient].WriteData(id, true, nil))
		}
		c.flush(proto.FromClient)
		c.headers(proto.FromServer, id, false, ":status: 200", "content-type: application/grpc")
		must(c.fr[proto.FromServer].WriteData(id, false, msg))
		c.flush(proto.FromServer)
		c.headers(proto.FromServer, id, true, "grpc-status: 0")
	}
	events := segments(c.events)
	want, _ := decode(t, cfg, events, 0)
	if len(appUnits(want)) != 2*calls {
		t.Fatalf("%d application Units, want %d", len(appUnits(want)), 2*calls)
	}
	for _, u := range want {
		if u.Kind == proto.KindRequest && (u.Evidence == nil || len(u.Evidence.Tokens) < 2) {
			t.Fatalf("a request without the body's tokens: %s", format([]proto.Unit{u}))
		}
	}
	for _, tc := range []struct {
		name    string
		chunk   int
		inPlace bool
	}{
		{"whole, Next", 0, false},
		{"whole, NextUnit", 0, true},
		{"in pieces of 7, Next", 7, false},
		{"in pieces of 7, NextUnit", 7, true},
		{"byte by byte, NextUnit", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := New(cfg)
			var off [2]int64
			var got []proto.Unit
			take := func() {
				if !tc.inPlace {
					got = drain(d, got)
					return
				}
				for u := d.NextUnit(); u != nil; u = d.NextUnit() {
					got = append(got, keep(*u))
				}
			}
			for _, e := range events {
				feedEvent(d, &off, e, tc.chunk)
				take()
			}
			d.Close()
			take()
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Units differ:\n%s\nwant:\n%s", format(got), format(want))
			}
		})
	}
}
