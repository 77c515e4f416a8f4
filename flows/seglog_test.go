package flows

import (
	"math/rand/v2"
	"testing"
)

// TestSegLogFindHint holds find, which tries the record it found last
// and the next before searching, to a plain search over the records
// held, under appends, trims and look-ups in and out of order.
func TestSegLogFindHint(t *testing.T) {
	tests := []struct {
		name    string
		ordered bool // look-ups at increasing offsets, as Units are timed
	}{
		{"in order", true},
		{"any order", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			var l segLog
			var next, last int64
			for step := range 20000 {
				switch op := r.IntN(10); {
				case op < 3:
					n := 1 + r.IntN(100)
					l.add(next, &chunk{n: uint32(n), data: make([]byte, n)})
					next += int64(n)
				case op == 3 && l.len() > 0:
					l.trim(l.recs[l.head].off + int64(r.IntN(200)))
				default:
					off := r.Int64N(next + 10)
					if tt.ordered {
						off = min(last+int64(r.IntN(60)), next+5)
						last = off
					}
					want := l.head
					for want < len(l.recs) && l.recs[want].end() <= off {
						want++
					}
					if got := l.find(off); got != want {
						t.Fatalf("step %d: find(%d) = %d, want %d (head %d, %d records)", step, off, got, want, l.head, len(l.recs))
					}
				}
			}
		})
	}
}
