package metal

import (
	"encoding/binary"
	"fmt"
	"math"
)

// LayerNorm encodes out = (in − mean)/sqrt(var + eps)·weight (+ bias) over
// each of rows rows of cols float32 values, with the biased variance
// (kernels/layernorm.metal, layernorm_f32): one threadgroup per row. weight
// and bias hold cols float32 values; bias may be nil. out may be in.
func LayerNorm(cb CommandBuffer, k *Kernels, in, weight, bias, out Buffer, rows, cols int, eps float32) error {
	return layerNormThreads(cb, k, in, weight, bias, out, rows, cols, eps, RowThreads(cols))
}

// RowThreads is the threadgroup size of the row kernels (LayerNorm):
// enough 32-wide simdgroups to give each thread about 4 elements of the
// row, at most 1024 (the rule of SoftmaxThreads).
func RowThreads(cols int) int { return SoftmaxThreads(cols) }

func layerNormThreads(cb CommandBuffer, k *Kernels, in, weight, bias, out Buffer, rows, cols int, eps float32, threads int) error {
	const name = "layernorm_f32"
	if rows <= 0 || cols <= 0 || rows*cols > 1<<31 || !(eps >= 0) || math.IsInf(float64(eps), 0) {
		return fmt.Errorf("%w: %s: %d×%d, eps %v", ErrInvalidDispatch, name, rows, cols, eps)
	}
	for _, c := range []struct {
		what string
		buf  Buffer
		need int
	}{{"in", in, 4 * rows * cols}, {"out", out, 4 * rows * cols}, {"weight", weight, 4 * cols}} {
		if err := checkLen(name, c.what, c.buf, c.need); err != nil {
			return err
		}
	}
	args := []Arg{{Index: 0, Buffer: in}, {Index: 1, Buffer: weight}, {Index: 3, Buffer: out}, {Index: 4, Bytes: paramBytes(cols, eps)}}
	if bias != nil {
		if err := checkLen(name, "bias", bias, 4*cols); err != nil {
			return err
		}
		args = append(args, Arg{Index: 2, Buffer: bias})
	}
	// layernorm_has_bias is function_constant(0).
	p, err := k.pipeline(name, Constant{Index: 0, Value: bias != nil})
	if err != nil {
		return err
	}
	if threads < 1 || threads > p.MaxThreadsPerThreadgroup() {
		return fmt.Errorf("%w: %s: %d threads per threadgroup", ErrInvalidDispatch, name, threads)
	}
	return cb.Dispatch(p, Size3{rows, 1, 1}, Size3{threads, 1, 1}, args...)
}

// paramBytes packs a kernel's constant parameter struct of 32-bit fields:
// ints as uint32, float32s as their bits, bools as uint32 0 or 1.
func paramBytes(fields ...any) []byte {
	b := make([]byte, 4*len(fields))
	for i, f := range fields {
		var w uint32
		switch v := f.(type) {
		case int:
			w = uint32(v)
		case uint32:
			w = v
		case float32:
			w = math.Float32bits(v)
		case bool:
			if v {
				w = 1
			}
		default:
			panic(fmt.Sprintf("metal: paramBytes: field %d has type %T", i, f)) // a bug in this package, not input
		}
		binary.LittleEndian.PutUint32(b[4*i:], w)
	}
	return b
}

// layerNormRef is LayerNorm in float64.
func layerNormRef(in, weight, bias []float32, rows, cols int, eps float32) []float64 {
	out := make([]float64, rows*cols)
	for r := range rows {
		row := in[r*cols : (r+1)*cols]
		mean := 0.0
		for _, v := range row {
			mean += float64(v)
		}
		mean /= float64(cols)
		variance := 0.0
		for _, v := range row {
			variance += (float64(v) - mean) * (float64(v) - mean)
		}
		rstd := 1 / math.Sqrt(variance/float64(cols)+float64(eps))
		for c, v := range row {
			y := (float64(v) - mean) * rstd * float64(weight[c])
			if bias != nil {
				y += float64(bias[c])
			}
			out[r*cols+c] = y
		}
	}
	return out
}
