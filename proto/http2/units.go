package http2

import "github.com/wirepath/wirepath/proto"

// NextUnit returns the next decoded Unit in place, or nil when there is
// none: Next without the Unit's copy into the caller's and the zeroing
// of its slot (flows' drain of an HTTP/2 connection, two Units a call).
// The Unit stays the caller's to read and change until it next calls
// Feed, Gap or Close, which may write over it.
func (d *Decoder) NextUnit() *proto.Unit {
	if d.head == len(d.out) {
		return nil
	}
	u := &d.out[d.head]
	d.head++
	if d.head == len(d.out) {
		d.head, d.out = 0, d.out[:0]
	}
	return u
}
