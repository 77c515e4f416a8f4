package dec

import "github.com/wirepath/wirepath/proto"

// Verdict is what a protocol's plausibility test says of the bytes at one
// position of a stream after a loss (proto.Verdict).
type Verdict = proto.Verdict

// The verdicts.
const (
	No   = proto.StartNo   // no message starts here
	Yes  = proto.StartYes  // a plausible message starts here
	More = proto.StartMore // too few bytes to tell: the test needs more
)

// Resync finds the next plausible message start in a direction whose
// framing was lost. A protocol's test looks at the bytes from a position
// on and returns More only when it was given fewer than its bound (at
// most 256 bytes); Resync keeps those few bytes across calls, so a start
// split between two feeds is still found.
type Resync struct {
	w, spare, tmp []byte
}

// Pending returns how many bytes Resync holds back, undecided.
func (r *Resync) Pending() int { return len(r.w) }

// Drop forgets the bytes held back (a gap followed them) and returns how
// many there were.
func (r *Resync) Drop() int {
	n := len(r.w)
	r.w = r.w[:0]
	return n
}

// Find looks for a plausible start in the held-back bytes followed by
// data. It returns how many bytes it skipped for good and, when found,
// the bytes to decode from the start on: replay (held-back bytes, valid
// until the next call of Find) followed by rest (a suffix of data).
// When not found, undecided bytes at the end are held back.
func (r *Resync) Find(data []byte, need int, test func([]byte) Verdict) (skipped int, replay, rest []byte, found bool) {
	if len(r.w) > 0 {
		r.tmp = append(append(r.tmp[:0], r.w...), data[:min(len(data), need)]...)
		for i := range len(r.w) {
			switch test(r.tmp[i:]) {
			case Yes:
				replay = r.w[i:]
				r.w, r.spare = r.spare[:0], r.w
				return i, replay, data, true
			case More:
				// Everything from i on is fewer than need bytes.
				n := copy(r.w, r.w[i:])
				r.w = append(r.w[:n], data...)
				return i, nil, nil, false
			}
		}
		skipped = len(r.w)
		r.w = r.w[:0]
	}
	for i := range len(data) {
		switch test(data[i:]) {
		case Yes:
			return skipped + i, nil, data[i:], true
		case More:
			r.w = append(r.w[:0], data[i:]...)
			return skipped + i, nil, nil, false
		}
	}
	return skipped + len(data), nil, nil, false
}
