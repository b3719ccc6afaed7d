//go:build linux || darwin

package metal_test

import . "github.com/laya-metal/laya/metal"

// The positional forms of the Encode* dispatch functions that the kernel
// tests call: a plain operation, every operand at offset 0.

// Gemm encodes Y = X·Wᵀ (+ bias) (kernels/gemm.metal): X is m×kd, W is
// n×kd (a linear layer's weight as stored), Y is m×n float32, bias is n
// float32 or nil. See EncodeGemm for fused activations and offsets.
func Gemm(cb CommandBuffer, k *Kernels, in GemmInput, x, w, bias, y Buffer, m, n, kd int) error {
	return EncodeGemm(cb, k, GemmOp{Input: in, X: x, W: w, Bias: bias, Y: y, M: m, N: n, K: kd})
}

// LayerNorm encodes out = (in − mean)/sqrt(var + eps)·weight (+ bias) over
// each of rows rows of cols float32 values, weight and bias at offset 0 of
// their buffers; bias may be nil, out may be in. See EncodeLayerNorm for
// offsets.
func LayerNorm(cb CommandBuffer, k *Kernels, in, weight, bias, out Buffer, rows, cols int, eps float32) error {
	return EncodeLayerNorm(cb, k, LayerNormOp{In: in, Weight: weight, Bias: bias, Out: out, Rows: rows, Cols: cols, Eps: eps})
}

// GatherRows encodes out[i, :] = table[index[i], :] for rows output rows of
// cols values, the table starting at offset 0 of its buffer. See
// EncodeGather for a table at an offset.
func GatherRows(cb CommandBuffer, k *Kernels, elem Elem, table, index, out Buffer, rows, cols, tableRows int) error {
	return EncodeGather(cb, k, GatherOp{Elem: elem, Table: table, Index: index, Out: out, Rows: rows, Cols: cols, TableRows: tableRows})
}

// Attention encodes scaled-dot-product attention (kernels/attention.metal)
// of qkv [Batch·SeqLen, 3·Heads·HeadDim] into out [Batch·SeqLen,
// Heads·HeadDim]. lengths holds Batch uint32 values, each in [1, SeqLen]
// (the kernel trusts them). out must not alias qkv. See EncodeAttention.
func Attention(cb CommandBuffer, k *Kernels, qkv, lengths, out Buffer, a AttentionShape) error {
	return EncodeAttention(cb, k, AttentionOp{QKV: qkv, Out: out, LengthsBuffer: lengths, Shape: a})
}
