package gpu

import (
	"math/bits"

	"github.com/laya-metal/laya/metal"
)

// The arena keeps the buffers of closed streams for the next ones, so a
// request allocates no device buffer after the first of its shape (MLX
// recycles buffers from a cache the same way; a fresh MTLBuffer costs a
// kernel call and zeroed pages). Buffers are kept by size class: a stream
// tensor of n bytes takes any free buffer of n's class, which is at most
// 25 % larger. A stream only returns its buffers when it is closed, after
// the GPU has finished with them (Stream.Close waits), so a buffer handed
// out again is never in use on the device.

// arenaMaxBytes bounds what the arena holds; beyond it closed streams'
// buffers are released.
const arenaMaxBytes = 1 << 30

// sizeClass rounds n up to 4 KiB, then to 4 steps per power of two.
func sizeClass(n int) int {
	if n <= 4096 {
		return 4096
	}
	e := bits.Len(uint(n-1)) - 1 // 2^e < n ≤ 2^(e+1)
	step := 1 << (e - 2)
	return (n + step - 1) / step * step
}

type arena struct {
	free  map[int][]metal.Buffer // by size class
	bytes int
	// allocated counts device buffers the arena had to create (tests and
	// plans: zero per request once warm).
	allocated int
}

// take returns a buffer of at least n bytes: a free one of n's class, whose
// contents are those of its last use (reused is true), or a new, zeroed
// one.
func (b *Backend) take(n int) (buf metal.Buffer, reused bool, err error) {
	class := sizeClass(n)
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, false, ErrClosed
	}
	if free := b.arena.free[class]; len(free) > 0 {
		buf := free[len(free)-1]
		b.arena.free[class] = free[:len(free)-1]
		b.arena.bytes -= class
		b.mu.Unlock()
		return buf, true, nil
	}
	b.arena.allocated++
	b.mu.Unlock()
	buf, err = b.dev.NewBuffer(class)
	return buf, false, err
}

// giveBack keeps bufs for later streams, or releases them when the arena is
// full or the backend closed.
func (b *Backend) giveBack(bufs []metal.Buffer) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, buf := range bufs {
		class := buf.Len()
		if b.closed || b.arena.bytes+class > arenaMaxBytes || class != sizeClass(class) {
			buf.Release()
			continue
		}
		if b.arena.free == nil {
			b.arena.free = map[int][]metal.Buffer{}
		}
		b.arena.free[class] = append(b.arena.free[class], buf)
		b.arena.bytes += class
	}
}

// releaseArena releases every kept buffer (Backend.Close, under mu).
func (b *Backend) releaseArena() {
	for _, free := range b.arena.free {
		for _, buf := range free {
			buf.Release()
		}
	}
	b.arena = arena{allocated: b.arena.allocated}
}

// BuffersAllocated is the number of device buffers the backend's streams
// have had to create so far (not counting weights): after the first
// request of a shape, the same request adds none.
func (b *Backend) BuffersAllocated() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.arena.allocated
}
