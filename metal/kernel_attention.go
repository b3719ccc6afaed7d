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

// AttentionOp is one attention dispatch.
type AttentionOp struct {
	QKV, Out Buffer
	// Lengths are the real tokens per batch row, each in [1, SeqLen]. Up
	// to MaxInlineLengths of them travel with the dispatch (setBytes);
	// more need LengthsBuffer, which holds them as uint32 and is used
	// whenever it is set.
	Lengths       []int
	LengthsBuffer Buffer
	// Table, when set, is backend.RopeTable(θ, HeadDim, ≥ SeqLen): q and k are
	// rotated as they are staged (Rope fused), qkv itself is not changed.
	// Only the flash kernel does this (AttentionFusesRope).
	Table Buffer
	Shape AttentionShape
}

// MaxInlineLengths is how many lengths go inline: setBytes takes less than
// 4 KB, so 1023 four-byte lengths.
const MaxInlineLengths = maxSetBytes / 4

// AttentionFusesRope reports whether the flash kernel, which can rotate q
// and k as it stages them, runs attention of shape a: head dims that are
// multiples of 8 up to 64 (ModernBERT's and the decision head's 64).
func AttentionFusesRope(a AttentionShape) bool {
	return a.HeadDim%8 == 0 && a.HeadDim <= 64
}

// AttentionQueryBlock is the flash kernel's query rows per threadgroup.
const AttentionQueryBlock = 32

// EncodeAttention encodes op as one dispatch: attention_flash_f32 (32
// queries × one head per threadgroup, simdgroup matrices) when
// AttentionFusesRope, else attention_f32 (one query row per threadgroup).
func EncodeAttention(cb CommandBuffer, k *Kernels, op AttentionOp) error {
	a := op.Shape
	flash := AttentionFusesRope(a)
	name := "attention_f32"
	if flash {
		name = "attention_flash_f32"
	}
	width := a.Heads * a.HeadDim
	rows := a.Batch * a.SeqLen
	if a.Batch <= 0 || a.SeqLen <= 0 || a.Heads <= 0 || a.HeadDim <= 0 || a.HeadDim > MaxAttentionHeadDim ||
		a.Radius < 0 || rows*3*width > 1<<31 || math.IsNaN(float64(a.Scale)) {
		return fmt.Errorf("%w: %s: %+v", ErrInvalidDispatch, name, a)
	}
	if op.Table != nil && (!flash || a.HeadDim%2 != 0) {
		return fmt.Errorf("%w: %s: RoPE fused into attention needs the flash kernel (head dim %d)", ErrInvalidDispatch, name, a.HeadDim)
	}
	for _, c := range []struct {
		what string
		buf  Buffer
		need int
	}{{"qkv", op.QKV, 4 * rows * 3 * width}, {"out", op.Out, 4 * rows * width}} {
		if err := checkLen(name, c.what, c.buf, c.need); err != nil {
			return err
		}
	}
	if op.LengthsBuffer != nil {
		if err := checkLen(name, "lengths", op.LengthsBuffer, 4*a.Batch); err != nil {
			return err
		}
	} else {
		if len(op.Lengths) != a.Batch || a.Batch > MaxInlineLengths {
			return fmt.Errorf("%w: %s: %d lengths for %d batch rows (at most %d inline)", ErrInvalidDispatch, name, len(op.Lengths), a.Batch, MaxInlineLengths)
		}
	}
	if op.Table != nil {
		if err := checkLen(name, "rope table", op.Table, 4*a.SeqLen*a.HeadDim); err != nil {
			return err
		}
	}
	var p Pipeline
	var err error
	groups, threads := Size3{a.SeqLen, a.Batch * a.Heads, 1}, Size3{32, 1, 1}
	if !flash {
		// attention_sliding is function_constant(0).
		p, err = k.pipeline(name, Constant{Index: 0, Value: a.Sliding})
	} else {
		// attention_sliding, attention_rope and attention_head_dim are
		// function_constant(0), (1) and (2): a head dim known when the
		// pipeline is built lets its fragment loops unroll.
		p, err = k.pipeline(name, Constant{Index: 0, Value: a.Sliding}, Constant{Index: 1, Value: op.Table != nil},
			Constant{Index: 2, Value: uint32(a.HeadDim)})
		groups, threads = Size3{ceilDiv(a.SeqLen, AttentionQueryBlock), a.Batch * a.Heads, 1}, Size3{128, 1, 1}
	}
	if err != nil {
		return err
	}
	e := newEncoding()
	e.read(0, op.QKV, 0)
	if op.LengthsBuffer != nil {
		e.read(1, op.LengthsBuffer, 0)
	} else {
		e.u32s(1, op.Lengths...)
	}
	e.write(2, op.Out, 0)
	params(e, 3, AttentionParams{SeqLen: uint32(a.SeqLen), Heads: uint32(a.Heads), HeadDim: uint32(a.HeadDim),
		Scale: a.Scale, Radius: uint32(min(a.Radius, a.SeqLen))}) // min keeps i + radius inside uint32
	e.read(4, op.Table, 0)
	return e.dispatch(cb, p, groups, threads)
}

