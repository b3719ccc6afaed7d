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

// GemmOp is one GEMM with its fused epilogue (kernels/gemm.metal):
//
//	Y     = act(X·Wᵀ + bias)                    X [M, K], W [N, K], Y [M, N]
//	Gated = GELU(Y[:, :N/2]) · Y[:, N/2:]       only when Gated is set
//
// W is a linear layer's weight as stored (the PyTorch layout); bias is N
// float32 values or nil; Y and Gated are float32. Any sizes: edges are
// handled in the kernel.
type GemmOp struct {
	Input GemmInput
	X, W  Buffer
	Bias  Buffer // nil: no bias
	Y     Buffer
	// WOffset and BiasOffset are byte offsets of W and bias in their
	// buffers, for weights bound inside a wrapped file mapping. Each must be
	// a multiple of its element size: Metal requires a device pointer's
	// offset to be aligned to the type the kernel reads.
	WOffset, BiasOffset int
	M, N, K             int
	// Act is applied after the bias, in the GEMM's store.
	Act Activation
	// Gated, when not nil, also receives ModernBERT's GeGLU of Y [M, N/2]
	// (N even, Act ActIdentity: Y keeps the raw projection). It is
	// geglu_f32 on Y fused into the same store, bit for bit.
	Gated Buffer
}

// Gemm encodes Y = X·Wᵀ (+ bias) (kernels/gemm.metal): X is m×kd, W is
// n×kd (a linear layer's weight as stored), Y is m×n float32, bias is n
// float32 or nil. See EncodeGemm for fused activations and offsets.
func Gemm(cb CommandBuffer, k *Kernels, in GemmInput, x, w, bias, y Buffer, m, n, kd int) error {
	return EncodeGemm(cb, k, GemmOp{Input: in, X: x, W: w, Bias: bias, Y: y, M: m, N: n, K: kd})
}

// EncodeGemm encodes op as one dispatch.
func EncodeGemm(cb CommandBuffer, k *Kernels, op GemmOp) error {
	name, xElem, wElem := "gemm_f32", 4, 4
	switch op.Input {
	case GemmF32:
	case GemmF16:
		name, xElem, wElem = "gemm_f16", 2, 2
	case GemmF32F16W:
		name, wElem = "gemm_f32_f16w", 2
	default:
		return fmt.Errorf("%w: gemm: unknown input kind %d", ErrInvalidDispatch, op.Input)
	}
	m, n, kd := op.M, op.N, op.K
	if m <= 0 || n <= 0 || kd <= 0 || m*kd > 1<<31 || n*kd > 1<<31 || m*n > 1<<31 {
		return fmt.Errorf("%w: %s: %d×%d×%d", ErrInvalidDispatch, name, m, n, kd)
	}
	if op.Act > ActReLU {
		return fmt.Errorf("%w: %s: activation %d", ErrInvalidDispatch, name, op.Act)
	}
	geglu := op.Gated != nil
	if geglu && (n%2 != 0 || op.Act != ActIdentity) {
		return fmt.Errorf("%w: %s: GeGLU needs an even N (got %d) and no other activation (got %d)", ErrInvalidDispatch, name, n, op.Act)
	}
	if op.WOffset < 0 || op.WOffset%wElem != 0 || op.BiasOffset < 0 || op.BiasOffset%4 != 0 {
		return fmt.Errorf("%w: %s: W offset %d or bias offset %d is negative or not a multiple of its element size", ErrInvalidDispatch, name, op.WOffset, op.BiasOffset)
	}
	if err := checkLen(name, "X", op.X, xElem*m*kd); err != nil {
		return err
	}
	if err := checkLen(name, "W", op.W, op.WOffset+wElem*n*kd); err != nil {
		return err
	}
	if err := checkLen(name, "Y", op.Y, 4*m*n); err != nil {
		return err
	}
	args := []Arg{{Index: 0, Buffer: op.X}, {Index: 1, Buffer: op.W, Offset: op.WOffset}, {Index: 2, Buffer: op.Y}, {Index: 4, Bytes: u32s(m, n, kd)}}
	if op.Bias != nil {
		if err := checkLen(name, "bias", op.Bias, op.BiasOffset+4*n); err != nil {
			return err
		}
		args = append(args, Arg{Index: 3, Buffer: op.Bias, Offset: op.BiasOffset})
	}
	groups := Size3{ceilDiv(n, 32), ceilDiv(m, 32), 1}
	if geglu {
		if err := checkLen(name, "gated", op.Gated, 4*m*(n/2)); err != nil {
			return err
		}
		args = append(args, Arg{Index: 5, Buffer: op.Gated})
		// A threadgroup computes 16 columns of each half (see w_row).
		groups.X = ceilDiv(n/2, 16)
	}
	// gemm_has_bias, gemm_act and gemm_geglu are function_constant(0..2).
	p, err := k.pipeline(name, Constant{Index: 0, Value: op.Bias != nil},
		Constant{Index: 1, Value: uint32(op.Act)}, Constant{Index: 2, Value: geglu})
	if err != nil {
		return err
	}
	// 32×32 tiles of Y, 4 simdgroups each (see the kernel's comment).
	return cb.Dispatch(p, groups, Size3{128, 1, 1}, args...)
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
