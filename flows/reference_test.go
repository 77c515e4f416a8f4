package flows

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	farm "github.com/dgryski/go-farm"

	"github.com/wirepath/wirepath/flows/internal/seqnum"
	"github.com/wirepath/wirepath/pcapio"

	"github.com/wirepath/wirepath/internal/fuzzseed"
)

// rseg is one segment of a reference test: n bytes at seq.
type rseg struct {
	seq  uint32
	data []byte
}

// refResult is a reassembled stream: for each byte from the origin, its
// value and whether it was seen (false: a gap).
type refResult struct {
	data []byte
	seen []bool
}

// referenceReassemble is the slow, obviously correct reassembler: every
// byte position takes the value of the first segment, in arrival order,
// that covers it; positions no segment covers up to the last covered one
// are a gap. Positions are offsets from origin, unwrapped.
func referenceReassemble(origin uint32, segs []rseg) refResult {
	end := int64(0)
	for _, s := range segs {
		off := int64(int32(s.seq - origin)) // signed distance from origin
		end = max(end, off+int64(len(s.data)))
	}
	r := refResult{data: make([]byte, end), seen: make([]bool, end)}
	for _, s := range segs {
		off := int64(int32(s.seq - origin))
		for i, b := range s.data {
			p := off + int64(i)
			if p < 0 || r.seen[p] {
				continue // before the stream's first byte, or not the first copy
			}
			r.data[p], r.seen[p] = b, true
		}
	}
	return r
}

// recSink records a stream's output and checks that it is in order and
// contiguous: every byte is delivered once.
type recSink struct {
	t      testing.TB
	origin seqnum.Value
	next   seqnum.Value
	out    refResult
	bad    error
}

func (r *recSink) deliver(c *chunk) {
	if c.seq != r.next && r.bad == nil {
		r.bad = fmt.Errorf("chunk at %d, expected %d", c.seq, r.next)
	}
	if len(c.data) > int(c.n) && r.bad == nil {
		r.bad = fmt.Errorf("chunk holds %d bytes for %d", len(c.data), c.n)
	}
	for i := 0; i < int(c.n); i++ {
		if c.gap {
			r.out.data = append(r.out.data, 0)
			r.out.seen = append(r.out.seen, false)
		} else {
			r.out.data = append(r.out.data, c.data[i])
			r.out.seen = append(r.out.seen, true)
		}
	}
	r.next = c.seq.Add(seqnum.Size(c.n))
}

func (r *recSink) late(seqnum.Value, uint32, []segObs, []segObs) {}

// fastReassemble runs the stream reassembler on segs and gives up every
// hole at the end.
func fastReassemble(t testing.TB, origin uint32, segs []rseg) (refResult, error) {
	s := stream{pool: &bufPool{}}
	s.start(seqnum.Value(origin))
	sink := &recSink{t: t, origin: seqnum.Value(origin), next: seqnum.Value(origin)}
	obs := []segObs{{pt: Point{}, ttl: 64}}
	for i, g := range segs {
		s.insert(seqnum.Value(g.seq), uint32(len(g.data)), g.data, obs, nil, nil, int64(i), int64(i), false, sink)
	}
	s.skipAll(0, sink)
	if s.pool.buffered != 0 || len(s.buf) != 0 {
		return sink.out, fmt.Errorf("%d bytes still buffered after skipAll", s.pool.buffered)
	}
	return sink.out, sink.bad
}

func compareReassembly(t testing.TB, origin uint32, segs []rseg) {
	t.Helper()
	want := referenceReassemble(origin, segs)
	got, err := fastReassemble(t, origin, segs)
	if err != nil {
		t.Fatalf("fast reassembler: %v", err)
	}
	if len(got.data) != len(want.data) {
		t.Fatalf("stream length %d, reference %d", len(got.data), len(want.data))
	}
	for i := range want.data {
		if got.seen[i] != want.seen[i] || (want.seen[i] && got.data[i] != want.data[i]) {
			t.Fatalf("byte %d: got %q seen %v, reference %q seen %v", i, got.data[i], got.seen[i], want.data[i], want.seen[i])
		}
	}
}

// randomSegments cuts a random stream of random length into segments and
// retransmits (with new boundaries), corrupts copies of, loses and
// reorders some of them.
func randomSegments(r *rand.Rand) (origin uint32, segs []rseg) {
	origin = r.Uint32()
	if r.IntN(4) == 0 {
		origin = 0 - uint32(r.IntN(3000)) // near the wrap
	}
	n := 1 + r.IntN(4000)
	stream := make([]byte, n)
	for i := range stream {
		stream[i] = byte('a' + r.IntN(26))
	}
	for off := 0; off < n; {
		k := 1 + r.IntN(min(1460, n-off))
		if r.IntN(10) != 0 { // 10% lost
			segs = append(segs, rseg{origin + uint32(off), stream[off : off+k]})
		}
		off += k
	}
	// Retransmissions and overlaps with other boundaries, some conflicting.
	for i := r.IntN(8); i > 0; i-- {
		lo := r.IntN(n)
		hi := lo + 1 + r.IntN(n-lo)
		d := append([]byte(nil), stream[lo:hi]...)
		if r.IntN(3) == 0 {
			for j := range d {
				if r.IntN(4) == 0 {
					d[j] = 'A' + byte(r.IntN(26))
				}
			}
		}
		segs = append(segs, rseg{origin + uint32(lo), d})
	}
	// Reorder: random swaps.
	for i := r.IntN(len(segs) + 1); i > 0; i-- {
		a, b := r.IntN(len(segs)), r.IntN(len(segs))
		segs[a], segs[b] = segs[b], segs[a]
	}
	return origin, segs
}

