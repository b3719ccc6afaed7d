// Package cpu is the pure-Go float32 reference implementation of
// backend.Backend. Every GPU kernel is held to its answers, so exactness
// comes first: exact-erf GELU, RoPE angles rounded to float32 exactly where
// PyTorch rounds them, max-subtracted softmax, float64 statistics in
// LayerNorm. Speed comes second: a register-blocked GEMM and attention spread
// over all cores (GOMAXPROCS).
//
// Operations run synchronously when they are recorded; Stream.Read only
// copies. Importing the package registers the backend as "cpu".
package cpu
