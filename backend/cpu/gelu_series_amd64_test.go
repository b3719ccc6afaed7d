//go:build !purego

package cpu

import (
	"math"
	"testing"
)

// geluConstAVX512 reads one of the GELU kernel's constants.
//
//go:noescape
func geluConstAVX512(off int) float64

// checkGeluKernelSeries holds the kernel's erfcx coefficients (offsets
// 384 + 64k) to the monomial form a of the freshly computed Chebyshev
// series: the two polynomials agree to 1e-15 over s ∈ [−1, 1] (not
// coefficient by coefficient: an FMA contraction moves the last bits of the
// Chebyshev coefficients, which the monomial ones amplify, but not the
// polynomial), and the kernel's is within 2e-13 of erfcx.
func checkGeluKernelSeries(t *testing.T, a []float64, erfcx func(s float64) float64) {
	kernel := make([]float64, len(a))
	for k := range kernel {
		kernel[k] = geluConstAVX512(384 + 64*k)
	}
	horner := func(c []float64, s float64) float64 {
		p := c[len(c)-1]
		for k := len(c) - 2; k >= 0; k-- {
			p = math.FMA(p, s, c[k])
		}
		return p
	}
	worstDiff, worstErr := 0.0, 0.0
	for i := range 20001 {
		s := -1 + 2*float64(i)/20000
		pk := horner(kernel, s)
		worstDiff = max(worstDiff, math.Abs(pk-horner(a, s)))
		worstErr = max(worstErr, math.Abs(pk/erfcx(s)-1))
	}
	if worstDiff > 1e-15 || worstErr > 2e-13 {
		t.Errorf("kernel's erfcx series: %.3g from the recomputed one, relative error %.3g", worstDiff, worstErr)
	}
}
