package cpu

import "math"

// gelu is the exact erf GELU, 0.5·x·(1+erf(x/√2)), evaluated in float64 and
// rounded once to float32, so it is the correctly rounded value in nearly
// every case (PyTorch's vectorised float32 erf is within an ulp of it). It is
// written with erfc, 1+erf(x/√2) = erfc(−x/√2), which keeps its relative
// accuracy for negative x (1 + math.Erf cancels there: at x = −10 it gives 0
// for 7.6e-23).
func gelu(x float32) float32 {
	v := float64(x)
	return float32(0.5 * v * math.Erfc(-v*(1/math.Sqrt2)))
}

// geluSlice sets out[i] = gelu(in[i]) (the SIMD kernel where the CPU has
// one: within an ulp of gelu, equal nearly always).
func geluSlice(out, in []float32) {
	out = out[:len(in)]
	if simdGELU(out, in, nil) {
		return
	}
	for i, v := range in {
		out[i] = gelu(v)
	}
}

// gegluSlice sets out[i] = gelu(value[i])·gate[i], the product in float32.
func gegluSlice(out, value, gate []float32) {
	out, gate = out[:len(value)], gate[:len(value)]
	if simdGELU(out, value, gate) {
		return
	}
	for i, v := range value {
		out[i] = gelu(v) * gate[i]
	}
}
