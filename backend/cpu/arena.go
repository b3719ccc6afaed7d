package cpu

import (
	"math/bits"
	"sync"
)

// arena keeps the float32 buffers of closed streams for the next streams:
// a request allocates the same activations every time (an English request
// ~5 MB per question), and fresh memory costs page faults, zeroing by the
// OS and garbage collections that stop the workers. Buffers are kept by
// size class (four per doubling), up to arenaMaxBytes in all; beyond that
// they are left to the garbage collector.
type arena struct {
	mu    sync.Mutex
	free  map[int][][]float32 // by class capacity
	bytes int
}

const arenaMaxBytes = 512 << 20

// sizeClass rounds n up to one of four sizes per power of two.
func sizeClass(n int) int {
	if n <= 64 {
		return 64
	}
	step := 1 << (bits.Len(uint(n-1)) - 3)
	return (n + step - 1) / step * step
}

// get returns a buffer of n floats: a kept one (reused true, its contents
// those of its last use) or a fresh, zeroed one.
func (a *arena) get(n int) (buf []float32, reused bool) {
	c := sizeClass(n)
	a.mu.Lock()
	if list := a.free[c]; len(list) > 0 {
		buf := list[len(list)-1]
		a.free[c] = list[:len(list)-1]
		a.bytes -= 4 * c
		a.mu.Unlock()
		return buf[:n], true
	}
	a.mu.Unlock()
	return make([]float32, n, c), false
}

// zeroed returns a zeroed buffer of n floats from b's arena. A reused
// buffer is cleared by the workers when it is large: a request's
// activations are megabytes (ten multilingual questions ~30 MB, mostly
// cold), and cleared on the caller alone they took ~4 % of a request at
// 16 cores (arena.get in a CPU profile) while the other fifteen workers
// waited (measurements: docs/perf-log.md).
func (b *Backend) zeroed(n int) []float32 {
	buf, reused := b.arena.get(n)
	if !reused {
		return buf
	}
	if n < zeroedChunk {
		clear(buf)
		return buf
	}
	b.parallelFor(n, zeroedChunk, func(lo, hi int) { clear(buf[lo:hi]) })
	return buf
}

// zeroedChunk is the least a worker clears (256 KiB): below it a hand-off
// costs more than the clearing it spares the caller.
const zeroedChunk = 1 << 16

// put takes back the buffers of ts, which are invalid from now on (a later
// use fails as a released tensor).
func (a *arena) put(ts []*tensor) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.free == nil {
		a.free = map[int][][]float32{}
	}
	for _, t := range ts {
		c := cap(t.data)
		if c == sizeClass(c) && a.bytes+4*c <= arenaMaxBytes {
			a.free[c] = append(a.free[c], t.data[:c])
			a.bytes += 4 * c
		}
		t.data = nil
	}
}
