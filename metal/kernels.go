package metal

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
)

// Kernels dispatches this repository's kernels (package kernels) on a
// Device. The dispatch functions (VectorAdd, Softmax, Gemm, ...) live next to
// their float64 references in kernel_<family>.go and are shared by the Apple
// GPU and the emulator: they pick threadgroup sizes, bind arguments and
// encode, but do not commit.
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

// u32s packs setBytes arguments as the kernels' uint fields.
func u32s(vs ...int) []byte {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	}
	return b
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
