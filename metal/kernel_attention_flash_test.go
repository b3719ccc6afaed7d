package metal_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/laya-metal/laya/internal/rotary"
	. "github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/metal/emu"
)

// attentionCase is one flash attention run against the float64 references
// (ropeRef, then attentionRef).
type attentionCase struct {
	lengths         []int
	seqLen, heads   int
	headDim, radius int
	sliding, rope   bool
}

func runAttentionCase(t *testing.T, d Device, k *Kernels, c attentionCase, inline bool) {
	t.Helper()
	shape := AttentionShape{Batch: len(c.lengths), SeqLen: c.seqLen, Heads: c.heads, HeadDim: c.headDim,
		Scale: 1 / float32(c.headDim) * 4, Sliding: c.sliding, Radius: c.radius}
	name := fmt.Sprintf("%+v rope=%v inline=%v", shape, c.rope, inline)
	rows, width := shape.Batch*c.seqLen, c.heads*c.headDim
	qkv := pseudo(rows*3*width, uint64(rows*width+c.seqLen), -2, 2)
	op := AttentionOp{QKV: f32Buffer(t, d, qkv), Shape: shape,
		Out: f32Buffer(t, d, pseudo(rows*width, 1, 1e30, 1e30))} // padded rows must be written
	ref := qkv
	if c.rope {
		table := rotary.Table(10000, c.headDim, c.seqLen)
		op.Table = f32Buffer(t, d, table)
		rotated := ropeRef(qkv, table, rows, c.seqLen, c.heads, c.headDim)
		ref = make([]float32, len(rotated))
		for i, v := range rotated {
			ref[i] = float32(v)
		}
	}
	if inline {
		op.Lengths = c.lengths
	} else {
		op.LengthsBuffer = u32Buffer(t, d, c.lengths)
	}
	if err := run(t, d, func(cb CommandBuffer) error { return EncodeAttention(cb, k, op) }); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if e, i := maxErr(readF32(op.Out, rows*width), attentionRef(ref, c.lengths, shape), 4e-6, 4e-6); e > 1 {
		t.Errorf("%s: element %d off by %.3g× tolerance", name, i, e)
	}
	// qkv itself is never rotated in place.
	for i, v := range readF32(op.QKV, len(qkv)) {
		if v != qkv[i] {
			t.Fatalf("%s: qkv[%d] changed", name, i)
		}
	}
}

// TestAttentionFlashEmu: query blocks of 32 and key blocks of 32 crossed by
// lengths 1, 7, 93, 97, 200; sliding windows that start and end inside
// blocks, at the sequence edges and wider than the row; RoPE fused.
func TestAttentionFlashEmu(t *testing.T) {
	cases := []attentionCase{
		{lengths: []int{93, 7}, seqLen: 93, heads: 2, headDim: 64, sliding: true, radius: 20, rope: true},
		{lengths: []int{97, 1, 60}, seqLen: 97, heads: 1, headDim: 32, rope: true},
		{lengths: []int{200}, seqLen: 200, heads: 1, headDim: 16, sliding: true, radius: 64},
		{lengths: []int{33}, seqLen: 40, heads: 3, headDim: 8, sliding: true, radius: 100, rope: true},
	}
	if os.Getenv("LAYA_METAL_EMU_SWEEP") == "1" {
		for _, n := range []int{1, 7, 93, 97, 200} {
			for _, r := range []int{0, 5, 31, 32, 64} {
				cases = append(cases, attentionCase{lengths: []int{n, max(1, n/2)}, seqLen: n, heads: 2, headDim: 64, sliding: true, radius: r, rope: r%2 == 0})
			}
		}
	}
	for _, s := range emu.Schedules {
		d := openEmu(t, emu.Options{Schedule: s}, "kernels")
		k := NewKernels(d)
		for i, c := range cases {
			runAttentionCase(t, d, k, c, i%2 == 0)
		}
	}
}

// TestAttentionRealShapesEmu (LAYA_METAL_EMU_REAL_SHAPES=1): one global and
// one sliding layer of the English (16 heads) and multilingual (12 heads)
// encoders at 93 tokens, RoPE fused.
func TestAttentionRealShapesEmu(t *testing.T) {
	if os.Getenv("LAYA_METAL_EMU_REAL_SHAPES") != "1" {
		t.Skip("set LAYA_METAL_EMU_REAL_SHAPES=1 to run attention at the real model shapes (slow)")
	}
	d := openEmu(t, emu.Options{}, "kernels")
	k := NewKernels(d)
	for _, heads := range []int{16, 12} {
		for _, sliding := range []bool{false, true} {
			runAttentionCase(t, d, k, attentionCase{lengths: []int{93}, seqLen: 93, heads: heads, headDim: 64, sliding: sliding, radius: 64, rope: true}, true)
		}
	}
}

func TestEncodeAttentionRejects(t *testing.T) {
	d := openEmu(t, emu.Options{}, "kernels")
	k := NewKernels(d)
	buf := f32Buffer(t, d, make([]float32, 4096))
	base := AttentionOp{QKV: buf, Out: buf, Lengths: []int{4}, Shape: AttentionShape{Batch: 1, SeqLen: 4, Heads: 1, HeadDim: 8, Scale: 1}}
	for _, c := range []struct {
		name string
		edit func(op *AttentionOp)
	}{
		{"rope on the row kernel", func(op *AttentionOp) { op.Shape.HeadDim, op.Table = 96, buf }},
		{"lengths count", func(op *AttentionOp) { op.Lengths = []int{4, 4} }},
		{"qkv too short", func(op *AttentionOp) { op.Shape.SeqLen, op.Lengths = 200, []int{200} }},
	} {
		op := base
		c.edit(&op)
		wantInvalidDispatch(t, d, c.name, func(cb CommandBuffer) error { return EncodeAttention(cb, k, op) })
	}
}
