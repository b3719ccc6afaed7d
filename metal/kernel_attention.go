package metal

import (
	"fmt"
	"math"
)

// AttentionShape describes one Attention dispatch: Batch rows of SeqLen
// positions, Heads heads of HeadDim values, keys j < lengths[b] real and,
// when Sliding, only those with |i−j| ≤ Radius.
type AttentionShape struct {
	Batch, SeqLen, Heads, HeadDim int
	Scale                         float32
	Sliding                       bool
	Radius                        int
}

// MaxAttentionHeadDim is the largest head dimension attention_f32 handles
// (8 accumulators per lane of one simdgroup).
const MaxAttentionHeadDim = 256

// Attention encodes scaled-dot-product attention (kernels/attention.metal,
// attention_f32) of qkv [Batch·SeqLen, 3·Heads·HeadDim] into out
// [Batch·SeqLen, Heads·HeadDim]. lengths holds Batch uint32 values, each in
// [1, SeqLen] (the kernel trusts them). out must not alias qkv.
func Attention(cb CommandBuffer, k *Kernels, qkv, lengths, out Buffer, a AttentionShape) error {
	const name = "attention_f32"
	width := a.Heads * a.HeadDim
	rows := a.Batch * a.SeqLen
	if a.Batch <= 0 || a.SeqLen <= 0 || a.Heads <= 0 || a.HeadDim <= 0 || a.HeadDim > MaxAttentionHeadDim ||
		a.Radius < 0 || rows*3*width > 1<<31 || math.IsNaN(float64(a.Scale)) {
		return fmt.Errorf("%w: %s: %+v", ErrInvalidDispatch, name, a)
	}
	for _, c := range []struct {
		what string
		buf  Buffer
		need int
	}{{"qkv", qkv, 4 * rows * 3 * width}, {"lengths", lengths, 4 * a.Batch}, {"out", out, 4 * rows * width}} {
		if err := checkLen(name, c.what, c.buf, c.need); err != nil {
			return err
		}
	}
	// attention_sliding is function_constant(0).
	p, err := k.pipeline(name, Constant{Index: 0, Value: a.Sliding})
	if err != nil {
		return err
	}
	radius := min(a.Radius, a.SeqLen) // keeps i + radius inside uint32
	return cb.Dispatch(p, Size3{a.SeqLen, a.Batch * a.Heads, 1}, Size3{32, 1, 1},
		Arg{Index: 0, Buffer: qkv}, Arg{Index: 1, Buffer: lengths}, Arg{Index: 2, Buffer: out},
		Arg{Index: 3, Bytes: paramBytes(&AttentionParams{SeqLen: uint32(a.SeqLen), Heads: uint32(a.Heads), HeadDim: uint32(a.HeadDim), Scale: a.Scale, Radius: uint32(radius)})})
}

// attentionRef is Attention in float64: scores, softmax and the weighted
// sum of values, with zeros on padded query rows.
func attentionRef(qkv []float32, lengths []int, a AttentionShape) []float64 {
	width := a.Heads * a.HeadDim
	stride := 3 * width
	out := make([]float64, a.Batch*a.SeqLen*width)
	scores := make([]float64, a.SeqLen)
	for b := range a.Batch {
		n := lengths[b]
		for h := range a.Heads {
			at := func(pos, part, d int) float64 {
				return float64(qkv[(b*a.SeqLen+pos)*stride+part*width+h*a.HeadDim+d])
			}
			for i := range n {
				first, last := 0, n-1
				if a.Sliding {
					first, last = max(first, i-a.Radius), min(last, i+a.Radius)
				}
				top := math.Inf(-1)
				for j := first; j <= last; j++ {
					s := 0.0
					for d := range a.HeadDim {
						s += at(i, 0, d) * at(j, 1, d)
					}
					scores[j] = s * float64(a.Scale)
					top = max(top, scores[j])
				}
				sum := 0.0
				for j := first; j <= last; j++ {
					scores[j] = math.Exp(scores[j] - top)
					sum += scores[j]
				}
				o := out[(b*a.SeqLen+i)*width+h*a.HeadDim:]
				for d := range a.HeadDim {
					v := 0.0
					for j := first; j <= last; j++ {
						v += scores[j] * at(j, 2, d)
					}
					o[d] = v / sum
				}
			}
		}
	}
	return out
}
