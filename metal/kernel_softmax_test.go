//go:build linux || darwin

package metal_test

import (
	"math"
	"testing"

	. "github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/metal/emu"
)

func TestSoftmaxEmu(t *testing.T) {
	const rows = 3
	for _, s := range emu.Schedules {
		d := openEmu(t, emu.Options{Schedule: s}, "kernels")
		k := NewKernels(d)
		for _, cols := range []int{1, 33, 1000, 4096} {
			in := pseudo(rows*cols, uint64(cols), -8, 8)
			want := softmaxRef(in, rows, cols)
			bin := f32Buffer(t, d, in)
			for _, threads := range []int{1, 32, 48, 96, 256, 1024, SoftmaxThreads(cols)} {
				bout := f32Buffer(t, d, make([]float32, rows*cols))
				err := run(t, d, func(cb CommandBuffer) error { return softmaxThreads(cb, k, bin, bout, rows, cols, threads) })
				if err != nil {
					t.Fatalf("%s cols=%d tg=%d: %v", s, cols, threads, err)
				}
				// fp32 exp and sums: a few ulp of the result, plus the
				// rounding of each thread's serial sum of cols/threads
				// terms (≈ √n ulp), plus an absolute floor for tiny values.
				rel := 2e-6 + 1.2e-7*math.Sqrt(float64(ceilDiv(cols, threads)))
				if e, i := maxErr(readF32(bout, rows*cols), want, 1e-9, rel); e > 1 {
					t.Errorf("%s cols=%d tg=%d: element %d off by %.3g× tolerance", s, cols, threads, i, e)
				}
			}
		}
	}
}
