//go:build linux || darwin

package metal

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/laya-metal/laya/weights"
)

func halfAt(b Buffer, i int) float32 {
	return weights.Float16ToFloat32(binary.LittleEndian.Uint16(b.Bytes()[2*i:]))
}

// gemm_f32_f16w: float activations against stored half weights, as the
// backend's Linear runs fp16 checkpoints.
func TestGemmMixedEmu(t *testing.T) {
	cases := []struct {
		m, n, k int
		bias    bool
	}{{1, 33, 17, true}, {45, 70, 40, false}, {64, 96, 128, true}}
	for _, s := range Schedules {
		d := openEmu(t, EmulatorOptions{Schedule: s}, "kernels")
		kern := NewKernels(d)
		for _, c := range cases {
			name := fmt.Sprintf("%s %+v", s, c)
			x, w := pseudo(c.m*c.k, 3, -1, 1), pseudo(c.n*c.k, 4, -1, 1)
			bx, bw := f32Buffer(t, d, x), f16Buffer(t, d, w)
			xr, wr := make([]float64, len(x)), make([]float64, len(w))
			for i, v := range x {
				xr[i] = float64(v)
			}
			for i := range w {
				wr[i] = float64(halfAt(bw, i))
			}
			var bb Buffer
			var br []float64
			if c.bias {
				b := pseudo(c.n, 5, -1, 1)
				bb = f32Buffer(t, d, b)
				for _, v := range b {
					br = append(br, float64(v))
				}
			}
			by := f32Buffer(t, d, make([]float32, c.m*c.n))
			if err := run(t, d, func(cb CommandBuffer) error {
				return Gemm(cb, kern, GemmF32F16W, bx, bw, bb, by, c.m, c.n, c.k)
			}); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if e, i := maxErr(readF32(by, c.m*c.n), gemmRef(xr, wr, br, c.m, c.n, c.k), 1e-6*float64(c.k), 1e-6); e > 1 {
				t.Errorf("%s: element %d off by %.3g× tolerance", name, i, e)
			}
		}
	}
}
