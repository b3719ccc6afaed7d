package cpu

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/weights"
)

func init() {
	backend.Register("cpu", func() (backend.Backend, error) { return New(), nil })
}

// Backend is the CPU backend. Weights are held as float32.
type Backend struct {
	workers int // goroutines per operation; 0: GOMAXPROCS at the time

	mu    sync.Mutex
	ropes map[ropeKey][]float32 // cos/sin tables, see rope.go
}

// New returns a CPU backend that spreads each operation over GOMAXPROCS
// goroutines (read at every operation, so it follows later changes).
func New() *Backend {
	return &Backend{ropes: map[ropeKey][]float32{}}
}

// Name implements backend.Backend.
func (b *Backend) Name() string { return "cpu" }

// tensor is the CPU tensor handle: a row-major float32 matrix.
type tensor struct {
	rows, cols int
	data       []float32
}

func (t *tensor) Rows() int { return t.rows }
func (t *tensor) Cols() int { return t.cols }

// Upload implements backend.Backend: raw is converted to float32 once.
func (b *Backend) Upload(name string, dtype backend.DType, rows, cols int, raw []byte) (backend.Tensor, error) {
	if err := backend.CheckUpload(name, dtype, rows, cols, len(raw)); err != nil {
		return nil, fmt.Errorf("cpu: %w", err)
	}
	n := rows * cols
	data := make([]float32, n)
	if err := weights.DecodeFloat32(data, raw, dtype); err != nil {
		return nil, fmt.Errorf("cpu: upload %s: %w", name, err)
	}
	return &tensor{rows: rows, cols: cols, data: data}, nil
}

// NewStream implements backend.Backend.
func (b *Backend) NewStream() backend.Stream { return &Stream{be: b} }

// Close implements backend.Backend. Weights are garbage collected.
func (b *Backend) Close() error { return nil }

// Stream is the CPU stream: operations run when they are called.
type Stream struct {
	be     *Backend
	err    error
	closed bool
}

// fail records the first error; later operations become no-ops.
func (s *Stream) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

// check records err, the error of one of package backend's op contracts
// (backend.CheckLinear, …), and reports whether there was none.
func (s *Stream) check(err error) bool {
	if err != nil {
		s.fail(fmt.Errorf("cpu: %w", err))
		return false
	}
	return true
}

// ok reports whether the stream can run op on ts, all of which must be CPU
// tensors; nil entries are allowed (optional operands).
func (s *Stream) ok(op string, ts ...backend.Tensor) bool {
	if s.err != nil {
		return false
	}
	if s.closed {
		s.fail(fmt.Errorf("cpu: %s: %w: stream closed", op, backend.ErrForeignTensor))
		return false
	}
	for _, t := range ts {
		if t == nil {
			continue
		}
		if ct, isCPU := t.(*tensor); !isCPU || ct == nil || ct.data == nil {
			s.fail(fmt.Errorf("cpu: %s: %w (%T)", op, backend.ErrForeignTensor, t))
			return false
		}
	}
	return true
}

func data(t backend.Tensor) []float32 {
	if t == nil {
		return nil
	}
	return t.(*tensor).data
}

// New implements backend.Stream.
func (s *Stream) New(rows, cols int) backend.Tensor {
	if !s.check(backend.CheckDims(rows, cols)) {
		// A valid placeholder keeps later shape checks meaningful.
		return &tensor{rows: max(rows, 1), cols: max(cols, 1), data: make([]float32, 1)}
	}
	return &tensor{rows: rows, cols: cols, data: make([]float32, rows*cols)}
}

// FromHost implements backend.Stream.
func (s *Stream) FromHost(rows, cols int, src []float32) backend.Tensor {
	t := s.New(rows, cols)
	if s.err == nil && !s.check(backend.CheckFromHost(rows, cols, len(src))) {
		return t
	}
	copy(t.(*tensor).data, src)
	return t
}

// Read implements backend.Stream.
func (s *Stream) Read(ctx context.Context, t backend.Tensor, dst []float32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !s.ok("read", t) {
		return s.err
	}
	if !s.check(backend.CheckRead(t, len(dst))) {
		return s.err
	}
	copy(dst, data(t))
	return nil
}

// Err implements backend.Stream.
func (s *Stream) Err() error { return s.err }

// Close implements backend.Stream. Tensors are garbage collected; handles
// must not be used afterwards.
func (s *Stream) Close() { s.closed = true }

// parallelFor splits [0, n) into contiguous chunks of at least grain items
// and runs fn on them on up to workers goroutines.
func (b *Backend) parallelFor(n, grain int, fn func(lo, hi int)) {
	workers := b.workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	chunks := min(workers, (n+grain-1)/max(grain, 1))
	if chunks <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	for c := range chunks {
		lo, hi := c*n/chunks, (c+1)*n/chunks
		wg.Go(func() { fn(lo, hi) })
	}
	wg.Wait()
}
