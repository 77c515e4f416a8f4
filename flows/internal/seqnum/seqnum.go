// Package seqnum is TCP sequence-number arithmetic modulo 2^32 (RFC 793
// section 3.3, RFC 1982 serial numbers), kept apart so that every
// wraparound rule of the reassembler lives in one small, exhaustively
// tested place. It follows gVisor's pkg/tcpip/seqnum.
//
// Comparisons are meaningful only between values less than 2^31 apart,
// which is always the case for two sequence numbers of one TCP window.
package seqnum

// Value is a TCP sequence number.
type Value uint32

// Size is a distance between two sequence numbers, or a segment length.
type Size uint32

// LessThan reports whether v comes before w in sequence space.
func (v Value) LessThan(w Value) bool { return int32(v-w) < 0 }

// LessThanEq reports whether v comes before w or equals it.
func (v Value) LessThanEq(w Value) bool { return v == w || v.LessThan(w) }

// InRange reports whether a <= v < b in sequence space.
func (v Value) InRange(a, b Value) bool { return v-a < b-a }

// InWindow reports whether v lies in the window of size s starting at first.
func (v Value) InWindow(first Value, s Size) bool { return v.InRange(first, first.Add(s)) }

// Add returns v advanced by s.
func (v Value) Add(s Size) Value { return v + Value(s) }

// Size returns the distance from v forward to w (w - v modulo 2^32).
func (v Value) Size(w Value) Size { return Size(w - v) }

// Diff returns w - v as a signed distance: positive when w comes after v.
func (v Value) Diff(w Value) int32 { return int32(w - v) }

// UpdateForward advances v by s in place.
func (v *Value) UpdateForward(s Size) { *v += Value(s) }

// Max returns whichever of a and b comes later in sequence space.
func Max(a, b Value) Value {
	if a.LessThan(b) {
		return b
	}
	return a
}

// Min returns whichever of a and b comes earlier in sequence space.
func Min(a, b Value) Value {
	if a.LessThan(b) {
		return a
	}
	return b
}

// Overlap returns the part of the range [a, a+as) that also lies in
// [b, b+bs) as a start and a size; the size is 0 when they are disjoint.
func Overlap(a Value, as Size, b Value, bs Size) (Value, Size) {
	if as == 0 || bs == 0 {
		return a, 0
	}
	start := Max(a, b)
	end := Min(a.Add(as), b.Add(bs))
	if !start.LessThan(end) {
		return a, 0
	}
	return start, start.Size(end)
}
