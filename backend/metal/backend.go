package metalbackend

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/weights"
)

// ErrClosed reports a use of a backend after Close.
var ErrClosed = errors.New("metalbackend: backend closed")

// Backend is backend.Backend over a metal.Device. It is safe for concurrent
// use; each Stream is used by one goroutine at a time.
type Backend struct {
	name string
	dev  metal.Device
	kern *metal.Kernels
	// ownsDevice: Close closes dev too (the registry's backends).
	ownsDevice bool

	mu      sync.Mutex
	closed  bool
	buffers []metal.Buffer        // weights, widened copies and rope tables
	ropes   map[ropeKey]ropeTable // by (θ, Dh), grown on demand
}

type ropeKey struct {
	theta   float64
	headDim int
}

type ropeTable struct {
	buf    metal.Buffer
	seqLen int // positions the table holds
}

// New returns a backend named name that runs on dev. The caller keeps
// ownership of dev: Close releases the backend's buffers, not the device.
func New(name string, dev metal.Device) *Backend {
	return &Backend{name: name, dev: dev, kern: metal.NewKernels(dev), ropes: map[ropeKey]ropeTable{}}
}

// Name implements backend.Backend.
func (b *Backend) Name() string { return b.name }

// Device is the device the backend runs on.
func (b *Backend) Device() metal.Device { return b.dev }

// tensor is the handle of a device buffer holding a row-major matrix.
// Stream tensors and float32 weights hold float32; fp16 weight matrices
// hold halves (elem ElemF16) and get a float32 twin the first time an
// operation other than Linear's weight or Gather's table reads them.
type tensor struct {
	rows, cols int
	buf        metal.Buffer
	elem       metal.Elem
	be         *Backend
	stream     *Stream // nil for weights

	wideOnce sync.Once
	wide     metal.Buffer
	wideErr  error
}

func (t *tensor) Rows() int { return t.rows }
func (t *tensor) Cols() int { return t.cols }

// Upload implements backend.Backend: raw is copied into a device buffer.
func (b *Backend) Upload(name string, dtype backend.DType, rows, cols int, raw []byte) (backend.Tensor, error) {
	if err := backend.CheckUpload(name, dtype, rows, cols, len(raw)); err != nil {
		return nil, fmt.Errorf("metalbackend: %w", err)
	}
	n := rows * cols
	t := &tensor{rows: rows, cols: cols, be: b}
	var err error
	switch {
	case dtype == backend.F32:
		t.buf, err = b.newBuffer(raw)
	case dtype == backend.F16 && rows > 1:
		// Kept as stored: the GEMM and the gather read halves.
		t.elem = metal.ElemF16
		t.buf, err = b.newBuffer(raw)
	default:
		// bf16 (no kernel reads it) and fp16 vectors (norm weights and
		// biases, which the row kernels read as float) widen once here.
		wide := make([]float32, n)
		if err := weights.DecodeFloat32(wide, raw, dtype); err != nil {
			return nil, fmt.Errorf("metalbackend: upload %s: %w", name, err)
		}
		t.buf, err = b.newBuffer(f32Bytes(wide))
	}
	if err != nil {
		return nil, fmt.Errorf("metalbackend: upload %s: %w", name, err)
	}
	return t, nil
}

// newBuffer copies data into a new device buffer owned by the backend.
func (b *Backend) newBuffer(data []byte) (metal.Buffer, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, ErrClosed
	}
	buf, err := b.dev.NewBuffer(len(data))
	if err != nil {
		return nil, err
	}
	copy(buf.Bytes(), data)
	b.buffers = append(b.buffers, buf)
	return buf, nil
}

// f32Buffer returns a float32 buffer with t's values: its own, or for an
// fp16 weight a widened twin made once (weights never change, so the twin
// stays valid).
func (t *tensor) f32Buffer() (metal.Buffer, error) {
	if t.elem == metal.ElemF32 {
		return t.buf, nil
	}
	t.wideOnce.Do(func() {
		wide := make([]float32, t.rows*t.cols)
		if err := weights.DecodeFloat32(wide, t.buf.Bytes(), weights.F16); err != nil {
			t.wideErr = err
			return
		}
		t.wide, t.wideErr = t.be.newBuffer(f32Bytes(wide))
	})
	return t.wide, t.wideErr
}

// rope returns a cos/sin table (metal.RopeTable) of at least seqLen
// positions. Tables only grow; a replaced one stays alive until Close, as a
// recorded command buffer may still read it.
func (b *Backend) rope(theta float64, headDim, seqLen int) (metal.Buffer, error) {
	key := ropeKey{theta, headDim}
	b.mu.Lock()
	table, ok := b.ropes[key]
	b.mu.Unlock()
	if ok && table.seqLen >= seqLen {
		return table.buf, nil
	}
	// 512 positions cover the usual inputs in one table.
	n := max(seqLen, 512, 2*table.seqLen)
	buf, err := b.newBuffer(f32Bytes(metal.RopeTable(theta, headDim, n)))
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if cur := b.ropes[key]; cur.seqLen < n {
		b.ropes[key] = ropeTable{buf: buf, seqLen: n}
	}
	return buf, nil
}

// NewStream implements backend.Backend.
func (b *Backend) NewStream() backend.Stream {
	return &Stream{be: b, written: map[metal.Buffer]bool{}, read: map[metal.Buffer]bool{}}
}

// Close implements backend.Backend: it releases every weight and table,
// and the device when the backend opened it. Streams must be closed first.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	for _, buf := range b.buffers {
		buf.Release()
	}
	b.buffers, b.ropes = nil, nil
	if b.ownsDevice {
		return b.dev.Close()
	}
	return nil
}

// f32Bytes is the little-endian encoding of vs.
func f32Bytes(vs []float32) []byte {
	out := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
	}
	return out
}