// attentionKernels models this file's kernels (DispatchCost,
// KernelThreadgroupMemory).
var attentionKernels = map[string]kernelModel{
	"attention_f32":       {cost: attentionCost, threadgroupMemory: 4 * (MaxAttentionHeadDim + 32)},
	"attention_flash_f32": {cost: attentionCost, threadgroupMemory: 4 * 3 * AttentionQueryBlock * (attentionFlashMaxDim + 4)},
}

// attentionFlashMaxDim is kFlashMaxDim of kernels/attention.metal.
const attentionFlashMaxDim = 64

// attentionCost models attention over the real (query, key) pairs of each
// row (masked scores excluded) and what each threadgroup stages.
func attentionCost(d *dispatchDesc) Cost {
	p, ok := paramsOf[AttentionParams](d.arg(3))
	if !ok {
		return Cost{}
	}
	L, H, dh := int(p.SeqLen), int(p.Heads), int(p.HeadDim)
	lengths := u32sOf(d.arg(1))
	if batch := d.groups.Y / max(H, 1); len(lengths) > batch {
		lengths = lengths[:batch]
	}
	sliding, rope := d.on(0), d.kernel == "attention_flash_f32" && d.on(1)
	var c Cost
	for _, n := range lengths {
		keys := 0 // real (query, key) pairs
		for i := range n {
			lo, hi := 0, n-1
			if sliding {
				lo, hi = max(0, i-int(p.Radius)), min(n-1, i+int(p.Radius))
			}
			keys += hi - lo + 1
		}
		c.FLOPs += float64(H) * 4 * float64(dh*keys)
		rows := float64(L * H * dh)
		c.IdealBytes += 4*3*rows + 4*rows // qkv read once, out written
		if rope {
			c.IdealBytes += 4 * float64(n*dh)
		}
		// Requested: what the threadgroups stage.
		if d.kernel == "attention_flash_f32" {
			for q0 := 0; q0 < n; q0 += AttentionQueryBlock {
				lo, hi := 0, n-1
				if sliding {
					lo, hi = max(0, q0-int(p.Radius)), min(n-1, q0+AttentionQueryBlock-1+int(p.Radius))
				}
				staged := float64(min(AttentionQueryBlock, n-q0)+2*(hi-lo+1)) * float64(dh) * 4
				if rope {
					staged *= 2 // the table beside q and k
				}
				c.RequestedBytes += float64(H) * staged
			}
			c.RequestedBytes += 4 * rows
		} else {
			c.RequestedBytes += float64(H)*4*float64(dh)*float64(n+2*keys) + 4*rows
		}
	}
	return c
}
