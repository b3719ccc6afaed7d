// Package rotary computes the cos/sin table of the rotary position
// embedding, once for every backend: backend.RopeTable hands it to the
// backends, and package metal's self-test builds its RoPE canaries from it,
// which the device layer may not reach through package backend.
package rotary

import "math"

// Table returns cos and sin for positions [0, n) as one slice
// [n][2][headDim/2] (each position's headDim/2 cosines, then its sines),
// the table a backend's Rope and metal's rope kernels read.
//
// The values are rounded where HF transformers' ModernBertRotaryEmbedding
// (default rope) rounds them in float32:
//
//	inv_freq = 1.0 / (base ** (arange(0, dim, 2).float() / dim))
//	freqs    = inv_freq.float() @ position_ids.float()
//	cos, sin = cat(freqs, freqs).cos(), .sin()
//
// Each float32 operation here is done in float64 and rounded to float32,
// which is the correctly rounded float32 result that PyTorch's kernels also
// give (or are within an ulp of).
func Table(theta float64, headDim, n int) []float32 {
	half := headDim / 2
	table := make([]float32, n*2*half)
	base := float64(float32(theta))
	invFreq := make([]float32, half)
	for j := range invFreq {
		exponent := float32(float32(2*j) / float32(headDim))
		invFreq[j] = float32(1 / float64(float32(math.Pow(base, float64(exponent)))))
	}
	for p := range n {
		row := table[p*2*half : (p+1)*2*half]
		for j, f := range invFreq {
			angle := float64(float32(p) * f)
			row[j] = float32(math.Cos(angle))
			row[half+j] = float32(math.Sin(angle))
		}
	}
	return table
}
