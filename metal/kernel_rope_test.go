//go:build linux || darwin

package metal_test

import (
	"fmt"
	"math"
	"testing"

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
			table := RopeTable(c.theta, c.headDim, c.seqLen)
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

// The table must hold the float32 angles of HF's rotary embedding, not
// float64 ones: position 300 at inv_freq 1 is 300 rad either way, but at
// other frequencies the rounded angle differs by more than cos can hide.
func TestRopeTableRoundsLikeTorch(t *testing.T) {
	const headDim, seqLen = 64, 4096
	table := RopeTable(160000, headDim, seqLen)
	if table[0] != 1 || table[headDim/2] != 0 {
		t.Fatalf("position 0: cos %v sin %v, want 1 and 0", table[0], table[headDim/2])
	}
	p, j := seqLen-1, 3
	invFreq := float32(1 / float64(float32(math.Pow(160000, float64(float32(2*j)/headDim)))))
	angle := float64(float32(p) * invFreq)
	if got, want := table[p*headDim+j], float32(math.Cos(angle)); got != want {
		t.Errorf("cos at p=%d j=%d = %v, want %v", p, j, got, want)
	}
	exact := float64(p) / math.Pow(160000, float64(2*j)/headDim)
	if math.Abs(math.Cos(exact)-math.Cos(angle)) < 1e-7 {
		t.Logf("float32 and float64 angles agree here; the check above is still exact")
	}
}
