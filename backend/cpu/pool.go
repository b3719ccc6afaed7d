package cpu

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// The worker pool: goroutines started once and kept, fed through a channel,
// so an operation costs a channel send per extra worker instead of a new
// goroutine (an English request runs ~700 parallel operations). Several
// streams may share it. Tasks never wait on other tasks, so the queue always
// drains; when it is full a task runs on the caller's goroutine instead.
//
// Between the operations of one forward pass the workers and the caller
// spin for a short while (poolSpin) instead of parking at once: a parked
// goroutine's OS thread sleeps in the kernel, and waking fifteen of them
// costs tens of microseconds per operation — at 16 cores and ~250 operations
// per multilingual request, about a tenth of the request. OpenMP runtimes
// (which PyTorch's CPU kernels use) spin the same way before they sleep
// (KMP_BLOCKTIME, 200 ms by default; ours is far shorter, so an idle
// library costs no CPU).
type workerPool struct {
	mu      sync.Mutex
	started int
	tasks   chan func()
}

var pool = &workerPool{tasks: make(chan func(), 1024)}

// poolSpin is how long an idle worker polls for the next task, and a caller
// for its operation's last chunk, before blocking.
const poolSpin = 50 * time.Microsecond

// ensure starts workers until n are running.
func (p *workerPool) ensure(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for ; p.started < n; p.started++ {
		go p.work()
	}
}

// work runs tasks until the program ends: after each it polls the queue for
// up to poolSpin, then blocks on it.
func (p *workerPool) work() {
	for {
		task, ok := p.poll()
		if !ok {
			task = <-p.tasks
		}
		task()
	}
}

// poll spins on the queue for up to poolSpin. The clock is read every 64
// polls: a non-blocking receive on an empty channel is a few nanoseconds.
func (p *workerPool) poll() (func(), bool) {
	var deadline time.Time
	for i := 0; ; i++ {
		select {
		case task := <-p.tasks:
			return task, true
		default:
		}
		if i%64 == 63 {
			now := time.Now()
			if deadline.IsZero() {
				deadline = now.Add(poolSpin)
			} else if now.After(deadline) {
				return nil, false
			}
		}
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
	var left atomic.Int32
	left.Store(int32(chunks - 1))
	for c := 1; c < chunks; c++ {
		lo, hi := c*n/chunks, (c+1)*n/chunks
		task := func() {
			defer wg.Done()
			defer left.Add(-1)
			fn(lo, hi)
		}
		wg.Add(1)
		select {
		case pool.tasks <- task:
		default:
			// The queue is full (many streams at once): run it here.
			task()
		}
	}
	fn(0, n/chunks)
	spinUntilDone(&left)
	wg.Wait()
}

// spinUntilDone polls left for up to poolSpin (the other chunks of an
// operation usually finish within microseconds of the caller's), so that
// the WaitGroup's Wait rarely has to park the caller.
func spinUntilDone(left *atomic.Int32) {
	var deadline time.Time
	for i := 0; left.Load() > 0; i++ {
		if i%64 == 63 {
			now := time.Now()
			if deadline.IsZero() {
				deadline = now.Add(poolSpin)
			} else if now.After(deadline) {
				return
			}
		}
	}
}
