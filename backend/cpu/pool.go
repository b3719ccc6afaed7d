package cpu

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// The worker pool: goroutines started once and kept, each with a task slot
// of its own that it polls, so an operation costs a store per extra worker
// instead of a new goroutine (an English request runs ~250 parallel
// operations). Several streams may share it: a caller hands a chunk to a
// worker that is idle and runs the chunks no idle worker takes itself.
// Tasks never wait on other tasks, so every chunk ends.
//
// Why a slot a worker and not one channel for all: with one channel the
// fifteen polling workers of a 16-core machine took the channel's lock in
// turn to receive a task each (runtime.lock2 and chanrecv were 5 % of a
// ten-question multilingual request's samples), and an operation of ~40 µs
// of work a worker (a LayerNorm, a Rope) spent four fifths of its workers'
// time waiting (per operation, wall time × workers against the chunks' own
// time). A slot a worker removed that wait (measurements: docs/perf-log.md).
type workerPool struct {
	mu      sync.Mutex
	workers atomic.Pointer[[]*poolWorker]
}

// poolWorker is one worker goroutine's state.
type poolWorker struct {
	busy     atomic.Bool            // claimed by a caller, until its task has run
	task     atomic.Pointer[func()] // the task handed to it, until it starts
	sleeping atomic.Bool            // blocked on wake, or about to be
	wake     chan struct{}          // capacity 1
	_        [64]byte               // the next worker's fields on other lines
}

var pool = &workerPool{}

// ensure starts workers until n are running.
func (p *workerPool) ensure(n int) {
	if ws := p.workers.Load(); ws != nil && len(*ws) >= n {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var ws []*poolWorker
	if cur := p.workers.Load(); cur != nil {
		ws = *cur
	}
	for len(ws) < n {
		w := &poolWorker{wake: make(chan struct{}, 1)}
		go w.run()
		ws = append(ws[:len(ws):len(ws)], w)
	}
	p.workers.Store(&ws)
}

// give hands task to an idle worker and reports whether one took it.
func (p *workerPool) give(task *func()) bool {
	ws := p.workers.Load()
	if ws == nil {
		return false
	}
	for _, w := range *ws {
		if w.busy.Load() || !w.busy.CompareAndSwap(false, true) {
			continue
		}
		w.task.Store(task)
		// The worker stores sleeping before it looks at its slot a last
		// time, and this looks at sleeping after storing the task: one of
		// the two sees the other's store (a stale token left in wake only
		// costs the worker one more look).
		if w.sleeping.Load() {
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
		return true
	}
	return false
}

// run is a worker's loop: poll the slot for up to poolSpin, then block.
func (w *poolWorker) run() {
	for {
		var task *func()
		if !spinUntil(workerYield, func() bool { task = w.task.Load(); return task != nil }) {
			w.sleeping.Store(true)
			if task = w.task.Load(); task == nil {
				<-w.wake
			}
			w.sleeping.Store(false)
			continue
		}
		w.task.Store(nil)
		(*task)()
		w.busy.Store(false)
	}
}

// poolSpin is how long an idle worker polls its slot, and a caller polls
// for its workers' chunks, before blocking. A blocked goroutine's thread
// sleeps, and waking it takes the kernel, and in a virtual machine the
// hypervisor: a parallelFor of ~3 µs of work takes several times as long
// when its worker has to be woken (BenchmarkParallelForGap). A forward is
// hundreds of such operations back to back with gaps of microseconds, and
// at 16 cores each wakes fifteen workers. OpenMP runtimes spin the same
// way between parallel regions (GOMP_SPINCOUNT, KMP_BLOCKTIME). Past
// poolSpin of idleness the workers block, so an idle process costs
// nothing (TestPoolWorkersBlockWhenIdle).
//
// Why 1 ms and not a few hundred µs: at 16 workers the workers done first
// with an operation wait for its slowest chunk, and with a 200 µs poll
// those that had waited past it had blocked by the time the next operation
// handed them a chunk; waking a blocked worker costs ~140–190 µs on a
// 16-core KVM host (BenchmarkParallelForGap at a 200 µs gap). laya-bench
// --joins shows that as chunks starting late, most of the idle worker time
// of a ten-question request. Polling for 1 ms removes it and made
// ten-question requests about a tenth faster at 16 workers; 5 ms buys no
// more, and at 2 workers it makes no difference (measurements:
// docs/perf-log.md).
//
// LAYA_CPU_SPIN (a Go duration; 0 turns polling off) overrides it, for
// machines whose cores are shared with other busy processes, and to
// measure what the polling buys (OMP_WAIT_POLICY's role in OpenMP).
var poolSpin = spinFromEnv(os.Getenv("LAYA_CPU_SPIN"), time.Millisecond)

// spinFromEnv parses LAYA_CPU_SPIN: empty gives def; a value that is not a
// non-negative duration is ignored with a warning on stderr rather than
// failing every forward of the process.
func spinFromEnv(v string, def time.Duration) time.Duration {
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		fmt.Fprintf(os.Stderr, "cpu: LAYA_CPU_SPIN=%q is not a non-negative duration (like 200us or 0); using %v\n", v, def)
		return def
	}
	return d
}

// spinUntil polls ready until it reports true (then true) or poolSpin has
// passed (then false), yielding the P every yield of it. Why yield at all:
// a goroutine made runnable on this P (a caller woken by its last chunk, a
// worker woken by a caller's send) would otherwise wait for another thread
// to steal it (BenchmarkParallelForGap at a 200 µs gap: a call spinning
// bare took ~3× as long as one yielding every 8th poll). Why not on every
// poll: a yield takes the scheduler's global lock, which fifteen idle
// workers polling would contend for millions of times a second (a 2-core
// machine cannot show that cost: there the hand-offs without a gap were as
// fast either way; measurements: docs/perf-log.md).
func spinUntil(yield time.Duration, ready func() bool) bool {
	start := time.Now()
	lastYield := start
	for i := 0; ; i++ {
		if ready() {
			return true
		}
		if i%8 != 7 {
			continue
		}
		now := time.Now()
		if now.Sub(start) > poolSpin {
			return false
		}
		if now.Sub(lastYield) > yield {
			lastYield = now
			runtime.Gosched()
		}
	}
}

// workerYield and callerYield are how often a polling worker and a caller
// polling for its chunks yield their P (poolWorker.run, parallelFor): a
// caller is one per stream, and the worker it woke may be waiting for its P.
const (
	workerYield = 20 * time.Microsecond
	callerYield = 2 * time.Microsecond
)

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
	if joins.on.Load() {
		j := startJoin(chunks)
		defer j.end()
		fn = j.chunk(fn)
	}
	var wg sync.WaitGroup
	var left atomic.Int32
	left.Store(int32(chunks - 1))
	var mine []func() // chunks no idle worker took (other streams have them)
	for c := 1; c < chunks; c++ {
		lo, hi := c*n/chunks, (c+1)*n/chunks
		task := func() {
			defer wg.Done()
			defer left.Add(-1)
			fn(lo, hi)
		}
		wg.Add(1)
		if !pool.give(&task) {
			mine = append(mine, task)
		}
	}
	fn(0, n/chunks)
	for _, task := range mine {
		task()
	}
	// Poll before blocking (poolSpin): the last chunk usually ends within
	// microseconds of the caller's.
	spinUntil(callerYield, func() bool { return left.Load() == 0 })
	wg.Wait()
}
