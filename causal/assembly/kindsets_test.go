package assembly

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestKindSetsRatio: the ratio of the kinds made is learnt from the
// requests' sets. Where the kinds come in combinations (all four of C, D,
// E, F, or C, D and G), a request that made C and E is strongly against
// making G next and for D or F, and one that made all four for its reply;
// where a second kind is made independently of anything (a cache read,
// then a database read on some misses) the kinds made say nothing beyond
// their number and the ratio is not used.
func TestKindSetsRatio(t *testing.T) {
	const (
		C, D, E, F, G int32 = 0, 1, 2, 3, 4
		pk            int32 = 9
	)
	bit := func(ks ...int32) uint64 {
		var b uint64
		for _, k := range ks {
			b |= kindBit(k)
		}
		return b
	}
	observe := func(ks *kindSets, calls []int32) {
		var made uint64
		for i, k := range calls {
			ks.add(pk, made, uint8(i), k, 1)
			made |= kindBit(k)
		}
		ks.add(pk, made, uint8(len(calls)), endKind, 1)
	}
	for _, tc := range []struct {
		name   string
		combos [][]int32
		made   uint64
		next   int32
		lo, hi float64
	}{
		{"combination broken", [][]int32{{C, D, E, F}, {C, D, G}}, bit(C, E), G, -100, -2},
		{"combination kept", [][]int32{{C, D, E, F}, {C, D, G}}, bit(C, E), D, 0.2, 100},
		{"combination complete", [][]int32{{C, D, E, F}, {C, D, G}}, bit(C, D, G), endKind, 0.3, 100},
		{"independent", [][]int32{{C}, {C, D}, {C}}, bit(C), D, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			ks := newKindSets()
			for i := range 300 {
				calls := append([]int32(nil), tc.combos[i%len(tc.combos)]...)
				if tc.name != "independent" {
					// parallel calls leave in any order
					rng.Shuffle(len(calls), func(a, b int) { calls[a], calls[b] = calls[b], calls[a] })
				}
				observe(ks, calls)
			}
			ks.finish()
			pos := uint8(0)
			for b := tc.made; b != 0; b &= b - 1 {
				pos++
			}
			v := ks.lr(pk, tc.made, pos, tc.next)
			t.Logf("informative %v, log ratio %.2f", ks.informative, v)
			if v < tc.lo || v > tc.hi {
				t.Errorf("log ratio %.2f, want %v to %v", v, tc.lo, tc.hi)
			}
		})
	}
}

// TestKindSetsFanOut: an aggregator B serves requests that fan out in
// parallel, in any order, either to C, D, E and F or to C, D and G,
// overlapping their neighbours, the calls' sends spread so that their
// timing hardly tells the open requests apart. The kinds a request made
// tell which calls are still to come: with them the engine gets 474 of
// the 525 calls and 110 of the 150 requests right; the call graph alone,
// which knows a request's last call and how many it made, mixes the
// combinations (465 calls, 100 requests).
func TestKindSetsFanOut(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	b := newTB()
	var pairs []callKid
	byReq := map[int32][]callKid{}
	for i := range 150 {
		t0 := 10 + 0.5*float64(i) + rng.Float64()*0.2
		id := fmt.Sprint("r", i)
		kinds := []string{"C", "D", "E", "F"}
		if rng.IntN(2) == 0 {
			kinds = []string{"C", "D", "G"}
		}
		last := 0.0
		var kids []int32
		for j, k := range kinds {
			send := t0 + 0.1 + rng.Float64()*0.6
			back := send + 0.5 + rng.ExpFloat64()*1.5
			last = max(last, back)
			c, _ := b.rpc(send, back, "B", fmt.Sprint("B:", 1000+i*8+j), k, k+":80", fmt.Sprint(id, "-", j), 50)
			kids = append(kids, c)
		}
		c, _ := b.rpc(t0, last+0.2+rng.Float64()*0.1, "A", fmt.Sprint("A:", 100+i), "B", "B:80", id, 100)
		for _, k := range kids {
			pairs = append(pairs, callKid{c, k})
			byReq[c] = append(byReq[c], callKid{c, k})
		}
	}
	_, r := runOn(t, b, DefaultOptions())
	right := r.rightParents(pairs)
	reqs := 0
	for _, ps := range byReq {
		if r.rightParents(ps) == len(ps) {
			reqs++
		}
	}
	t.Logf("%d of %d calls right, %d of %d requests", right, len(pairs), reqs, len(byReq))
	if reqs < 106 {
		t.Errorf("%d of %d requests right, want at least 106", reqs, len(byReq))
	}
}
