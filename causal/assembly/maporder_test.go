package assembly

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// orderSensitive reports whether summing terms in Go's map order gives
// more than one result over 200 walks of m: the terms are such that a
// sum in map order would show (else a test of the order proves nothing).
func orderSensitive[K comparable](m map[K]float64) bool {
	seen := map[uint64]bool{}
	for range 200 {
		s := 0.0
		for _, v := range m {
			s += v
		}
		seen[math.Float64bits(s)] = true
	}
	return len(seen) > 1
}

// TestMapOrderSums checks that the engine's floating sums over maps
// (maporder.go) give the same bits at every walk, each against the sum
// in the order of the keys, with terms whose sum in Go's map order
// differs from walk to walk (Go starts every walk of a map at a random
// place, so repeating a sum in one process catches what a new map seed
// would).
func TestMapOrderSums(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	link := map[int64]float64{}
	for i := range 64 {
		link[int64(i*7-100)] = rng.Float64() * 1.4 // fractional: soft assignments' weights
	}
	link[3] += 5 // a difference seen often
	if !orderSensitive(link) {
		t.Fatal("the terms sum to the same bits in any order: nothing tested")
	}
	t.Run("sizeLink.unseenWeight", func(t *testing.T) {
		n, n1 := 0.0, 0.0
		keys := slices.Sorted(func(yield func(int64) bool) {
			for k := range link {
				if !yield(k) {
					return
				}
			}
		})
		for _, d := range keys {
			if v := link[d]; v < 1.5 {
				n1 += v
			}
		}
		order := slices.Clone(keys)
		for range 50 {
			rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			s := &sizeLink{link: map[int64]float64{}}
			n = 0
			for _, d := range order {
				s.add(d, link[d])
			}
			// s.n is summed in the order the links came, as the fit adds them
			for _, d := range order {
				n += link[d]
			}
			want := max(2, n1*n/(n-n1))
			if got := s.unseenWeight(); math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("κ %v, in the order of the differences %v", got, want)
			}
			s.add(keys[0], 0.25)
			if s.kappa != 0 {
				t.Fatal("a link added kept κ")
			}
		}
	})
	t.Run("sizeLink.decide", func(t *testing.T) {
		for range 20 {
			s := &sizeLink{link: link, n: 100}
			var asked []int64
			s.decide(func(d int64) float64 { asked = append(asked, d); return 0.1 })
			if !slices.IsSorted(asked) || len(asked) != len(link) {
				t.Fatalf("decide weighed the differences in the order %v", asked)
			}
		}
	})
	t.Run("fifoOrder.weight", func(t *testing.T) {
		f := fifoOrder{calls: 500, rivals: 90, kinds: map[int32]*fifoKind{}}
		waits := map[int32]float64{}
		for k := range int32(40) {
			fk := &fifoKind{}
			for b := range fifoDelayBins {
				fk.links[b] = rng.Float64()
				fk.waits[b] = rng.Float64() * 3
				fk.waited[b] = rng.Float64()
			}
			f.kinds[k] = fk
			o, _ := fk.waiting()
			waits[k] = o
		}
		if !orderSensitive(waits) {
			t.Fatal("nothing tested")
		}
		var obs, pred float64
		for k := range int32(40) {
			o, p := f.kinds[k].waiting()
			obs, pred = obs+o, pred+p
		}
		w := min(max(1-(obs+1)/(pred+1), 0), 1)
		want := 1 - (1-w)*max(0, 1-f.rivals/f.calls)
		for range 50 {
			if got := f.weight(); math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("weight %v, in the order of the kinds %v", got, want)
			}
		}
	})
	t.Run("handed.addBack", func(t *testing.T) {
		hd := handed{}
		tk := trigKind{pk: 1, ck: 2}
		own := map[dcKey]float64{}
		for i := range int32(40) {
			k := dcKey{tk, i}
			h := &hist{}
			h.add(1+int(i)%5, rng.Float64())
			hd[k] = h
			own[k] = h.n
		}
		if !orderSensitive(own) {
			t.Fatal("nothing tested")
		}
		var first map[dcKey]*hist
		for range 30 {
			sig := map[dcKey]*hist{}
			hd.addBack(sig, map[trigKind]float64{tk: 1.3}, map[trigKind]float64{tk: 17.9})
			if first == nil {
				first = sig
			} else if !reflect.DeepEqual(sig, first) {
				t.Fatal("the handed calls added back differ from one walk to the next")
			}
		}
	})
}

// TestMapOrderRuns runs the engine twice on one trace in one process (Go
// walks maps in another order every time) and checks that the results
// are equal to the bit, and that the deconvolution's pairs (dcFloor)
// are the same at every walk on every node.
func TestMapOrderRuns(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("a generated trace of 64 requests in flight, inferred twice (not under -short or -race)")
	}
	cfg := poolConfigOf(t, "../accuracy/testdata/inflight.yaml", 64)
	_, first, r := inferGenerated(t, cfg)
	_, again, _ := inferGenerated(t, cfg)
	if !reflect.DeepEqual(first, again) {
		t.Error("two runs on one trace differ")
	}
	for n := range r.parentsOf {
		if r.entry[n] || len(r.childrenOf[n]) == 0 {
			continue
		}
		evs := r.dcTimeline(int32(n))
		sig, _ := r.dcFloor(evs)
		for range 5 {
			if s, _ := r.dcFloor(evs); !reflect.DeepEqual(s, sig) {
				t.Fatalf("node %d: the deconvolution's pairs differ from one walk to the next", n)
			}
		}
	}
}
