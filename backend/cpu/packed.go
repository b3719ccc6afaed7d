package cpu

import "github.com/laya-metal/laya/backend"

// PacksRows implements backend.RowPacker: Rope and Attention take packed
// batches (backend/packed.go). Every other op is row-wise, and a GEMM's
// rows do not depend on one another here, so a packed batch's answers are
// bit for bit the padded batch's while it computes only the real tokens.
func (s *Stream) PacksRows() bool { return true }

// rowView is rows [r0, r0+n) of t as a tensor of its own, sharing t's data.
func rowView(t backend.Tensor, r0, n int) *tensor {
	ct := t.(*tensor)
	return &tensor{rows: n, cols: ct.cols, data: ct.data[r0*ct.cols : (r0+n)*ct.cols]}
}

// attentionPacked runs Attention on each batch row of a packed batch as a
// padded batch of one row of its own length. The heads and query blocks of
// one row are enough to fill the worker pool at the lengths Laya sees.
func (s *Stream) attentionPacked(dst, qkv backend.Tensor, p backend.AttentionParams) {
	r0 := 0
	for _, n := range p.Lengths {
		q := p
		q.Packed, q.SeqLen, q.Lengths = false, n, []int{n}
		s.Attention(rowView(dst, r0, n), rowView(qkv, r0, n), q)
		r0 += n
	}
}
