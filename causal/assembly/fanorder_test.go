package assembly

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestFanOrder is a fan-out node B whose requests start their parallel
// calls after a delay from their arrival that varies widely (a loaded
// machine: the start order is not the arrival order) and then send their
// calls to C, D (and E) within 0.3 ms of each other, in no fixed order.
// The calls carry no ids; what tells two open requests' calls of one kind
// apart is which request started its fan-out first (fanorder.go): ranked
// by arrival, as main's FIFO evidence did, the calls after a request's
// first are given to the wrong one of two open requests.
func TestFanOrder(t *testing.T) {
	total := 0
	for _, tc := range []struct {
		name  string
		kinds []string
		seed  uint64
		gap   float64 // ms between arrivals
	}{
		{"three calls", []string{"C", "D", "E"}, 5, 2},
		{"three calls, busier", []string{"C", "D", "E"}, 5, 1.5},
		{"four calls", []string{"C", "D", "E", "F"}, 6, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			total += fanOrderCase(t, tc.kinds, tc.seed, tc.gap)
		})
	}
	// main, ranking by arrival: 130 + 68 + 95; the fan-out order: 137 + 70 + 99
	if total < 300 {
		t.Errorf("%d of 600 requests right, want at least 300", total)
	}
}

// fanOrderCase assembles 200 requests of fan-out node B (TestFanOrder)
// with the kinds of call given, arriving every gap ms, and returns how
// many it gets exactly right.
func fanOrderCase(t *testing.T, kinds []string, seed uint64, gap float64) int {
	rng := rand.New(rand.NewPCG(seed, 7))
	b := newTB()
	byReq := map[int32][]callKid{}
	for i := range 200 {
		t0 := 10 + gap*float64(i) + rng.Float64()*0.4
		id := fmt.Sprint("r", i)
		start := t0 + 0.2 + rng.ExpFloat64()*1.5
		last := 0.0
		var kids []int32
		for j, k := range rng.Perm(len(kinds)) {
			send := start + 0.1*float64(j) + rng.Float64()*0.1
			back := send + 0.5 + rng.ExpFloat64()*2
			last = max(last, back)
			c, _ := b.rpc(send, back, "B", fmt.Sprint("B:", 1000+i*8+j), kinds[k], kinds[k]+":80", fmt.Sprint(id, "-", j), 50)
			kids = append(kids, c)
		}
		c, _ := b.rpc(t0, last+0.2+rng.Float64()*0.2, "A", fmt.Sprint("A:", 100+i), "B", "B:80", id, 100)
		for _, k := range kids {
			byReq[c] = append(byReq[c], callKid{c, k})
		}
	}
	_, r := runOn(t, b, DefaultOptions())
	reqs, right, calls := 0, 0, 0
	for _, ps := range byReq {
		n := r.rightParents(ps)
		right += n
		calls += len(ps)
		if n == len(ps) {
			reqs++
		}
	}
	t.Logf("%d of %d calls right, %d of %d requests", right, calls, reqs, len(byReq))
	return reqs
}
