package cpu

import (
	"sync"
	"sync/atomic"
)

// minParallelWork is the work (in rough flops) below which an op runs on
// the calling goroutine: starting goroutines costs ~1µs each, more than a
// small op.
const minParallelWork = 1 << 16

// parallel calls fn over [0, n) in chunks, on up to be.workers goroutines
// (the caller's included) when n·cost is worth it. Chunks are handed out
// dynamically, so uneven work (attention rows of different lengths)
// balances.
func (be *Backend) parallel(n, cost int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	w := min(be.workers, n)
	if w <= 1 || n*cost < minParallelWork {
		fn(0, n)
		return
	}
	chunks := min(n, 4*w)
	size := (n + chunks - 1) / chunks
	var next atomic.Int64
	work := func() {
		for {
			lo := int(next.Add(1)-1) * size
			if lo >= n {
				return
			}
			fn(lo, min(lo+size, n))
		}
	}
	var wg sync.WaitGroup
	for range w - 1 {
		wg.Add(1)
		go func() { defer wg.Done(); work() }()
	}
	work()
	wg.Wait()
}
