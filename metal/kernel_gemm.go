package metal

import "fmt"

// GemmInput is the element type of a GEMM's X and W.
type GemmInput int

const (
	GemmF32 GemmInput = iota // float32 X and W: gemm_f32
	GemmF16                  // IEEE half X and W: gemm_f16
	// GemmF32F16W is float32 X against IEEE half W (fp16 weights as
	// stored): gemm_f32_f16w.
	GemmF32F16W
)

// Gemm encodes Y = X·Wᵀ (+ bias) (kernels/gemm.metal): X is m×kd, W is
// n×kd (a linear layer's weight as stored), Y is m×n float32, bias is n
// float32 or nil. Any sizes: edges are handled in the kernel.
func Gemm(cb CommandBuffer, k *Kernels, in GemmInput, x, w, bias, y Buffer, m, n, kd int) error {
	name, xElem, wElem := "gemm_f32", 4, 4
	switch in {
	case GemmF32:
	case GemmF16:
		name, xElem, wElem = "gemm_f16", 2, 2
	case GemmF32F16W:
		name, wElem = "gemm_f32_f16w", 2
	default:
		return fmt.Errorf("%w: gemm: unknown input kind %d", ErrInvalidDispatch, in)
	}
	if m <= 0 || n <= 0 || kd <= 0 || m*kd > 1<<31 || n*kd > 1<<31 || m*n > 1<<31 {
		return fmt.Errorf("%w: %s: %d×%d×%d", ErrInvalidDispatch, name, m, n, kd)
	}
	if err := checkLen(name, "X", x, xElem*m*kd); err != nil {
		return err
	}
	if err := checkLen(name, "W", w, wElem*n*kd); err != nil {
		return err
	}
	if err := checkLen(name, "Y", y, 4*m*n); err != nil {
		return err
	}
	args := []Arg{{Index: 0, Buffer: x}, {Index: 1, Buffer: w}, {Index: 2, Buffer: y}, {Index: 4, Bytes: u32s(m, n, kd)}}
	if bias != nil {
		if err := checkLen(name, "bias", bias, 4*n); err != nil {
			return err
		}
		args = append(args, Arg{Index: 3, Buffer: bias})
	}
	// gemm_has_bias is function_constant(0).
	p, err := k.pipeline(name, Constant{Index: 0, Value: bias != nil})
	if err != nil {
		return err
	}
	// 32×32 tiles of Y, 4 simdgroups each (see the kernel's comment).
	return cb.Dispatch(p, Size3{ceilDiv(n, 32), ceilDiv(m, 32), 1}, Size3{128, 1, 1}, args...)
}

// gemmRef is Y = X·Wᵀ (+ bias) in float64.
func gemmRef(x, w, bias []float64, m, n, kd int) []float64 {
	y := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			s := 0.0
			for c := 0; c < kd; c++ {
				s += x[i*kd+c] * w[j*kd+c]
			}
			if bias != nil {
				s += bias[j]
			}
			y[i*n+j] = s
		}
	}
	return y
}
