// Package dec is the plumbing the protocol decoders under proto share:
// stream offsets and gaps per direction (Base), the accounting that must
// balance (Stats), request/response pairing for serial protocols with its
// suspension after a loss (Serial), and the search for the next plausible
// message start after one (Resync). It knows no protocol.
package dec

import (
	"errors"
	"fmt"

	"github.com/wirepath/wirepath/proto"
	"github.com/wirepath/wirepath/proto/evidence"
)

// DirStats counts one direction of a connection. After Close,
// Bytes + GapBytes = UnitBytes + Skipped.
type DirStats struct {
	Bytes     int64 // bytes fed
	GapBytes  int64 // bytes reported missing (Gap, or an offset jump)
	Overlap   int64 // bytes fed again at offsets already seen, ignored
	UnitBytes int64 // bytes (and missing bytes) inside reported Units
	Skipped   int64 // bytes in no Unit: searched through after a loss, or not framed
	Losses    int64 // times framing was lost (a gap across a header, bad input)
	Resyncs   int64 // times framing was found again
}

// Stats is what every decoder counts.
type Stats struct {
	Dir [2]DirStats
	// Units by kind.
	Requests, Responses, OneWay, Control int64
	// Unpaired counts Units reported with Key 0 that would have had one:
	// responses with no request outstanding, and requests and responses
	// while pairing was suspended after a loss.
	Unpaired int64
	// Unanswered counts requests whose response never came: dropped at a
	// loss, or still outstanding at Close.
	Unanswered int64
	// Truncated counts Units cut short by Close.
	Truncated int64
	Evidence  evidence.Stats
}

// ErrUnbalanced is returned by Check when bytes are unaccounted for.
var ErrUnbalanced = errors.New("decoder accounting does not balance")

// Check verifies, after Close, that every byte fed or missing is in a
// Unit or counted as skipped, in both directions.
func (s *Stats) Check() error {
	for d, ds := range s.Dir {
		if in, out := ds.Bytes+ds.GapBytes, ds.UnitBytes+ds.Skipped; in != out {
			return fmt.Errorf("%w: %s: %d bytes fed or missing, %d in units or skipped", ErrUnbalanced, proto.Dir(d), in, out)
		}
	}
	return s.Evidence.Check()
}

// Base is embedded in every decoder: it tracks each direction's next
// offset, holds the evidence builders and the Evidence pool, and appends
// Units with their accounting.
type Base struct {
	Stats Stats
	// Ev holds each direction's evidence builder; nil when no evidence
	// is taken.
	Ev   [2]*evidence.Builder
	next [2]int64
	seen [2]bool
	pool evidence.Pool
	out  []proto.Unit // Units completed, taken by Next from rd on
	rd   int
}

// InitBase prepares b; with ev false, no evidence is taken.
func (b *Base) InitBase(ev bool, cfg evidence.Config) {
	*b = Base{}
	if ev {
		b.Ev[0], b.Ev[1] = evidence.NewBuilder(cfg), evidence.NewBuilder(cfg)
	}
}

// ResetBase prepares b for a new connection, keeping its buffers.
func (b *Base) ResetBase() {
	ev, pool, out := b.Ev, b.pool, b.out[:0]
	pool.Reset()
	*b = Base{Ev: ev, pool: pool, out: out}
}

// Begin starts a decoder call (Feed, Gap, Close). Once every Unit was
// taken with Next, the queue and the Evidence pool are reused: Units taken
// before, and their Evidence, are no longer valid.
func (b *Base) Begin() {
	if b.rd == len(b.out) {
		b.out, b.rd = b.out[:0], 0
		b.pool.Reset()
	}
}

// End ends a decoder call: it totals the evidence counters.
func (b *Base) End() {
	if b.Ev[0] != nil {
		b.Stats.Evidence = b.Ev[0].Stats
		b.Stats.Evidence.Add(b.Ev[1].Stats)
	}
}

