package backend

import "github.com/laya-metal/laya/internal/rotary"

// RopeTable returns cos and sin for positions [0, n) as one slice
// [n][2][headDim/2] (each position's cos, then its sin), the table Rope
// applies, for backends that precompute it. Its values are float32-rounded
// where HF transformers' ModernBertRotaryEmbedding rounds them, so a
// backend's RoPE matches the upstream model's.
func RopeTable(theta float64, headDim, n int) []float32 {
	return rotary.Table(theta, headDim, n)
}
