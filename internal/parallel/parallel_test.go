package parallel

import (
	"runtime"
	"sync/atomic"
	"testing"
)

func TestForCallsEachIndexOnce(t *testing.T) {
	for _, tc := range []struct{ n, workers, block int }{
		{0, 4, 1}, {1, 4, 1}, {7, 1, 1}, {100, 4, 1}, {100, 4, 7}, {100, 200, 1}, {5, 4, 64}, {1000, 3, 0},
	} {
		counts := make([]atomic.Int32, tc.n)
		var maxW atomic.Int32
		For(tc.n, tc.workers, tc.block, func(w, i int) {
			counts[i].Add(1)
			for {
				m := maxW.Load()
				if int32(w) <= m || maxW.CompareAndSwap(m, int32(w)) {
					break
				}
			}
		})
		for i := range counts {
			if c := counts[i].Load(); c != 1 {
				t.Errorf("%+v: index %d called %d times", tc, i, c)
			}
		}
		if w := int(maxW.Load()); w >= max(tc.workers, 1) {
			t.Errorf("%+v: worker %d, want < %d", tc, w, tc.workers)
		}
	}
}

func TestForOneWorkerRunsInOrder(t *testing.T) {
	var got []int
	For(10, 1, 3, func(w, i int) {
		if w != 0 {
			t.Errorf("worker %d", w)
		}
		got = append(got, i)
	})
	for i, v := range got {
		if v != i {
			t.Fatalf("order %v", got)
		}
	}
}

func TestWorkers(t *testing.T) {
	if got := Workers(3); got != 3 {
		t.Errorf("Workers(3) = %d", got)
	}
	if got := Workers(0); got != runtime.GOMAXPROCS(0) {
		t.Errorf("Workers(0) = %d, want GOMAXPROCS", got)
	}
}
