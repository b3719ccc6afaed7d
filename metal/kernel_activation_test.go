//go:build linux || darwin

package metal_test

import (
	"fmt"
	"math"
	"testing"

	. "github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/metal/emu"
)

func TestActivateEmu(t *testing.T) {
	for _, s := range emu.Schedules {
		d := openEmu(t, emu.Options{Schedule: s}, "kernels")
		k := NewKernels(d)
		for _, act := range []Activation{ActIdentity, ActGELU, ActReLU} {
			for _, n := range []int{1, 257, 5000} {
				name := fmt.Sprintf("%s act=%d n=%d", s, act, n)
				in := pseudo(n, uint64(n), -12, 12)
				in[0] = 0
				want := activateRef(in, act)
				bin, bout := f32Buffer(t, d, in), f32Buffer(t, d, make([]float32, n))
				if err := run(t, d, func(cb CommandBuffer) error { return Activate(cb, k, act, bin, bout, n) }); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				// GELU: erf within an ulp, a few fp32 roundings around it.
				// On the negative tail (x < −1.3) erf's error is absolute
				// (≈ ulp(1)), so GELU's is ≈ |x|·3e-8 there, as in PyTorch's
				// own float32 1+erf: the absolute floor.
				if e, i := maxErr(readF32(bout, n), want, 5e-8, 4e-7); e > 1 {
					t.Errorf("%s: element %d (x = %v) off by %.3g× tolerance", name, i, in[i], e)
				}
			}
		}
	}
}

// A fine sweep of GELU against float64 erf: the erf coefficients are typed
// from a paper, so every one of them must be checked by a test that fails.
func TestGELUSweepEmu(t *testing.T) {
	d := openEmu(t, emu.Options{}, "kernels")
	k := NewKernels(d)
	const n = 1 << 16
	in := make([]float32, n)
	for i := range in {
		in[i] = -10 + 20*float32(i)/n
	}
	bin, bout := f32Buffer(t, d, in), f32Buffer(t, d, make([]float32, n))
	if err := run(t, d, func(cb CommandBuffer) error { return Activate(cb, k, ActGELU, bin, bout, n) }); err != nil {
		t.Fatal(err)
	}
	got := readF32(bout, n)
	worst := 0.0
	for i, x := range in {
		want := geluRef(float64(x))
		e := math.Abs(float64(got[i])-want) / (1e-20 + math.Abs(want))
		if math.Abs(want) > 1e-6 {
			worst = max(worst, e)
		}
		if e > 4e-7 && math.Abs(float64(got[i])-want) > 5e-8 {
			t.Fatalf("gelu(%v) = %v, want %v", x, got[i], want)
		}
	}
	t.Logf("worst relative error where |gelu| > 1e-6: %.3g", worst)
}

func TestGeGLUEmu(t *testing.T) {
	for _, s := range emu.Schedules {
		d := openEmu(t, emu.Options{Schedule: s}, "kernels")
		k := NewKernels(d)
		for _, c := range []struct{ rows, inner int }{{1, 1}, {3, 96}, {17, 33}, {5, 1152}} {
			name := fmt.Sprintf("%s %+v", s, c)
			in := pseudo(c.rows*2*c.inner, uint64(c.inner), -4, 4)
			want := gegluRef(in, c.rows, c.inner)
			bin, bout := f32Buffer(t, d, in), f32Buffer(t, d, make([]float32, c.rows*c.inner))
			if err := run(t, d, func(cb CommandBuffer) error { return GeGLU(cb, k, bin, bout, c.rows, c.inner) }); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			// GELU's tolerance (TestActivateEmu) times a gate ≤ 4.
			if e, i := maxErr(readF32(bout, c.rows*c.inner), want, 2e-7, 6e-7); e > 1 {
				t.Errorf("%s: element %d off by %.3g× tolerance", name, i, e)
			}
		}
	}
}

func TestActFeaturesEmu(t *testing.T) {
	for _, s := range emu.Schedules {
		d := openEmu(t, emu.Options{Schedule: s}, "kernels")
		k := NewKernels(d)
		for _, c := range []struct {
			counts []int
			dim    int
		}{
			{[]int{1}, 3},
			{[]int{2, 5, 1, 20}, 64},
			{[]int{3, 3}, 300},
		} {
			name := fmt.Sprintf("%s %+v", s, c)
			total := 0
			offsets := []int{0}
			for _, n := range c.counts {
				total += n
				offsets = append(offsets, total)
			}
			batch := len(c.counts)
			cls := pseudo(batch*c.dim, 11, -1, 1)
			logits := pseudo(total, 12, -6, 6)
			if total > 2 {
				logits[1] = logits[0] // a tie for the top probability
			}
			want := actFeaturesRef(cls, logits, c.counts, c.dim)
			bc, bz, bo := f32Buffer(t, d, cls), f32Buffer(t, d, logits), u32Buffer(t, d, offsets)
			bout := f32Buffer(t, d, make([]float32, batch*(c.dim+4)))
			if err := run(t, d, func(cb CommandBuffer) error {
				return ActFeatures(cb, k, bc, bz, bo, bout, batch, c.dim, total)
			}); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			// Probabilities and the entropy in [0, 1]: fp32 exp/log.
			if e, i := maxErr(readF32(bout, batch*(c.dim+4)), want, 1e-6, 1e-6); e > 1 {
				t.Errorf("%s: element %d off by %.3g× tolerance", name, i, e)
			}
		}
	}
}
