package parallel

import (
	"sync/atomic"
	"testing"
)

// TestForVisitsEachIndexOnce: every index is visited once, by a goroutine
// numbered below workers, whatever the block size.
func TestForVisitsEachIndexOnce(t *testing.T) {
	tests := []struct{ n, workers, block int }{
		{0, 4, 1}, {1, 4, 1}, {7, 1, 3}, {100, 4, 1}, {100, 3, 7}, {1000, 8, 64}, {5, 16, 1}, {64, 2, 64}, {10, 2, 0},
	}
	for _, tc := range tests {
		seen := make([]atomic.Int32, tc.n)
		var bad atomic.Bool
		For(tc.n, tc.workers, tc.block, func(w, i int) {
			if w < 0 || w >= max(1, tc.workers) {
				bad.Store(true)
			}
			seen[i].Add(1)
		})
		if bad.Load() {
			t.Errorf("%+v: a goroutine number out of range", tc)
		}
		for i := range seen {
			if v := seen[i].Load(); v != 1 {
				t.Fatalf("%+v: index %d visited %d times", tc, i, v)
			}
		}
	}
}

// TestEach: Each visits every index once.
func TestEach(t *testing.T) {
	var sum atomic.Int64
	Each(1000, 4, func(i int) { sum.Add(int64(i)) })
	if got := sum.Load(); got != 999*1000/2 {
		t.Errorf("sum of indices %d", got)
	}
}

// TestWorkers: a positive option is kept, 0 means every CPU.
func TestWorkers(t *testing.T) {
	if Workers(3) != 3 || Workers(0) < 1 || Workers(-1) < 1 {
		t.Errorf("Workers(3, 0, -1) = %d, %d, %d", Workers(3), Workers(0), Workers(-1))
	}
}
