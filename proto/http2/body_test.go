package http2

import (
	"encoding/binary"
	"slices"
	"testing"

	farm "github.com/dgryski/go-farm"

	"github.com/wirepath/wirepath/proto"
)

// grpcMsg returns a gRPC length-prefixed message (flag, then length).
func grpcMsg(flag byte, msg []byte) []byte {
	b := []byte{flag, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	return append(b, msg...)
}

// pbString and pbVarint encode one protocol buffer field.
func pbString(field int, s []byte) []byte {
	b := binary.AppendUvarint(nil, uint64(field)<<3|2)
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func pbVarint(field int, v uint64) []byte {
	b := binary.AppendUvarint(nil, uint64(field)<<3)
	return binary.AppendUvarint(b, v)
}

func fps(ss ...string) []uint64 {
	var h []uint64
	for _, s := range ss {
		h = append(h, farm.Fingerprint64([]byte(s)))
	}
	slices.Sort(h)
	return h
}

// TestGRPCBodyEvidence: the tokens of the first message of a gRPC body.
func TestGRPCBodyEvidence(t *testing.T) {
	nested := slices.Concat(pbString(1, []byte("u14")), pbVarint(2, 7))
	msg := slices.Concat(pbString(1, []byte("items=3")), pbVarint(2, 42), pbString(3, nested),
		pbString(4, []byte{0xff, 0x00, 0x01}), []byte{0x0d, 1, 2, 3, 4}) // bytes, a fixed32
	for _, tc := range []struct {
		name string
		body []byte
		want []uint64
	}{
		{"protocol buffer", grpcMsg(0, msg), fps("items=3", "42", "u14", "7")},
		{"cut in its second field", grpcMsg(0, msg)[:5+9+1], fps("items=3")},
		{"cut after its second field", grpcMsg(0, msg)[:5+9+2], fps("items=3", "42")},
		{"cut in its prefix", grpcMsg(0, msg)[:4], nil},
		{"compressed", grpcMsg(1, msg), nil},
		{"a form", grpcMsg(0, []byte("items=3&q=x")), fps("3", "x")},
		{"text, not a form", grpcMsg(0, []byte("hello world")), nil},
		{"a group", grpcMsg(0, []byte{0x0b, 0x0c}), nil},
		{"field 0", grpcMsg(0, []byte{0x02, 0x01, 'a'}), nil},
		{"empty message", grpcMsg(0, nil), nil},
		{"length past the end, not cut", append(grpcMsg(0, pbString(1, []byte("abc")))[:5], 0x0a, 0x09, 'a'), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := &proto.Evidence{}
			var num [20]byte
			body := tc.body
			if tc.name == "length past the end, not cut" {
				binary.BigEndian.PutUint32(body[1:], 3)
			}
			grpcBodyEvidence(ev, body, &num)
			got := slices.Sorted(slices.Values(ev.Tokens))
			if !slices.Equal(got, tc.want) {
				t.Errorf("tokens %x, want %x", got, tc.want)
			}
		})
	}
}

// TestGRPCRequestBodyTokens: a gRPC request's message, split over two
// DATA frames and fed in small pieces, gives its Unit the message's
// tokens besides the headers'; the response's message gives none.
func TestGRPCRequestBodyTokens(t *testing.T) {
	msg := grpcMsg(0, slices.Concat(pbString(1, []byte("sku-1234")), pbVarint(2, 99)))
	c := newConv(true)
	c.request(1, "/shop.Cart/Add", false)
	must(c.fr[proto.FromClient].WriteData(1, false, msg[:7]))
	c.flush(proto.FromClient)
	must(c.fr[proto.FromClient].WriteData(1, true, msg[7:]))
	c.flush(proto.FromClient)
	c.headers(proto.FromServer, 1, false, ":status: 200", "content-type: application/grpc")
	must(c.fr[proto.FromServer].WriteData(1, false, msg))
	c.flush(proto.FromServer)
	c.headers(proto.FromServer, 1, true, "grpc-status: 0")
	for _, chunk := range []int{0, 1, 3} {
		units, _ := decode(t, DefaultConfig(), c.events, chunk)
		var req, resp *proto.Unit
		for i := range units {
			switch units[i].Kind {
			case proto.KindRequest:
				req = &units[i]
			case proto.KindResponse:
				resp = &units[i]
			}
		}
		if req == nil || resp == nil || req.Evidence == nil {
			t.Fatalf("chunk %d: units %s", chunk, format(units))
		}
		for _, h := range fps("sku-1234", "99") {
			if _, ok := slices.BinarySearch(req.Evidence.Tokens, h); !ok {
				t.Errorf("chunk %d: the request's tokens %x lack %x", chunk, req.Evidence.Tokens, h)
			}
		}
		if resp.Evidence != nil {
			for _, h := range fps("sku-1234", "99") {
				if _, ok := slices.BinarySearch(resp.Evidence.Tokens, h); ok {
					t.Errorf("chunk %d: the response has the message's token %x", chunk, h)
				}
			}
		}
	}
}

// FuzzGRPCBody: any body gives at most its tokens, without panicking.
func FuzzGRPCBody(f *testing.F) {
	f.Add(grpcMsg(0, slices.Concat(pbString(1, []byte("items=3")), pbVarint(2, 42))))
	f.Add(grpcMsg(0, []byte("a=1&b=2")))
	f.Add(grpcMsg(0, []byte{0x0a, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}))
	f.Add([]byte{0, 0xff, 0xff, 0xff, 0xff, 0x1a, 0x02, 0x0a, 0x00})
	f.Fuzz(func(t *testing.T, body []byte) {
		ev := &proto.Evidence{}
		var num [20]byte
		grpcBodyEvidence(ev, body, &num)
		if len(ev.Tokens) > len(body) {
			t.Fatalf("%d tokens from %d bytes", len(ev.Tokens), len(body))
		}
	})
}