// TestReassemblyMatchesReference compares the fast reassembler with the
// reference on seeded random streams.
func TestReassemblyMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(42, 7))
	for i := 0; i < 3000; i++ {
		origin, segs := randomSegments(r)
		compareReassembly(t, origin, segs)
	}
}

// TestAssemblerMatchesReference runs the same random streams through the
// whole stage (one direction, after a SYN) and checks the message's size,
// gap bytes and fingerprint against the reference.
func TestAssemblerMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(99, 1))
	cfg := DefaultConfig()
	cfg.FingerprintLen = MaxFingerprintLen
	cfg.SplitPause = 0
	for i := 0; i < 500; i++ {
		origin, segs := randomSegments(r)
		want := referenceReassemble(origin, segs)
		pkts := []*pcapio.Packet{tcpP("10.0.0.1:1234", "10.0.0.2:4321", fS, origin-1, 0, "", at(t0))}
		for j, g := range segs {
			pkts = append(pkts, tcpP("10.0.0.1:1234", "10.0.0.2:4321", fA, g.seq, 1, string(g.data), at(t0+int64(j+1)*1000)))
		}
		msgs, _, st := runQuiet(t, cfg, pkts...)
		var total, gaps int64
		for _, m := range msgs {
			total += m.Bytes
			gaps += m.GapBytes
		}
		wantGaps := int64(bytes.Count(boolBytes(want.seen), []byte{0}))
		if total != int64(len(want.data)) || gaps != wantGaps {
			t.Fatalf("case %d: %d bytes (%d gap), reference %d (%d gap); stats %+v", i, total, gaps, len(want.data), wantGaps, *st)
		}
		if len(msgs) == 1 {
			k := 0
			for k < len(want.data) && k < MaxFingerprintLen && want.seen[k] {
				k++
			}
			if msgs[0].Fingerprint != farm.Fingerprint64(want.data[:k]) {
				t.Fatalf("case %d: fingerprint differs from the reference's first %d bytes", i, k)
			}
		}
	}
}

func boolBytes(b []bool) []byte {
	out := make([]byte, len(b))
	for i, v := range b {
		if v {
			out[i] = 1
		}
	}
	return out
}

// runQuiet is run without OnConn.
func runQuiet(t testing.TB, cfg Config, pkts ...*pcapio.Packet) ([]*Message, []ConnStats, *Stats) {
	t.Helper()
	r, err := NewReader(&SliceSource{Packets: pkts}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	msgs := drain(t, r)
	if err := r.Stats().Check(); err != nil {
		t.Fatalf("accounting: %v", err)
	}
	return msgs, nil, r.Stats()
}

// FuzzReassembly decodes the input as a list of segments (2-byte offset,
// 1-byte length, 1-byte fill) after a 4-byte origin and checks the fast
// reassembler against the reference: every byte some segment carried is
// delivered exactly once, in order, with its first copy's value, and the
// holes between are gaps.
func FuzzReassembly(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	fuzzseed.Files(f, "flows/testdata/*.pcap*")
	// In order, no loss.
	f.Add([]byte{0, 0, 0, 1, 0, 0, 10, 'a', 0, 10, 10, 'b'})
	// Out of order with a hole.
	f.Add([]byte{0, 0, 0, 1, 0, 20, 10, 'c', 0, 0, 10, 'a'})
	// Overlapping conflicting copies.
	f.Add([]byte{0, 0, 0, 1, 0, 5, 10, 'x', 0, 0, 20, 'y', 0, 3, 4, 'z'})
	// Across the sequence wrap.
	f.Add([]byte{0xff, 0xff, 0xff, 0xf0, 0, 8, 30, 'w', 0, 0, 10, 'v'})
	// Before the origin (offsets are signed 12-bit: 0x0fff = -1).
	f.Add([]byte{0, 0, 1, 0, 0x0f, 0xfa, 12, 'q', 0, 2, 3, 'r'})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 4 {
			return
		}
		origin := uint32(in[0])<<24 | uint32(in[1])<<16 | uint32(in[2])<<8 | uint32(in[3])
		var segs []rseg
		for b := in[4:]; len(b) >= 4 && len(segs) < 256; b = b[4:] {
			off := int32(uint16(b[0])<<8|uint16(b[1])) & 0x0fff
			if off >= 0x0800 {
				off -= 0x1000 // a few segments start before the origin
			}
			data := bytes.Repeat([]byte{b[3]}, int(b[2]))
			for i := range data {
				data[i] += byte(i)
			}
			if len(data) > 0 {
				segs = append(segs, rseg{origin + uint32(off), data})
			}
		}
		compareReassembly(t, origin, segs)
	})
}
