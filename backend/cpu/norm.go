package cpu

import (
	"sync/atomic"
	"unsafe"

	"github.com/laya-metal/laya/backend"
)

// A LayerNorm whose output the next Linear reads (its input) runs inside
// that Linear's GEMM: the units that need a tile of packed Xᵀ first
// normalise the tile's rows into the LayerNorm's output, and the tile's
// packing pieces then transpose them while they are in L2. The output is
// complete once the GEMM is (every row is in some tile), so later readers
// see what the pass would have written, the same bits (layerNormRow per
// row, as in the pass); the LayerNorm costs no pass and no join of its own
// (at ten multilingual questions on two workers its two passes a layer held
// the workers ~1.9 % of a request, a fifth of that idle at their joins),
// and the GEMM packs rows from L2 instead of L3.

// normOp is a recorded LayerNorm: dst = LayerNorm(x) over m rows of d.
type normOp struct {
	dst     *tensor
	x, w, b []float32
	eps     float32
	m, d    int
}

// takeNorm returns the recorded LayerNorm if its output is x, taking it off
// the stream (for the Linear about to read x), else nil.
func (s *Stream) takeNorm(x backend.Tensor) *normOp {
	if n := s.norm; n != nil && x == backend.Tensor(n.dst) {
		s.norm = nil
		return n
	}
	return nil
}

// fusableNorm returns op's LayerNorm if op's GEMM can compute it while
// packing its input (on the outer-product kernel, every row of a GEMM that
// has some, and none of outs — what the GEMM and its epilogue write —
// overlapping the LayerNorm's input or output, which units read lazily
// while others store), else runs the LayerNorm pass and returns nil. Either
// way op.norm is cleared: the GEMM's paths call it first, and the one that
// runs must pack through the LayerNorm it returns.
func (b *Backend) fusableNorm(op *linearOp, rows []int, outs ...[]float32) *normOp {
	n := op.norm
	if n == nil {
		return nil
	}
	op.norm = nil
	_, outer := useOuter(op.m, op.k)
	ok := outer && rows == nil && op.m > 0 && op.n > 0 && n.m == op.m && n.d == op.k
	for _, o := range outs {
		ok = ok && !overlaps(o, n.x) && !overlaps(o, n.dst.data)
	}
	if !ok {
		b.layerNormRows(n)
		return nil
	}
	return n
}

// overlaps reports whether a and b share memory.
func overlaps(a, b []float32) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	a0, b0 := uintptr(unsafe.Pointer(&a[0])), uintptr(unsafe.Pointer(&b[0]))
	return a0 < b0+uintptr(4*len(b)) && b0 < a0+uintptr(4*len(a))
}

// packNorm is a packedX's LayerNorm, run a few rows at a time.
type packNorm struct {
	op    *normOp
	state []atomic.Int32 // per normRows rows of packed tokens: 0 to do, 1 being normalised, 2 done
}

// normRows is how many rows one claim normalises: a tile's rows in six
// claims, so that the workers that need a tile at the same time (the
// units of every panel start on the same tiles) share its LayerNorm
// instead of one computing it while the others wait.
const normRows = 8

// A tile's rows are whole claims.
var _ = [1]struct{}{}[outerNR%normRows]

// packInput is packX of a GEMM's input: rows of x (nil: all m), or, where
// norm is not nil (fusableNorm), all rows of norm's output, computed while
// packing (packXNorm).
func (b *Backend) packInput(norm *normOp, x []float32, k int, rows []int, m int) *packedX {
	if norm != nil {
		return b.packXNorm(norm)
	}
	return b.packX(x, k, k, rows, m)
}

// packXNorm is packX of LayerNorm n's output, which the packing computes
// tile by tile (ensureNormed) before transposing it.
func (b *Backend) packXNorm(n *normOp) *packedX {
	px := b.packX(n.dst.data, n.d, n.d, nil, n.m)
	px.norm = &packNorm{op: n, state: make([]atomic.Int32, (len(px.rows)+normRows-1)/normRows)}
	return px
}

// ensureNormed returns once tile t's rows are normalised, normalising the
// rows of it no other goroutine has claimed.
func (px *packedX) ensureNormed(t int) {
	pn := px.norm
	n := pn.op
	d := n.d
	c0, c1 := t*outerNR/normRows, min((t+1)*outerNR/normRows, len(pn.state))
	claimAll(pn.state[c0:c1], func(c int) {
		for _, r := range px.rows[(c0+c)*normRows : min((c0+c+1)*normRows, len(px.rows))] {
			layerNormRow(n.dst.data[r*d:r*d+d], n.x[r*d:r*d+d], n.w, n.b, n.eps)
		}
	})
}
