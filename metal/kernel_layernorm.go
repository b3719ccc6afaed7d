package metal

import (
	"fmt"
	"math"
)

// LayerNormOp is one LayerNorm over rows (kernels/layernorm.metal,
// layernorm_f32; one threadgroup per row):
//
//	Out[r, :] = (In[r, :] − mean)/sqrt(var + Eps)·Weight (+ Bias)
//
// with the biased variance. In and Out hold Rows×Cols float32 values and
// may be the same buffer; Weight and Bias hold Cols float32 values; Bias
// may be nil.
type LayerNormOp struct {
	In, Weight, Bias, Out Buffer
	// WeightOffset and BiasOffset are byte offsets of the weight and bias
	// in their buffers, for norm weights bound inside a wrapped file
	// mapping. They are bound with the buffers (Arg.Offset); each must be a
	// multiple of 4, as Metal requires of a float pointer's offset.
	WeightOffset, BiasOffset int
	Rows, Cols               int
	Eps                      float32
}

// EncodeLayerNorm encodes op as one dispatch of RowThreads(op.Cols)
// threads per row.
func EncodeLayerNorm(cb CommandBuffer, k *Kernels, op LayerNormOp) error {
	return layerNormThreads(cb, k, op, RowThreads(op.Cols))
}

// RowThreads is the threadgroup size of the row kernels (LayerNorm):
// enough 32-wide simdgroups to give each thread about 4 elements of the
// row, at most 1024 (the rule of SoftmaxThreads).
func RowThreads(cols int) int { return SoftmaxThreads(cols) }

func layerNormThreads(cb CommandBuffer, k *Kernels, op LayerNormOp, threads int) error {
	const name = "layernorm_f32"
	rows, cols, eps := op.Rows, op.Cols, op.Eps
	if rows <= 0 || cols <= 0 || rows*cols > 1<<31 || !(eps >= 0) || math.IsInf(float64(eps), 0) {
		return fmt.Errorf("%w: %s: %d×%d, eps %v", ErrInvalidDispatch, name, rows, cols, eps)
	}
	if op.WeightOffset < 0 || op.WeightOffset%4 != 0 || op.BiasOffset < 0 || op.BiasOffset%4 != 0 {
		return fmt.Errorf("%w: %s: weight offset %d or bias offset %d is negative or not a multiple of 4", ErrInvalidDispatch, name, op.WeightOffset, op.BiasOffset)
	}
	for _, c := range []struct {
		what string
		buf  Buffer
		need int
	}{{"in", op.In, 4 * rows * cols}, {"out", op.Out, 4 * rows * cols}, {"weight", op.Weight, op.WeightOffset + 4*cols}} {
		if err := checkLen(name, c.what, c.buf, c.need); err != nil {
			return err
		}
	}
	hasBias := op.Bias != nil
	if hasBias {
		if err := checkLen(name, "bias", op.Bias, op.BiasOffset+4*cols); err != nil {
			return err
		}
	}
	// layernorm_has_bias is function_constant(0).
	p, err := k.pipeline(name, Constant{Index: 0, Value: hasBias})
	if err != nil {
		return err
	}
	if threads < 1 {
		return fmt.Errorf("%w: %s: %d threads per threadgroup", ErrInvalidDispatch, name, threads)
	}
	// The kernel strides its rows by threads_per_threadgroup, so any whole
	// number of SIMD groups works: ask for at most what this pipeline allows
	// (Apple lowers the maximum for register-heavy pipelines).
	threads = ClampThreads(p, threads)
	e := newEncoding()
	e.read(0, op.In, 0)
	e.read(1, op.Weight, op.WeightOffset)
	e.read(2, op.Bias, op.BiasOffset)
	e.write(3, op.Out, 0)
	params(e, 4, LayerNormParams{Cols: uint32(cols), Eps: eps})
	return e.dispatch(cb, p, Size3{rows, 1, 1}, Size3{threads, 1, 1})
}

// layerNormKernels models this file's kernels (DispatchCost,
// KernelThreadgroupMemory).
var layerNormKernels = map[string]kernelModel{
	"layernorm_f32": {cost: layerNormCost, threadgroupMemory: 4 * 32},
}

// layerNormCost models one LayerNorm over groups.X rows.
func layerNormCost(d *dispatchDesc) Cost {
	p, ok := paramsOf[LayerNormParams](d.arg(4))
	if !ok {
		return Cost{}
	}
	rows, cols := float64(d.groups.X), float64(p.Cols)
	w := 4 * cols
	if d.on(0) {
		w *= 2
	}
	return Cost{FLOPs: 8 * rows * cols, IdealBytes: 8*rows*cols + w, RequestedBytes: 16*rows*cols + w}
}
