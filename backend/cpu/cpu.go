package cpu

import (
	"context"
	"fmt"
	"sync"

	"github.com/laya-metal/laya/backend"
)

func init() {
	backend.Register("cpu", func() (backend.Backend, error) { return New(), nil })
}

// Backend is the CPU backend. Weights are used as stored (weight.go).
type Backend struct {
	workers int // goroutines per operation; 0: GOMAXPROCS at the time

	mu    sync.Mutex
	ropes map[ropeKey][]float32 // cos/sin tables, see rope.go
	arena arena                 // activation buffers of closed streams
}

// New returns a CPU backend that spreads each operation over GOMAXPROCS
// goroutines (read at every operation, so it follows later changes).
func New() *Backend {
	return &Backend{ropes: map[ropeKey][]float32{}}
}

// Name implements backend.Backend.
func (b *Backend) Name() string { return "cpu" }

// tensor is the CPU tensor handle: a row-major matrix of float32 values or,
// for an F16/BF16 weight used as stored (weight.go), of their bits.
type tensor struct {
	rows, cols int
	data       []float32 // nil for a half weight until an op widens it
	half       []uint16  // F16/BF16 bits, little-endian order; nil otherwise
	dtype      backend.DType
	weight     bool // uploaded: never written (it may be a read-only mapping)
	widenOnce  sync.Once
}

func (t *tensor) Rows() int { return t.rows }
func (t *tensor) Cols() int { return t.cols }

// NewStream implements backend.Backend.
func (b *Backend) NewStream() backend.Stream { return &Stream{be: b} }

// Close implements backend.Backend. Weights are garbage collected.
func (b *Backend) Close() error { return nil }

// Stream is the CPU stream: operations run when they are called, except a
// Linear that a GeGLU or an Add may fuse with, and that fused pair, which
// run with the next operation (or Read).
type Stream struct {
	be     *Backend
	err    error
	closed bool
	owned  []*tensor // made by New: their buffers go back to the arena at Close
	// pending is a Linear recorded but not yet run (gemm.go): the next
	// operation runs it first, unless it is the GeGLU of its output, which
	// runs the two fused.
	pending *linearOp
	// fused is a Linear fused with its GeGLU or residual Add, recorded
	// but not yet run (gemm.go); pending and fused are never both set.
	fused *fusedOp
	// norm is a LayerNorm recorded but not yet run (norm.go): a Linear of
	// its output takes it, any other operation runs it first. At most one
	// of pending, fused and norm is set.
	norm *normOp
}

// Discard implements backend.Discarder: when t is the output of the
// recorded fused operation's Linear, the outer-product path does not store
// it (the GeGLU and the residual Add read it from the GEMM's staging
// block). An encoder layer's MLP up-projection and both its output
// projections are never read again: of the values its GEMMs write, 7/10 in
// English, 5/8 in multilingual.
func (s *Stream) Discard(t backend.Tensor) {
	if f := s.fused; f != nil && t == backend.Tensor(f.op.dst) {
		f.op.discardY = true
	}
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
// tensors; nil entries are allowed (optional operands). ts[0] is the
// operation's destination (except for read), which may not be a weight.
func (s *Stream) ok(op string, ts ...backend.Tensor) bool {
	s.runPending()
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
		if ct, isCPU := t.(*tensor); !isCPU || ct == nil || (ct.half == nil && ct.data == nil) {
			s.fail(fmt.Errorf("cpu: %s: %w (%T)", op, backend.ErrForeignTensor, t))
			return false
		}
	}
	if op != "read" && len(ts) > 0 && ts[0] != nil && ts[0].(*tensor).weight {
		s.fail(fmt.Errorf("cpu: %s: %w: the destination is an uploaded weight", op, backend.ErrShape))
		return false
	}
	return true
}

// data returns t's float32 values; a half weight an op reads whole (not
// through a GEMM panel or a gather) is widened once, here.
func data(t backend.Tensor) []float32 {
	if t == nil {
		return nil
	}
	ct := t.(*tensor)
	if ct.half != nil {
		ct.widenOnce.Do(func() {
			d := make([]float32, len(ct.half))
			widen(d, ct.half, ct.dtype)
			ct.data = d
		})
	}
	return ct.data
}

// New implements backend.Stream.
func (s *Stream) New(rows, cols int) backend.Tensor {
	if !s.check(backend.CheckDims(rows, cols)) {
		// A valid placeholder keeps later shape checks meaningful.
		return &tensor{rows: max(rows, 1), cols: max(cols, 1), data: make([]float32, 1)}
	}
	t := &tensor{rows: rows, cols: cols, data: s.be.zeroed(rows * cols)}
	s.owned = append(s.owned, t)
	return t
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

// Close implements backend.Stream. The tensors' buffers go back to the
// backend's arena for the next streams; handles are invalid afterwards (an
// operation on one fails with backend.ErrForeignTensor).
func (s *Stream) Close() {
	s.pending, s.fused, s.norm = nil, nil, nil
	if !s.closed {
		s.be.arena.put(s.owned)
		s.owned = nil
	}
	s.closed = true
}
