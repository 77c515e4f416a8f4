package causal

import "github.com/wirepath/wirepath/internal/parallel"

// workerCount resolves a Workers option: n when positive, else GOMAXPROCS.
func workerCount(n int) int { return parallel.Workers(n) }

// parallelNodes calls fn(i) for every i in [0, n) on up to workers
// goroutines, handing out indices one at a time so that uneven work
// balances. With one worker it runs in the calling goroutine.
func parallelNodes(workers, n int, fn func(i int)) {
	parallel.For(n, workers, 1, func(_, i int) { fn(i) })
}
