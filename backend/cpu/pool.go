package cpu

import (
	"runtime"
	"sync"
)

// The worker pool: goroutines started once and kept, fed through a channel,
// so an operation costs a channel send per extra worker instead of a new
// goroutine (an English request runs ~700 parallel operations). Several
// streams may share it. Tasks never wait on other tasks, so the queue always
// drains; when it is full a task runs on the caller's goroutine instead.
type workerPool struct {
	mu      sync.Mutex
	started int
	tasks   chan func()
}

var pool = &workerPool{tasks: make(chan func(), 1024)}

// ensure starts workers until n are running.
func (p *workerPool) ensure(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for ; p.started < n; p.started++ {
		go func() {
			for task := range p.tasks {
				task()
			}
		}()
	}
}

// workerCount is the number of goroutines one operation spreads over.
func (b *Backend) workerCount() int {
	if b.workers > 0 {
		return b.workers
	}
	return runtime.GOMAXPROCS(0)
}

// parallelFor splits [0, n) into contiguous chunks of at least grain items
// and runs fn on them on up to workerCount goroutines: the caller's and
// pool workers'.
func (b *Backend) parallelFor(n, grain int, fn func(lo, hi int)) {
	chunks := min(b.workerCount(), (n+grain-1)/max(grain, 1))
	if chunks <= 1 {
		if n > 0 {
			fn(0, n)
		}
		return
	}
	pool.ensure(chunks - 1)
	var wg sync.WaitGroup
	for c := 1; c < chunks; c++ {
		lo, hi := c*n/chunks, (c+1)*n/chunks
		task := func() { defer wg.Done(); fn(lo, hi) }
		wg.Add(1)
		select {
		case pool.tasks <- task:
		default:
			// The queue is full (many streams at once): run it here.
			task()
		}
	}
	fn(0, n/chunks)
	wg.Wait()
}
