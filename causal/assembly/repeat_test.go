package assembly

import (
	"fmt"
	"testing"
)

// TestRepeatEvidence: the repeat evidence is learnt from the trace. Where
// every request fans out to C and D once each, overlapping its
// neighbours, a call of a kind its candidate already made is strongly
// against (the links never repeat, the other candidates often have); where
// every request calls C twice, it is not.
func TestRepeatEvidence(t *testing.T) {
	for _, tc := range []struct {
		name  string
		calls [][2]float64 // per request: a call's send and return, ms after its arrival
		lo    float64      // bounds on log LR(repeat)
		hi    float64
	}{
		{"fan-out", [][2]float64{{1, 3}, {1.2, 3.5}}, -100, -1},
		{"twice", [][2]float64{{1, 1.8}, {2, 2.8}}, -1, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newTB()
			for i := range 60 {
				t0 := 10 + 2.5*float64(i)
				id := fmt.Sprint("r", i)
				b.rpc(t0, t0+6, "A", "A:1", "B", "B:80", id, 100)
				for j, c := range tc.calls {
					callee := "C"
					if tc.name == "fan-out" && j == 1 {
						callee = "D"
					}
					b.rpc(t0+c[0], t0+c[1], "B", fmt.Sprint("B:", 1000+j), callee, callee+":80", fmt.Sprint(id, "-", j), 50)
				}
			}
			_, r := runOn(t, b, DefaultOptions())
			n := r.l.nodeOf[b.t.Intern("B")]
			m := r.models[n]
			if m == nil {
				t.Fatal("no model of B")
			}
			seen, fresh := m.logRepeat(1, 1), m.logRepeat(0, 1)
			t.Logf("log LR: repeat %.2f, new %.2f", seen, fresh)
			if seen < tc.lo || seen > tc.hi {
				t.Errorf("log LR of a repeat %.2f, want %v to %v", seen, tc.lo, tc.hi)
			}
		})
	}
}
