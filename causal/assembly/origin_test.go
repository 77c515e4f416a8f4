package assembly

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestOriginSizes: a service passes part of its request on (a key in the
// URL becomes a cache key), so each call's size is its request's less a
// constant, while the requests' sizes vary. Requests arrive in pairs at
// one instant and their calls leave in either order after the same
// delays: timing cannot tell the two apart, the sizes can.
func TestOriginSizes(t *testing.T) {
	b := newTB()
	rng := rand.New(rand.NewPCG(5, 6))
	var reqs []callKid
	at := 0.0
	for i := range 150 {
		sizes := [2]int64{200 + rng.Int64N(40), 200 + rng.Int64N(40)}
		for sizes[1] == sizes[0] {
			sizes[1] = 200 + rng.Int64N(40)
		}
		sends := [2]float64{at + 0.3 + 0.1*rng.Float64(), at + 0.3 + 0.1*rng.Float64()}
		for k := range 2 {
			send := sends[k]
			back := send + 0.2
			c, _ := b.rpc(at, back+0.3+0.1*rng.Float64(), "web", fmt.Sprintf("w:%d", 2*i+k), "app", "a:80", fmt.Sprintf("q%d.%d", i, k), sizes[k])
			kid, _ := b.rpc(send, back-0.1, "app", fmt.Sprintf("a:%d", 1000+2*i+k), "store", "s:11211", fmt.Sprintf("k%d.%d", i, k), sizes[k]-187)
			reqs = append(reqs, callKid{c, kid})
		}
		at += 3 + rng.Float64()
	}
	_, r := runOn(t, b, DefaultOptions())
	if right := r.rightParents(reqs); right < len(reqs)*95/100 {
		t.Errorf("%d of %d calls given their request, want at least 95 %%", right, len(reqs))
	}
}
