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
	b.dev.ledger.drop(uintptr(b.id))
}

// minBufferLength is what we allocate for a zero-size request: Metal
// refuses zero-length buffers, and a zero-size Buffer is still useful.
const minBufferLength = 16

// NewBuffer allocates a zeroed shared-storage buffer (newBufferWithLength
// clears its allocation, per Apple's documentation).
func (d *systemDevice) NewBuffer(size int) (Buffer, error) {
	if err := d.checkOpen(); err != nil {
		return nil, err
	}
	if size < 0 || size > d.maxBufferLen {
		return nil, fmt.Errorf("%w: buffer of %d bytes (device %s allows 0 to %d)", ErrInvalidDispatch, size, d.name, d.maxBufferLen)
	}
	id := msgIDUintUint(d.device, sel.newBufferWithLengthOptions, uint64(max(size, minBufferLength)), mtlResourceStorageModeShared)
	if id == 0 {
		return nil, fmt.Errorf("metal: %s: newBufferWithLength:%d returned nil (out of memory?)", d.name, size)
	}
	return d.adoptBuffer(id, size, nil), nil
}

// NewBufferWithBytes wraps data without copying when its base is
// page-aligned and the page-rounded length lies within cap(data) (see
// NoCopyLength); otherwise, or if Metal refuses to wrap it, it copies.
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
	base := unsafe.Pointer(unsafe.SliceData(data))
	if length, ok := NoCopyLength(uintptr(base), len(data), cap(data), d.pageSize); ok && length <= d.maxBufferLen {
		// nil deallocator: the caller owns the memory and keeps it alive
		// while the buffer lives.
		id := msgIDPtrUintUintID(d.device, sel.newBufferWithBytesNoCopy, base, uint64(length), mtlResourceStorageModeShared, 0)
		if id != 0 {
			return d.adoptBuffer(id, len(data), data[:len(data):len(data)]), nil
		}
		// Metal refuses memory that is not one VM region (e.g. spanning
		// two mappings); a copy is still correct.
	}
	id := msgIDPtrUintUint(d.device, sel.newBufferWithBytesLengthOptions, base, uint64(len(data)), mtlResourceStorageModeShared)
	if id == 0 {
		return nil, fmt.Errorf("metal: %s: newBufferWithBytes:length:%d returned nil (out of memory?)", d.name, len(data))
	}
	return d.adoptBuffer(id, len(data), nil), nil
}

// adoptBuffer takes ownership of a +1 MTLBuffer. wrapped is the caller's
// memory for a no-copy buffer, nil otherwise.
func (d *systemDevice) adoptBuffer(id objcID, size int, wrapped []byte) *systemBuffer {
	d.ledger.add(uintptr(id), "buffer")
	b := &systemBuffer{dev: d, id: id, noCopy: wrapped != nil, bytes: wrapped}
	if wrapped == nil {
		b.bytes = unsafe.Slice((*byte)(msgPointer(id, sel.contents)), size)
	}
	return b
}
