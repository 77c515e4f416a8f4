package http2

import (
	"fmt"
	"testing"

	"github.com/wirepath/wirepath/proto"
)

// grpcLoad writes batches of 32 concurrent unary gRPC calls (100-byte
// requests, 300-byte responses, trailers, a WINDOW_UPDATE per batch),
// from stream id first on, and returns the conversation cut into
// segments of at most 1448 bytes, as TCP would carry it.
func grpcLoad(c *conv, first uint32, batches int) []event {
	id := first
	for range batches {
		for i := range uint32(32) {
			c.headers(proto.FromClient, id+2*i, false, ":method: POST", ":scheme: http", ":authority: search:8082",
				":path: /search.Search/Nearby", "content-type: application/grpc", "user-agent: grpc-go/1.70.0",
				"te: trailers", "grpc-timeout: 9999m", fmt.Sprintf("traceparent: 00-%032x-%016x-01", id+2*i, i))
			c.data(proto.FromClient, id+2*i, true, 100)
		}
		for i := range uint32(32) {
			c.headers(proto.FromServer, id+2*i, false, ":status: 200", "content-type: application/grpc")
			c.data(proto.FromServer, id+2*i, false, 300)
			c.headers(proto.FromServer, id+2*i, true, "grpc-status: 0", "grpc-message: ")
		}
		must(c.fr[0].WriteWindowUpdate(0, 32*300))
		c.flush(0)
		must(c.fr[1].WriteWindowUpdate(0, 32*100))
		c.flush(1)
		id += 64
	}
	return segments(c.events)
}

// segments merges consecutive writes of one direction and cuts them into
// pieces of at most 1448 bytes.
func segments(events []event) []event {
	var out []event
	for i := 0; i < len(events); {
		var b []byte
		j := i
		for ; j < len(events) && events[j].dir == events[i].dir; j++ {
			b = append(b, events[j].data...)
		}
		for len(b) > 0 {
			n := min(len(b), 1448)
			out = append(out, event{events[i].dir, b[:n]})
			b = b[n:]
		}
		i = j
	}
	return out
}

// feedAll feeds events to d from offsets off, draining Units as flows
// would, and returns how many application Units came out.
func feedAll(d *Decoder, events []event, off *[2]int64) int {
	var u proto.Unit
	n := 0
	for _, e := range events {
		d.Feed(e.dir, off[e.dir], e.data)
		off[e.dir] += int64(len(e.data))
		for d.Next(&u) {
			if u.Kind != proto.KindControl {
				n++
			}
		}
	}
	return n
}

// BenchmarkGRPC decodes a connection of 32-call batches of unary gRPC
// calls; bytes/s is the decoder's throughput on both directions.
func BenchmarkGRPC(b *testing.B) { benchGRPC(b, DefaultConfig()) }

// BenchmarkGRPCEvidence is BenchmarkGRPC taking evidence, as flows does
// by default: each request's traceparent id and its path's and
// authority's tokens.
func BenchmarkGRPCEvidence(b *testing.B) {
	cfg := DefaultConfig()
	cfg.Evidence = true
	benchGRPC(b, cfg)
}

// benchGRPC is BenchmarkGRPC with a decoder configuration.
func benchGRPC(b *testing.B, cfg Config) {
	c := newConv(true)
	c.settings(proto.FromServer)
	c.settings(proto.FromClient)
	events := grpcLoad(c, 1, 64)
	var total int64
	for _, e := range events {
		total += int64(len(e.data))
	}
	b.SetBytes(total)
	b.ReportAllocs()
	var units int
	for b.Loop() {
		d := New(cfg)
		var off [2]int64
		units = feedAll(d, events, &off)
		d.Close()
	}
	if units != 64*32*2 {
		b.Fatalf("%d application Units, want %d", units, 64*32*2)
	}
	b.ReportMetric(float64(total)/float64(64*32), "bytes/call")
}

// TestSteadyStateAllocs checks what a call costs in allocations once a
// connection is warm: nothing (no frame, no HPACK string, nothing per
// DATA frame or byte), and with evidence only the copy of its
// traceparent's id that the request's Evidence keeps, which takes a new
// chunk of the id arena every hundred calls or so.
func TestSteadyStateAllocs(t *testing.T) {
	for _, tc := range []struct {
		evidence bool
		perCall  float64
	}{
		{false, 0},
		{true, 0.05},
	} {
		t.Run(fmt.Sprintf("evidence=%v", tc.evidence), func(t *testing.T) {
			c := newConv(true)
			c.settings(proto.FromServer)
			c.settings(proto.FromClient)
			warm := grpcLoad(c, 1, 2)
			cfg := DefaultConfig()
			cfg.Evidence = tc.evidence
			d := New(cfg)
			var off [2]int64
			feedAll(d, warm, &off)
			id := uint32(129)
			var batches [][]event
			for range 11 {
				c.events = nil
				batches = append(batches, grpcLoad(c, id, 1))
				id += 64
			}
			i := 0
			allocs := testing.AllocsPerRun(10, func() {
				if n := feedAll(d, batches[i], &off); n != 64 {
					t.Fatalf("%d application Units, want 64", n)
				}
				i++
			})
			if perCall := allocs / 32; perCall > tc.perCall {
				t.Errorf("%.2f allocations per call, want at most %v", perCall, tc.perCall)
			}
		})
	}
}
