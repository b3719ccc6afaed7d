package metal

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"unsafe"
)

// Kernels dispatches this repository's kernels (package kernels) on a
// Device. The dispatch functions (EncodeGemm, Softmax, VectorAdd, ...) live
// in kernel_<family>.go, each beside its family's cost model, with their
// float64 references in package metal/internal/kernelref (which the
// self-test, selftest.go, shares with the tests); they are shared by
// the Apple GPU and the emulator: they pick threadgroup sizes, bind
// arguments with their access (Arg.Access) and encode, but do not commit.
type Kernels struct {
	dev Device
	// pipes caches pipelines by kernel and constants, so that a dispatch
	// does not build the device's cache key (or box constants) each time:
	// kernel name → []pipelineEntry, replaced (not changed) on a miss.
	pipes sync.Map
	mu    sync.Mutex // serialises misses
}

// pipelineKey identifies a kernel's specialisation; kernels take at most
// maxKeyConstants function constants.
type pipelineKey struct {
	n      int
	index  [maxKeyConstants]int32
	values [maxKeyConstants]uint32
}

type pipelineEntry struct {
	key pipelineKey
	p   Pipeline
}

const maxKeyConstants = 12

// NewKernels wraps a device whose library holds package kernels' sources.
func NewKernels(dev Device) *Kernels { return &Kernels{dev: dev} }

// Device returns the device the kernels run on.
func (k *Kernels) Device() Device { return k.dev }

// Prepare builds the pipeline of kernel specialised by constants, or finds
// it in the cache, as the first dispatch of that variant would. A program
// that knows the variants it will dispatch prepares them ahead, so that a
// first request does not wait for the compiler.
func (k *Kernels) Prepare(kernel string, constants ...Constant) error {
	_, err := k.pipeline(kernel, constants...)
	return err
}

func (k *Kernels) pipeline(name string, constants ...Constant) (Pipeline, error) {
	key, cacheable := pipelineKey{n: len(constants)}, len(constants) <= maxKeyConstants
	for i, c := range constants {
		if !cacheable {
			break
		}
		key.index[i] = int32(c.Index)
		switch v := c.Value.(type) {
		case bool:
			if v {
				key.values[i] = 1
			}
		case uint32:
			key.values[i] = v
		case int32:
			key.values[i] = uint32(v)
		case float32:
			key.values[i] = math.Float32bits(v)
		default:
			cacheable = false
		}
	}
	if cacheable {
		if entries, ok := k.pipes.Load(name); ok {
			for _, e := range entries.([]pipelineEntry) {
				if e.key == key {
					return e.p, nil
				}
			}
		}
	}
	p, err := k.dev.Pipeline(name, append([]Constant(nil), constants...)...)
	if err != nil {
		return nil, fmt.Errorf("metal: kernel %s: %w", name, err)
	}
	if cacheable {
		k.mu.Lock()
		var entries []pipelineEntry
		if old, ok := k.pipes.Load(name); ok {
			entries = old.([]pipelineEntry)
		}
		k.pipes.Store(name, append(entries[:len(entries):len(entries)], pipelineEntry{key, p}))
		k.mu.Unlock()
	}
	return p, nil
}

// An encoding is one dispatch's arguments while it is encoded: the Args and
// the inline bytes (setBytes payloads) they point to. Building them in a
// pooled encoding rather than in literals keeps a dispatch free of heap
// allocations: an argument slice handed to CommandBuffer.Dispatch, an
// interface method, escapes, and so would be allocated per dispatch.
// Dispatch copies what it keeps (Metal copies setBytes data at encode time,
// the emulator and the plan device copy too), so the encoding goes back to
// the pool as soon as Dispatch returns.
type encoding struct {
	args  [maxDispatchArgs]Arg
	n     int
	bytes [2 * maxSetBytes]byte // up to two full setBytes payloads
	used  int
}

// maxDispatchArgs is the most arguments a kernel of package kernels binds.
const maxDispatchArgs = 12

var encodings = sync.Pool{New: func() any { return new(encoding) }}

// newEncoding takes an empty encoding from the pool; dispatch returns it.
func newEncoding() *encoding {
	e := encodings.Get().(*encoding)
	e.n, e.used = 0, 0
	return e
}

// read, write and readWrite bind b at offset off to [[buffer(index)]],
// with the kernel's access to it (Arg.Access); a nil b binds nothing (an
// optional operand).
func (e *encoding) read(index int, b Buffer, off int)      { e.buffer(index, b, off, AccessRead) }
func (e *encoding) write(index int, b Buffer, off int)     { e.buffer(index, b, off, AccessWrite) }
func (e *encoding) readWrite(index int, b Buffer, off int) { e.buffer(index, b, off, AccessReadWrite) }

func (e *encoding) buffer(index int, b Buffer, off int, access Access) {
	if b != nil {
		e.args[e.n] = Arg{Index: index, Buffer: b, Offset: off, Access: access}
		e.n++
	}
}

// inline reserves n bytes of setBytes data for [[buffer(index)]] and
// returns them for the caller to fill.
func (e *encoding) inline(index, n int) []byte {
	b := e.bytes[e.used : e.used+n : e.used+n]
	e.used += n
	e.args[e.n] = Arg{Index: index, Bytes: b}
	e.n++
	return b
}

// u32s binds vs inline as the kernels' uint fields.
func (e *encoding) u32s(index int, vs ...int) {
	b := e.inline(index, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	}
}

// i32s binds vs inline as uint32 (gather indices).
func (e *encoding) i32s(index int, vs []int32) {
	b := e.inline(index, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	}
}

// params binds a parameter struct inline.
func params[T kernelParams](e *encoding, index int, p T) {
	copy(e.inline(index, int(unsafe.Sizeof(p))), paramBytes(&p))
}

// dispatch encodes the dispatch and gives e back to the pool.
func (e *encoding) dispatch(cb CommandBuffer, p Pipeline, groups, threads Size3) error {
	err := cb.Dispatch(p, groups, threads, e.args[:e.n]...)
	clear(e.args[:e.n]) // drop the buffers: the pool must not keep them alive
	encodings.Put(e)
	return err
}

// checkLen reports a buffer too small for what a kernel will touch.
func checkLen(kernel, what string, b Buffer, need int) error {
	if b == nil {
		return fmt.Errorf("%w: %s: %s buffer is nil", ErrInvalidDispatch, kernel, what)
	}
	if b.Len() < need {
		return fmt.Errorf("%w: %s: %s buffer has %d bytes, needs %d", ErrInvalidDispatch, kernel, what, b.Len(), need)
	}
	return nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
