//go:build !purego

package cpu

import sysCPU "golang.org/x/sys/cpu"

// The AVX-512 GELU (gelu_avx512_amd64.s) evaluates 16 values at
// a time in float64, without branches:
//
//	a = |x|/√2
//	erfc(a)  = e^(−a²)·erfcx(a)        erfcx: an 18-term Chebyshev series in
//	                                    z = (a−3)/(a+3) over a ≤ 10.5 (6e-14
//	                                    relative; past 10.5 e^(−a²) < 1e-47),
//	                                    evaluated by Horner's rule in its
//	                                    monomial form (17 FMAs instead of
//	                                    Clenshaw's 51 operations; as accurate,
//	                                    TestGeluAVX512Constants)
//	e^(−a²)  = 2ⁿ·P(r)                  n = round(−a²·log₂e), r by Cody–Waite,
//	                                    P the degree-11 Taylor polynomial;
//	                                    a² clamped at 10.5², and erfc taken
//	                                    as 0 past a = 10.5 (it is < 1e-49
//	                                    there): past a² ≈ 708 e^(−a²) is a
//	                                    float64 denormal, and every lane that
//	                                    makes one takes a microcode assist
//	                                    (inputs past ~37 ran 6× slower;
//	                                    the forward's rarely reach 5)
//	1+erf(x/√2) = 2 − erfc(a) (x ≥ 0), erfc(a) (x < 0), and for a < 0.5
//	              1 + t·S(t²), t = x/√2, S erf's Taylor series to t²³
//
// then 0.5·x·that, rounded once to float32 (times the gate in float32 for
// GeGLU). The coefficients are checked by TestGeluAVX512Constants; the
// results are held to the correctly rounded GELU by TestGeluSIMD. It is ~20×
// faster than math.Erf per value, whose range branches the GeGLU inputs
// mispredict (BenchmarkGelu: a few ns per value; Clenshaw's recurrence for
// the series measured slower than Horner's rule; measurements:
// docs/perf-log.md).

//go:noescape
func geluAVX512(dst, src *float32, n int)

//go:noescape
func gegluAVX512(dst, value, gate *float32, n int)

var hasAVX512GELU = sysCPU.X86.HasAVX512F

// simdGELU computes geluSlice (gate nil) or gegluSlice with AVX-512 when the
// CPU has it; the last len mod 16 values go through a padded block.
func simdGELU(out, in, gate []float32) bool {
	if !hasAVX512GELU {
		return false
	}
	n := len(in) &^ 15
	if n > 0 {
		if gate == nil {
			geluAVX512(&out[0], &in[0], n)
		} else {
			gegluAVX512(&out[0], &in[0], &gate[0], n)
		}
	}
	if rest := len(in) - n; rest > 0 {
		var x, g, y [16]float32
		copy(x[:], in[n:])
		if gate == nil {
			geluAVX512(&y[0], &x[0], 16)
		} else {
			copy(g[:], gate[n:])
			gegluAVX512(&y[0], &x[0], &g[0], 16)
		}
		copy(out[n:], y[:rest])
	}
	return true
}
