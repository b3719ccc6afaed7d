//go:build !purego

package cpu

import sysCPU "golang.org/x/sys/cpu"

// The AVX-512 element-wise kernels (ops_avx512_amd64.s): LayerNorm with
// float64 statistics, the residual add, RoPE. Each computes what the Go loop
// of ops.go / attention.go computes, in the same float32 or float64
// operations; only LayerNorm's sums run in another order (16 lanes folded
// at the end), which moves the float64 mean and variance in their last bits
// and so the float32 output almost never (TestLayerNormSIMD).

//go:noescape
func layerNormStatsAVX512(x *float32, n int) (mean, sq float64)

//go:noescape
func layerNormApplyAVX512(out, in, w, b *float32, n int, mean, rstd float64)

//go:noescape
func addAVX512(dst, a, b *float32, n int)

//go:noescape
func ropeAVX512(x, cs *float32, heads, headDim int)

// hasOpsAVX512: the kernels use AVX-512F only.
var hasOpsAVX512 = sysCPU.X86.HasAVX512F

// simdOps reports whether the element-wise kernels run (tests switch it off
// to run the Go loops).
var simdOps = hasOpsAVX512

// layerNormSIMD returns mean and Σ(x − mean)² of in, in float64.
func layerNormStatsSIMD(in []float32) (mean, sq float64, ok bool) {
	if !simdOps || len(in) == 0 {
		return 0, 0, false
	}
	mean, sq = layerNormStatsAVX512(&in[0], len(in))
	return mean, sq, true
}

// layerNormApplySIMD sets out = float32((in − mean)·rstd·w) (+ b).
func layerNormApplySIMD(out, in, w, b []float32, mean, rstd float64) bool {
	if !simdOps || len(in) == 0 {
		return false
	}
	out, w = out[:len(in)], w[:len(in)]
	var bias *float32
	if b != nil {
		bias = &b[:len(in)][0]
	}
	layerNormApplyAVX512(&out[0], &in[0], &w[0], bias, len(in), mean, rstd)
	return true
}

// addSIMD sets out = x + y.
func addSIMD(out, x, y []float32) bool {
	if !simdOps || len(x) == 0 {
		return false
	}
	out, y = out[:len(x)], y[:len(x)]
	addAVX512(&out[0], &x[0], &y[0], len(x))
	return true
}

// ropeSIMD rotates the heads heads of headDim values at the start of row by
// the cos/sin row cs.
func ropeSIMD(row, cs []float32, heads, headDim int) bool {
	if !simdOps || heads == 0 || headDim < 2 {
		return false
	}
	row, cs = row[:heads*headDim], cs[:headDim/2*2]
	ropeAVX512(&row[0], &cs[0], heads, headDim)
	return true
}
