//go:build linux || darwin

package metal_test

import (
	"testing"

	. "github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/metal/emu"
)

func TestVectorAddEmu(t *testing.T) {
	for _, s := range emu.Schedules {
		d := openEmu(t, emu.Options{Schedule: s}, "kernels")
		k := NewKernels(d)
		for _, n := range []int{1, 33, 1000, 4099} {
			a, b := pseudo(n, 1, -10, 10), pseudo(n, 2, -10, 10)
			ba, bb, bo := f32Buffer(t, d, a), f32Buffer(t, d, b), f32Buffer(t, d, make([]float32, n))
			if err := run(t, d, func(cb CommandBuffer) error { return VectorAdd(cb, k, ba, bb, bo, n) }); err != nil {
				t.Fatalf("%s n=%d: %v", s, n, err)
			}
			// One float32 rounding of the exact sum.
			if e, i := maxErr(readF32(bo, n), vectorAddRef(a, b), 0, 6e-8); e > 1 {
				t.Errorf("%s n=%d: element %d off by %.3g× tolerance", s, n, i, e)
			}
		}
	}
}
