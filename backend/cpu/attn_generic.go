//go:build purego || !amd64

package cpu

// pickAttnSIMD: this build has no SIMD attention; Attention runs the
// portable path (the GEMM tile kernel and a scalar softmax).
func pickAttnSIMD() attentionFunc { return nil }
