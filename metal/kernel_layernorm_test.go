//go:build linux || darwin

package metal

import (
	"fmt"
	"testing"
)

func TestLayerNormEmu(t *testing.T) {
	cases := []struct {
		rows, cols, threads int
		bias                bool
		offset              float32 // added to every input: a large mean must not cost digits
	}{
		{3, 1, 32, false, 0},
		{4, 33, 32, true, 0},
		{2, 64, 0, false, 100},
		{5, 100, 64, true, -3},
		{3, 768, 0, false, 0},
		{2, 1000, 1024, true, 0.5},
		{1, 130, 96, false, 0},
	}
	for _, s := range Schedules {
		d := openEmu(t, EmulatorOptions{Schedule: s}, "kernels")
		k := NewKernels(d)
		for _, c := range cases {
			name := fmt.Sprintf("%s %+v", s, c)
			in := pseudo(c.rows*c.cols, uint64(c.cols), -2, 2)
			for i := range in {
				in[i] += c.offset
			}
			w := pseudo(c.cols, 7, 0.5, 1.5)
			var b []float32
			var bb Buffer
			if c.bias {
				b = pseudo(c.cols, 8, -1, 1)
				bb = f32Buffer(t, d, b)
			}
			const eps = 1e-5
			want := layerNormRef(in, w, b, c.rows, c.cols, eps)
			bin, bw, bout := f32Buffer(t, d, in), f32Buffer(t, d, w), f32Buffer(t, d, make([]float32, len(in)))
			threads := c.threads
			if threads == 0 {
				threads = RowThreads(c.cols)
			}
			if err := run(t, d, func(cb CommandBuffer) error {
				return layerNormThreads(cb, k, bin, bw, bb, bout, c.rows, c.cols, eps, threads)
			}); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			// Outputs are O(1); fp32 sums of cols terms whose mean is
			// removed carry ≈ √cols·ulp of the largest input.
			if e, i := maxErr(readF32(bout, len(in)), want, 2e-6*(1+float64(abs32(c.offset))/8), 2e-6); e > 1 {
				t.Errorf("%s: element %d off by %.3g× tolerance", name, i, e)
			}
			// In place, as the encoder runs it.
			if err := run(t, d, func(cb CommandBuffer) error { return LayerNorm(cb, k, bin, bw, bb, bin, c.rows, c.cols, eps) }); err != nil {
				t.Fatalf("%s in place: %v", name, err)
			}
			if e, i := maxErr(readF32(bin, len(in)), want, 2e-6*(1+float64(abs32(c.offset))/8), 2e-6); e > 1 {
				t.Errorf("%s in place: element %d off by %.3g× tolerance", name, i, e)
			}
		}
	}
}

func abs32(v float32) float32 { return max(v, -v) }
