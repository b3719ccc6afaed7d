//go:build linux

package cuda

import (
	"slices"
	"time"
	"unsafe"

	"github.com/laya-metal/laya/backend"
)

// DeviceTime implements backend.Timer: the GPU time of every flush so far,
// from events around each.
func (b *Backend) DeviceTime() time.Duration { return time.Duration(b.deviceNs.Load()) }

// SetProfiling implements backend.Profiler. While on, every segment runs
// kernel by kernel (no graph), each operation between its own events, and
// waits for itself, so the times rank operations; they do not add up to a
// graph's replay.
func (b *Backend) SetProfiling(on bool) {
	b.mu.Lock()
	if on {
		b.opTimes = map[string]*backend.OpTime{}
	}
	b.mu.Unlock()
	b.profiling.Store(on)
}

// OpTimes implements backend.Profiler.
func (b *Backend) OpTimes() []backend.OpTime {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []backend.OpTime
	for _, t := range b.opTimes {
		out = append(out, *t)
	}
	slices.SortFunc(out, func(x, y backend.OpTime) int { return int(y.Time - x.Time) })
	return out
}

// opTimer holds the event pairs of one profiled segment.
type opTimer struct {
	events []uintptr
	names  []string
}

func (p *opTimer) before(b *Backend, stream uintptr) error {
	var e uintptr
	if err := b.drv.Call("cuEventCreate", uintptr(unsafe.Pointer(&e)), 0); err != nil {
		return err
	}
	p.events = append(p.events, e)
	return b.drv.Call("cuEventRecord", e, stream)
}

func (p *opTimer) after(b *Backend, stream uintptr, name string) error {
	if err := p.before(b, stream); err != nil {
		return err
	}
	p.names = append(p.names, name)
	return nil
}

// collect adds the finished segment's times; on the worker thread.
func (p *opTimer) collect(b *Backend) {
	times := make([]float32, len(p.names))
	for i := range p.names {
		b.drv.Call("cuEventElapsedTime", uintptr(unsafe.Pointer(&times[i])), p.events[2*i], p.events[2*i+1])
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.opTimes == nil {
		return
	}
	for i, name := range p.names {
		t := b.opTimes[name]
		if t == nil {
			t = &backend.OpTime{Op: name}
			b.opTimes[name] = t
		}
		t.Count++
		t.Time += time.Duration(float64(times[i]) * 1e6)
	}
}

func (p *opTimer) release(b *Backend) {
	for _, e := range p.events {
		b.drv.Call("cuEventDestroy_v2", e)
	}
}
