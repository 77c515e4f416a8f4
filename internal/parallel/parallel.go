// Package parallel runs the iterations of a loop on several goroutines:
// the one parallel for-loop the engines and the Aggregator share.
//
// Work is handed out in blocks of indices from a shared counter, so that
// uneven iterations balance, and every call waits for all of its
// goroutines. A loop's result must not depend on which goroutine ran
// which index; callers that keep per-goroutine state index it by the
// goroutine number For passes.
//
// This package must not know about traces or engines.
package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Workers resolves a Workers option: n when positive, else GOMAXPROCS.
func Workers(n int) int {
	if n > 0 {
		return n
	}
	return runtime.GOMAXPROCS(0)
}

// For calls f(w, i) for every i in [0, n) on up to workers goroutines and
// waits for them; w < workers names the goroutine that runs i. Indices
// are handed out block at a time (a block of 1 balances best when
// iterations are long and uneven). With one worker, or no more than one
// block, it runs in the calling goroutine with w = 0.
func For(n, workers, block int, f func(w, i int)) {
	block = max(1, block)
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

// Each calls f(i) for every i in [0, n) on up to workers goroutines, one
// index at a time: For with blocks of one, for loops that need no
// per-goroutine state.
func Each(n, workers int, f func(i int)) {
	For(n, workers, 1, func(_, i int) { f(i) })
}
