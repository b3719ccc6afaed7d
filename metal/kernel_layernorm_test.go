//go:build linux || darwin

package metal_test

import (
	"fmt"
	"testing"

	. "github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/metal/emu"
)

func TestLayerNormEmu(t *testing.T) {
	cases := []struct {
		rows, cols, threads int
		bias                bool
		offset              float32 // added to every input: a large mean must not cost digits
		// wPad and bPad are float32s before the weight and the bias in
		// their buffers, bound by WeightOffset and BiasOffset.
		wPad, bPad int
	}{
		{3, 1, 32, false, 0, 0, 0},
		{4, 33, 32, true, 0, 0, 0},
		{4, 33, 32, true, 0, 3, 5},
		{2, 64, 0, false, 100, 0, 0},
		{2, 64, 0, false, 100, 1, 0},
		{5, 100, 64, true, -3, 0, 0},
		{3, 768, 0, false, 0, 0, 0},
		{3, 768, 0, true, 0, 768, 1},
		{2, 1000, 1024, true, 0.5, 0, 0},
		{1, 130, 96, false, 0, 0, 0},
	}
	for _, s := range emu.Schedules {
		d := openEmu(t, emu.Options{Schedule: s}, "kernels")
		k := NewKernels(d)
		for _, c := range cases {
			name := fmt.Sprintf("%s %+v", s, c)
			in := pseudo(c.rows*c.cols, uint64(c.cols), -2, 2)
			for i := range in {
				in[i] += c.offset
			}
			// The padding is far from any weight or bias, so that a kernel
			// reading at the wrong offset shows.
			w := pseudo(c.cols, 7, 0.5, 1.5)
			var b []float32
			var bb Buffer
			if c.bias {
				b = pseudo(c.cols, 8, -1, 1)
				bb = f32Buffer(t, d, append(pseudo(c.bPad, 1, 9, 9), b...))
			}
			const eps = 1e-5
			want := layerNormRef(in, w, b, c.rows, c.cols, eps)
			bin, bout := f32Buffer(t, d, in), f32Buffer(t, d, make([]float32, len(in)))
			bw := f32Buffer(t, d, append(pseudo(c.wPad, 2, 9, 9), w...))
			op := LayerNormOp{In: bin, Weight: bw, WeightOffset: 4 * c.wPad, Out: bout, Rows: c.rows, Cols: c.cols, Eps: eps}
			if c.bias {
				op.Bias, op.BiasOffset = bb, 4*c.bPad
			}
			threads := c.threads
			if threads == 0 {
				threads = RowThreads(c.cols)
			}
			if err := run(t, d, func(cb CommandBuffer) error { return layerNormThreads(cb, k, op, threads) }); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			// Outputs are O(1); fp32 sums of cols terms whose mean is
			// removed carry ≈ √cols·ulp of the largest input.
			if e, i := maxErr(readF32(bout, len(in)), want, 2e-6*(1+float64(abs32(c.offset))/8), 2e-6); e > 1 {
				t.Errorf("%s: element %d off by %.3g× tolerance", name, i, e)
			}
			// In place, as the encoder runs it.
			if err := run(t, d, func(cb CommandBuffer) error {
				if c.wPad == 0 && c.bPad == 0 {
					return LayerNorm(cb, k, bin, bw, bb, bin, c.rows, c.cols, eps)
				}
				op.Out = bin
				return EncodeLayerNorm(cb, k, op)
			}); err != nil {
				t.Fatalf("%s in place: %v", name, err)
			}
			if e, i := maxErr(readF32(bin, len(in)), want, 2e-6*(1+float64(abs32(c.offset))/8), 2e-6); e > 1 {
				t.Errorf("%s in place: element %d off by %.3g× tolerance", name, i, e)
			}
		}
	}
}

func TestEncodeLayerNormRejects(t *testing.T) {
	d := openEmu(t, emu.Options{}, "kernels")
	k := NewKernels(d)
	buf := f32Buffer(t, d, make([]float32, 64))
	base := LayerNormOp{In: buf, Weight: buf, Bias: buf, Out: buf, Rows: 2, Cols: 8, Eps: 1e-5}
	cases := []struct {
		name string
		edit func(op *LayerNormOp)
	}{
		{"misaligned weight offset", func(op *LayerNormOp) { op.WeightOffset = 2 }},
		{"negative weight offset", func(op *LayerNormOp) { op.WeightOffset = -4 }},
		{"weight past its buffer", func(op *LayerNormOp) { op.WeightOffset = 4 * 57 }},
		{"misaligned bias offset", func(op *LayerNormOp) { op.BiasOffset = 6 }},
		{"bias past its buffer", func(op *LayerNormOp) { op.BiasOffset = 4 * 60 }},
		{"negative eps", func(op *LayerNormOp) { op.Eps = -1 }},
	}
	for _, c := range cases {
		op := base
		c.edit(&op)
		wantInvalidDispatch(t, d, c.name, func(cb CommandBuffer) error { return EncodeLayerNorm(cb, k, op) })
	}
}

func abs32(v float32) float32 { return max(v, -v) }