// Next takes the next Unit the decoder completed into u; it reports false
// when there is none. A Unit, and the Evidence it points to, stays valid
// until the decoder is next fed after all were taken.
func (b *Base) Next(u *proto.Unit) bool {
	if b.rd == len(b.out) {
		return false
	}
	*u = b.out[b.rd]
	b.rd++
	return true
}

// Align checks data fed at off against dir's next offset. Bytes already
// seen are trimmed (Overlap); a jump forward is returned as a gap of that
// many bytes, which the decoder handles before data.
func (b *Base) Align(dir proto.Dir, off int64, data []byte) (gap int64, rest []byte) {
	if !b.seen[dir] {
		b.seen[dir], b.next[dir] = true, off
	}
	if off < b.next[dir] {
		k := min(int64(len(data)), b.next[dir]-off)
		b.Stats.Dir[dir].Overlap += k
		data = data[k:]
		off += k
	}
	if off > b.next[dir] {
		gap = off - b.next[dir]
		b.Stats.Dir[dir].GapBytes += gap
	}
	b.next[dir] = off + int64(len(data))
	b.Stats.Dir[dir].Bytes += int64(len(data))
	return gap, data
}

// AlignGap is Align for a reported gap of n bytes at off: it returns the
// part of it not already seen (or fed), which the decoder handles as a
// gap.
func (b *Base) AlignGap(dir proto.Dir, off, n int64) int64 {
	if !b.seen[dir] {
		b.seen[dir], b.next[dir] = true, off
	}
	end := off + n
	if end <= b.next[dir] {
		return 0
	}
	g := end - b.next[dir]
	b.next[dir] = end
	b.Stats.Dir[dir].GapBytes += g
	return g
}

// Offset returns the stream offset of dir's next byte.
func (b *Base) Offset(dir proto.Dir) int64 { return b.next[dir] }

// Emit appends u, counting it. When b takes evidence and u is no control
// Unit, u's Evidence is filled from dir's builder.
func (b *Base) Emit(u proto.Unit) {
	if u.Bytes == 0 {
		u.Bytes = u.End - u.Start
	}
	b.Stats.Dir[u.Dir].UnitBytes += u.Bytes
	switch u.Kind {
	case proto.KindRequest:
		b.Stats.Requests++
	case proto.KindResponse:
		b.Stats.Responses++
	case proto.KindOneWay:
		b.Stats.OneWay++
	case proto.KindControl:
		b.Stats.Control++
	}
	if u.Kind != proto.KindControl && b.Ev[u.Dir] != nil && u.Evidence == nil {
		u.Evidence = b.pool.Take(b.Ev[u.Dir])
	}
	b.out = append(b.out, u)
}

// Skip counts n bytes of dir that belong to no Unit.
func (b *Base) Skip(dir proto.Dir, n int64) { b.Stats.Dir[dir].Skipped += n }

// Lost counts a loss of framing in dir.
func (b *Base) Lost(dir proto.Dir) { b.Stats.Dir[dir].Losses++ }

// Found counts framing found again in dir.
func (b *Base) Found(dir proto.Dir) { b.Stats.Dir[dir].Resyncs++ }

// BeginMsg starts a new message's evidence in dir.
func (b *Base) BeginMsg(dir proto.Dir) {
	if b.Ev[dir] != nil {
		b.Ev[dir].Reset()
	}
}

// Summary returns the counters every decoder shares, with the decoder's
// own count of malformed input; its Err is Check's (meaningful after
// Close).
func (s *Stats) Summary(malformed int64) proto.Summary {
	var sum proto.Summary
	for _, d := range s.Dir {
		sum.In += d.Bytes
		sum.GapBytes += d.GapBytes
		sum.Framed += d.UnitBytes
		sum.Unframed += d.Skipped
		sum.Losses += d.Losses
		sum.Resyncs += d.Resyncs
	}
	sum.Pending = sum.In + sum.GapBytes - sum.Framed - sum.Unframed
	sum.Malformed = malformed
	sum.Unpaired = s.Unpaired
	sum.Err = s.Check()
	return sum
}

// Losses returns how many times dir lost its framing (proto.Resumer).
func (b *Base) Losses(dir proto.Dir) int64 { return b.Stats.Dir[dir].Losses }
