package assembly

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// scanGet is replayMemo.get as it was before its index: a scan of the
// request's entries for the first of the same hash and calls.
func scanGet(m *replayMemo, i int32, h uint64, ks []int32) (float64, bool) {
	if int(i) >= len(m.byReq) {
		return 0, false
	}
	for _, e := range m.byReq[i] {
		if e.h == h && slices.Equal(m.arena[e.off:e.off+e.n], ks) {
			return e.score, true
		}
	}
	return 0, false
}

// TestReplayMemoIndex checks the memo's index against the scan it
// replaced, as the local search uses the memo (put after a miss), on
// random requests and calls: with their own hashes, with every hash
// equal (collisions in the chains) and with few hashes across requests
// (collisions of keys), past maxMemo entries a request.
func TestReplayMemoIndex(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nreq  int
		calls int // calls drawn from 0..calls-1
		hash  func(m *replayMemo, p int32, ks []int32) uint64
	}{
		{"own hashes", 40, 12, func(m *replayMemo, p int32, ks []int32) uint64 { return m.hash(p, ks) }},
		{"one hash", 5, 8, func(*replayMemo, int32, []int32) uint64 { return 42 }},
		{"few hashes", 30, 10, func(_ *replayMemo, _ int32, ks []int32) uint64 { return uint64(len(ks) % 3) }},
		{"past maxMemo", 2, 30, func(m *replayMemo, p int32, ks []int32) uint64 { return m.hash(p, ks) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(9, 10))
			var m replayMemo
			hits := 0
			for range 20000 {
				i := int32(rng.IntN(tc.nreq))
				ks := make([]int32, rng.IntN(5))
				for k := range ks {
					ks[k] = int32(rng.IntN(tc.calls))
				}
				h := tc.hash(&m, i, ks)
				got, ok := m.get(i, h, ks)
				want, wok := scanGet(&m, i, h, ks)
				if got != want || ok != wok {
					t.Fatalf("request %d, calls %v: get %v, %v; the scan %v, %v", i, ks, got, ok, want, wok)
				}
				if ok {
					hits++
					continue
				}
				m.put(i, h, ks, rng.Float64())
			}
			if hits == 0 {
				t.Fatal("no hit: nothing compared")
			}
			long := false
			for _, es := range m.byReq {
				long = long || len(es) > memoScanMax
			}
			if tc.name == "past maxMemo" && !long {
				t.Fatal("no request's list outgrew the scan (memoScanMax): the index is not compared")
			}
		})
	}
}
