//go:build linux || darwin

package metal_test

import (
	"fmt"
	"testing"

	. "github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/metal/emu"
)

func TestAttentionEmu(t *testing.T) {
	cases := []struct {
		lengths                []int
		seqLen, heads, headDim int
		sliding                bool
		radius                 int
	}{
		{[]int{1}, 1, 1, 4, false, 0},
		{[]int{5, 3}, 5, 2, 8, false, 0},
		{[]int{40, 17, 1}, 40, 2, 32, false, 0},
		{[]int{40, 23}, 40, 1, 32, true, 8},
		{[]int{70}, 70, 2, 64, true, 0},
		{[]int{9, 6}, 9, 1, 96, true, 100}, // radius past the row: the full mask
		{[]int{3}, 3, 1, 256, false, 0},
	}
	for _, s := range emu.Schedules {
		d := openEmu(t, emu.Options{Schedule: s}, "kernels")
		k := NewKernels(d)
		for _, c := range cases {
			shape := AttentionShape{Batch: len(c.lengths), SeqLen: c.seqLen, Heads: c.heads, HeadDim: c.headDim,
				Scale: 1 / float32(c.headDim) * 4, Sliding: c.sliding, Radius: c.radius}
			name := fmt.Sprintf("%s %+v", s, shape)
			rows, width := shape.Batch*c.seqLen, c.heads*c.headDim
			qkv := pseudo(rows*3*width, uint64(rows*width), -2, 2)
			want := attentionRef(qkv, c.lengths, shape)
			bq, bl := f32Buffer(t, d, qkv), u32Buffer(t, d, c.lengths)
			// NaN-filled output: padded rows must be written, not skipped.
			bo := f32Buffer(t, d, pseudo(rows*width, 1, 1e30, 1e30))
			if err := run(t, d, func(cb CommandBuffer) error { return Attention(cb, k, bq, bl, bo, shape) }); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			// Outputs are convex combinations of values ≤ 2; scores of Dh
			// products in fp32 and exp through an online rescale.
			if e, i := maxErr(readF32(bo, rows*width), want, 2e-6, 2e-6); e > 1 {
				t.Errorf("%s: element %d off by %.3g× tolerance", name, i, e)
			}
		}
	}
}
