package cuda

import (
	"fmt"
	"math"
)

// GeluInputs are the GELU inputs TestEmuGeluExp and the GPU's TestGeluExp
// run gelu_exp on: n + 1 values from −10 to 10 as the first half of a GeGLU
// input row of inner = n + 4 values and gates (the last four repeat 10, so
// that inner is a multiple of 4), every gate 1.
func GeluInputs(n int) (x []float32, inner int) {
	inner = n + 4
	x = make([]float32, 2*inner)
	for i := range inner {
		x[i] = -10 + 20*float32(min(i, n))/float32(n)
		x[inner+i] = 1
	}
	return x, inner
}

// CheckGeluExp holds gelu_exp's GELU(v) to float64's: a relative error of at
// most 2e-6 down to v = −5 (the erf form's 1 + erf has cancelled long
// before: it fails there by far; a coefficient off in its fifth digit fails
// too) and 1e-5 below it, where E's exponent, about −0.72·v² rounded to
// float32, has lost that much (5e-6 at −10; 1.1e-6 at −4 and 4e-7 around 0
// in a float32 model of it with the GPU's approximations a few ulps off).
func CheckGeluExp(v float64, got float32) error {
	want := 0.5 * v * math.Erfc(-v*0.70710678118654752)
	bound := 2e-6
	if v < -5 {
		bound = 1e-5
	}
	if e := math.Abs(float64(got) - want); !(e <= bound*math.Abs(want)) {
		return fmt.Errorf("GELU(%g) = %g, want %g (relative error %.3g)", v, got, want, e/math.Abs(want))
	}
	return nil
}
