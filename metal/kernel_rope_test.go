//go:build linux || darwin

package metal_test

import (
	"fmt"
	"testing"

	"github.com/laya-metal/laya/internal/rotary"
	. "github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/metal/emu"
)

func TestRopeEmu(t *testing.T) {
	cases := []struct {
		batch, seqLen, heads, headDim int
		theta                         float64
	}{
		{1, 5, 1, 2, 10000},
		{2, 7, 2, 8, 160000},
		{3, 33, 3, 32, 10000},
		{1, 300, 2, 64, 160000},
	}
	for _, s := range emu.Schedules {
		d := openEmu(t, emu.Options{Schedule: s}, "kernels")
		k := NewKernels(d)
		for _, c := range cases {
			name := fmt.Sprintf("%s %+v", s, c)
			rows := c.batch * c.seqLen
			qkv := pseudo(rows*3*c.heads*c.headDim, uint64(rows), -3, 3)
			table := rotary.Table(c.theta, c.headDim, c.seqLen)
			want := ropeRef(qkv, table, rows, c.seqLen, c.heads, c.headDim)
			bq, bt := f32Buffer(t, d, qkv), f32Buffer(t, d, table)
			if err := run(t, d, func(cb CommandBuffer) error { return Rope(cb, k, bq, bt, rows, c.seqLen, c.heads, c.headDim) }); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			// Two products and a sum in fp32 (the v part is untouched:
			// the reference keeps it exactly).
			if e, i := maxErr(readF32(bq, len(qkv)), want, 1e-6, 1e-6); e > 1 {
				t.Errorf("%s: element %d off by %.3g× tolerance", name, i, e)
			}
		}
	}
}
