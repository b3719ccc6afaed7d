package cpu

import (
	"math"

	"github.com/laya-metal/laya/backend"
)

// attnBlock is the number of queries one attention job handles: a multiple
// of every SIMD block height, so only a row's last block is ragged.
const attnBlock = gemmTileM

// Attention implements backend.Stream: the AVX-512 kernels where the CPU
// has them (attn_amd64.go), else the portable path below.
func (s *Stream) Attention(dst, qkv backend.Tensor, p backend.AttentionParams) {
	if !s.ok("attention", dst, qkv) || !s.check(backend.CheckAttention(dst, qkv, p)) {
		return
	}
	out, in := data(dst), data(qkv)
	if attnSIMD != nil {
		attnSIMD(s.be, out, in, p) // padded and packed batches alike
		return
	}
	if p.Packed {
		s.attentionPacked(dst, qkv, p) // each batch row a padded batch of its own
		return
	}
	s.be.attentionPortable(out, in, p)
}

// attentionFunc computes Attention's values (p checked against the tensors).
type attentionFunc func(b *Backend, out, qkv []float32, p backend.AttentionParams)

// attnSIMD is the SIMD attention this build and CPU run (attn_amd64.go),
// nil where there is none; tests and benchmarks swap it to run both paths.
var attnSIMD = pickAttnSIMD()

// attentionPortable is the portable attention: jobs are (batch row, head,
// block of attnBlock queries), spread over the workers. Each runs its two
// products through the GEMM tile kernel: S = Q·Kᵀ over the keys the block
// can see (a sliding window skips the keys outside every query's window), a
// max-subtracted softmax of each row in place (float32 values, float64
// sums, masked keys 0), and O = P·V with V transposed so its columns are
// contiguous K-rows for the kernel, scaled by 1/sum at the end.
func (b *Backend) attentionPortable(out, in []float32, p backend.AttentionParams) {
	batch := len(p.Lengths)
	blocks := (p.SeqLen + attnBlock - 1) / attnBlock
	jobs := batch * p.Heads * blocks
	b.parallelFor(jobs, 1, func(lo, hi int) {
		scratch := getScratch(attnBlock*p.SeqLen + p.HeadDim*p.SeqLen + attnBlock)
		defer putScratch(scratch)
		for job := lo; job < hi; job++ {
			b, rest := job/(p.Heads*blocks), job%(p.Heads*blocks)
			attendBlock(out, in, b, rest/blocks, rest%blocks*attnBlock, p, *scratch)
		}
	})
}

// queryBlock prepares head h's queries [i0, i1) of the batch row at rowBase
// with n real tokens: it zeroes the padded queries' outputs (never read) and
// returns the real queries' end and the keys [j0, j1) any of them may see.
// i1 ≤ i0 on return means no real query.
func queryBlock(out []float32, width, h, dh, rowBase, i0, i1, n int, p backend.AttentionParams) (int, int, int) {
	for i := max(i0, n); i < i1; i++ {
		at := (rowBase+i)*width + h*dh
		clear(out[at : at+dh])
	}
	i1 = min(i1, n)
	j0, j1 := 0, n
	if p.Sliding {
		j0, j1 = max(0, i0-p.Radius), min(n, i1+p.Radius)
	}
	return i1, j0, j1
}

// attendBlock computes head h of batch row b for queries [i0, i0+attnBlock).
func attendBlock(out, qkv []float32, b, h, i0 int, p backend.AttentionParams, scratch []float32) {
	width := p.Heads * p.HeadDim
	stride := 3 * width
	dh := p.HeadDim
	n := p.Lengths[b]
	rowBase := b * p.SeqLen
	outRow := func(i int) []float32 {
		at := (rowBase+i)*width + h*dh
		return out[at : at+dh]
	}
	i1, j0, j1 := queryBlock(out, width, h, dh, rowBase, i0, min(i0+attnBlock, p.SeqLen), n, p)
	if i0 >= i1 {
		return
	}
	qrows, nk := i1-i0, j1-j0
	scores := scratch[:qrows*nk]
	vt := scratch[attnBlock*p.SeqLen : attnBlock*p.SeqLen+dh*nk]
	sums := scratch[attnBlock*p.SeqLen+p.HeadDim*p.SeqLen:][:qrows]

	at := func(pos, part int) int { return (rowBase+pos)*stride + part*width + h*dh }
	gemmTile(scores, nk, qkv[at(i0, 0):], stride, qkv[at(j0, 1):], stride, 0, qrows, 0, nk, dh)

	for r := range qrows {
		i := i0 + r
		row := scores[r*nk : (r+1)*nk]
		first, last := 0, nk-1 // in block key coordinates
		if p.Sliding {
			first, last = max(first, i-p.Radius-j0), min(last, i+p.Radius-j0)
		}
		top := float32(math.Inf(-1))
		for j := first; j <= last; j++ {
			row[j] *= p.Scale
			top = max(top, row[j])
		}
		var sum float64
		for j := first; j <= last; j++ {
			e := float32(expNonPositive(float64(row[j] - top)))
			row[j] = e
			sum += float64(e)
		}
		clear(row[:first])
		clear(row[last+1:])
		sums[r] = float32(1 / sum)
	}

	for j := range nk {
		v := qkv[at(j0+j, 2) : at(j0+j, 2)+dh]
		for d, vd := range v {
			vt[d*nk+j] = vd
		}
	}
	o := out[(rowBase+i0)*width+h*dh:]
	gemmTile(o, width, scores, nk, vt, nk, 0, qrows, 0, dh, nk)
	for r := range qrows {
		row := outRow(i0 + r)
		inv := sums[r]
		for d := range row {
			row[d] *= inv
		}
	}
}
