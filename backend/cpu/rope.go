package cpu

import (
	"github.com/laya-metal/laya/backend"
)

// ropeKey names one cos/sin table.
type ropeKey struct {
	theta   float64
	headDim int
}

// ropeTable returns backend.RopeTable for positions [0, seqLen), cached per
// (theta, headDim) and grown on demand.
func (b *Backend) ropeTable(theta float64, headDim, seqLen int) []float32 {
	key := ropeKey{theta, headDim}
	b.mu.Lock()
	defer b.mu.Unlock()
	table := b.ropes[key]
	if len(table) >= seqLen*headDim {
		return table
	}
	table = backend.RopeTable(theta, headDim, max(seqLen, 512))
	b.ropes[key] = table
	return table
}

// ropeOp is one Rope of a qkv tensor: the table and each row's position.
type ropeOp struct {
	table          []float32
	positions      []int32 // per row of a packed batch; nil: row mod seqLen
	seqLen         int
	heads, headDim int
}

// newRope prepares p's Rope of a qkv tensor of rows rows.
func (b *Backend) newRope(rows int, p backend.RopeParams) *ropeOp {
	r := &ropeOp{table: b.ropeTable(p.Theta, p.HeadDim, p.SeqLen), seqLen: p.SeqLen, heads: p.Heads, headDim: p.HeadDim}
	if p.Packed {
		// A packed batch's positions restart at each row's first token.
		r.positions = make([]int32, 0, rows)
		for _, n := range p.Lengths {
			for i := range n {
				r.positions = append(r.positions, int32(i))
			}
		}
	}
	return r
}

// cs returns the cos/sin row of tensor row r's position.
func (r *ropeOp) cs(row int) []float32 {
	pos := row % r.seqLen
	if r.positions != nil {
		pos = int(r.positions[row])
	}
	half := r.headDim / 2
	return r.table[pos*2*half : (pos+1)*2*half]
}

// rotated is how many leading columns of a qkv row the Rope rotates: the
// q and k heads, side by side.
func (r *ropeOp) rotated() int { return 2 * r.heads * r.headDim }

// rotateHeads rotates the heads whole heads of headDim values at the start
// of row by the cos/sin row cs.
func rotateHeads(row, cs []float32, heads, headDim int) {
	if ropeSIMD(row, cs, heads, headDim) {
		return // the same float32 operations, 16 pairs at a time
	}
	half := headDim / 2
	cos, sin := cs[:half], cs[half:2*half]
	for h := range heads {
		lo := row[h*headDim : h*headDim+half]
		hi := row[h*headDim+half : (h+1)*headDim]
		for j := range lo {
			// Each product rounded (the conversions forbid fusing into an
			// FMA, which GOAMD64=v3 would otherwise do), as the SIMD
			// kernel does.
			a, b := lo[j], hi[j]
			lo[j] = float32(a*cos[j]) - float32(b*sin[j])
			hi[j] = float32(b*cos[j]) + float32(a*sin[j])
		}
	}
}

// rotateSlice is the fused Rope's epilogue (gemmRope): v holds columns
// [n0, n0+len(v)) of qkv row row, n0 and the end of the rotated part of v
// multiples of headDim (forEachAlignedUnit), and the heads among them are
// rotated in place, as the Rope pass rotates them.
func (r *ropeOp) rotateSlice(v []float32, row, n0 int) {
	end := min(n0+len(v), r.rotated())
	if end <= n0 {
		return
	}
	rotateHeads(v[:end-n0], r.cs(row), (end-n0)/r.headDim, r.headDim)
}

// ropeRows rotates every row of x (rows rows of the qkv width) in place,
// a parallel pass.
func (b *Backend) ropeRows(x []float32, rows int, r *ropeOp) {
	stride := 3 * r.heads * r.headDim // q, k and v
	// 16 rows a chunk, for the reason LayerNorm's chunks are 32 rows (ops.go).
	b.parallelFor(rows, 16, func(lo, hi int) {
		for row := lo; row < hi; row++ {
			rotateHeads(x[row*stride:row*stride+r.rotated()], r.cs(row), 2*r.heads, r.headDim)
		}
	})
}

// Rope implements backend.Stream. Right after the Linear that makes qkv
// (still pending), it is recorded on that Linear and runs in its GEMM's
// epilogue while each unit's block of qkv is in cache (gemmRope): the same
// float32 operations on the same values, so the same bits, without a pass
// of its own (at ten multilingual questions on two workers the pass held
// the workers ~0.9 % of a request, a quarter of that idle at its joins).
func (s *Stream) Rope(qkv backend.Tensor, p backend.RopeParams) {
	if op := s.pending; op != nil && backend.Tensor(op.dst) == qkv && op.rope == nil && s.err == nil && !s.closed &&
		backend.CheckRope(qkv, p) == nil {
		op.rope = s.be.newRope(qkv.Rows(), p)
		return
	}
	if !s.ok("rope", qkv) || !s.check(backend.CheckRope(qkv, p)) {
		return
	}
	s.be.ropeRows(data(qkv), qkv.Rows(), s.be.newRope(qkv.Rows(), p))
}

// gemmRope runs op, a Linear whose output then takes the Rope op.rope: in
// the outer-product GEMM's epilogue where its units hold whole heads, else
// as the Linear and then the Rope pass.
//
// norm, when not nil, is the LayerNorm op's packing computes (fusableNorm).
// op.n is the qkv width 3·heads·headDim: Stream.Rope recorded the Rope only
// after CheckRope held qkv to it.
func (b *Backend) gemmRope(op *linearOp, norm *normOp) {
	y, r := op.dst.data, op.rope
	// The plan is checked before packing: where it splits heads (16
	// workers, one question), packing first would fetch a buffer and
	// per-tile state that nothing then uses.
	if kern, ok := useOuter(op.m, op.k); ok && b.alignedPlan(op.m, op.n, op.w, r.headDim) {
		if b.gemmOuterAligned(kern, y, b.packInput(norm, op.x, op.k, nil, op.m), op.w, op.bias, op.n, op.act, r.headDim,
			func(row, n0 int, v []float32) { r.rotateSlice(v, row, n0) }) {
			return
		}
	}
	if norm != nil {
		// The plan's panels split heads: the LayerNorm as a pass after all.
		b.layerNormRows(norm)
	}
	b.gemmW(y, op.x, op.w, op.bias, op.m, op.n, op.k, op.act)
	b.ropeRows(y, op.m, r)
}
