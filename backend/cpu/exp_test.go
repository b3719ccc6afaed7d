package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestExpNonPositive holds expNonPositive to math.Exp within 1e-13 relative
// over the whole non-positive range, and its float32 rounding to math.Exp's
// (an ulp apart at most, and equal nearly always).
func TestExpNonPositive(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	differ := 0
	const n = 200000
	for i := range n {
		var x float64
		switch i % 4 {
		case 0:
			x = -rng.Float64() * 2
		case 1:
			x = -rng.Float64() * 30
		case 2:
			x = -rng.Float64() * 110 // into float32 subnormals
		default:
			x = -rng.Float64() * 800 // into float64 subnormals and past
		}
		got, want := expNonPositive(x), math.Exp(x)
		if want > 1e-300 && math.Abs(got-want) > 1e-13*want {
			t.Fatalf("exp(%v) = %v, want %v", x, got, want)
		}
		g32, w32 := float32(got), float32(want)
		if g32 != w32 {
			differ++
			if d := math.Float32bits(g32) - math.Float32bits(w32); d != 1 && d != math.MaxUint32 {
				t.Fatalf("float32(exp(%v)) = %v, math.Exp's %v: more than an ulp", x, g32, w32)
			}
		}
	}
	for _, x := range []float64{0, math.Copysign(0, -1), -745.2, -1000, math.Inf(-1)} {
		if got, want := expNonPositive(x), math.Exp(x); got != want {
			t.Errorf("exp(%v) = %v, want %v", x, got, want)
		}
	}
	if differ > n/1000 {
		t.Errorf("%d of %d float32 roundings differ from math.Exp's", differ, n)
	}
	t.Logf("%d of %d float32 roundings differ from math.Exp's by an ulp", differ, n)
}
