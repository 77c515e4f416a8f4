// Package parallel is the one parallel-for of the module: it spreads the
// indices of a loop over a bounded number of goroutines, handing them out
// in blocks so that uneven work balances, and waits for them. Callers keep
// their results deterministic by writing each index's result to its own
// slot.
package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Workers resolves a worker-count option: n when positive, else
// GOMAXPROCS.
func Workers(n int) int {
	if n > 0 {
		return n
	}
	return max(1, runtime.GOMAXPROCS(0))
}

// For calls f(w, i) for every i in [0, n) on up to workers goroutines and
// returns when all calls have returned. w < workers names the goroutine
// making the call, so that f can use per-goroutine scratch space. Indices
// are handed out block at a time (a block of at least 1). With one worker,
// or no more indices than one block, it runs in the calling goroutine.
func For(n, workers, block int, f func(w, i int)) {
	block = max(block, 1)
	if workers <= 1 || n <= block {
		for i := 0; i < n; i++ {
			f(0, i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range min(workers, (n+block-1)/block) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				lo := int(next.Add(int64(block))) - block
				if lo >= n {
					return
				}
				for i := lo; i < min(lo+block, n); i++ {
					f(w, i)
				}
			}
		}()
	}
	wg.Wait()
}
