package causal

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// workerCount resolves a Workers option: n when positive, else GOMAXPROCS.
func workerCount(n int) int {
	if n > 0 {
		return n
	}
	return runtime.GOMAXPROCS(0)
}

// parallelNodes calls fn(i) for every i in [0, n) on up to workers
// goroutines, handing out indices one at a time so that uneven work
// balances. With one worker it runs in the calling goroutine.
func parallelNodes(workers, n int, fn func(i int)) {
	if workers <= 1 || n <= 1 {
		for i := 0; i < n; i++ {
			fn(i)
		}
		return
	}
	if workers > n {
		workers = n
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}
