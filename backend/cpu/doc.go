// Package cpu is the float32 reference implementation of backend.Backend.
// Every GPU kernel is held to its answers, so exactness comes first:
// exact-erf GELU, RoPE angles rounded to float32 exactly where PyTorch rounds
// them, max-subtracted softmax, float64 statistics in LayerNorm. Speed comes
// second: GEMM tiles spread over all cores (GOMAXPROCS) with a 3×4 assembly
// micro-kernel (AVX2+FMA on amd64, NEON on arm64; both sum in the same lane
// order, so they give bit-identical results), and a pure-Go kernel on other
// CPUs or with the purego build tag.
//
// Operations run synchronously when they are recorded; Stream.Read only
// copies. Importing the package registers the backend as "cpu".
package cpu
