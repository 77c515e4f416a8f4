package flows

import "testing"

// TestTrim: a recycled connection state lets go of the slices grown past
// keepCap and keeps the smaller ones (for reuse without allocating).
func TestTrim(t *testing.T) {
	for _, tt := range []struct {
		name string
		n    int
		kept bool
	}{
		{"small", keepCap, true},
		{"grown", keepCap + 1, false},
	} {
		c := &conn{figs: &connFigs{}}
		c.unsealed.ms = make([]*msg, 0, tt.n)
		c.figs.rtt = make([]int64, 0, tt.n)
		c.figs.tput[1] = make([]float64, 0, tt.n)
		c.half[0].starts.q = make([]startEntry, 0, tt.n)
		c.trim()
		caps := []int{cap(c.unsealed.ms), cap(c.figs.rtt), cap(c.figs.tput[1]), cap(c.half[0].starts.q)}
		for i, k := range caps {
			if (k == tt.n) != tt.kept || !tt.kept && k != 0 {
				t.Errorf("%s: slice %d has capacity %d after trim (of %d), kept %v", tt.name, i, k, tt.n, tt.kept)
			}
		}
	}
}
