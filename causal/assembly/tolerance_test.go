package assembly

import (
	"testing"
	"time"

	"github.com/wirepath/wirepath/trace"
)

// TestStatedTolerance checks the tolerance taken from a trace's stated
// clock offsets: the largest uncertainty when every node's offset is
// known, within MinTolerance and Tolerance; the fixed Tolerance when the
// trace states none, one node's is unknown, or the option is off.
func TestStatedTolerance(t *testing.T) {
	off := func(known bool, u int64) trace.Offset {
		return trace.Offset{Known: known, UncertaintyNS: u}
	}
	for _, c := range []struct {
		name    string
		offsets []trace.Offset
		stated  bool
		want    time.Duration
	}{
		{"no offsets (a generated trace)", nil, true, 100 * time.Microsecond},
		{"all known: the largest", []trace.Offset{off(true, 0), off(true, 431), off(true, 22341)}, true, 22341},
		{"all known, below the floor", []trace.Offset{off(true, 0), off(true, 200)}, true, MinTolerance},
		{"all known, above the cap", []trace.Offset{off(true, 0), off(true, int64(time.Millisecond))}, true, 100 * time.Microsecond},
		{"one unknown", []trace.Offset{off(true, 431), off(false, 0)}, true, 100 * time.Microsecond},
		{"option off", []trace.Offset{off(true, 431)}, false, 100 * time.Microsecond},
	} {
		opt := DefaultOptions()
		opt.StatedClockError = c.stated
		tr := &trace.Trace{Meta: trace.Meta{Offsets: c.offsets}}
		if got := statedTolerance(opt, tr); got != int64(c.want) {
			t.Errorf("%s: %v, want %v", c.name, time.Duration(got), c.want)
		}
	}
}
