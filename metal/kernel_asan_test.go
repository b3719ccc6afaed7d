//go:build linux || darwin

package metal_test

import (
	"testing"

	"github.com/laya-metal/laya/internal/rotary"
	. "github.com/laya-metal/laya/metal"
	"github.com/laya-metal/laya/metal/emu"
)

// The model kernels once more under AddressSanitizer, on ragged shapes whose
// buffers are exactly as long as the kernels may touch: an access past the
// end of any of them fails the run with the .metal line.
func TestModelKernelsASanEmu(t *testing.T) {
	d := openEmu(t, emu.Options{ASan: true}, "kernels-asan")
	k := NewKernels(d)
	check := func(name string, got Buffer, want []float64, abs, rel float64) {
		t.Helper()
		if e, i := maxErr(readF32(got, len(want)), want, abs, rel); e > 1 {
			t.Errorf("%s: element %d off by %.3g× tolerance", name, i, e)
		}
	}

	const rows, cols = 3, 37
	in := pseudo(rows*cols, 1, -2, 2)
	w, b := pseudo(cols, 2, 0.5, 1.5), pseudo(cols, 3, -1, 1)
	bin, bout := f32Buffer(t, d, in), f32Buffer(t, d, make([]float32, rows*cols))
	if err := run(t, d, func(cb CommandBuffer) error {
		return LayerNorm(cb, k, bin, f32Buffer(t, d, w), f32Buffer(t, d, b), bout, rows, cols, 1e-5)
	}); err != nil {
		t.Fatalf("layernorm: %v", err)
	}
	check("layernorm", bout, layerNormRef(in, w, b, rows, cols, 1e-5), 2e-6, 2e-6)

	const seqLen, heads, headDim = 19, 2, 40
	lengths := []int{19, 7}
	qkv := pseudo(len(lengths)*seqLen*3*heads*headDim, 4, -2, 2)
	bq := f32Buffer(t, d, qkv)
	table := rotary.Table(10000, headDim, seqLen)
	if err := run(t, d, func(cb CommandBuffer) error {
		return Rope(cb, k, bq, f32Buffer(t, d, table), len(lengths)*seqLen, seqLen, heads, headDim)
	}); err != nil {
		t.Fatalf("rope: %v", err)
	}
	check("rope", bq, ropeRef(qkv, table, len(lengths)*seqLen, seqLen, heads, headDim), 1e-6, 1e-6)

	shape := AttentionShape{Batch: len(lengths), SeqLen: seqLen, Heads: heads, HeadDim: headDim, Scale: 0.2, Sliding: true, Radius: 4}
	qkv = readF32(bq, len(qkv))
	batt := f32Buffer(t, d, make([]float32, len(lengths)*seqLen*heads*headDim))
	if err := run(t, d, func(cb CommandBuffer) error { return Attention(cb, k, bq, u32Buffer(t, d, lengths), batt, shape) }); err != nil {
		t.Fatalf("attention: %v", err)
	}
	check("attention", batt, attentionRef(qkv, lengths, shape), 2e-6, 2e-6)

	bgl := f32Buffer(t, d, make([]float32, rows*(cols/2)))
	if err := run(t, d, func(cb CommandBuffer) error { return GeGLU(cb, k, bin, bgl, rows, cols/2) }); err != nil {
		t.Fatalf("geglu: %v", err)
	}
	// in is rows×37, read as rows×2·18 plus a tail: reference on the
	// first rows·36 values.
	check("geglu", bgl, gegluRef(in[:rows*2*(cols/2)], rows, cols/2), 2e-7, 6e-7)

	table16 := f16Buffer(t, d, pseudo(5*cols, 5, -1, 1))
	wide := make([]float32, 5*cols)
	for i := range wide {
		wide[i] = halfAt(table16, i)
	}
	idx := []int{4, 0, 2}
	bg := f32Buffer(t, d, make([]float32, len(idx)*cols))
	if err := run(t, d, func(cb CommandBuffer) error {
		return GatherRows(cb, k, ElemF16, table16, u32Buffer(t, d, idx), bg, len(idx), cols, 5)
	}); err != nil {
		t.Fatalf("gather: %v", err)
	}
	check("gather", bg, gatherRowsRef(wide, []uint32{4, 0, 2}, cols), 0, 1e-30)

	counts := []int{2, 1, 4}
	logits := pseudo(7, 6, -3, 3)
	bf := f32Buffer(t, d, make([]float32, len(counts)*(cols+4)))
	if err := run(t, d, func(cb CommandBuffer) error {
		return ActFeatures(cb, k, bin, f32Buffer(t, d, logits), u32Buffer(t, d, []int{0, 2, 3, 7}), bf, len(counts), cols, 7)
	}); err != nil {
		t.Fatalf("act features: %v", err)
	}
	check("act features", bf, actFeaturesRef(in, logits, counts, cols), 1e-6, 1e-6)
}
