package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"unsafe"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/weights"
)

// Weights are used as stored. An F32 weight is a []float32 view; an F16 or
// BF16 matrix is a []uint16 view of its bits, widened only a GEMM panel
// (gemm.go) or a gathered embedding row at a time, into worker scratch. With
// UploadMapped both views point into the checkpoint's file mapping, so
// loading costs the mmap plus the header's validation and the resident
// memory is the pages of the mapping the model touches plus activations.
// Vectors (norm weights, biases: [1, n]) are widened at upload: they are
// tiny and read by element-wise loops.

// littleEndian reports whether this CPU stores numbers as the checkpoint
// does (safetensors is little-endian): only then can the mapping's bytes be
// read in place as float32 or uint16.
var littleEndian = func() bool {
	probe := uint16(1)
	return *(*byte)(unsafe.Pointer(&probe)) == 1
}()

// matrix is a weight operand of the GEMM: float32 rows, or F16/BF16 bits,
// ld elements apart.
type matrix struct {
	f32   []float32
	half  []uint16
	dtype backend.DType
	ld    int
}

// weightOf returns t as a GEMM operand, in its stored dtype.
func weightOf(t backend.Tensor) matrix {
	ct := t.(*tensor)
	if ct.half != nil {
		return matrix{half: ct.half, dtype: ct.dtype, ld: ct.cols}
	}
	return matrix{f32: ct.data, ld: ct.cols}
}

// panel returns rows [n0, n1) of w (k wide) as float32 rows and their
// stride: the rows themselves for a float32 w, else their widened copy in
// scratch.
func (w matrix) panel(n0, n1, k int, scratch *[]float32) ([]float32, int) {
	if w.f32 != nil {
		return w.f32[n0*w.ld:], w.ld
	}
	buf := (*scratch)[:(n1-n0)*k]
	for j := n0; j < n1; j++ {
		widen(buf[(j-n0)*k:(j-n0+1)*k], w.half[j*w.ld:j*w.ld+k], w.dtype)
	}
	return buf, k
}

// panelLazy is panel without the widening: for a half w it returns the
// scratch rows and a widen(r0, r1) that fills panel rows [r0, r1) when
// called, so a caller can widen each block of rows right before its first
// use (while it is hot in L1); for a float32 w, the rows and a nil widen.
func (w matrix) panelLazy(n0, n1, k int, scratch *[]float32) ([]float32, int, func(r0, r1 int)) {
	if w.f32 != nil {
		return w.f32[n0*w.ld:], w.ld, nil
	}
	buf := (*scratch)[:(n1-n0)*k]
	return buf, k, func(r0, r1 int) {
		for j := n0 + r0; j < n0+r1; j++ {
			widen(buf[(j-n0)*k:(j-n0+1)*k], w.half[j*w.ld:j*w.ld+k], w.dtype)
		}
	}
}

// rowBytes returns the stored bytes of rows [n0, n1) of w (k wide), from
// the first row's start to the last row's k-th element: what a panel of
// them reads. Empty for n0 ≥ n1.
func (w matrix) rowBytes(n0, n1, k int) []byte {
	if n0 >= n1 || k == 0 {
		return nil
	}
	if w.f32 != nil {
		rows := w.f32[n0*w.ld : (n1-1)*w.ld+k]
		return unsafe.Slice((*byte)(unsafe.Pointer(&rows[0])), 4*len(rows))
	}
	rows := w.half[n0*w.ld : (n1-1)*w.ld+k]
	return unsafe.Slice((*byte)(unsafe.Pointer(&rows[0])), 2*len(rows))
}

// widen sets dst[i] to the float32 value of the F16 or BF16 bits src[i]
// (exact: both fit in float32).
func widen(dst []float32, src []uint16, dtype backend.DType) {
	if len(src) == 0 {
		return
	}
	if simdWiden(dst, src, dtype) {
		return
	}
	widenGo(dst, src, dtype)
}

// widenGo is the portable widen.
func widenGo(dst []float32, src []uint16, dtype backend.DType) {
	dst = dst[:len(src)]
	switch dtype {
	case backend.F16:
		table := f16Table()
		for i, v := range src {
			dst[i] = table[v]
		}
	default: // BF16
		for i, v := range src {
			dst[i] = math.Float32frombits(uint32(v) << 16)
		}
	}
}

var f16Table = sync.OnceValue(func() *[65536]float32 {
	t := new([65536]float32)
	for i := range t {
		t[i] = weights.Float16ToFloat32(uint16(i))
	}
	return t
})

// Upload implements backend.Backend. F32 data and vectors are decoded to
// float32; F16 and BF16 matrices are kept as their bits (a copy of raw, as
// large as raw).
func (b *Backend) Upload(name string, dtype backend.DType, rows, cols int, raw []byte) (backend.Tensor, error) {
	if err := backend.CheckUpload(name, dtype, rows, cols, len(raw)); err != nil {
		return nil, fmt.Errorf("cpu: %w", err)
	}
	t := &tensor{rows: rows, cols: cols, weight: true}
	n := rows * cols
	if dtype == backend.F32 || rows == 1 {
		t.data = make([]float32, n)
		if err := weights.DecodeFloat32(t.data, raw, dtype); err != nil {
			return nil, fmt.Errorf("cpu: upload %s: %w", name, err)
		}
		return t, nil
	}
	t.half, t.dtype = make([]uint16, n), dtype
	for i := range t.half {
		t.half[i] = binary.LittleEndian.Uint16(raw[2*i:])
	}
	return t, nil
}

// UploadMapped implements backend.MappedUploader: matrices are views of the
// mapping (F32 at a 4-byte aligned offset, F16 and BF16 at a 2-byte aligned
// one, on a little-endian CPU); anything else is copied as Upload does.
func (b *Backend) UploadMapped(name string, dtype backend.DType, rows, cols int, mapping []byte, offset int) (backend.Tensor, error) {
	if err := backend.CheckDims(rows, cols); err != nil {
		return nil, fmt.Errorf("cpu: upload %s: %w", name, err)
	}
	size := rows * cols * dtype.Size()
	if offset < 0 || size <= 0 || offset > len(mapping)-size {
		return nil, fmt.Errorf("cpu: upload %s: %w: %d bytes at offset %d of a %d-byte mapping", name, backend.ErrShape, size, offset, len(mapping))
	}
	raw := mapping[offset : offset+size]
	if err := backend.CheckUpload(name, dtype, rows, cols, len(raw)); err != nil {
		return nil, fmt.Errorf("cpu: %w", err)
	}
	addr := uintptr(unsafe.Pointer(&raw[0]))
	switch {
	case !littleEndian || rows == 1:
	case dtype == backend.F32 && addr%4 == 0:
		return &tensor{rows: rows, cols: cols, weight: true,
			data: unsafe.Slice((*float32)(unsafe.Pointer(&raw[0])), rows*cols)}, nil
	case (dtype == backend.F16 || dtype == backend.BF16) && addr%2 == 0:
		return &tensor{rows: rows, cols: cols, weight: true, dtype: dtype,
			half: unsafe.Slice((*uint16)(unsafe.Pointer(&raw[0])), rows*cols)}, nil
	}
	return b.Upload(name, dtype, rows, cols, raw)
}
