//go:build darwin

package metal

import (
	"fmt"
	"sync/atomic"
	"unsafe"
)

// systemBuffer is a shared-storage MTLBuffer owned by the device ledger.
type systemBuffer struct {
	dev      *systemDevice
	id       objcID
	bytes    []byte // host view, len = the size asked for
	noCopy   bool   // wraps caller memory (NewBufferWithBytes without a copy)
	released atomic.Bool
}

// Bytes is the host view; nil once the buffer or its device is released.
func (b *systemBuffer) Bytes() []byte {
	if b.released.Load() || b.dev.closed.Load() {
		return nil
	}
	return b.bytes
}

func (b *systemBuffer) Len() int { return len(b.bytes) }

// NoCopy reports whether the buffer wraps the caller's memory rather than
// a copy of it.
func (b *systemBuffer) NoCopy() bool { return b.noCopy }

// Release gives the MTLBuffer back. A command buffer that already encoded
// it keeps it alive until the GPU is done (Metal retains the resources of
// command buffers made with commandBuffer). Releasing twice is a no-op.
func (b *systemBuffer) Release() {
	if b.released.Swap(true) {
		return
	}
	inPool(func() { b.dev.ledger.drop(uintptr(b.id)) })
}

// minBufferLength is what we allocate for a zero-size request: Metal
// refuses zero-length buffers, and a zero-size Buffer is still useful.
const minBufferLength = 16

// NewBuffer allocates a zeroed shared-storage buffer (newBufferWithLength
// clears its allocation, per Apple's documentation). Like every Objective-C
// path except Dispatch and Barrier it runs inside an autorelease pool: Go
// threads seldom exit, so their implicit pools would never drain.
func (d *systemDevice) NewBuffer(size int) (Buffer, error) {
	if err := d.checkOpen(); err != nil {
		return nil, err
	}
	if size < 0 || size > d.maxBufferLen {
		return nil, fmt.Errorf("%w: buffer of %d bytes (device %s allows 0 to %d)", ErrInvalidDispatch, size, d.name, d.maxBufferLen)
	}
	var b *systemBuffer
	inPool(func() {
		id := msgIDUintUint(d.device, sel.newBufferWithLengthOptions, uint64(max(size, minBufferLength)), mtlResourceStorageModeShared)
		if id != 0 {
			b = d.adoptBuffer(id, size, nil)
		}
	})
	if b == nil {
		return nil, fmt.Errorf("metal: %s: newBufferWithLength:%d returned nil (out of memory?)", d.name, size)
	}
	return b, nil
}

// NewBufferNoCopy wraps data in place (newBufferWithBytesNoCopy) or fails
// with ErrNoCopy; it never copies. data must be page-aligned with its
// page-rounded length inside cap(data) (NoCopyLength), as an mmap'd file
// is. The caller keeps data alive and mapped while the buffer lives.
func (d *systemDevice) NewBufferNoCopy(data []byte) (Buffer, error) {
	if err := d.checkOpen(); err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: empty memory", ErrNoCopy)
	}
	base := unsafe.Pointer(unsafe.SliceData(data))
	length, ok := NoCopyLength(uintptr(base), len(data), cap(data), d.pageSize)
	if !ok {
		return nil, fmt.Errorf("%w: %d bytes at %p are not page-aligned (page %d) with whole pages inside their allocation", ErrNoCopy, len(data), base, d.pageSize)
	}
	if length > d.maxBufferLen {
		return nil, fmt.Errorf("%w: %d bytes exceed device %s's maxBufferLength %d", ErrNoCopy, length, d.name, d.maxBufferLen)
	}
	var b *systemBuffer
	inPool(func() {
		// nil deallocator: the caller owns the memory.
		id := msgIDPtrUintUintID(d.device, sel.newBufferWithBytesNoCopy, base, uint64(length), mtlResourceStorageModeShared, 0)
		if id != 0 {
			b = d.adoptBuffer(id, len(data), data[:len(data):len(data)])
		}
	})
	if b == nil {
		// Metal refuses memory that is not one VM region (e.g. spanning
		// two mappings).
		return nil, fmt.Errorf("%w: device %s refused newBufferWithBytesNoCopy for %d bytes", ErrNoCopy, d.name, length)
	}
	return b, nil
}

// NewBufferWithBytes wraps data without copying when NewBufferNoCopy can;
// otherwise it copies. Callers that must not copy (mapped weights) call
// NewBufferNoCopy and report their fallback.
func (d *systemDevice) NewBufferWithBytes(data []byte) (Buffer, error) {
	if err := d.checkOpen(); err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return d.NewBuffer(0)
	}
	if len(data) > d.maxBufferLen {
		return nil, fmt.Errorf("%w: buffer of %d bytes (device %s allows up to %d)", ErrInvalidDispatch, len(data), d.name, d.maxBufferLen)
	}
	if b, err := d.NewBufferNoCopy(data); err == nil {
		return b, nil
	}
	var b *systemBuffer
	inPool(func() {
		id := msgIDPtrUintUint(d.device, sel.newBufferWithBytesLengthOptions, unsafe.Pointer(unsafe.SliceData(data)), uint64(len(data)), mtlResourceStorageModeShared)
		if id != 0 {
			b = d.adoptBuffer(id, len(data), nil)
		}
	})
	if b == nil {
		return nil, fmt.Errorf("metal: %s: newBufferWithBytes:length:%d returned nil (out of memory?)", d.name, len(data))
	}
	return b, nil
}

// adoptBuffer takes ownership of a +1 MTLBuffer. wrapped is the caller's
// memory for a no-copy buffer, nil otherwise. Call it inside a pool.
func (d *systemDevice) adoptBuffer(id objcID, size int, wrapped []byte) *systemBuffer {
	d.ledger.add(uintptr(id), "buffer")
	b := &systemBuffer{dev: d, id: id, noCopy: wrapped != nil, bytes: wrapped}
	if wrapped == nil {
		b.bytes = unsafe.Slice((*byte)(msgPointer(id, sel.contents)), size)
	}
	return b
}

// Contents is the buffer's host address as Metal reports it: for a no-copy
// buffer, the wrapped memory's address (tests check the aliasing with it).
func (b *systemBuffer) Contents() unsafe.Pointer {
	var p unsafe.Pointer
	inPool(func() { p = msgPointer(b.id, sel.contents) })
	return p
}
